"""The default suite's time discipline, as a pytest plug-in (`tests/conftest.py` loads it; docs/testing.md, "Time and
coverage").

* A time budget per test, enforced where the machine is known: a test without the `slow` mark whose call phase (the
  test body, not its fixtures) runs longer than `DEFAULT_BUDGET_S` seconds of wall time fails under
  `SFBENCH_TEST_BUDGET_ENFORCE=1` (`.ci/run` sets it: CI's machine is known and idle), naming its time, its CPU
  time, the budget and the two ways out (make it cheaper, or mark it `slow`, which `.ci/run` still runs). Elsewhere
  (a contributor's machine, busy or not) such a test passes and is listed at the end of the run with its wall and
  CPU time (the process's CPU time, JAX's compile threads included, and that of the child processes the test waited
  for), so a test that grew is seen before CI fails it, and a busy machine fails nobody. `SFBENCH_TEST_BUDGET_S=SECONDS`
  moves the budget on a machine of another speed; `SFBENCH_TEST_BUDGET_S=0` switches it off.
* Shared fixtures stay on one worker: under pytest-xdist (`-n 2`), the default `load` distribution hands out the
  tests one by one, except the modules of a group in `GROUPS` (the tests of a session fixture built once and
  waited on) and the modules of `COSTLY_MODULE_FIXTURES` (a costly module fixture, which each worker would
  otherwise build again), which go to one worker together, first. That worker builds the fixture and runs its
  tests while the other runs everything else, instead of both building it, or one waiting minutes on the other's
  lock. An explicit other `--dist` is kept.
* The slow tier by coverage: the tests listed in `SLOW_BY_COVERAGE` (`tests/slow_by_coverage.txt`) get the marks
  `slow` and `slow_by_coverage`. Each is a long test every line of which the rest of the default suite also runs
  (an equivalence or invariance check), found by `scripts/redundant_tests.py` from one measured run; a listed id
  that no longer names a test stops the run, so the list cannot fall behind a rename.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

#: Seconds of wall time a default (not `slow`) test's body may take. The longest default test bodies take about 25 s
#: on CI's idle 2-core machine (which runs this suite about 1.2x slower than the development machine), so a test
#: that CI fails has grown: the budget is loose enough for a machine's noise (a 30 s budget failed four tests of
#: 29-31 s on an idle CI run) and tight enough that no one test takes a large share of the suite. On a loaded machine
#: the wall time says little (a test took over 40 s at load ~7 on 2 cores), hence enforced on CI only.
DEFAULT_BUDGET_S = 40.0
BUDGET_VARIABLE = "SFBENCH_TEST_BUDGET_S"
#: `1`: a test over the budget fails (CI); unset or `0`: it is listed at the end of the run and passes.
ENFORCE_VARIABLE = "SFBENCH_TEST_BUDGET_ENFORCE"

#: xdist group -> (the shared fixtures whose tests it holds, the test modules it holds). A module is the unit, because
#: the controller that hands out the tests sees only their ids; `pytest_collection_modifyitems` checks that every
#: test taking one of the fixtures is in a module of its group, so the list cannot fall behind. The session fixtures
#: of the analysis tests (tests/report/conftest.py) are one group: they are built from each other.
GROUPS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "analysis_runs": (("analysis_root", "report_dir", "analysis"),
                      ("tests/report/test_collect.py", "tests/report/test_deltas.py", "tests/report/test_catalog.py",
                       "tests/report/test_run_records.py", "tests/report/test_score_families.py",
                       "tests/report/test_sensitivity.py")),
}
#: Modules whose module-scoped fixture is a real run, a pip install, a server process or a trained store: each is
#: its own group, so one worker builds the fixture once instead of both building it.
COSTLY_MODULE_FIXTURES = (
    "tests/test_run_record.py", "tests/test_run_folder_readers.py", "tests/test_plugins.py",
    "tests/test_plugin_contracts.py", "tests/training/test_store_integrity.py", "tests/models/test_external.py",
    "tests/evaluation/test_curves.py", "tests/agent_eval/test_eval_modes.py", "tests/mcp/test_mcp_curves.py",
    "tests/mcp/test_mcp_stored_runs.py", "tests/mcp/test_mcp_default_cli_run.py", "tests/mcp/test_mcp_http_security.py",
    "tests/mcp/test_mcp_transports.py", "tests/data/test_cache_integrity.py", "tests/report/test_html_report.py",
)
GROUP_OF_MODULE = {module: group for group, (_, modules) in GROUPS.items() for module in modules}
GROUP_OF_MODULE |= {module: module for module in COSTLY_MODULE_FIXTURES}
SLOW_BY_COVERAGE = Path(__file__).with_name("slow_by_coverage.txt")


def slow_by_coverage(path: Path = SLOW_BY_COVERAGE) -> set[str]:
    """The test ids listed in `path` (one per line; `#` starts a comment)."""
    ids = (line.split("#", 1)[0].strip() for line in path.read_text().splitlines())
    return {test for test in ids if test}


def budget_seconds() -> float:
    """The per-test budget in seconds (0: no budget), from SFBENCH_TEST_BUDGET_S or `DEFAULT_BUDGET_S`."""
    value = os.environ.get(BUDGET_VARIABLE, "").strip()
    if not value:
        return DEFAULT_BUDGET_S
    try:
        seconds = float(value)
    except ValueError:
        seconds = -1.0
    if not seconds >= 0:  # also refuses nan
        raise pytest.UsageError(f"{BUDGET_VARIABLE}={value!r} is not a number of seconds >= 0; write e.g. "
                                f"{BUDGET_VARIABLE}=60 on a slower machine, or {BUDGET_VARIABLE}=0 for no budget.")
    return seconds


def budget_enforced() -> bool:
    """Whether a test over the budget fails (`SFBENCH_TEST_BUDGET_ENFORCE=1`, as `.ci/run` sets it) or is only
    listed (unset, empty or `0`)."""
    value = os.environ.get(ENFORCE_VARIABLE, "").strip()
    if value not in ("", "0", "1"):
        raise pytest.UsageError(f"{ENFORCE_VARIABLE}={value!r} is neither 1 nor 0; write {ENFORCE_VARIABLE}=1 to fail "
                                "a test over the per-test time budget (as CI does), or leave it unset to list it.")
    return value == "1"


def cpu_seconds() -> float:
    """CPU time so far of this process (all its threads: JAX's compile threads too) and of its children that have
    ended and been waited for (`subprocess.run`'s); the children's part is 0 where `resource` is missing."""
    try:
        import resource
    except ImportError:  # not on Windows
        return time.process_time()
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime


def pytest_configure(config: pytest.Config) -> None:
    config.stash[_BUDGET] = budget_seconds()
    config.stash[_ENFORCED] = budget_enforced()
    _OVER_BUDGET_LINES.clear()


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log):
    """`-n N` without an explicit `--dist` (or with `--dist load`): xdist's `load`, but a group's tests go to one
    worker. (xdist's own `loadgroup` cannot be used: it renames test ids, which pytest 9 no longer allows.)"""
    if config.getvalue("dist") != "load":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class FixtureGroupScheduling(LoadScopeScheduling):
        """Each test its own unit, except that the modules of a group, and each module of
        `COSTLY_MODULE_FIXTURES`, are one unit (handed out first: units are ordered by their number of tests)."""

        def _split_scope(self, nodeid: str) -> str:
            return GROUP_OF_MODULE.get(nodeid.split("::", 1)[0], nodeid)

    return FixtureGroupScheduling(config, log)


def stale_ids(listed: set[str], collected: list[str], arguments: list[str], repository: Path) -> list[str]:
    """The listed ids that name no test: of a module this run collected whole (not picked by `path::name`), or of a
    module that does not exist."""
    picked = {argument.split("::", 1)[0] for argument in arguments if "::" in argument}
    whole = {test.split("::", 1)[0] for test in collected} - picked
    return [test for test in sorted(listed - set(collected))
            if test.split("::", 1)[0] in whole or not (repository / test.split("::", 1)[0]).is_file()]


@pytest.hookimpl(tryfirst=True)  # before pytest's own `-m` selection reads the marks
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark the tests of `SLOW_BY_COVERAGE` slow; refuse a listed id that names no test of a module collected whole,
    a test that takes a grouped fixture from a module outside that fixture's group, and a grouped module that no
    longer exists (a renamed test file would silently lose its group)."""
    listed = slow_by_coverage()
    for item in items:
        if item.nodeid in listed:  # `-m "not slow or slow_by_coverage"` selects the whole default suite of old
            item.add_marker(pytest.mark.slow)
            item.add_marker(pytest.mark.slow_by_coverage)
    repository = Path(__file__).resolve().parents[1]
    stale = stale_ids(listed, [item.nodeid for item in items], config.args, repository)
    if stale:
        raise pytest.UsageError(f"{SLOW_BY_COVERAGE.name} lists tests that do not exist: {', '.join(stale)}; rename "
                                "them there too, or delete the line (docs/testing.md, 'Time and coverage').")
    gone = [module for module in GROUP_OF_MODULE if not (repository / module).is_file()]
    if gone:
        raise pytest.UsageError(f"tests/suite_timing.py names test modules that do not exist: {', '.join(gone)}; "
                                "rename them there too.")
    for item in items:
        module = item.nodeid.split("::", 1)[0]
        for group, (fixtures, modules) in GROUPS.items():
            taken = sorted(set(fixtures) & set(getattr(item, "fixturenames", ())))
            if taken and module not in modules:
                raise pytest.UsageError(f"{item.nodeid} takes {', '.join(taken)} of the xdist group {group!r}: add "
                                        f"{module} to that group's modules in tests/suite_timing.py GROUPS.")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item: pytest.Item):
    start = cpu_seconds()
    try:
        yield
    finally:
        item.stash[_CPU_SECONDS] = cpu_seconds() - start


def over_budget_line(nodeid: str, wall: float, cpu: float, budget: float) -> str:
    """The first words of what is said about a test over the budget: its wall and CPU time and the budget."""
    return (f"{nodeid} took {wall:.1f} s ({cpu:.1f} CPU-seconds), over the default suite's budget of {budget:g} s "
            "per test")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]):
    outcome = yield
    report = outcome.get_result()
    budget = item.config.stash[_BUDGET]
    if (call.when != "call" or not report.passed or not budget or call.duration <= budget
            or item.get_closest_marker("slow") is not None):
        return
    line = over_budget_line(item.nodeid, call.duration, item.stash.get(_CPU_SECONDS, float("nan")), budget)
    if not item.config.stash[_ENFORCED]:
        report.user_properties.append((_OVER_BUDGET_PROPERTY, line))  # listed at the end (xdist carries it back)
        return
    report.outcome = "failed"
    report.longrepr = (f"{line}: make it cheaper (smaller shapes, a shared fixture), or mark it "
                       f"@pytest.mark.slow (CI runs those after the default suite); on a slower machine set "
                       f"{BUDGET_VARIABLE} (docs/testing.md, 'Time and coverage').")


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """Keep the over-budget lines of the tests that passed (under xdist, the controller receives the workers')."""
    lines = [value for name, value in report.user_properties if name == _OVER_BUDGET_PROPERTY]
    if lines:
        _OVER_BUDGET_LINES.extend(lines)


def pytest_terminal_summary(terminalreporter, config: pytest.Config) -> None:
    """List the tests over the budget that passed because it is not enforced here."""
    if not _OVER_BUDGET_LINES:
        return
    terminalreporter.write_sep("=", f"{len(_OVER_BUDGET_LINES)} test(s) over the per-test time budget (not enforced "
                                    f"here; CI fails them: {ENFORCE_VARIABLE}=1)")
    for line in _OVER_BUDGET_LINES:
        terminalreporter.write_line(line)
    terminalreporter.write_line("CPU time near the wall time: the test itself grew (make it cheaper, or mark it "
                                "@pytest.mark.slow); far below it: this machine was busy (docs/testing.md, 'Time and "
                                "coverage').")


_BUDGET = pytest.StashKey[float]()
_ENFORCED = pytest.StashKey[bool]()
_CPU_SECONDS = pytest.StashKey[float]()
_OVER_BUDGET_PROPERTY = "over_time_budget"
#: The over-budget lines of this run's passed tests (a module global: the hook that sees a report has no config).
_OVER_BUDGET_LINES: list[str] = []
