"""The allowed range of every built-in method's recipe values, checked before any work: each method's spec
(`SPEC` in its module, e.g. `methods/ensemble.py`) holds its `bounds` (recipe key -> `Bound`: a predicate on one
value and the sentence that says the range and why) and its whole-grid `check` (the adaptive loss's pairs,
smoothing's trimming, the ensemble's size). A value outside its range is one `ValueError` naming
`method.grid.<key>`, the value, the range and the reason; nothing is trained or scored.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from typing import TypeGuard

from sfbench_jax.faults.registry import TRANSFER_PROFILES
from sfbench_jax.methods.barron_nll import ALPHA_HI
from sfbench_jax.methods.spec import Bound, RecipeGrid
from sfbench_jax.methods.wrappers import COMBINERS, check_trimming

#: Most PGD attack steps: each is one more forward and backward pass of every training batch (the protocol's grid:
#: 3, 5, 7; protocol 4).
MAX_PGD_STEPS = 100
#: Most randomized-smoothing samples: each is one more forward pass of every window scored (the protocol's grid:
#: 10, 20, 30; protocol 4).
MAX_SMOOTHING_SAMPLES = 1000


def _number(value: object) -> TypeGuard[float]:
    return not isinstance(value, bool) and isinstance(value, (int, float)) and math.isfinite(value)


def _integer(value: object) -> TypeGuard[int]:
    return not isinstance(value, bool) and isinstance(value, int)


def _between(low: float, high: float, *, low_open: bool = False,
             high_open: bool = False) -> Callable[[object], bool]:
    def accepts(value: object) -> bool:
        return (_number(value) and (value > low if low_open else value >= low)
                and (value < high if high_open else value <= high))
    return accepts


def _at_least(low: float, *, open_: bool = False) -> Callable[[object], bool]:
    return lambda value: _number(value) and (value > low if open_ else value >= low)


def _integer_between(low: int, high: int) -> Callable[[object], bool]:
    return lambda value: _integer(value) and low <= value <= high


PGD: dict[str, Bound] = {
    "eps": Bound(_at_least(0.0, open_=True), "a finite number > 0 (the L-infinity radius of the attack in "
                                             "standardised units)"),
    "steps": Bound(_integer_between(1, MAX_PGD_STEPS), f"an integer in [1, {MAX_PGD_STEPS}] (attack iterations; "
                                                       "each is one more forward and backward pass per batch)"),
}
RANDOMIZED_TRAINING: dict[str, Bound] = {
    "sigma": Bound(_at_least(0.0), "a finite number >= 0 (the relative noise level)"),
}
FAULT_AUGMENTATION: dict[str, Bound] = {
    "profile": Bound(lambda value: value in TRANSFER_PROFILES, f"one of {sorted(TRANSFER_PROFILES)} (the transfer "
                                                               "fault families drawn from)"),
    "p": Bound(_between(0.0, 1.0), "in [0, 1] (the probability that a training window is augmented)"),
    "s_max": Bound(_between(0.0, 1.0, low_open=True), "in (0, 1] (the largest fault severity; severities "
                                                      "live in [0, 1])"),
    "frac_max": Bound(_between(0.0, 1.0, low_open=True), "in (0, 1] (the largest fraction of the continuous "
                                                         "channels a fault touches)"),
}
REVIN: dict[str, Bound] = {
    "affine": Bound(lambda value: isinstance(value, bool), "true or false (learn RevIN's affine parameters)"),
}
ADAPTIVE_ROBUST_LOSS: dict[str, Bound] = {
    "alpha_lo": Bound(_between(0.0, ALPHA_HI, high_open=True), f"in [0, {ALPHA_HI}) (the lower end of the "
                                                                "shape alpha; ln Z(alpha) is tabulated on [0, 2])"),
    "alpha_init": Bound(_between(0.0, ALPHA_HI, low_open=True, high_open=True),
                        f"in (0, {ALPHA_HI}) (the initial shape, inside (alpha_lo, {ALPHA_HI}))"),
    "scale_lo": Bound(_at_least(0.0, open_=True), "a finite number > 0 (the lower end of the scale c; the loss "
                                                  "takes ln c)"),
    "scale_init": Bound(_at_least(0.0, open_=True), "a finite number > 0 (the initial scale, above scale_lo)"),
}
ENSEMBLE: dict[str, Bound] = {
    "top_k": Bound(lambda value: _integer(value) and value >= 2, "an integer >= 2 (the members combined; top_k "
                                                                 "= 1 is the baseline winner alone)"),
    "combine": Bound(lambda value: value in COMBINERS, f"one of {list(COMBINERS)} (how members are combined)"),
}
RANDOMIZED_SMOOTHING: dict[str, Bound] = {
    "sigma": Bound(_at_least(0.0), "a finite number >= 0 (the noise standard deviation, standardised units)"),
    "samples": Bound(_integer_between(3, MAX_SMOOTHING_SAMPLES),
                     f"an integer in [3, {MAX_SMOOTHING_SAMPLES}] (noisy copies per window: at least one kept "
                     "after trimming one at each end; each is one more forward pass of every window)"),
    # alpha: `check_smoothing` (its range depends on the sample count)
}


def check_adaptive_pairs(recipes: RecipeGrid, **_: object) -> None:
    """Every combination of the grid starts strictly inside its range: alpha_lo < alpha_init, scale_lo < scale_init
    (the latents are a logit and a softplus of the distance to the lower end)."""
    for low_key, init_key in (("alpha_lo", "alpha_init"), ("scale_lo", "scale_init")):
        for low, init in itertools.product(recipes[low_key], recipes[init_key]):
            if not init > low:
                raise ValueError(f"method.grid.{init_key}={init!r} with method.grid.{low_key}={low!r} for "
                                 f"adaptive_robust_loss: every {init_key} must exceed every {low_key} (training starts "
                                 f"strictly inside [{low_key}, ...)); narrow the grids so that they do not overlap.")


def check_smoothing(recipes: RecipeGrid, **_: object) -> None:
    """Every (samples, alpha) pair of randomized smoothing trims at least one prediction at each end and keeps one."""
    for samples in recipes["samples"]:
        for alpha in recipes["alpha"]:
            check_trimming(alpha=alpha, samples=samples)


def check_ensemble(recipes: RecipeGrid, *, architecture: str, num_baseline_candidates: int, **_: object) -> None:
    """No ensemble is larger than the baseline candidates it draws from."""
    too_many = [k for k in recipes["top_k"] if k > num_baseline_candidates]
    if too_many:
        raise ValueError(f"Ensemble top_k {too_many} exceed the {num_baseline_candidates} baseline candidates "
                         f"of {architecture!r} (train.candidate_budget and the grid); lower method.grid.top_k "
                         "or raise train.candidate_budget.")
