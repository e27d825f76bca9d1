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
imported, before any work. The built-ins are collected the same way from inside: `package_specs` gathers the
`SPEC` of every module of a registry's own package, so a new built-in is one module (and its preset) with no list
to edit. This module imports nothing from the engine, so every layer may use it.
"""

from __future__ import annotations

import functools
import importlib
import importlib.util
import pkgutil
import re
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


#: A module-level binding of `SPEC` (`SPEC = ...` or `SPEC: Type = ...` at column 0).
_SPEC_BINDING = re.compile(r"^SPEC\s*(?::[^=\n]*)?=", re.MULTILINE)


def _binds_spec(module_name: str) -> bool:
    """Whether the module binds `SPEC` at top level: read from its source, else (an installation without sources)
    from the names its compiled module code uses; a module with neither is imported to find out."""
    found = importlib.util.find_spec(module_name)
    loader: Any = found.loader if found is not None else None  # any loader: probed with hasattr below
    source = loader.get_source(module_name) if hasattr(loader, "get_source") else None
    if source is not None:
        return _SPEC_BINDING.search(source) is not None
    code = loader.get_code(module_name) if hasattr(loader, "get_code") else None
    return code is None or "SPEC" in code.co_names


def display_order(spec: Any) -> tuple[bool, int, str]:
    """Sort key of built-ins: those with a `display_rank` by rank (the paper's order), then the others by name."""
    rank = getattr(spec, "display_rank", None)
    return (rank is None, 0 if rank is None else rank, spec.name)


def package_specs(package: str, spec_type: type) -> tuple[Any, ...]:
    """The built-in specs of a registry: the `SPEC` of every module directly in `package` that binds one at top
    level, in `display_order`. Other modules (the spec type, the registry, shared helpers) are not imported.

    Raises:
        PluginError: a module's `SPEC` is not a `spec_type`.
    """
    specs = []
    for info in pkgutil.iter_modules(importlib.import_module(package).__path__):
        name = f"{package}.{info.name}"
        if info.ispkg or not _binds_spec(name):
            continue
        module = importlib.import_module(name)
        if not hasattr(module, "SPEC"):
            continue
        spec = module.SPEC
        if not isinstance(spec, spec_type):
            raise PluginError(f"Module {name} binds SPEC to {type(spec).__name__}, not a {spec_type.__module__}."
                              f"{spec_type.__qualname__}; in {package} a module-level SPEC is a built-in plug-in. "
                              "Rename the variable or make it a spec.")
        specs.append(spec)
    return tuple(sorted(specs, key=display_order))


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
