"""Wilson intervals, McNemar's exact test and the 2x2 table, against hand computations."""

from __future__ import annotations

import math

import pytest

from sfbench_jax.agent_eval.stats import (
    PairedCounts,
    mcnemar_exact,
    paired_counts,
    wilson_interval,
)


def wilson_by_hand(successes: int, n: int) -> tuple[float, float]:
    """Wilson (1927) score interval written out from the textbook formula."""
    z = 1.959963984540054
    p = successes / n
    centre = (p + z**2 / (2 * n)) / (1 + z**2 / n)
    half = z / (1 + z**2 / n) * math.sqrt(p * (1 - p) / n + z**2 / (4 * n**2))
    return centre - half, centre + half


@pytest.mark.parametrize(("successes", "n"), [(9, 24), (19, 24), (35, 72), (66, 72), (3, 4)])
def test_wilson_matches_the_formula(successes: int, n: int) -> None:
    assert wilson_interval(successes, n) == pytest.approx(wilson_by_hand(successes, n), abs=1e-12)


def test_wilson_edges_and_errors() -> None:
    low, high = wilson_interval(0, 10)
    assert low == 0.0 and high == pytest.approx(0.27753, abs=1e-5)  # 3.84 / (10 + 3.84)
    low, high = wilson_interval(10, 10)
    assert high == 1.0 and low == pytest.approx(1 - 0.27753, abs=1e-5)
    # exact ends at every n (rounding gave 1.4e-17 as the lower end of 0/24 in a real report)
    assert all(wilson_interval(0, n)[0] == 0.0 and wilson_interval(n, n)[1] == 1.0 for n in range(1, 200))
    with pytest.raises(ValueError, match="n >= 1"):
        wilson_interval(0, 0)
    with pytest.raises(ValueError, match="must lie in"):
        wilson_interval(5, 4)


def test_mcnemar_exact_is_the_binomial_tail_on_discordant_pairs() -> None:
    # PHMForge v2 Table 14: b = 0, c = 10 -> p = 2 * 0.5^10; b = 1, c = 7 -> 2 * 9 / 256.
    assert mcnemar_exact(0, 10) == pytest.approx(2 / 1024)
    assert mcnemar_exact(1, 7) == pytest.approx(2 * (math.comb(8, 0) + math.comb(8, 1)) / 2**8)
    assert mcnemar_exact(7, 1) == mcnemar_exact(1, 7)
    assert mcnemar_exact(4, 4) == 1.0 and mcnemar_exact(0, 0) == 1.0
    assert mcnemar_exact(3, 9) == pytest.approx(2 * sum(math.comb(12, i) for i in range(4)) / 2**12)
    with pytest.raises(ValueError, match=">= 0"):
        mcnemar_exact(-1, 2)


def test_paired_counts_uses_shared_units_only() -> None:
    a = {"s1": True, "s2": True, "s3": False, "s4": False, "only_a": True}
    b = {"s1": True, "s2": False, "s3": True, "s4": False, "only_b": False}
    counts = paired_counts(a, b)
    assert counts == PairedCounts(both=1, only_a=1, only_b=1, neither=1) and counts.n == 4
