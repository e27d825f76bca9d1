"""A persistent cache of compiled chunk kernels (the fused evaluation program), so that a warm process loads the
executable instead of tracing and lowering the kernel again.

JAX's persistent compilation cache (`cache_dir/xla`) skips XLA's compilation only: its key is the lowered program, so
every process still traces and lowers the fused kernel (a large share of a short SeasonalNaive `sfbench eval=quick`
process: docs/speed.md "Measured constants"). This cache is keyed on what determines the program instead, and holds the
compiled executable itself, so a hit runs the very executable a fresh compilation gave: the numbers are the same bit for
bit.

The key (`program_key`) is a SHA-256 over
* the program: its kind, the predictor's description (only a predictor built by `evaluation.predict.predict_fn` has
  one: its model's graph definition, with every static attribute), the scenarios, the fault context, the window
  shape and the channel-sparse flag, the RNG mode and the block size;
* the arguments: their tree structure, shapes, dtypes, weak types and shardings, and the mesh's devices;
* the platform: Python, JAX, jaxlib, Flax and NumPy versions, the backend's platform and version, the host CPU's
  flags, `XLA_FLAGS` and every `JAX_*` variable, and every `jax.config` value;
* the code it is made of: the file of every module whose classes or functions the fields above name (the model's
  classes, the faults' functions), of each one's top-level package, and of the engine's packages (`sfbench_jax` and
  the versioned ones), so another checkout or installation of any of them is another key; the other modules a
  process has loaded (a launcher's, a test runner's, the report's) are not, so processes that differ only in
  them share their entries.
A program without a description (a method's wrapper, a row-aware or host model) is never cached.

The code is checked on every hit: an entry records every module that was loaded when its program was traced
(path, size, modification time and inode of its file) and is used only while each of those files is unchanged, so an
edited or upgraded module (the package's own, a plug-in's or a library's) makes the entry stale; the program is then
traced and compiled again and the entry replaced. An entry is written only from a fresh compilation (an executable
that JAX itself loaded from its cache, or one that already ran, cannot be serialised again intact), atomically, and
only after the written bytes were loaded back and ran the first chunk to the fresh program's outputs bit for bit. An
entry that cannot be read or loaded is ignored.

Costs: a miss compiles with JAX's cache off, so the first run after a code change pays XLA's whole compilation once
(not a load from JAX's cache); entries are not evicted (like JAX's cache: delete the folder to reclaim it). Entries
are pickles that hold machine code: the folder is trusted like JAX's own cache folder, and an entry is loaded only
when it and its folder belong to the user running the process and nobody else can write them (`trusted_entry`).
The `sfbench` command switches it on beside JAX's cache (`cli.compilation_cache`: `cache_dir/programs`, off with
`compilation_cache=false`); library calls do not use it unless `use_program_cache` is called.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import os
import pickle
import sys
import tempfile
import weakref
from collections.abc import Iterable, Iterator
from importlib import metadata
from pathlib import Path
from typing import Any

import jax
import numpy as np
from jax.experimental import serialize_executable

from sfbench_jax.predictors.protocol import ChannelIndependentPredictor

#: Format of an entry; a change makes every older entry a miss.
FORMAT = 1

#: The folder in use (None: off).
_FOLDER: list[Path | None] = [None]

#: Distributions whose versions enter the key.
VERSIONED = ("jax", "jaxlib", "flax", "numpy", "ml_dtypes")

#: Descriptions of predict functions, by the function object itself (`describe`): a wrapper around a described
#: function (even one made with `functools.wraps`, which copies attributes) is another object, so it has none.
#: What the cache handles untyped, and why: a compiled program (`Compiled` from tracing, but what jax's unannotated
#: `deserialize_and_load` returns when loaded), its arguments and outputs (pytrees of arrays: no static pytree type),
#: the function a description is keyed by (a jitted function or a predictor) and the description (picklable data).
Pytree = Any
_DESCRIPTIONS: weakref.WeakKeyDictionary[Any, Any] = weakref.WeakKeyDictionary()  # function -> description


def use_program_cache(folder: Path | None) -> None:
    """Keep compiled chunk kernels in `folder` (None: off)."""
    _FOLDER[0] = None if folder is None else Path(folder)


def program_cache_folder() -> Path | None:
    """The folder in use, or None."""
    return _FOLDER[0]


def describe(function: Any, description: Any) -> None:  # see `Pytree`
    """Record that `function`'s traced program is determined by `description` (picklable) and the code."""
    _DESCRIPTIONS[function] = description


