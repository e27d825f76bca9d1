"""Atomic file writes shared by every layer that writes (data caches, the candidate store, reports): write to a
temporary file in the target folder, then rename into place, so a crash never leaves a half-written file and an
existing file is replaced only by a complete one. Also the atomic swap of two folders (`exchange_directories`) that
replaces a whole run folder in one step."""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd


def ensure_writable_dir(path: Path, *, what: str = "run directory",
                        fix: str = "Choose another folder with hydra.run.dir=PATH.") -> Path:
    """Create `path` if needed and check it is a writable folder.

    Raises:
        PermissionError: naming the folder (`what`) and the fix.
    """
    path = Path(path)
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise PermissionError(f"Cannot create the {what} {path}: {error}. {fix}") from error
    if not path.is_dir() or not os.access(path, os.W_OK):
        raise PermissionError(f"The {what} {path} is not writable. {fix}")
    try:  # os.access trusts the mode bits: a read-only mount (or any folder, for root) needs a real write
        handle, probe = tempfile.mkstemp(dir=path, prefix=".write-probe-")
        os.close(handle)
        os.unlink(probe)
    except OSError as error:
        raise PermissionError(f"The {what} {path} is not writable ({error.strerror}). {fix}") from error
    return path


def _current_umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def write_atomically(target: Path, write: Callable[[Path], object]) -> Path:
    """Call `write(temporary_path)` and rename the result onto `target`."""
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    os.close(handle)
    try:
        write(Path(temporary))
        os.chmod(temporary, 0o666 & ~_current_umask())  # mkstemp creates 0600; use normal permissions
        os.replace(temporary, target)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    return target


def write_csv(frame: pd.DataFrame, target: Path) -> Path:
    """Atomically write a CSV (no index)."""
    return write_atomically(target, lambda path: frame.to_csv(path, index=False))


def write_parquet(frame: pd.DataFrame, target: Path) -> Path:
    """Atomically write a Parquet file (no index)."""
    return write_atomically(target, lambda path: frame.to_parquet(path, index=False))


def write_json(payload: dict[str, Any], target: Path) -> Path:
    """Atomically write indented JSON."""
    return write_atomically(target, lambda path: path.write_text(json.dumps(payload, indent=2, default=str)))


def write_text(text: str, target: Path) -> Path:
    """Atomically write a text file."""
    return write_atomically(target, lambda path: path.write_text(text))


#: `renameat2` flag that swaps two paths atomically (linux/fs.h).
_RENAME_EXCHANGE = 2
_AT_FDCWD = -100


def exchange_directories(first: Path, second: Path) -> None:
    """Swap two folders of one file system in one atomic step (Linux `renameat2(RENAME_EXCHANGE)`): at every
    moment each path names one complete folder, the old or the new.

    Raises:
        OSError: the system or file system cannot swap atomically (errno ENOSYS, EINVAL, ...), or either path
            is missing; nothing was changed.
    """
    import ctypes
    import errno

    libc = ctypes.CDLL(None, use_errno=True)
    renameat2 = getattr(libc, "renameat2", None)
    if renameat2 is None:
        raise OSError(errno.ENOSYS, "renameat2 is not available in this C library")
    renameat2.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    status = renameat2(_AT_FDCWD, os.fsencode(first), _AT_FDCWD, os.fsencode(second), _RENAME_EXCHANGE)
    if status != 0:
        code = ctypes.get_errno()
        raise OSError(code, f"cannot swap {first} and {second}: {os.strerror(code)}")


def fsync_path(path: Path) -> None:
    """Flush a file's (or folder's) content to disk, so a rename that follows survives a power loss."""
    descriptor = os.open(path, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)
