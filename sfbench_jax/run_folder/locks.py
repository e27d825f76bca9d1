"""A run folder's writer lock: one writer per folder (docs/reliability.md).

`lock_run_folder` takes an exclusive `flock` on `.NAME.lock` beside the folder, from the claim (before Hydra writes
there, in the `sfbench` command) to the seal and swap; the operating system releases it when the process ends,
kill -9 included. The folder is the resolved one (symbolic links followed), so a writer through a link and one
through the real path take one lock. A second writer is refused in one line naming the folder and the holder
(`RunFolderBusyError`); a file system without `flock` (NFS without lockd, Lustre without `-o flock`) is refused in
one line with the fix, before anything is written (`NoFolderLockError`). `live_writer` tells a reader who is
writing a folder now.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import socket
import time
from pathlib import Path

from sfbench_jax.storage.atomic import ensure_writable_dir

LOCK_MARK = ".lock"


class RunFolderBusyError(ValueError):
    """Another process holds the folder's writer lock (it is writing a run there now)."""


class NoFolderLockError(ValueError):
    """The file system of a run folder cannot take its writer lock (`flock` unsupported there)."""


#: errno values of `flock` on a file system that does not implement it (NFS without lockd, Lustre without -o flock).
_NO_FLOCK = {errno.ENOLCK, errno.EOPNOTSUPP, errno.ENOTSUP, errno.ENOSYS, errno.EINVAL}


#: Writer locks this process holds: lock file -> open descriptor (closing it releases the lock).
_HELD_LOCKS: dict[Path, int] = {}


def lock_file(target: Path) -> Path:
    """The writer lock of a run folder: `.NAME.lock` beside the folder it resolves to (symbolic links followed, so
    every path to one folder names one lock; hidden, so never read as a run)."""
    target = Path(target).expanduser().resolve()
    return target.parent / f".{target.name}{LOCK_MARK}"


def holds_lock(target: Path) -> bool:
    """Whether this process holds the writer lock of the run folder `target`."""
    return lock_file(target) in _HELD_LOCKS


def _holder(descriptor: int) -> str:
    try:
        os.lseek(descriptor, 0, os.SEEK_SET)
        holder = json.loads(os.read(descriptor, 4096).decode())
        return f"pid {holder['pid']} on {holder['host']}, started {holder['started']}"
    except (OSError, ValueError, KeyError, TypeError):
        return "a process that has not yet said who it is"


def live_writer(target: Path) -> str | None:
    """Who holds the writer lock of the run folder `target` now (`pid N on HOST, started TIME`), None when no
    process does. Reads the lock file only (a shared lock taken and dropped at once; nothing is created)."""
    try:
        descriptor = os.open(lock_file(target), os.O_RDONLY)
    except OSError:
        return None
    try:
        fcntl.flock(descriptor, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return _holder(descriptor)
    except OSError:
        return None
    else:
        fcntl.flock(descriptor, fcntl.LOCK_UN)
        return None
    finally:
        os.close(descriptor)


def lock_run_folder(target: Path) -> Path:
    """Take the exclusive writer lock of the run folder `target` for this process (again: a no-op).

    Returns:
        The lock file.

    Raises:
        RunFolderBusyError: another process holds it (the folder and the holder named, with the fix).
        PermissionError: the lock file cannot be created beside the folder.
    """
    path = lock_file(target)
    if path in _HELD_LOCKS:
        return path
    while True:  # the lock file is removed at release: lock the file the path names now, not an unlinked one
        descriptor = _open_lock(path)
        try:
            _flock(descriptor, path, Path(target))
        except BlockingIOError:
            holder = _holder(descriptor)
            os.close(descriptor)
            raise RunFolderBusyError(
                f"The run folder {Path(target)} is being written by another run ({holder}); two runs never write "
                "one folder. Wait for that run to end (or stop it), or choose another folder with "
                "hydra.run.dir=PATH.") from None
        except NoFolderLockError:
            os.close(descriptor)
            path.unlink(missing_ok=True)
            raise
        try:
            same = os.stat(path).st_ino == os.fstat(descriptor).st_ino
        except FileNotFoundError:
            same = False
        if same:
            break
        os.close(descriptor)
    stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    os.ftruncate(descriptor, 0)
    os.write(descriptor, json.dumps({"pid": os.getpid(), "host": socket.gethostname(), "started": stamp}).encode())
    _HELD_LOCKS[path] = descriptor
    return path


def _flock(descriptor: int, path: Path, folder: Path) -> None:
    """`flock(LOCK_EX | LOCK_NB)` on an open lock file; a file system without `flock` is `NoFolderLockError`.

    Raises:
        BlockingIOError: another process holds the lock.
        NoFolderLockError: the file system does not implement `flock` (the folder and the fix named).
    """
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        raise
    except OSError as error:
        if error.errno not in _NO_FLOCK:
            raise
        raise NoFolderLockError(
            f"Cannot lock the folder {folder}: its file system does not support flock ({error.strerror}; e.g. NFS "
            "without lockd, Lustre without -o flock), and sfbench writes a run folder only under its lock. Nothing "
            "was written. Use a folder on a file system with flock (a local disk, NFS with lockd, Lustre mounted "
            "with -o flock: docs/cluster.md), e.g. hydra.run.dir=PATH or hydra.sweep.dir=PATH.") from None


def check_folder_locking(folder: Path) -> None:
    """Check that the file system of `folder` (created if missing) implements `flock`: lock and release a probe
    file there (a sweep's folder, before its jobs start).

    Raises:
        NoFolderLockError: it does not (the folder and the fix named).
        PermissionError: the folder cannot be created or written.
    """
    created = not Path(folder).exists()
    folder = ensure_writable_dir(Path(folder), what="folder")
    probe = folder / f".lock-probe-{os.getpid()}"
    descriptor = _open_lock(probe)
    try:
        try:
            _flock(descriptor, probe, folder)
        finally:
            os.close(descriptor)
            probe.unlink(missing_ok=True)
    except NoFolderLockError:
        if created:
            remove_if_empty(folder)  # the folder this check created: nothing is left behind
        raise


def remove_if_empty(folder: Path) -> None:
    """Remove `folder` if it is an empty folder (one a refused command created); anything else is left."""
    with contextlib.suppress(OSError):
        Path(folder).rmdir()


def _open_lock(path: Path) -> int:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        return os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as error:
        raise PermissionError(f"Cannot create the run folder's lock file {path} ({error.strerror}). Choose "
                              "another folder with hydra.run.dir=PATH.") from error


def unlock_run_folder(target: Path) -> None:
    """Release this process's writer lock of `target` and remove its lock file (nothing if it holds none; a
    killed writer's lock file stays, unlocked, until the next writer's release)."""
    path = lock_file(target)
    descriptor = _HELD_LOCKS.pop(path, None)
    if descriptor is not None:
        path.unlink(missing_ok=True)  # while still locked: a writer that opened it meanwhile retries (see above)
        os.close(descriptor)
