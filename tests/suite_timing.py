"""The default suite's time discipline, as a pytest plug-in (`tests/conftest.py` loads it; docs/testing.md, "Time").

* A time budget per test: a test without the `slow` mark whose call phase (the test body, not its fixtures) runs
  longer than `DEFAULT_BUDGET_S` seconds fails, naming its time, the budget and the two ways out (make it cheaper,
  or mark it `slow`, which `.ci/run` still runs). `SFBENCH_TEST_BUDGET_S=SECONDS` loosens (or tightens) it on a
  machine of another speed; `SFBENCH_TEST_BUDGET_S=0` switches it off.
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
from pathlib import Path

import pytest

#: Seconds a default (not `slow`) test's body may take. The longest default test bodies take about 25 s on CI's
#: 2-core machine (which runs this suite about 1.2x slower than the development machine), so a test that fails it
#: has grown, or the machine is loaded: the budget is loose enough for a busy machine's noise (a 30 s budget failed
#: four tests of 29-31 s on an idle CI run) and tight enough that no one test takes a large share of the suite.
DEFAULT_BUDGET_S = 40.0
BUDGET_VARIABLE = "SFBENCH_TEST_BUDGET_S"

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
    "tests/test_plugin_contracts.py", "tests/train/test_store_integrity.py", "tests/models/test_external.py",
    "tests/evaluate/test_curves.py", "tests/agent_eval/test_eval_modes.py", "tests/mcp/test_mcp_curves.py",
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


def pytest_configure(config: pytest.Config) -> None:
    config.stash[_BUDGET] = budget_seconds()


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
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]):
    outcome = yield
    report = outcome.get_result()
    budget = item.config.stash[_BUDGET]
    if (call.when != "call" or not report.passed or not budget or call.duration <= budget
            or item.get_closest_marker("slow") is not None):
        return
    report.outcome = "failed"
    report.longrepr = (f"{item.nodeid} took {call.duration:.1f} s, over the default suite's budget of {budget:g} s "
                       "per test: make it cheaper (smaller shapes, a shared fixture), or mark it "
                       f"@pytest.mark.slow (CI runs those after the default suite); on a slower machine set "
                       f"{BUDGET_VARIABLE} (docs/testing.md, 'Time').")


_BUDGET = pytest.StashKey[float]()
