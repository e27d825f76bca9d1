"""Registry of robustness methods by name (spec 4): the built-in `MethodSpec`s, then the plug-ins.

What lives here: `METHODS` (built-ins in the paper's display order, Table 4's right block, then plug-ins by
name) and `check_method`, which rejects bad method settings with one clear message before any work. A method of
kind "baseline" trains the architecture plainly; "train" methods inherit the selected baseline winner's
hyperparameters, overlay their recipe and train from scratch (the method acts inside the compiled step:
`methods.training`); "wrap" methods wrap stored baseline predictors (`methods.wrappers`). Each recipe grid lives
in its preset `conf/method/<name>.yaml`; what a method is and does is its spec (`methods/spec.py`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from sfbench_jax.methods import recipe_bounds as bounds
from sfbench_jax.methods import training
from sfbench_jax.methods.spec import MethodSpec
from sfbench_jax.methods.wrappers import ENSEMBLE, SMOOTHING
from sfbench_jax.models.registry import MODELS
from sfbench_jax.models.spec import ModelSpec
from sfbench_jax.plugins import discovered, register_specs


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


def _revin_compatible(model: ModelSpec) -> bool:
    return model.is_trainable and model.supports_revin


def _adaptive_loss_keys(unknown: Sequence[str]) -> str | None:
    if set(unknown) & set(bounds.ADAPTIVE_ROBUST_LOSS):
        return ("PGD adversarial training cannot be combined with the adaptive robust loss (spec 4.4: only MSE or "
                "MAE training losses); run method=adaptive_robust_loss separately.")
    return None


METHODS: dict[str, MethodSpec] = {spec.name: spec for spec in (
    MethodSpec("baseline", "baseline", "Baseline", lambda recipe: "baseline", applicable=lambda model: True),
    MethodSpec("adversarial_training", "train", "PGD", _pgd_id, transform=training.adversarial_training,
               bounds=bounds.PGD, unknown_keys=_adaptive_loss_keys),
    MethodSpec("ensemble", "wrap", "Ensemble", _ensemble_id, wrapper=ENSEMBLE, bounds=bounds.ENSEMBLE,
               check=bounds.check_ensemble),
    MethodSpec("randomized_training", "train", "Rand. Train", _rt_id, transform=training.randomized_training,
               bounds=bounds.RANDOMIZED_TRAINING),
    MethodSpec("randomized_smoothing", "wrap", "Rand. Smooth", _rs_id, wrapper=SMOOTHING,
               bounds=bounds.RANDOMIZED_SMOOTHING, check=bounds.check_smoothing),
    MethodSpec("adaptive_robust_loss", "train", "ARL", _arl_id, transform=training.adaptive_robust_loss,
               bounds=bounds.ADAPTIVE_ROBUST_LOSS, check=bounds.check_adaptive_pairs),
    MethodSpec("revin", "train", "RevIN", _revin_id, applicable=_revin_compatible, model_wrapper=training.revin,
               bounds=bounds.REVIN),
    MethodSpec("fault_augmentation", "train", "Fault Aug.", _fa_id, transform=training.fault_augmentation,
               bounds=bounds.FAULT_AUGMENTATION),
)}
register_specs(METHODS, discovered("methods", MethodSpec), kind="methods")


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
    message = spec.unknown_keys(unknown) if unknown and spec.unknown_keys is not None else None
    if message:
        raise ValueError(message)
    if unknown:
        raise ValueError(f"Unknown recipe key(s) {unknown} for method {name!r}; valid keys: {list(spec.grid)}.")
    empty = [key for key, values in grid.items() if len(values) == 0]
    if empty:
        raise ValueError(f"method.grid for {name!r} has empty value lists for {empty}.")
    return {key: tuple(grid.get(key, values)) for key, values in spec.grid.items()}


def check_method(name: str, architecture: str, grid: Mapping[str, Any] | None, *,
                 num_baseline_candidates: int) -> None:
    """Raise a ValueError naming the problem of a method setting before any work: unknown method or recipe
    key, a method/architecture pair that does not apply, a recipe key that belongs to another method (PGD with the
    adaptive loss's), a recipe value outside its range (the spec's `bounds`) or a grid its `check` refuses (an
    invalid trimming alpha of randomized smoothing, an ensemble larger than the baseline candidates it draws
    from)."""
    spec = get_method(name)
    if not spec.applies_to(architecture):
        raise InapplicableMethodError(f"Method {name!r} does not apply to {architecture!r}; it applies to "
                                      f"{', '.join(applicable_architectures(name))}.")
    recipes = method_grid(name, grid)
    spec.check_values(recipes)
    if spec.check is not None:
        spec.check(recipes, architecture=architecture, num_baseline_candidates=num_baseline_candidates)


def applicable_architectures(name: str) -> list[str]:
    """The registered architectures method `name` applies to, in registry order."""
    spec = get_method(name)
    return [model for model in MODELS if spec.applies_to(model)]


class InapplicableMethodError(ValueError):
    """A method/architecture pair the benchmark does not define (a multirun skips it with a note)."""
