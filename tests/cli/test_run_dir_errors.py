"""Issue 21, defect 7: an unusable `hydra.run.dir` is one line naming the folder and the fix, exit status 2.

The README promised it; a read-only folder got past `os.access` (which trusts the mode bits: root, or a read-only
mount) and ended in Hydra's logging traceback ("Unable to configure handler 'file'"). `ensure_writable_dir` now
writes a probe file. The cases: the folder is read-only, the folder's name is taken by a file, a file blocks
its parent (the last one is also in test_sfbench_cli.py).
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from sfbench_jax.storage.atomic import ensure_writable_dir


def _read_only_folder(tmp_path: Path) -> Path:
    """A folder no file can be created in: mode 0555 for a normal user; for root (whom the mode bits do not stop)
    the Linux procfs root, where nobody can create files."""
    if os.geteuid() != 0:
        folder = tmp_path / "read_only"
        folder.mkdir()
        folder.chmod(stat.S_IRUSR | stat.S_IXUSR | stat.S_IRGRP | stat.S_IXGRP | stat.S_IROTH | stat.S_IXOTH)
        return folder
    if not Path("/proc/self").is_dir():
        pytest.fail("Running as root without /proc: no read-only folder to test with.")
    return Path("/proc")


def test_library_refuses_a_read_only_folder(tmp_path: Path) -> None:
    folder = _read_only_folder(tmp_path)
    with pytest.raises(PermissionError, match=rf"The run directory {folder} is not writable.*hydra\.run\.dir=PATH"):
        ensure_writable_dir(folder)


@pytest.mark.parametrize("case", ["read-only folder", "folder name taken by a file", "parent is a file"])
def test_unusable_run_dir_is_one_line(tmp_path: Path, case: str) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    run_dir = {"read-only folder": _read_only_folder(tmp_path), "folder name taken by a file": blocker,
               "parent is a file": blocker / "run"}[case]
    completed = subprocess.run([str(Path(sys.executable).parent / "sfbench"), "eval=quick",
                                f"hydra.run.dir={run_dir}"], capture_output=True, text=True, timeout=300, check=False)
    assert completed.returncode == 2, completed.stderr[-2000:]
    [line] = [line for line in completed.stderr.splitlines() if line.startswith("sfbench: error:")]
    assert str(run_dir) in line and "Choose another folder with hydra.run.dir=PATH" in line, line
    assert "Traceback" not in completed.stderr and "Unable to configure handler" not in completed.stderr
