"""The allowed range of every method recipe value, checked before any work (`registry.check_method` calls
`check_recipe_values`).

What lives here: `RECIPE_BOUNDS` (method -> recipe key -> `Bound`: a predicate on one value and the sentence that
says the range and why) and the cross-key checks of the adaptive robust loss. A value outside its range is one
`ValueError` naming `method.grid.<key>`, the value, the range and the reason; nothing is trained or scored.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from sfbench_jax.faults.registry import TRANSFER_PROFILES
from sfbench_jax.methods.adaptive_loss import ALPHA_HI
from sfbench_jax.methods.wrappers import COMBINERS

#: Most PGD attack steps: each is one more forward and backward pass of every training batch (spec: 3-7).
MAX_PGD_STEPS = 100
#: Most randomized-smoothing samples: each is one more forward pass of every window scored (spec: 10-30).
MAX_SMOOTHING_SAMPLES = 1000


@dataclass(frozen=True)
class Bound:
    """The allowed values of one recipe key: `accepts(value)`, and `allowed` saying the range and why."""

    accepts: Callable[[Any], bool]
    allowed: str


def _number(value: Any) -> bool:
    return not isinstance(value, bool) and isinstance(value, (int, float)) and math.isfinite(value)


def _integer(value: Any) -> bool:
    return not isinstance(value, bool) and isinstance(value, int)


def _between(low: float, high: float, *, low_open: bool = False, high_open: bool = False) -> Callable[[Any], bool]:
    def accepts(value: Any) -> bool:
        return (_number(value) and (value > low if low_open else value >= low)
                and (value < high if high_open else value <= high))
    return accepts


def _at_least(low: float, *, open_: bool = False) -> Callable[[Any], bool]:
    return lambda value: _number(value) and (value > low if open_ else value >= low)


def _integer_between(low: int, high: int) -> Callable[[Any], bool]:
    return lambda value: _integer(value) and low <= value <= high


RECIPE_BOUNDS: dict[str, dict[str, Bound]] = {
    "adversarial_training": {
        "eps": Bound(_at_least(0.0, open_=True), "a finite number > 0 (the L-infinity radius of the attack in "
                                                 "standardised units)"),
        "steps": Bound(_integer_between(1, MAX_PGD_STEPS), f"an integer in [1, {MAX_PGD_STEPS}] (attack iterations; "
                                                           "each is one more forward and backward pass per batch)"),
    },
    "randomized_training": {
        "sigma": Bound(_at_least(0.0), "a finite number >= 0 (the relative noise level)"),
    },
    "fault_augmentation": {
        "profile": Bound(lambda value: value in TRANSFER_PROFILES, f"one of {sorted(TRANSFER_PROFILES)} (the transfer "
                                                                   "fault families drawn from)"),
        "p": Bound(_between(0.0, 1.0), "in [0, 1] (the probability that a training window is augmented)"),
        "s_max": Bound(_between(0.0, 1.0, low_open=True), "in (0, 1] (the largest fault severity; severities "
                                                          "live in [0, 1])"),
        "frac_max": Bound(_between(0.0, 1.0, low_open=True), "in (0, 1] (the largest fraction of the continuous "
                                                             "channels a fault touches)"),
    },
    "revin": {
        "affine": Bound(lambda value: isinstance(value, bool), "true or false (learn RevIN's affine parameters)"),
    },
    "adaptive_robust_loss": {
        "alpha_lo": Bound(_between(0.0, ALPHA_HI, high_open=True), f"in [0, {ALPHA_HI}) (the lower end of the "
                                                                    "shape alpha; ln Z(alpha) is tabulated on [0, 2])"),
        "alpha_init": Bound(_between(0.0, ALPHA_HI, low_open=True, high_open=True),
                            f"in (0, {ALPHA_HI}) (the initial shape, inside (alpha_lo, {ALPHA_HI}))"),
        "scale_lo": Bound(_at_least(0.0, open_=True), "a finite number > 0 (the lower end of the scale c; the loss "
                                                      "takes ln c)"),
        "scale_init": Bound(_at_least(0.0, open_=True), "a finite number > 0 (the initial scale, above scale_lo)"),
    },
    "ensemble": {
        "top_k": Bound(lambda value: _integer(value) and value >= 2, "an integer >= 2 (the members combined; top_k "
                                                                     "= 1 is the baseline winner alone)"),
        "combine": Bound(lambda value: value in COMBINERS, f"one of {list(COMBINERS)} (how members are combined)"),
    },
    "randomized_smoothing": {
        "sigma": Bound(_at_least(0.0), "a finite number >= 0 (the noise standard deviation, standardised units)"),
        "samples": Bound(_integer_between(3, MAX_SMOOTHING_SAMPLES),
                         f"an integer in [3, {MAX_SMOOTHING_SAMPLES}] (noisy copies per window: at least one kept "
                         "after trimming one at each end; each is one more forward pass of every window)"),
        # alpha: `registry.check_trimming` (its range depends on the sample count)
    },
}


def check_recipe_values(method: str, recipes: Mapping[str, tuple[Any, ...]]) -> None:
    """Raise a ValueError naming `method.grid.<key>`, the bad value, the allowed range and why, for the first
    recipe value outside its range (and for adaptive-loss combinations whose initial value is not above its
    lower end)."""
    for key, bound in RECIPE_BOUNDS.get(method, {}).items():
        for value in recipes.get(key, ()):
            if not bound.accepts(value):
                raise ValueError(f"method.grid.{key}={list(recipes[key])} for {method}: each value must be "
                                 f"{bound.allowed}; got {value!r}.")
    if method == "adaptive_robust_loss":
        _check_adaptive_pairs(recipes)


def _check_adaptive_pairs(recipes: Mapping[str, tuple[Any, ...]]) -> None:
    """Every combination of the grid starts strictly inside its range: alpha_lo < alpha_init, scale_lo < scale_init
    (the latents are a logit and a softplus of the distance to the lower end)."""
    for low_key, init_key in (("alpha_lo", "alpha_init"), ("scale_lo", "scale_init")):
        for low, init in itertools.product(recipes[low_key], recipes[init_key]):
            if not init > low:
                raise ValueError(f"method.grid.{init_key}={init!r} with method.grid.{low_key}={low!r} for "
                                 f"adaptive_robust_loss: every {init_key} must exceed every {low_key} (training starts "
                                 f"strictly inside [{low_key}, ...)); narrow the grids so that they do not overlap.")