def describe_predictor(predict: Any) -> Any:  # a predictor -> its description (see `Pytree`)
    """A picklable description of a predictor that determines its traced program, or None."""
    if isinstance(predict, ChannelIndependentPredictor):
        full, channels = describe_predictor(predict.full), describe_predictor(predict.channels)
        return None if full is None or channels is None else ("channel_independent", full, channels)
    try:
        return _DESCRIPTIONS.get(predict)
    except TypeError:  # not weak-referenceable or not hashable: not described
        return None


def _argument_layout(arguments: tuple[Pytree, ...]) -> tuple[str, tuple[tuple[Any, ...], ...]]:  # picklable facts
    leaves, tree = jax.tree.flatten(arguments)
    layout: list[tuple[tuple[Any, ...], str, bool, str]] = []  # (a leaf's shape, dtype, ...)
    for leaf in leaves:
        sharding = getattr(leaf, "sharding", None)
        layout.append((tuple(np.shape(leaf)), str(getattr(leaf, "dtype", type(leaf))),
                       bool(getattr(leaf, "weak_type", False)), repr(getattr(sharding, "spec", sharding))))
    return str(tree), tuple(layout)


def _platform(mesh: jax.sharding.Mesh) -> tuple[Any, ...]:  # picklable platform facts
    devices = list(mesh.devices.flat)
    client = devices[0].client
    versions: list[tuple[str, str | None]] = []
    for name in VERSIONED:
        try:
            versions.append((name, metadata.version(name)))
        except metadata.PackageNotFoundError:
            versions.append((name, None))
    environment = sorted((key, value) for key, value in os.environ.items()
                         if key == "XLA_FLAGS" or key.startswith("JAX_"))
    config = sorted((key, repr(value)) for key, value in jax.config.values.items())
    return (sys.version, tuple(versions), client.platform, client.platform_version, _cpu_flags(),
            tuple((device.id, device.device_kind) for device in devices), mesh.axis_names,
            tuple(environment), tuple(config))


def _cpu_flags() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as handle:
            return next((line for line in handle if line.startswith(("flags", "Features"))), "")
    except OSError:
        return ""


def program_key(program: Any, rng_mode: str, block_size: int, mesh: jax.sharding.Mesh,  # program: engine's
                arguments: tuple[Pytree, ...]) -> str | None:  # WindowProgram (engine.py sits above this module)
    """The entry's key (see the module docstring), or None when the program cannot be described."""
    predict = getattr(program, "predict", None)
    description = describe_predictor(predict) if predict is not None else None
    if description is None:
        return None
    fields = (type(program).__module__, type(program).__qualname__, description, program.scenarios, program.ctx,
              program.shape, getattr(program, "channel_sparse", None))
    pickled = io.BytesIO()
    pickler = _NamingPickler(pickled)
    try:
        pickler.dump(fields)
        payload = pickle.dumps((FORMAT, pickled.getvalue(), rng_mode, block_size, _argument_layout(arguments),
                                _platform(mesh), code_locations(pickler.modules)), protocol=5)
    except Exception:  # noqa: BLE001 - anything that does not pickle (a closure, a lambda) is not cached
        return None
    return hashlib.sha256(payload).hexdigest()


#: Packages whose code every evaluation program is made of: where they are loaded from enters the key.
ENGINE_PACKAGES = ("sfbench_jax", *VERSIONED)


class _NamingPickler(pickle.Pickler):
    """Pickles the key's fields and notes the module of every class and function they name (by reference, as
    pickle stores them): the code that traces into the program besides the engine's."""

    def __init__(self, file: io.BytesIO) -> None:
        super().__init__(file, protocol=5)
        self.modules: set[str] = set()

    def reducer_override(self, obj: Any) -> Any:  # any object pickle meets; NotImplemented: pickle it as usual
        module = getattr(obj, "__module__", None) if callable(obj) else None  # a class, a function
        if isinstance(module, str):
            self.modules.add(module)
        return NotImplemented


def code_locations(modules: Iterable[str]) -> tuple[tuple[str, str | None], ...]:
    """`(name, file)` of each named module, of its top-level package and of `ENGINE_PACKAGES` (None: not loaded,
    or no file)."""
    names = {*ENGINE_PACKAGES, *modules, *(module.split(".")[0] for module in modules)}
    return tuple(sorted((name, getattr(sys.modules.get(name), "__file__", None)) for name in names))


#: A module file's `(size, modification time, inode)`; the modules loaded when a program was traced, with them.
FileState = tuple[int, int, int]
LoadedCode = tuple[tuple[str, str, FileState | None], ...]


def _file_state(path: str) -> FileState | None:
    try:
        stat = os.stat(path)
    except OSError:
        return None
    return stat.st_size, stat.st_mtime_ns, stat.st_ino


