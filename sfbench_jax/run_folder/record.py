"""Run folders are complete or visibly not (docs/reliability.md): the completion record, its verification, and the
claim a run makes on its folder.

A run writes its files and then, last and atomically, its completion record `run_record.json`: the size and SHA-256 of
every file of the run (`RECORDED_FILES` that are present) and the run's key. `verify_record` is the one check every
reader makes (`sfbench-collect`, `sfbench-report`, the stored-run rebuilds and the MCP tools, all through
`sfbench_jax.run_folder.stored_runs.load_run`): a folder without a readable record, or whose files differ from it, is
refused with a `DamagedRunError` that names the folder, the file and the fix.

`claim_run_folder` is how a run takes its folder. A folder that holds a completed run (it has a record) is never
written into: without `overwrite` the run stops before any work (`RunFolderTakenError`); with it the new run is
written into a staging folder beside the target (`.NAME.staging-PID`) and `RunFolder.commit` swaps the two in one
atomic step (Linux `renameat2(RENAME_EXCHANGE)`), so at every moment the target holds the complete earlier run or
the complete new one; the earlier run is then kept in `.NAME.replaced-TIME-PID` beside it. A folder without a
record (a run that was killed or failed there) is re-used: the files the earlier attempt left are removed first.
Folders whose name starts with a dot (staging, replaced, `.hydra`) are never read as runs.

One writer per folder: `lock_run_folder` takes an exclusive `flock` on `.NAME.lock` beside the folder, from the
claim (before Hydra writes there, in the `sfbench` command) to the seal and swap; the operating system releases
it when the process ends, kill -9 included. The folder is the resolved one (symbolic links followed), so a writer
through a link and one through the real path take one lock. A second writer is refused in one line naming the
folder and the holder (`RunFolderBusyError`); a file system without `flock` (NFS without lockd, Lustre without
`-o flock`) is refused in one line with the fix, before anything is written (`NoFolderLockError`). The record
covers exactly the files the run wrote (`write_record(names=...)`).

Nothing here knows what the files mean; `stored_runs` checks the numbers of a verified folder.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import json
import os
import shutil
import socket
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sfbench_jax.storage.atomic import ensure_writable_dir, exchange_directories, fsync_path, write_atomically

RECORD_FILE = "run_record.json"
RECORD_FORMAT = "sfbench-run-record/1"
#: What a run writes (removed from a folder whose run never completed, before a new run writes into it).
RUN_OUTPUTS = ("summary.csv", "per_window.parquet", "candidates.csv", "training_curves.parquet",
               "scenario_heatmap.png", "manifest.json")
#: What a record covers when present: the outputs and a multirun job's `cell.json` (its overrides).
JOB_FILE = "cell.json"
RECORDED_FILES = (*RUN_OUTPUTS, JOB_FILE)
STAGING_MARK, REPLACED_MARK, LOCK_MARK = ".staging-", ".replaced-", ".lock"
#: errno values of a system or file system that cannot swap two folders atomically.
_NO_EXCHANGE = {errno.ENOSYS, errno.EINVAL, errno.ENOTSUP, errno.EOPNOTSUPP}
FIX = "Re-run the job (into a new folder, or into this one with overwrite=true) or delete the folder."


class DamagedRunError(ValueError):
    """A run folder without a valid completion record, or whose files differ from it.

    Attributes:
        folder: the run folder.
        file: the file at fault (the record itself when it is missing or unreadable).
        problem: what is wrong with it.
    """

    def __init__(self, folder: Path, file: str, problem: str, fix: str = FIX) -> None:
        self.folder, self.file, self.problem = Path(folder), file, problem
        super().__init__(f"Run folder {folder} is damaged: {file} {problem}. {fix}")


class RunInProgressError(DamagedRunError):
    """A run folder without a completion record whose writer is still running (it holds the folder's lock): not
    damaged, not complete yet.

    Attributes:
        writer: `pid N on HOST, started TIME` of the process writing it.
    """

    def __init__(self, folder: Path, writer: str) -> None:
        self.writer = writer
        ValueError.__init__(self, f"Run folder {folder} is being written now by a running sfbench ({writer}): it has "
                                  "no completion record yet. Wait for that run to end and read the folder again (or "
                                  "stop that run).")
        self.folder, self.file, self.problem = Path(folder), RECORD_FILE, f"is not written yet ({writer} is running)"


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


class RunFolderTakenError(ValueError):
    """The folder already holds a completed run and `overwrite` was not given."""


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


def _holder(descriptor: int) -> str:
    try:
        os.lseek(descriptor, 0, os.SEEK_SET)
        holder = json.loads(os.read(descriptor, 4096).decode())
        return f"pid {holder['pid']} on {holder['host']}, started {holder['started']}"
    except (OSError, ValueError, KeyError, TypeError):
        return "a process that has not yet said who it is"


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


def file_digest(path: Path) -> dict[str, Any]:
    """`{"bytes": size, "sha256": hex digest}` of a file."""
    digest = hashlib.sha256()
    with Path(path).open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return {"bytes": Path(path).stat().st_size, "sha256": digest.hexdigest()}


def _record_checksum(record: Mapping[str, Any]) -> str:
    body = {name: value for name, value in record.items() if name != "record_sha256"}
    return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()


def write_record(directory: Path, *, run_key: Mapping[str, Any], names: Iterable[str] | None = None) -> Path:
    """Write the completion record of a run folder whose files are all written (the last write of a run).

    Args:
        directory: the run folder.
        run_key: the run's key (JSON-able), kept as its identity.
        names: the files the run wrote, all of which the record covers (default: every `RECORDED_FILES` entry
            present, for records of folders written elsewhere).
    """
    directory = Path(directory)
    names = [n for n in RECORDED_FILES if (directory / n).is_file()] if names is None else list(names)
    for name in names:
        fsync_path(directory / name)  # the files reach the disk before the record that vouches for them
    record: dict[str, Any] = {
        "format": RECORD_FORMAT, "run_key": dict(run_key),
        "run_id": hashlib.sha256(json.dumps(dict(run_key), sort_keys=True).encode()).hexdigest()[:16],
        "written_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "files": {name: file_digest(directory / name) for name in names},
    }
    record["record_sha256"] = _record_checksum(record)

    def write(path: Path) -> None:
        path.write_text(json.dumps(record, indent=2, sort_keys=True))
        fsync_path(path)

    target = write_atomically(directory / RECORD_FILE, write)
    fsync_path(directory)
    return target


def holds_completed_run(directory: Path) -> bool:
    """Whether a folder holds a completed run (a completion record, valid or not)."""
    return (Path(directory) / RECORD_FILE).is_file()


def read_record(directory: Path) -> dict[str, Any]:
    """The completion record of a run folder, unverified against the files.

    Raises:
        RunInProgressError: there is no record yet and a running sfbench is writing the folder (named).
        DamagedRunError: the record is missing, unreadable or not one sfbench wrote.
    """
    path = Path(directory) / RECORD_FILE
    if not path.is_file():
        writer = live_writer(directory)
        if writer is not None:
            raise RunInProgressError(directory, writer)
        raise DamagedRunError(directory, RECORD_FILE, "is missing: the run never completed (it was killed or "
                              "failed while writing), or it was written by a version without completion records")
    try:
        record = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise DamagedRunError(directory, RECORD_FILE, f"cannot be read ({error})") from error
    if not (isinstance(record, dict) and record.get("format") == RECORD_FORMAT
            and isinstance(record.get("files"), dict) and record.get("record_sha256") == _record_checksum(record)):
        raise DamagedRunError(directory, RECORD_FILE, "is not a valid completion record (changed or cut)")
    return record


def verify_record(directory: Path) -> dict[str, Any]:
    """Check every file a run folder's record lists (size, then SHA-256) and that no run file lies there unlisted.

    Returns:
        The record.

    Raises:
        DamagedRunError: naming the folder, the first file at fault and the fix.
    """
    directory = Path(directory)
    record = read_record(directory)
    for name, expected in sorted(record["files"].items()):
        path = directory / name
        if not path.is_file():
            raise DamagedRunError(directory, name, "is missing (its completion record lists it)")
        actual = file_digest(path)
        if actual["bytes"] != expected.get("bytes"):
            raise DamagedRunError(directory, name, f"does not match its completion record ({actual['bytes']} bytes, "
                                  f"recorded {expected.get('bytes')}): it was cut or changed after the run finished")
        if actual["sha256"] != expected.get("sha256"):
            raise DamagedRunError(directory, name, "does not match its completion record (same size, different "
                                  "SHA-256): it was changed after the run finished")
    stray = [name for name in RECORDED_FILES if name not in record["files"] and (directory / name).is_file()]
    if stray:
        raise DamagedRunError(directory, stray[0], "is not listed in its completion record (a file of another run?)")
    return record


def describe_record(directory: Path) -> str:
    """`dataset / architecture / method (eval seed S)` of the run a folder's record names ('' if unreadable)."""
    try:
        key = read_record(directory)["run_key"]
    except DamagedRunError:
        return ""
    return f"{key.get('dataset')} / {key.get('architecture')} / {key.get('method')} (eval seed {key.get('eval_seed')})"


def real_folder(target: Path) -> Path:
    """`target`, or the folder it links to when it is a symbolic link: a run replaces the folder itself, never the
    link (and takes the lock every path to that folder takes, `lock_file`)."""
    target = Path(target)
    return target.resolve() if target.is_symlink() else target


def staging_folder(target: Path) -> Path:
    """The folder this process writes a replacing run into: `.NAME.staging-PID` beside `target`."""
    target = Path(target)
    return target.parent / f".{target.name}{STAGING_MARK}{os.getpid()}"


def target_of_staging(path: Path) -> Path | None:
    """The target of this process's staging folder `path` (None when `path` is not one)."""
    path = Path(path)
    suffix = f"{STAGING_MARK}{os.getpid()}"
    if path.name.startswith(".") and path.name.endswith(suffix) and len(path.name) > len(suffix) + 1:
        return path.parent / path.name[1:-len(suffix)]
    return None


def check_run_folder(target: Path, *, overwrite: bool) -> None:
    """Refuse, before any work, a folder that cannot be written or holds a completed run (without `overwrite`).

    Raises:
        RunFolderTakenError: the folder holds a completed run and `overwrite` is false.
        PermissionError: the folder cannot be created or written.
    """
    target = Path(target)
    if holds_completed_run(target) and not overwrite:
        what = describe_record(target)
        raise RunFolderTakenError(
            f"The run folder {target} already holds a completed run{f' ({what})' if what else ''}; sfbench never "
            "overwrites one. Choose a new folder (hydra.run.dir=NEW_FOLDER), or replace it with overwrite=true "
            f"(the earlier run is then kept beside it in .{target.name}{REPLACED_MARK}TIME).")
    ensure_writable_dir(target)


@dataclass(frozen=True)
class RunFolder:
    """Where a run writes (`work`) and where it ends up (`target`); they differ when a completed run is replaced."""

    target: Path
    work: Path

    @property
    def is_staged(self) -> bool:
        """Whether the run is written into a staging folder and swapped in by `commit`."""
        return self.work != self.target

    def commit(self, *, keep_replaced: bool = True) -> Path | None:
        """Put a staged run in place: swap it with the target in one atomic step; the earlier run goes to
        `.NAME.replaced-TIME-PID` (returned), or is deleted when `keep_replaced` is false.

        Where the file system cannot swap atomically, the earlier run is renamed aside first and the new one
        renamed in after it (a kill between the two leaves the target missing, both runs complete beside it).
        """
        if not self.is_staged:
            return None
        stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
        aside = self.target.parent / f".{self.target.name}{REPLACED_MARK}{stamp}-{os.getpid()}"
        if not self.target.exists():  # the earlier run was removed meanwhile: nothing to keep
            os.rename(self.work, self.target)
            fsync_path(self.target.parent)
            return None
        try:
            exchange_directories(self.work, self.target)
        except OSError as error:
            if error.errno not in _NO_EXCHANGE:
                raise
            os.rename(self.target, aside)
            os.rename(self.work, self.target)
        else:
            os.rename(self.work, aside)
        fsync_path(self.target.parent)
        if not keep_replaced:
            shutil.rmtree(aside, ignore_errors=True)
            return None
        return aside


def _remove_leftovers(folder: Path) -> None:
    for name in (*RUN_OUTPUTS, RECORD_FILE):
        (folder / name).unlink(missing_ok=True)


def claim_run_folder(target: Path, *, overwrite: bool) -> RunFolder:
    """Take `target` for a new run, before any work (see the module docstring): its writer lock first (held until
    `unlock_run_folder` or the end of the process), then the checks.

    Raises:
        RunFolderBusyError: another process is writing a run into `target`.
        RunFolderTakenError: `target` holds a completed run and `overwrite` is false.
        PermissionError: a folder cannot be created or written.
    """
    target = real_folder(target)
    check_run_folder(target, overwrite=overwrite)  # an unusable folder is named as such, before its lock file
    fresh = lock_file(target) not in _HELD_LOCKS
    lock_run_folder(target)
    try:
        check_run_folder(target, overwrite=overwrite)  # again, now that no other writer can finish a run there
    except BaseException:
        if fresh:
            unlock_run_folder(target)
        raise
    if holds_completed_run(target):
        work = ensure_writable_dir(staging_folder(target), what="staging folder",
                                   fix=f"Make {target.parent} writable, or choose another folder with "
                                       "hydra.run.dir=PATH.")
    else:
        work = target
    _remove_leftovers(work)
    return RunFolder(target=target, work=work)
