"""A run's claim on its folder (docs/reliability.md): a folder that holds a completed run is never written into.

`claim_run_folder` is how a run takes its folder, under the folder's writer lock (`run_folder.locks`). Without
`overwrite` a completed run stops the new one before any work (`RunFolderTakenError`); with it the new run is
written into a staging folder beside the target (`.NAME.staging-PID`) and `RunFolder.commit` swaps the two in one
atomic step (Linux `renameat2(RENAME_EXCHANGE)`), so at every moment the target holds the complete earlier run or
the complete new one; the earlier run is then kept in `.NAME.replaced-TIME-PID` beside it. A folder without a
record (a run that was killed or failed there) is re-used: the files the earlier attempt left are removed first.
Folders whose name starts with a dot (staging, replaced, `.hydra`) are never read as runs.
"""

from __future__ import annotations

import errno
import os
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

from sfbench_jax.run_folder.locks import holds_lock, lock_run_folder, unlock_run_folder
from sfbench_jax.run_folder.names import RECORD_FILE, RUN_OUTPUTS
from sfbench_jax.run_folder.record import describe_record, holds_completed_run
from sfbench_jax.storage.atomic import ensure_writable_dir, exchange_directories, fsync_path

STAGING_MARK, REPLACED_MARK = ".staging-", ".replaced-"
#: errno values of a system or file system that cannot swap two folders atomically.
_NO_EXCHANGE = {errno.ENOSYS, errno.EINVAL, errno.ENOTSUP, errno.EOPNOTSUPP}


class RunFolderTakenError(ValueError):
    """The folder already holds a completed run and `overwrite` was not given."""


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
    fresh = not holds_lock(target)
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