def loaded_code() -> LoadedCode:
    """Every loaded module with a file: `(name, path, (size, modification time, inode))`."""
    modules = sorted((name, file) for name, module in list(sys.modules.items())
                     if isinstance(file := getattr(module, "__file__", None), str))
    return tuple((name, path, _file_state(path)) for name, path in modules)


def code_unchanged(code: LoadedCode) -> bool:
    """Whether every module file recorded with an entry is as it was: the same size, modification time and inode,
    or still absent when it was already gone while the program was traced (a module imported from a temporary
    folder since deleted: no process can import a changed copy from there without the file reappearing)."""
    return all(_file_state(path) == state for _, path, state in code)


#: What `load` returns for a program recorded as not storable (compile it the usual way, with JAX's cache).
UNSTORABLE = "unstorable"


def load(key: str, mesh: jax.sharding.Mesh) -> Any | None:  # a compiled program (see `Pytree`), UNSTORABLE
    """The compiled program stored under `key` if its code is unchanged, `UNSTORABLE` if it was recorded as a
    program that cannot be stored (with the same code), else None."""
    folder = program_cache_folder()
    if folder is None:
        return None
    path = folder / f"{key}.bin"
    if not trusted_entry(path):
        return None
    try:
        with open(path, "rb") as handle:
            entry = pickle.load(handle)
        if entry.get("format") != FORMAT or not code_unchanged(entry["code"]):
            return None
        if entry["executable"] is None:
            return UNSTORABLE
        serialized, in_tree, out_tree = entry["executable"]
        return serialize_executable.deserialize_and_load(serialized, in_tree, out_tree,
                                                         execution_devices=list(mesh.devices.flat))
    except Exception:  # noqa: BLE001 - an unreadable or unloadable entry is a miss (and is replaced)
        return None


def trusted_entry(path: Path) -> bool:
    """Whether an entry may be unpickled: it and its folder belong to this user and nobody else can write them
    (an entry is code, so a file another account could have planted is never loaded; it is a miss and replaced)."""
    try:
        states = (os.stat(path), os.stat(path.parent))
    except OSError:
        return False
    return all(state.st_uid == os.getuid() and not state.st_mode & 0o002 for state in states)


@contextlib.contextmanager
def fresh_compilation() -> Iterator[None]:
    """JAX's persistent cache off for the block (its executables do not serialise again intact)."""
    from jax.experimental.compilation_cache import compilation_cache

    folder = jax.config.jax_compilation_cache_dir  # type: ignore[attr-defined]  # jax declares its options at run time
    if folder is None:
        yield
        return
    compilation_cache.set_cache_dir(None)
    compilation_cache.reset_cache()
    try:
        yield
    finally:
        compilation_cache.set_cache_dir(folder)
        compilation_cache.reset_cache()


def _same_outputs(first: Pytree, second: Pytree) -> bool:
    left, right = jax.device_get(jax.tree.leaves(first)), jax.device_get(jax.tree.leaves(second))
    if len(left) != len(right):
        return False
    return all(a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()
               for a, b in zip(left, right, strict=True))


def store(key: str, compiled: jax.stages.Compiled, code: LoadedCode, mesh: jax.sharding.Mesh,
          arguments: tuple[Pytree, ...]) -> bool:
    """Serialise a freshly compiled program under `key`, after checking that the bytes load back and give the same
    outputs on `arguments` bit for bit. Returns whether it was stored. A program that cannot be (a host callback, an
    executable that already ran, whose CPU sort kernels no longer serialise) is recorded as such, so later runs with
    the same code compile it the usual way (with JAX's cache) instead of again without it."""
    folder = program_cache_folder()
    if folder is None:
        return False
    try:
        executable = serialize_executable.serialize(compiled)
        loaded = serialize_executable.deserialize_and_load(  # type: ignore[misc]  # serialize() is unannotated
            *executable, execution_devices=list(mesh.devices.flat))
        if not _same_outputs(compiled(*arguments), loaded(*arguments)):
            executable = None
    except Exception:  # noqa: BLE001 - a program that cannot be serialised is not cached
        executable = None
    try:
        _write(folder, key, pickle.dumps({"format": FORMAT, "code": code, "executable": executable}, protocol=5))
    except Exception:  # noqa: BLE001 - an unwritable folder only leaves the program out
        return False
    return executable is not None


def _write(folder: Path, key: str, entry: bytes) -> None:
    """Write an entry atomically (temporary file, then rename)."""
    folder.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=folder, prefix=f".{key}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "wb") as file:
            file.write(entry)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(temporary, 0o666 & ~umask)  # mkstemp creates 0600; use normal permissions
        os.replace(temporary, folder / f"{key}.bin")
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
