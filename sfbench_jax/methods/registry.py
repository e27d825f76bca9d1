"""Registry of robustness methods by name (protocol 4): the built-in `MethodSpec`s, then the plug-ins.

What lives here: `METHODS` (the built-ins, each `SPEC` in its own module of this package and collected from it, no
list to edit: `plugins.entry_points.package_specs`, in the order of their `display_rank`, the paper's Table 4 right
block after the baseline; then plug-ins by entry-point name) and `check_method`, which rejects bad method settings with
one clear message before any work. A method of kind "baseline" trains the architecture plainly; "train" methods
inherit the selected baseline winner's hyperparameters, overlay their recipe and train from scratch (the method
acts inside the compiled step: `methods.training`); "wrap" methods wrap stored baseline predictors
(`methods.wrappers`). Each recipe grid lives in its preset `conf/method/<name>.yaml`; what a method is and does
is its spec (`methods/spec.py`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sfbench_jax.methods.spec import MethodSpec, read_only
from sfbench_jax.models.registry import MODELS
from sfbench_jax.plugins.entry_points import discovered, package_specs, register_specs, unknown_name_error

#: The built-ins (each `SPEC` in its own module of this package) by `display_rank`, the paper's Table 4 order; then
#: the plug-ins by entry-point name.
METHODS: dict[str, MethodSpec] = {spec.name: spec for spec in package_specs("sfbench_jax.methods", MethodSpec)}
register_specs(METHODS, discovered("methods", MethodSpec), kind="methods")


def get_method(name: str) -> MethodSpec:
    """Look up a method; unknown names raise a ValueError listing the valid ones."""
    if name not in METHODS:
        raise unknown_name_error("methods", name, f"Unknown or unsupported method {name!r}. Valid methods: "
                                 f"{', '.join(METHODS)}.")
    return METHODS[name]


def method_spec(method: MethodSpec | str) -> MethodSpec:
    """`method` itself, or the spec registered under the name `method` (`get_method`). The engine passes specs,
    resolved once where a run starts; the registry's functions also take a name for a person calling them."""
    return method if isinstance(method, MethodSpec) else get_method(method)


def method_grid(method: MethodSpec | str, grid: Mapping[str, Any] | None) -> dict[str, tuple[Any, ...]]:
    """The recipe grid to use: the preset's, or `grid` (a subset of its keys, e.g. from a sweep).

    Raises:
        ValueError: an unknown recipe key (PGD with the adaptive loss's keys says so), or an empty list.
    """
    spec = method_spec(method)
    name = spec.name
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


def check_method(method: MethodSpec | str, architecture: str, grid: Mapping[str, Any] | None, *,
                 num_baseline_candidates: int) -> None:
    """Raise a ValueError naming the problem of a method setting before any work: unknown method or recipe
    key, a method/architecture pair that does not apply, a recipe key that belongs to another method (PGD with the
    adaptive loss's), a recipe value outside its range (the spec's `bounds`) or a grid its `check` refuses (an
    invalid trimming alpha of randomized smoothing, an ensemble larger than the baseline candidates it draws
    from)."""
    spec = method_spec(method)
    if not spec.applies_to(architecture):
        raise InapplicableMethodError(f"Method {spec.name!r} does not apply to {architecture!r}; it applies to "
                                      f"{', '.join(applicable_architectures(spec))}.")
    recipes = method_grid(spec, grid)
    spec.check_values(recipes)
    if spec.check is not None:
        spec.check(read_only(recipes), architecture=architecture, num_baseline_candidates=num_baseline_candidates)


def applicable_architectures(method: MethodSpec | str) -> list[str]:
    """The registered architectures `method` applies to, in registry order."""
    spec = method_spec(method)
    return [model for model in MODELS if spec.applies_to(model)]


class InapplicableMethodError(ValueError):
    """A method/architecture pair the benchmark does not define (a multirun skips it with a note)."""
