"""Registry of robustness methods by name (spec 4): kind, recipe grid, variant ids and applicability.

What lives here: `MethodSpec` and `METHODS`, and `check_method`, which rejects bad method settings with one
clear message before any work. A method of kind "baseline" trains the architecture plainly; "train"
methods inherit the selected baseline winner's hyperparameters, overlay their recipe and train from
scratch (the method acts inside the compiled step: `methods.training`); "wrap" methods wrap stored
baseline predictors (`methods.wrappers`). Each recipe grid lives in its preset `conf/method/<name>.yaml`.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping
from typing import Any

from sfbench_jax.methods.recipe_bounds import check_recipe_values
from sfbench_jax.presets import preset_grid

#: Architectures the methods apply to: the five trained ones (SeasonalNaive has nothing to train or wrap).
TRAINABLE_ARCHITECTURES = ("dlinear", "gru", "moderntcn", "patchtst", "tsmixer")


@dataclasses.dataclass(frozen=True)
class MethodSpec:
    """One robustness method.

    Attributes:
        name: registry key (the `method` column of the results).
        kind: "baseline", "train" or "wrap".
        label: display label (paper tables).
        variant_id: the spec's variant id of one recipe combination (the `variant` column).
        architectures: the architectures it applies to.
    """

    name: str
    kind: str
    label: str
    variant_id: Callable[[Mapping[str, Any]], str]
    architectures: tuple[str, ...] = TRAINABLE_ARCHITECTURES

    @property
    def grid(self) -> Mapping[str, tuple[Any, ...]]:
        """The recipe grid of the method's preset, in key order (first key slowest)."""
        return preset_grid("method", self.name)

    def applies_to(self, architecture: str) -> bool:
        """Whether the method may be used with `architecture`."""
        return architecture in self.architectures


def _pgd_id(recipe: Mapping[str, Any]) -> str:
    return f"advtrain_eps{recipe['eps']}_steps{recipe['steps']}_alpha0.02_channelsall"


def _rt_id(recipe: Mapping[str, Any]) -> str:
    return f"rt_spaceraw_std{recipe['sigma']}_channelscontinuous"


def _fa_id(recipe: Mapping[str, Any]) -> str:
    return f"fa_prof{recipe['profile']}_mix{recipe['p']}_sev{recipe['s_max']}_frac{recipe['frac_max']}"


def _revin_id(recipe: Mapping[str, Any]) -> str:
    return f"revin_affine{bool(recipe['affine'])}_eps1e-5"


def _arl_id(recipe: Mapping[str, Any]) -> str:
    return (f"arl_alo{recipe['alpha_lo']}_ainit{recipe['alpha_init']}_slo{recipe['scale_lo']}"
            f"_sinit{recipe['scale_init']}")


def _ensemble_id(recipe: Mapping[str, Any]) -> str:
    return f"ensemble_top{recipe['top_k']}_{recipe['combine']}"


def _rs_id(recipe: Mapping[str, Any]) -> str:
    return f"rs_backbonebaseline_std{recipe['sigma']}_samples{recipe['samples']}_alpha{recipe['alpha']}"


METHODS: dict[str, MethodSpec] = {spec.name: spec for spec in (
    MethodSpec("baseline", "baseline", "Baseline", lambda recipe: "baseline",
               architectures=(*TRAINABLE_ARCHITECTURES, "seasonal_naive", "chronos2", "external")),
    MethodSpec("adversarial_training", "train", "PGD", _pgd_id),
    MethodSpec("ensemble", "wrap", "Ensemble", _ensemble_id),
    MethodSpec("randomized_training", "train", "Rand. Train", _rt_id),
    MethodSpec("randomized_smoothing", "wrap", "Rand. Smooth", _rs_id),
    MethodSpec("adaptive_robust_loss", "train", "ARL", _arl_id),
    MethodSpec("revin", "train", "RevIN", _revin_id, architectures=("dlinear", "gru", "moderntcn", "tsmixer")),
    MethodSpec("fault_augmentation", "train", "Fault Aug.", _fa_id),
)}

