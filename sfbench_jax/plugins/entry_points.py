"""Plug-ins registered from other packages through Python entry points (docs/extending.md).

A package extends the benchmark by declaring entry points in its own `pyproject.toml`, one group per plug-in
kind; each entry point names a spec object of that kind under the spec's own name (or a sequence of specs):

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
imported, before any work. An entry point that fails to load (its module does not import, or it names something
other than a spec of its group, or one spec under another name) is set aside, not raised: the registries hold every
other spec, so `--help`, the built-ins and the reports keep working, and only a command that names it (by either
name) stops, with `broken_error`'s one line (which package, which entry point, `pip uninstall NAME` or the line to
repair). `origin_of(spec)` says where a
spec came from (the package and entry point, or the built-in module) for the contract checks' messages, and
`code_fingerprint(*specs)` identifies the code that defines specs (part of every stored candidate's identity).

The built-ins are collected the same way from inside: `package_specs` gathers the `SPEC` of every module of a
registry's own package, so a new built-in is one module (and its preset) with no list to edit. This module imports
nothing from the engine, so every layer may use it.
"""

from __future__ import annotations

import dataclasses
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


class MisnamedEntryPoint(PluginError):
    """An entry point whose name differs from the name of the one spec it names (`spec_name`)."""

    def __init__(self, message: str, *, spec_name: str) -> None:
        super().__init__(message)
        self.spec_name = spec_name


def _entry_points(kind: str) -> list[metadata.EntryPoint]:
    if kind not in KINDS:
        raise ValueError(f"Unknown plug-in kind {kind!r}. Valid kinds: {', '.join(KINDS)}.")
    return sorted(metadata.entry_points(group=GROUP_PREFIX + kind), key=lambda ep: (ep.name, ep.value))


def _origin(entry: metadata.EntryPoint) -> str:
    dist = getattr(entry, "dist", None)
    package = f" of package {dist.name!r}" if dist is not None else ""
    return f"entry point {entry.name!r} = {entry.value!r} (group {entry.group!r}{package})"


def _distribution(entry: metadata.EntryPoint) -> tuple[str, str]:
    """The (name, version) of the distribution that declares `entry` ("?" where unknown)."""
    dist = getattr(entry, "dist", None)
    if dist is None:
        return "?", "?"
    return str(dist.name), str(dist.version or "?")


def _fix(entry: metadata.EntryPoint) -> str:
    name, _ = _distribution(entry)
    remove = f"pip uninstall {name}" if name != "?" else "uninstall the package that declares it"
    return (f"Repair the line `{entry.name} = {entry.value}` under [project.entry-points.\"{entry.group}\"] of "
            f"that package (or the module it names) and reinstall it, or remove the package: {remove}.")


@dataclasses.dataclass(frozen=True)
class Origin:
    """Where a spec came from: the distribution (name, version) and its entry point, or a built-in module."""

    distribution: str
    version: str
    entry_point: str = ""
    module: str = ""

    def describe(self) -> str:
        """`package 'NAME' VERSION, entry point 'EP'`, or `sfbench-jax's built-in module M`."""
        if self.entry_point:
            return f"package {self.distribution!r} {self.version}, entry point {self.entry_point!r}"
        return f"sfbench-jax's built-in module {self.module}"


#: id(spec) -> its origin (specs live as long as the process: the registries hold them).
_ORIGINS: dict[int, Origin] = {}
#: kind -> the entry points that failed to load, with their one-line error.
_BROKEN: dict[str, dict[str, PluginError]] = {}


def origin_of(spec: Any) -> Origin:
    """Where `spec` was registered from (a spec no registry collected: its functions' module)."""
    found = _ORIGINS.get(id(spec))
    if found is not None:
        return found
    module = getattr(getattr(spec, "module_cls", None) or getattr(spec, "apply", None) or spec, "__module__", "?")
    return Origin("sfbench-jax", "built-in", module=str(module))


def _load(entry: metadata.EntryPoint) -> Any:
    try:
        return entry.load()
    except Exception as error:  # any import failure of a foreign package is reported the same way
        raise PluginError(f"The {_origin(entry)} failed to load: {type(error).__name__}: {error}. "
                          f"{_fix(entry)}") from error


