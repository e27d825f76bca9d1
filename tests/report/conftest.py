"""Session fixtures of the analysis tests: the folder of small real runs (`fixture_runs.py`, built once in
its own process) and the report that `sfbench-report all` writes from it (in the test's process). Under
pytest-xdist the workers of one session share them (the first builds, the others wait on a file lock), so they
are built once per session."""

from __future__ import annotations

import contextlib
import fcntl
import io
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

FIXTURE_SCRIPT = Path(__file__).with_name("fixture_runs.py")
#: The run folders of the main report (the reference-mode runs are reported on their own).
REPORTED = ("runs", "seeds_multirun", "methods", "stand_ins", "selector_pressure")


def run_command(*arguments: str, data_root: Path | None = None) -> subprocess.CompletedProcess:
    """Run a command of this package with the test interpreter (`python -m ...` or a script)."""
    environment = dict(os.environ)
    if data_root is not None:
        environment["SFBENCH_DATA_ROOT"] = str(data_root)
    return subprocess.run([sys.executable, *arguments], capture_output=True, text=True, env=environment,
                          timeout=1500, check=False)


def report_command(*arguments: str) -> subprocess.CompletedProcess:
    """`sfbench-report ...` through its entry point in this process (`sfbench_jax.cli.sfbench_report.main`, what
    the console script calls; a new interpreter would add ~3 s of imports to each call), with its exit status and
    what it wrote to standard output and error, as a finished process's."""
    from sfbench_jax.cli.sfbench_report import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main(list(arguments))
    return subprocess.CompletedProcess(["sfbench-report", *arguments], status, out.getvalue(), err.getvalue())


def shared_folder(tmp_path_factory: pytest.TempPathFactory, name: str, build: Callable[[Path], None]) -> Path:
    """`name` under this session's temporary folder (shared by the xdist workers of the session), built once."""
    base = tmp_path_factory.getbasetemp()
    base = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
    folder, done = base / name, base / f"{name}.done"
    with _locked(base / f"{name}.lock"):
        if not done.exists():
            folder.mkdir(parents=True, exist_ok=True)
            build(folder)
            done.touch()
    return folder


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    with path.open("w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


@pytest.fixture(scope="session")
def analysis_root(tmp_path_factory: pytest.TempPathFactory, data_root: Path) -> Path:
    """The fixture folder of real runs (see fixture_runs.py)."""

    def build(root: Path) -> None:
        completed = run_command(str(FIXTURE_SCRIPT), str(root), str(data_root), data_root=data_root)
        assert completed.returncode == 0, (completed.stdout + completed.stderr)[-4000:]

    return shared_folder(tmp_path_factory, "analysis_runs", build)


@pytest.fixture(scope="session")
def report_dir(analysis_root: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Everything `sfbench-report all` writes from the fixture's runs."""

    def build(output: Path) -> None:
        completed = report_command("all", "--runs", *(str(analysis_root / name) for name in REPORTED),
                                   "--output", str(output))
        assert completed.returncode == 0, completed.stderr[-4000:]
        (output / "stderr.txt").write_text(completed.stderr)

    return shared_folder(tmp_path_factory, "analysis_report", build)


@pytest.fixture(scope="session")
def analysis(analysis_root: Path):
    """The `Analysis` of the reported runs (the frames the tables and figures read)."""
    from sfbench_jax.report.catalog import Analysis
    from sfbench_jax.run_folder.loading import gather_runs

    return Analysis(gather_runs([analysis_root / name for name in REPORTED]))