#: Recipe keys of the adaptive robust loss: PGD cannot be combined with it (spec 4.4).
_ADAPTIVE_LOSS_KEYS = frozenset(METHODS["adaptive_robust_loss"].grid)


def get_method(name: str) -> MethodSpec:
    """Look up a method; unknown names raise a ValueError listing the valid ones."""
    if name not in METHODS:
        raise ValueError(f"Unknown or unsupported method {name!r}. Valid methods: {', '.join(METHODS)}.")
    return METHODS[name]


def method_grid(name: str, grid: Mapping[str, Any] | None) -> dict[str, tuple[Any, ...]]:
    """The recipe grid to use: the preset's, or `grid` (a subset of its keys, e.g. from a sweep).

    Raises:
        ValueError: an unknown recipe key (PGD with the adaptive loss's keys says so), or an empty list.
    """
    spec = get_method(name)
    if not grid:
        return dict(spec.grid)
    unknown = sorted(set(grid) - set(spec.grid))
    if unknown and spec.name == "adversarial_training" and set(unknown) & _ADAPTIVE_LOSS_KEYS:
        raise ValueError("PGD adversarial training cannot be combined with the adaptive robust loss (spec 4.4: "
                         "only MSE or MAE training losses); run method=adaptive_robust_loss separately.")
    if unknown:
        raise ValueError(f"Unknown recipe key(s) {unknown} for method {name!r}; valid keys: {list(spec.grid)}.")
    empty = [key for key, values in grid.items() if len(values) == 0]
    if empty:
        raise ValueError(f"method.grid for {name!r} has empty value lists for {empty}.")
    return {key: tuple(grid.get(key, values)) for key, values in spec.grid.items()}


def check_method(name: str, architecture: str, grid: Mapping[str, Any] | None, *,
                 num_baseline_candidates: int) -> None:
    """Raise a ValueError naming the problem of a method setting before any work: unknown method or recipe
    key, a method/architecture pair that does not apply, PGD with the adaptive loss, a recipe value outside its
    range (`recipe_bounds`), an invalid trimming alpha of randomized smoothing, or an ensemble larger than the
    baseline candidates it draws from."""
    spec = get_method(name)
    if not spec.applies_to(architecture):
        raise InapplicableMethodError(f"Method {name!r} does not apply to {architecture!r}; it applies to "
                                      f"{', '.join(spec.architectures)}.")
    recipes = method_grid(name, grid)
    check_recipe_values(name, recipes)
    if name == "randomized_smoothing":
        for samples in recipes["samples"]:
            for alpha in recipes["alpha"]:
                check_trimming(alpha=alpha, samples=samples)
    if name == "ensemble":
        too_many = [k for k in recipes["top_k"] if k > num_baseline_candidates]
        if too_many:
            raise ValueError(f"Ensemble top_k {too_many} exceed the {num_baseline_candidates} baseline candidates "
                             f"of {architecture!r} (train.candidate_budget and the grid); lower method.grid.top_k "
                             "or raise train.candidate_budget.")


def check_trimming(*, alpha: float, samples: int) -> int:
    """The number `t = floor(alpha N)` of predictions trimmed at each end; raises unless `t >= 1` and
    `alpha < 0.5` (so that at least one prediction remains)."""
    trimmed = math.floor(alpha * samples)
    if not 0.0 < alpha < 0.5 or trimmed < 1:
        raise ValueError(f"Randomized smoothing alpha={alpha} with N={samples} samples trims t = floor(alpha N) = "
                         f"{trimmed} at each end; need 0 < alpha < 0.5 and t >= 1.")
    return trimmed


class InapplicableMethodError(ValueError):
    """A method/architecture pair the benchmark does not define (a multirun skips it with a note)."""