def _loaded_specs(entry: metadata.EntryPoint, spec_type: type) -> list[Any]:
    value = _load(entry)
    is_one_spec = not (isinstance(value, Sequence) and not isinstance(value, str))
    items = (value,) if is_one_spec else value
    wrong = [item for item in items if not isinstance(item, spec_type)]
    if wrong:
        raise PluginError(f"The {_origin(entry)} names {type(wrong[0]).__name__}, not a "
                          f"{spec_type.__module__}.{spec_type.__qualname__}. Point it at a spec object. "
                          f"{_fix(entry)}")
    if is_one_spec and value.name != entry.name:
        raise _misnamed(entry, value.name)
    return list(items)


def _misnamed(entry: metadata.EntryPoint, spec_name: str) -> MisnamedEntryPoint:
    """An entry point that names one spec under another name: commands find a plug-in by its spec's name and a
    broken one by its entry point's name, so the two must agree."""
    dist, _ = _distribution(entry)
    remove = f"pip uninstall {dist}" if dist != "?" else "uninstall the package that declares it"
    return MisnamedEntryPoint(
        f"The {_origin(entry)} names a spec whose name is {spec_name!r}, not {entry.name!r}: an entry point's name "
        f"must equal its spec's name. Rename the line `{entry.name} = {entry.value}` to `{spec_name} = "
        f"{entry.value}` under [project.entry-points.\"{entry.group}\"] of that package (or set the spec's name to "
        f"{entry.name!r}) and reinstall it, or remove the package: {remove}.", spec_name=spec_name)


@functools.cache
def discovered(kind: str, spec_type: type) -> tuple[Any, ...]:
    """Every spec that installed packages register for `kind`, in entry-point name order. An entry point that
    fails to load or names something other than `spec_type` instances is left out and kept, with its one-line
    error, for `broken_error` (so it stops only the commands that name it)."""
    specs: list[Any] = []
    broken = _BROKEN.setdefault(kind, {})
    broken.clear()
    for entry in _entry_points(kind):
        try:
            items = _loaded_specs(entry, spec_type)
        except PluginError as error:
            broken[entry.name] = error
            if isinstance(error, MisnamedEntryPoint):  # a misnamed one stops the commands that name either name
                broken.setdefault(error.spec_name, error)
            continue
        name, version = _distribution(entry)
        for item in items:
            _ORIGINS[id(item)] = Origin(name, version, entry_point=f"{entry.name} = {entry.value}")
        specs.extend(items)
    return tuple(specs)


def broken(kind: str) -> dict[str, PluginError]:
    """The entry points of `kind` that failed to load (after `discovered`), by entry-point name."""
    return dict(_BROKEN.get(kind, {}))


def broken_error(kind: str, name: str) -> PluginError | None:
    """The one-line error of the broken entry point `name` of `kind`, or None. A command that looks up a name no
    registry holds raises it (the entry point's name is the name its spec would have had)."""
    return _BROKEN.get(kind, {}).get(name)


def unknown_name_error(kind: str, name: str, message: str) -> Exception:
    """The error for a name the registry of `kind` does not hold: the broken plug-in's own one line when an
    entry point of that name failed to load, else `message` (a ValueError) naming any broken ones."""
    error = broken_error(kind, name)
    if error is not None:
        return error
    others = sorted(_BROKEN.get(kind, {}))
    suffix = f" (entry points that failed to load and are not registered: {', '.join(others)})" if others else ""
    return ValueError(message + suffix)


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
        _ORIGINS[id(spec)] = Origin("sfbench-jax", "built-in", module=name)
        specs.append(spec)
    return tuple(sorted(specs, key=display_order))


def register_specs(registry: MutableMapping[str, Any], specs: Iterable[Any], *, kind: str) -> None:
    """Add `specs` (each with a `.name`) to `registry`; a name already taken is a `PluginError` naming both."""
    for spec in specs:
        if spec.name in registry:
            first, second = origin_of(registry[spec.name]), origin_of(spec)
            raise PluginError(f"Two {kind} are registered as {spec.name!r}: one by {first.describe()}, one by "
                              f"{second.describe()} (a plug-in may not replace a built-in or another plug-in). "
                              f"Rename the plug-in's {kind[:-1]}{_in_package(first, second)}, or uninstall one of "
                              "them.")
        registry[spec.name] = spec


def _in_package(first: Origin, second: Origin) -> str:
    """` in package 'NAME'`: where to rename a clashing spec (the plug-in; the later one when both are)."""
    plugin = second if second.entry_point or not first.entry_point else first
    return f" in package {plugin.distribution!r}" if plugin.entry_point else ""


