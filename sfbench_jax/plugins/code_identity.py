"""The code that shapes a result, identified: the engine's own source, a plug-in distribution's files and the
versions of the numerical libraries (part of every stored candidate's identity, docs/extending.md "What a stored
candidate is keyed by").

* `engine_source_digest()`: SHA-256 of every module source of the `sfbench_jax` and `phm_kernels` packages as
  imported (computed once per process); `tree_digest(roots)` is the digest itself, for any folders.
* `library_versions()`: the installed JAX, jaxlib, Flax and Optax versions.
* `engine_identity()`: both together, `{"source": digest, "libraries": {name: version}}`.
* `top_level_digest(module)`: SHA-256 of the sources of the top-level package a module belongs to (an external
  model's target, which no distribution need own).
* `distribution_digest(name)`: SHA-256 of the files a distribution's code is imported from: the folders (or single
  modules) of its top-level packages where Python finds them, so an editable install is hashed at the source tree
  its finder maps to, and a regular one at the files its RECORD installed. A version string alone is not enough:
  an editable install keeps its version while its code changes.

Every digest is of file contents and their paths relative to the root, never of modification times, so a copy of
the same tree gets the same digest. This module imports nothing of the engine, so every layer may use it.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import os
from collections.abc import Iterable, Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

#: The numerical libraries whose versions are part of a candidate's identity (a new JAX may train differently).
LIBRARIES = ("jax", "jaxlib", "flax", "optax")
#: The packages whose module sources are the engine (their digest is part of a candidate's identity).
ENGINE_PACKAGES = ("sfbench_jax", "phm_kernels")
_SKIPPED_DIRS = {"__pycache__", ".mypy_cache", ".pytest_cache", ".ruff_cache"}
_SKIPPED_SUFFIXES = (".pyc", ".pyo")


def _files_under(root: Path, suffixes: Sequence[str] | None) -> list[Path]:
    if root.is_file():
        return [root]
    found: list[Path] = []
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in _SKIPPED_DIRS and not d.endswith(".egg-info"))
        for name in files:
            if name.endswith(_SKIPPED_SUFFIXES) or (suffixes is not None and not name.endswith(tuple(suffixes))):
                continue
            found.append(Path(folder) / name)
    return found


def tree_digest(roots: Iterable[Path], *, suffixes: Sequence[str] | None = (".py",)) -> str:
    """SHA-256 (hex) of every file under `roots` (a root may be a single file): each file's path relative to its
    root, prefixed by the root's name, and its content, in path order. `suffixes` keeps only files with those
    endings (None: every file); bytecode caches are always left out."""
    digest = hashlib.sha256()
    entries: list[tuple[str, Path]] = []
    for root in roots:
        root = Path(root)
        for path in _files_under(root, suffixes):
            relative = root.name if path == root else f"{root.name}/{path.relative_to(root).as_posix()}"
            entries.append((relative, path))
    for relative, path in sorted(entries):
        digest.update(relative.encode("utf-8") + b"\0")
        try:
            digest.update(hashlib.sha256(path.read_bytes()).digest())
        except OSError:  # a file that vanished or cannot be read: named, so the digest still differs from a good one
            digest.update(b"unreadable")
    return digest.hexdigest()


def _import_roots(name: str) -> list[Path]:
    """Where Python imports the top-level module or package `name` from (its folders, or its single file)."""
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return []
    if spec is None:
        return []
    if spec.submodule_search_locations:
        return [Path(location) for location in spec.submodule_search_locations]
    return [Path(spec.origin)] if spec.origin and os.path.isfile(spec.origin) else []


def package_roots(names: Iterable[str]) -> list[Path]:
    """The folders (or files) the top-level packages `names` are imported from, in name order."""
    return [root for name in sorted(set(names)) for root in _import_roots(name)]


@functools.cache
def engine_source_digest() -> str:
    """SHA-256 of the `.py` sources of `sfbench_jax` and `phm_kernels` as this process imports them (`engine_roots`;
    once per process: editing the engine while it runs does not change what this process trains with)."""
    return tree_digest(engine_roots())


def engine_roots() -> list[Path]:
    """The folders the engine's packages (`ENGINE_PACKAGES`) are imported from."""
    return package_roots(ENGINE_PACKAGES)


def library_versions() -> dict[str, str]:
    """`{name: version}` of JAX, jaxlib, Flax and Optax ("not installed" where absent; read once per process)."""
    return dict(_library_versions())


@functools.cache
def _library_versions() -> dict[str, str]:
    versions = {}
    for name in LIBRARIES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = "not installed"
    return versions


def engine_identity() -> dict[str, Any]:
    """What identifies the engine that trains and evaluates: `{"source": engine_source_digest(), "libraries":
    library_versions()}`. Equal for two processes exactly when they run the same engine source with the same
    JAX, jaxlib, Flax and Optax."""
    return {"source": engine_source_digest(), "libraries": library_versions()}


def _top_level_names(dist: metadata.Distribution) -> set[str]:
    """The top-level modules a distribution provides: the top-level entries of its RECORD and the modules its
    entry points name (an editable install's RECORD holds only its finder and `.pth`); `top_level.txt` only where
    those name none (it may list folders such as `tests` that Python would find elsewhere)."""
    names: set[str] = set()
    for file in dist.files or ():
        parts = Path(str(file)).parts
        if not parts or parts[0] in ("..", "__pycache__") or parts[0].endswith((".dist-info", ".egg-info", ".pth")):
            continue
        first = parts[0].removesuffix(".py") if len(parts) == 1 else parts[0]
        if not first.startswith("__editable__") and first.isidentifier():
            names.add(first)
    for entry in dist.entry_points:
        names.add(entry.value.split(":", 1)[0].strip().split(".", 1)[0])
    top_level = dist.read_text("top_level.txt")
    if not names and top_level:
        names |= {line.strip() for line in top_level.splitlines() if line.strip()}
    return names


@functools.cache
def distribution_digest(name: str) -> str:
    """SHA-256 of the files of the installed distribution `name` where Python imports them from (every file of
    its top-level packages, bytecode caches left out; once per process). "not installed" if there is no such
    distribution, "no files" if none of its modules can be found."""
    try:
        dist = metadata.distribution(name)
    except metadata.PackageNotFoundError:
        return "not installed"
    roots = package_roots(_top_level_names(dist))
    return tree_digest(roots, suffixes=None) if roots else "no files"


@functools.cache
def top_level_digest(module: str) -> str:
    """SHA-256 of the `.py` sources of the top-level package (or single module) that `module` belongs to, where
    Python imports it from (e.g. an external model's `model.target=my_pkg.forecast:predict`: all of `my_pkg`);
    "no files" if it cannot be found. Once per process."""
    roots = package_roots([module.split(".", 1)[0]])
    return tree_digest(roots) if roots else "no files"


def clear_caches() -> None:
    """Forget the digests computed so far (for a process that changes installed code, e.g. a test)."""
    engine_source_digest.cache_clear()
    _library_versions.cache_clear()
    distribution_digest.cache_clear()
    top_level_digest.cache_clear()
