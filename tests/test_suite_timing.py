"""The default suite's time discipline (`tests/suite_timing.py`), run for real: pytest in a subprocess on small test
files in a temporary folder, with the plug-in loaded by `-p` (and nothing else of this suite's configuration: no
installed plug-in is loaded but xdist, where named)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent

SLEEPERS = """
import time
import pytest

def test_quick():
    pass

def test_sleeps():
    time.sleep(0.6)

@pytest.mark.slow
def test_sleeps_but_is_slow():
    time.sleep(0.6)

def test_fails_quickly():
    assert False, "its own failure"
"""


SPINNERS = """
import subprocess
import sys
import time

SPIN = "import time\\nstart = time.process_time()\\nwhile time.process_time() - start < 0.5:\\n    pass\\n"

def test_spins_here():
    exec(SPIN)

def test_spins_in_a_child():
    subprocess.run([sys.executable, "-c", SPIN], check=True)
"""


def _pytest(folder: Path, *arguments: str, budget: str | None,
            enforce: str | None = None) -> subprocess.CompletedProcess:
    (folder / "pytest.ini").write_text("[pytest]\nmarkers =\n    slow: long\n")
    environment = {**os.environ, "PYTHONPATH": os.pathsep.join([str(TESTS), os.environ.get("PYTHONPATH", "")])}
    environment["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"  # none of the installed plug-ins (jaxtyping's imports JAX)
    for name, value in (("SFBENCH_TEST_BUDGET_S", budget), ("SFBENCH_TEST_BUDGET_ENFORCE", enforce)):
        environment.pop(name, None)  # CI's own setting does not leak in
        if value is not None:
            environment[name] = value
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "suite_timing", "-p", "no:cacheprovider", "-q",
                           "-rf", *arguments], cwd=folder, env=environment, capture_output=True, text=True,
                          timeout=300, check=False)


def test_where_enforced_a_test_over_the_budget_fails_unless_slow(tmp_path: Path) -> None:
    (tmp_path / "test_sleepers.py").write_text(SLEEPERS)
    done = _pytest(tmp_path, budget="0.3", enforce="1")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "2 failed, 2 passed" in done.stdout, done.stdout
    assert "FAILED test_sleepers.py::test_sleeps - " in done.stdout, done.stdout
    assert re.search(r"test_sleepers.py::test_sleeps took 0\.[6-9] s \(0\.\d CPU-seconds\), over the default suite's "
                     r"budget of 0\.3 s per test: make it cheaper .*, or mark it @pytest.mark.slow", done.stdout), \
        done.stdout
    assert "its own failure" in done.stdout  # a test that fails on its own keeps its own failure
    assert "test_sleeps_but_is_slow" not in done.stdout
    assert "over the per-test time budget (not enforced" not in done.stdout


@pytest.mark.parametrize("enforce", [None, "0"])
def test_elsewhere_a_test_over_the_budget_passes_and_is_listed(tmp_path: Path, enforce: str | None) -> None:
    """A contributor's machine, busy or not: nothing fails for its time; the slow-running test is named at the end
    with its wall and CPU time (a sleeping test: wall time without CPU time, what a busy machine looks like)."""
    (tmp_path / "test_sleepers.py").write_text(SLEEPERS)
    done = _pytest(tmp_path, budget="0.3", enforce=enforce)
    assert "1 failed, 3 passed" in done.stdout, done.stdout + done.stderr  # only the test failing on its own
    summary = done.stdout[done.stdout.index("over the per-test time budget (not enforced here; CI fails them: "
                                            "SFBENCH_TEST_BUDGET_ENFORCE=1)"):]
    assert re.search(r"test_sleepers.py::test_sleeps took 0\.[6-9] s \(0\.\d CPU-seconds\), over the default suite's "
                     r"budget of 0\.3 s per test\n", summary), summary
    assert "far below it: this machine was busy" in summary
    assert "test_sleeps_but_is_slow" not in summary and "test_quick" not in summary


def test_the_cpu_time_counts_this_process_and_the_children_it_waited_for(tmp_path: Path) -> None:
    (tmp_path / "test_spinners.py").write_text(SPINNERS)
    done = _pytest(tmp_path, "-p", "xdist", "-n", "2", budget="0.3")  # the lines come back from the workers
    assert "2 passed" in done.stdout, done.stdout + done.stderr
    for name in ("test_spins_here", "test_spins_in_a_child"):
        found = re.search(rf"test_spinners.py::{name} took [\d.]+ s \(([\d.]+) CPU-seconds\)", done.stdout)
        assert found and float(found.group(1)) >= 0.5, done.stdout


@pytest.mark.parametrize(("budget", "summary"), [("0", "1 failed, 3 passed"), ("5", "1 failed, 3 passed"),
                                                 (None, "1 failed, 3 passed")])
def test_budget_zero_or_loose_or_default_lets_the_sleepers_pass(tmp_path: Path, budget: str | None,
                                                               summary: str) -> None:
    (tmp_path / "test_sleepers.py").write_text(SLEEPERS)
    done = _pytest(tmp_path, budget=budget, enforce="1")
    assert summary in done.stdout, done.stdout + done.stderr
    assert "over the per-test time budget" not in done.stdout


@pytest.mark.parametrize("budget", ["soon", "-1", "nan"])
def test_a_bad_budget_stops_the_run_with_the_fix(tmp_path: Path, budget: str) -> None:
    (tmp_path / "test_sleepers.py").write_text(SLEEPERS)
    done = _pytest(tmp_path, budget=budget)
    assert done.returncode == 4, done.stdout + done.stderr
    assert (f"SFBENCH_TEST_BUDGET_S={budget!r} is not a number of seconds >= 0; write e.g. SFBENCH_TEST_BUDGET_S=60 "
            "on a slower machine, or SFBENCH_TEST_BUDGET_S=0 for no budget.") in done.stderr, done.stderr


def test_a_bad_enforce_setting_stops_the_run_with_the_fix(tmp_path: Path) -> None:
    (tmp_path / "test_sleepers.py").write_text(SLEEPERS)
    done = _pytest(tmp_path, budget=None, enforce="yes")
    assert done.returncode == 4, done.stdout + done.stderr
    assert ("SFBENCH_TEST_BUDGET_ENFORCE='yes' is neither 1 nor 0; write SFBENCH_TEST_BUDGET_ENFORCE=1 to fail a test "
            "over the per-test time budget (as CI does), or leave it unset to list it.") in done.stderr, done.stderr


def _grouped_tests(folder: Path, module: str) -> None:
    """Twelve tests of the analysis fixture in `module` (under `folder`), each writing its worker, and twelve others."""
    (folder / "conftest.py").write_text(
        "import pytest\n\n@pytest.fixture(scope='session')\ndef analysis_root():\n    return 'built'\n")
    body = "import os\n\n"
    for index in range(12):
        body += (f"def test_shared_{index}(analysis_root, tmp_path_factory):\n"
                 f"    (tmp_path_factory.getbasetemp().parent.parent / 'shared_{index}')"
                 ".write_text(os.environ['PYTEST_XDIST_WORKER'])\n\n"
                 f"def test_other_{index}():\n    pass\n\n")
    (folder / module).parent.mkdir(parents=True, exist_ok=True)
    (folder / module).write_text(body)
    (folder / "base").mkdir()


def test_the_tests_of_a_shared_fixture_run_on_one_worker(tmp_path: Path) -> None:
    _grouped_tests(tmp_path, "tests/report/test_collect.py")  # a module of the analysis group
    done = _pytest(tmp_path, "-p", "xdist", "-n", "2", f"--basetemp={tmp_path / 'base' / 'run'}", budget=None)
    assert "24 passed" in done.stdout, done.stdout + done.stderr
    workers = {(tmp_path / "base" / f"shared_{index}").read_text() for index in range(12)}
    assert len(workers) == 1, workers


def test_a_shared_fixture_outside_its_group_is_refused(tmp_path: Path) -> None:
    _grouped_tests(tmp_path, "tests/report/test_new.py")
    done = _pytest(tmp_path, "-p", "no:xdist", budget=None)
    assert done.returncode == 4, done.stdout + done.stderr
    assert ("tests/report/test_new.py::test_shared_0 takes analysis_root of the xdist group 'analysis_runs': add "
            "tests/report/test_new.py to that group's modules in tests/suite_timing.py GROUPS.") in done.stderr


def test_a_listed_test_runs_only_in_the_slow_step() -> None:
    from suite_timing import slow_by_coverage

    module = "tests/faults/test_sampling.py"  # light imports, no test of its own marked slow
    listed = {test for test in slow_by_coverage() if test.startswith(f"{module}::")}
    assert listed, f"pick a module of {module}'s kind that tests/slow_by_coverage.txt lists"
    command = [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", "-m", "slow", module]
    done = subprocess.run(command, cwd=TESTS.parent, capture_output=True, text=True, timeout=300, check=False)
    slow = {line for line in done.stdout.splitlines() if line.startswith(f"{module}::")}
    assert slow == listed, done.stdout + done.stderr  # exactly the listed ones; `-m 'not slow'` leaves them out


def test_a_listed_id_that_names_no_test_is_stale(tmp_path: Path) -> None:
    from suite_timing import stale_ids

    (tmp_path / "test_a.py").write_text("")
    listed = {"test_a.py::test_renamed", "test_a.py::test_kept", "test_gone.py::test_x", "test_a.py::test_other"}
    collected = ["test_a.py::test_kept", "test_a.py::test_new"]
    assert stale_ids(listed, collected, [], tmp_path) == ["test_a.py::test_other", "test_a.py::test_renamed",
                                                         "test_gone.py::test_x"]
    # a run of one picked test does not make the module's other listed tests stale
    assert stale_ids(listed, collected, ["test_a.py::test_kept"], tmp_path) == ["test_gone.py::test_x"]


@pytest.mark.slow  # 13 s (a pytest process importing the suite's conftest); `.ci/run`'s default step is itself this
# case (SFBENCH_CACHE_DIR names a folder not made yet), so CI checks it twice
def test_the_session_cache_folder_named_by_the_environment_is_made(tmp_path: Path) -> None:
    """`.ci/run` names SFBENCH_CACHE_DIR before the folder exists: the suite makes it (and its `xla/`) at start."""
    folder = tmp_path / "absent" / "cache"
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist",
               "tests/test_preset_defaults.py::test_the_check_sees_the_presets"]
    done = subprocess.run(command, cwd=TESTS.parent, env={**os.environ, "SFBENCH_CACHE_DIR": str(folder)},
                          capture_output=True, text=True, timeout=300, check=False)
    assert "1 passed" in done.stdout, done.stdout + done.stderr
    assert (folder / "xla").is_dir()