@functools.cache
def preset_packages() -> tuple[str, ...]:
    """The packages that installed plug-ins name for their Hydra presets (group `sfbench_jax.conf`). An entry point
    that names an object rather than a package, or a package that is not installed, is left out (`broken("conf")`
    holds its one-line error): Hydra then names the preset it cannot find."""
    names = []
    broken = _BROKEN.setdefault("conf", {})
    broken.clear()
    for entry in _entry_points("conf"):
        if not entry.value or ":" in entry.value:
            broken[entry.name] = PluginError(f"The {_origin(entry)} must name a package (e.g. 'my_pkg.conf'), not "
                                             f"an object. {_fix(entry)}")
        elif not _is_package(entry.value):
            broken[entry.name] = PluginError(
                f"The {_origin(entry)} names no importable package (a folder with an __init__.py holding model/, "
                f"method/, dataset/ presets). {_fix(entry)}")
        else:
            names.append(entry.value)
    return tuple(names)


def _is_package(name: str) -> bool:
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return False
    return spec is not None and spec.submodule_search_locations is not None


# ----------------------------------------------------------------------------------------------------------------
# The code that defines a spec, fingerprinted (part of every candidate's identity: a changed model retrains)

#: Spec attributes that hold the spec's code (functions and classes), for every kind; WrapperSpec's are followed.
_CODE_ATTRIBUTES = ("config_cls", "is_valid", "module_cls", "variant_id", "applicable", "transform", "model_wrapper",
                    "members", "predictor", "check", "unknown_keys", "sample", "prepare", "apply", "loader")


def _defining_modules(spec: Any) -> set[str]:
    """The modules whose source defines `spec`: the module that binds it (built-ins) and the modules of its
    functions and classes (a wrap-kind method's `WrapperSpec` included)."""
    modules: set[str] = set()
    origin = _ORIGINS.get(id(spec))
    if origin is not None and origin.module:
        modules.add(origin.module)
    if origin is not None and origin.entry_point:
        modules.add(origin.entry_point.split("=", 1)[1].strip().split(":", 1)[0])
    for attribute in _CODE_ATTRIBUTES:
        value = getattr(spec, attribute, None)
        if attribute == "loader" and value is not None and not callable(value):
            continue
        if value is None:
            continue
        if hasattr(value, "members") and hasattr(value, "predictor"):  # a WrapperSpec
            modules |= _defining_modules(value)
            continue
        module = getattr(value, "__module__", None) or getattr(type(value), "__module__", None)
        if module and module != "builtins":
            modules.add(module)
    wrapper = getattr(spec, "wrapper", None)
    if wrapper is not None:
        modules |= _defining_modules(wrapper)
    return modules


def _module_digest(name: str) -> str:
    """SHA-256 (16 hex digits) of a module's source file (or its compiled code where no source is installed)."""
    import hashlib
    import sys

    module = sys.modules.get(name)
    path = getattr(module, "__file__", None)
    try:
        if path is None:
            path = getattr(importlib.util.find_spec(name), "origin", None)
        if path is None:
            raise ValueError(f"{name} has no source file")
        with open(path, "rb") as handle:
            return hashlib.sha256(handle.read()).hexdigest()[:16]
    except (OSError, TypeError, ValueError, ImportError):  # no file (an interactive session): named, not hashed
        return "unreadable"


def code_fingerprint(*specs: Any) -> dict[str, Any]:
    """What identifies the code of `specs` (a model's and a method's): `{"modules": {module: source digest},
    "packages": {"name==version": files digest}}` for the modules that define them and the plug-in distributions
    they came from (`code_identity.distribution_digest`: every file of the distribution where Python imports it,
    so a helper module's edit in an editable install counts though the version stays). Editing one of those files
    (or installing another version of the plug-in) changes it, so a candidate trained by the old code is never
    reused (docs/extending.md, "What a stored candidate is keyed by")."""
    from sfbench_jax.plugins.code_identity import distribution_digest

    modules: set[str] = set()
    packages: dict[str, str] = {}
    for spec in specs:
        modules |= _defining_modules(spec)
        origin = _ORIGINS.get(id(spec))
        if origin is not None and origin.entry_point:
            packages[f"{origin.distribution}=={origin.version}"] = distribution_digest(origin.distribution)
    return {"modules": {name: _module_digest(name) for name in sorted(modules)},
            "packages": dict(sorted(packages.items()))}
