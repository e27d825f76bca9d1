"""Interval estimates and paired tests for pass rates.

What lives here: `wilson_interval` (score interval of a binomial proportion, the one PHMForge v2
reports next to pass@1 and pass-all-3), `mcnemar_exact` (two-sided exact McNemar test on the
discordant pairs of two paired binary outcomes) and `paired_counts`, which turns two outcome
maps into the 2x2 table. Pure Python (``math`` only): no SciPy, so the formulas are on the page.
What does not: which outcomes are paired (``compare.py``) or report layout (``report.py``).

Formulas:

* Wilson: centre ``(p + z^2 / 2n) / (1 + z^2 / n)``, half-width
  ``z / (1 + z^2 / n) * sqrt(p (1 - p) / n + z^2 / 4n^2)`` with ``p = successes / n`` and
  ``z = 1.959964`` for 95 % (Wilson 1927).
* McNemar exact: with ``b`` pairs where only A passed and ``c`` where only B passed, under H0
  each discordant pair is a fair coin, so ``p = min(1, 2 * P[Binomial(b + c, 1/2) <= min(b, c)])``
  (McNemar 1947; exact binomial form).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import NamedTuple

__all__ = ["Z_95", "PairedCounts", "mcnemar_exact", "paired_counts", "wilson_interval"]

#: Two-sided 95 % standard-normal quantile.
Z_95 = 1.959963984540054


def wilson_interval(successes: int, n: int, *, z: float = Z_95) -> tuple[float, float]:
    """Wilson score interval of a binomial proportion.

    Args:
        successes: Number of successes (0 <= successes <= n).
        n: Number of trials (>= 1).
        z: Standard-normal quantile (1.96 for a 95 % interval).

    Returns:
        ``(low, high)`` within [0, 1].

    Raises:
        ValueError: If ``n < 1`` or ``successes`` is outside ``0..n``.

    Example:
        >>> [round(v, 3) for v in wilson_interval(9, 24)]
        [0.212, 0.573]
    """
    if n < 1:
        raise ValueError(f"a Wilson interval needs n >= 1 trials, got n={n}")
    if not 0 <= successes <= n:
        raise ValueError(f"successes={successes} must lie in 0..n={n}")
    p = successes / n
    z2 = z * z
    denominator = 1.0 + z2 / n
    centre = (p + z2 / (2.0 * n)) / denominator
    half = z / denominator * math.sqrt(p * (1.0 - p) / n + z2 / (4.0 * n * n))
    # the ends are exact where the counts are: centre - half is 0 in exact arithmetic at 0 successes (and
    # centre + half is 1 at n), but rounding leaves e.g. 1.4e-17, printed as a lower bound above zero
    low = 0.0 if successes == 0 else max(0.0, centre - half)
    high = 1.0 if successes == n else min(1.0, centre + half)
    return low, high


def mcnemar_exact(only_a: int, only_b: int) -> float:
    """Two-sided exact McNemar p-value from the discordant counts.

    Args:
        only_a: Pairs where A passed and B failed (``b``).
        only_b: Pairs where B passed and A failed (``c``).

    Returns:
        The p-value (1.0 when there are no discordant pairs).

    Raises:
        ValueError: For negative counts.

    Example:
        >>> round(mcnemar_exact(0, 10), 4), round(mcnemar_exact(1, 7), 4)
        (0.002, 0.0703)
    """
    if only_a < 0 or only_b < 0:
        raise ValueError(f"discordant counts must be >= 0, got b={only_a}, c={only_b}")
    discordant = only_a + only_b
    if discordant == 0:
        return 1.0
    tail = sum(math.comb(discordant, i) for i in range(min(only_a, only_b) + 1))
    return min(1.0, 2.0 * tail / 2.0**discordant)


class PairedCounts(NamedTuple):
    """The 2x2 table of paired binary outcomes.

    Attributes:
        both: Pairs where A and B passed.
        only_a: A passed, B failed (McNemar's b).
        only_b: B passed, A failed (McNemar's c).
        neither: Both failed.
    """

    both: int
    only_a: int
    only_b: int
    neither: int

    @property
    def n(self) -> int:
        """Number of pairs."""
        return self.both + self.only_a + self.only_b + self.neither


def paired_counts(outcomes_a: Mapping[str, bool], outcomes_b: Mapping[str, bool]) -> PairedCounts:
    """Cross-tabulate two outcome maps on their shared keys.

    Args:
        outcomes_a: Unit id -> passed, for run A.
        outcomes_b: Unit id -> passed, for run B.

    Returns:
        The counts over the keys present in both maps.
    """
    shared = sorted(set(outcomes_a) & set(outcomes_b))
    cells = [(bool(outcomes_a[k]), bool(outcomes_b[k])) for k in shared]
    return PairedCounts(both=sum(a and b for a, b in cells),
                        only_a=sum(a and not b for a, b in cells),
                        only_b=sum(b and not a for a, b in cells),
                        neither=sum(not a and not b for a, b in cells))
