"""Switching JAX's persistent compilation cache on for a command (a process-wide setting, so it belongs to
the shell, not to a library function)."""

from __future__ import annotations

from pathlib import Path

import jax
from jax.experimental.compilation_cache import compilation_cache

from sfbench_jax.config import RunConfig
from sfbench_jax.evaluation.program_cache import use_program_cache
from sfbench_jax.storage.atomic import ensure_writable_dir

#: Programs that compile faster than this are not worth a cache file (JAX's default is 1 s, which would
#: leave out the season-selection and bootstrap programs of a SeasonalNaive run).
MIN_CACHED_COMPILE_SECONDS = 0.1

#: Compiled evaluation programs (`evaluation.program_cache`: no trace or lowering on a hit), beside `xla/`.
PROGRAMS_FOLDER = "programs"


def use_compilation_cache(cfg: RunConfig) -> Path | None:
    """Point JAX's persistent compilation cache at `<cache_dir>/xla` and the evaluation program cache at
    `<cache_dir>/programs`, or switch both off (`compilation_cache=false` or no `cache_dir`). Returns the JAX cache
    folder in use.

    Raises:
        PermissionError: the folder cannot be created or written (before any work).
    """
    folder = None
    if cfg.compilation_cache and cfg.cache_dir is not None:
        folder = ensure_writable_dir(Path(cfg.cache_dir).expanduser() / "xla", what="compilation cache folder",
                                     fix="Set cache_dir=PATH to a writable folder, or compilation_cache=false.")
    point_jax_cache(None if folder is None else str(folder))
    use_program_cache(None if folder is None else folder.parent / PROGRAMS_FOLDER)
    return folder


def point_jax_cache(folder: str | None) -> None:
    """Point JAX's persistent compilation cache at `folder` (None: off), caching programs that compile in
    `MIN_CACHED_COMPILE_SECONDS` or more; a no-op when it already points there."""
    # an earlier run in the same process may have set another (jax declares the option at run time: the ignore)
    if jax.config.jax_compilation_cache_dir != folder:  # type: ignore[attr-defined]
        compilation_cache.set_cache_dir(folder)
        compilation_cache.reset_cache()
    jax.config.update("jax_persistent_cache_min_compile_time_secs", MIN_CACHED_COMPILE_SECONDS)
