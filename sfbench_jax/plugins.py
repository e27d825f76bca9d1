"""Plug-ins registered from other packages through Python entry points (docs/extending.md).

A package extends the benchmark by declaring entry points in its own `pyproject.toml`, one group per plug-in
kind; each entry point names a spec object (or a sequence of them) of that kind:

    [project.entry-points."sfbench_jax.models"]
    my_model = "my_pkg.model:SPEC"

| group | the object it names |
|---|---|
| `sfbench_jax.models` | `sfbench_jax.models.spec.ModelSpec` |
| `sfbench_jax.methods` | `sfbench_jax.methods.spec.MethodSpec` |
| `sfbench_jax.datasets` | `sfbench_jax.data.spec.DatasetSpec` |
| `sfbench_jax.faults` | `sfbench_jax.faults.spec.FaultSpec` |
| `sfbench_jax.conf` | the name of a package whose folder holds Hydra presets (`model/<name>.yaml`, ...) |

Each registry merges the discovered specs into its built-in ones with `register_specs`. A plug-in never replaces
a built-in or another plug-in of the same name: that is an error naming both, raised when the registry is first
imported, before any work. This module imports nothing from the engine, so every layer may use it.
"""

from __future__ import annotations

import functools
import importlib.util
from collections.abc import Iterable, MutableMapping, Sequence
from importlib import metadata
from typing import Any

GROUP_PREFIX = "sfbench_jax."
KINDS = ("models", "methods", "datasets", "faults", "conf")


class PluginError(ValueError):
    """A plug-in that cannot be used: it does not load, names the wrong kind of object, or takes a taken name."""


def _entry_points(kind: str) -> list[metadata.EntryPoint]:
    if kind not in KINDS:
        raise ValueError(f"Unknown plug-in kind {kind!r}. Valid kinds: {', '.join(KINDS)}.")
    return sorted(metadata.entry_points(group=GROUP_PREFIX + kind), key=lambda ep: (ep.name, ep.value))


def _origin(entry: metadata.EntryPoint) -> str:
    dist = getattr(entry, "dist", None)
    package = f" of package {dist.name!r}" if dist is not None else ""
    return f"entry point {entry.name!r} = {entry.value!r} (group {entry.group!r}{package})"


def _load(entry: metadata.EntryPoint) -> Any:
    try:
        return entry.load()
    except Exception as error:  # any import failure of a foreign package is reported the same way
        raise PluginError(f"The {_origin(entry)} failed to load: {type(error).__name__}: {error}. Fix or "
                          f"uninstall that package.") from error


@functools.cache
def discovered(kind: str, spec_type: type) -> tuple[Any, ...]:
    """Every spec that installed packages register for `kind`, in entry-point name order.

    Raises:
        PluginError: an entry point fails to load or names something other than `spec_type` instances.
    """
    specs: list[Any] = []
    for entry in _entry_points(kind):
        value = _load(entry)
        items = value if isinstance(value, Sequence) and not isinstance(value, str) else (value,)
        wrong = [item for item in items if not isinstance(item, spec_type)]
        if wrong:
            raise PluginError(f"The {_origin(entry)} names {type(wrong[0]).__name__}, not a "
                              f"{spec_type.__module__}.{spec_type.__qualname__}. Point it at a spec object.")
        specs.extend(items)
    return tuple(specs)


def register_specs(registry: MutableMapping[str, Any], specs: Iterable[Any], *, kind: str) -> None:
    """Add `specs` (each with a `.name`) to `registry`; a name already taken is a `PluginError` naming both."""
    for spec in specs:
        if spec.name in registry:
            raise PluginError(f"Two {kind} are registered as {spec.name!r} (a plug-in may not replace a built-in "
                              f"or another plug-in). Rename the plug-in's {kind[:-1]}.")
        registry[spec.name] = spec


@functools.cache
def preset_packages() -> tuple[str, ...]:
    """The packages that installed plug-ins name for their Hydra presets (group `sfbench_jax.conf`).

    Raises:
        PluginError: an entry point names an object rather than a package, or a package that is not installed.
    """
    names = []
    for entry in _entry_points("conf"):
        if not entry.value or ":" in entry.value:
            raise PluginError(f"The {_origin(entry)} must name a package (e.g. 'my_pkg.conf'), not an object.")
        if not _is_package(entry.value):
            raise PluginError(f"The {_origin(entry)} names no importable package (a folder with an __init__.py "
                              f"holding model/, method/, dataset/ presets). Fix the entry point or reinstall.")
        names.append(entry.value)
    return tuple(names)


def _is_package(name: str) -> bool:
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return False
    return spec is not None and spec.submodule_search_locations is not None
