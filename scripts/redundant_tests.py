r"""Which default tests cover no line that the rest of the default suite leaves uncovered, longest first.

The default suite is the contributor's loop; a long test whose every line other default tests also run (an
equivalence or invariance check: chunk sizes, device counts, a resume, one more architecture through the same code)
can run in CI's `slow` step instead without lowering the default suite's line coverage (docs/testing.md, "Which
tests are default"). This script reads the two records of one run of the default suite and lists such tests:

    COVERAGE_RCFILE=$PWD/pyproject.toml COVERAGE_FILE=$PWD/.coverage SFBENCH_TEST_BUDGET_S=0 \
        python -m pytest -n 2 -m "not slow or slow_by_coverage" --cov --cov-context=test --cov-report= \
        --durations=0 > durations.log
    python scripts/redundant_tests.py --coverage .coverage --durations durations.log --min-seconds 1 \
        --keep tests/report/test_catalog.py ... --output tests/slow_by_coverage.txt

(`-m "not slow or slow_by_coverage"`: the default suite as it would be without the list.) The listed tests replace
the ids in `--output` (its leading comment lines are kept): a test id per line, with its body's seconds in that run
as a comment. Without `--output` they are printed. With `--append` they are added to the ids already there: for a
run of the default suite as it is (`-m "not slow"`, the list applied), which lists more without the half-hour run.

Lines are attributed by coverage.py's per-test contexts: pytest-cov's `--cov-context=test` in the test process, and
`tests/coverage_contexts.py` in the processes a test starts. A line also recorded without a context (run at import,
or by a shared fixture) counts as covered by the suite whatever moves, so it keeps no test default. That holds for
import and for the session fixtures of kept tests, not for a module fixture whose every test is listed: it no longer
runs. So the list is a proposal, and the coverage of the changed default suite, measured again, is the check (after
the `--append` of e2e4843 it found two such lines, `faults/registry.py` 84 and 88, now run by a unit test). Tests
are taken longest first, and a test is listed only if every line it ran is still run by a test that is not listed.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections import Counter
from pathlib import Path

DURATION = re.compile(r"^\s*([0-9.]+)s\s+(setup|call|teardown)\s+(\S.*?)\s*$")


def test_seconds(durations_log: Path) -> dict[str, float]:
    """Seconds of each test's body (its call phase) from pytest's `--durations=0` lines. Set-up is left out: a
    shared fixture is paid once, by whichever of its tests runs first, and stays paid while any of them stays."""
    seconds: dict[str, float] = {}
    for line in durations_log.read_text().splitlines():
        match = DURATION.match(line)
        if match and match.group(2) == "call":
            seconds[match.group(3)] = float(match.group(1))
    return seconds


def lines_per_test(coverage_file: Path) -> dict[str, set[tuple[str, int]]]:
    """The (file, line) pairs each test's contexts (set-up, run, tear-down) recorded, leaving out the lines also
    recorded without a context (run at import or in a shared fixture; the module docstring says when that fails)."""
    from coverage import CoverageData

    data = CoverageData(basename=str(coverage_file))
    data.read()
    covered: dict[str, set[tuple[str, int]]] = {context.rsplit("|", 1)[0]: set()
                                                for context in data.measured_contexts() if context}
    for filename in data.measured_files():
        name = _package_path(filename)
        for line, contexts in data.contexts_by_lineno(filename).items():
            if "" in contexts:
                continue
            for context in contexts:
                covered[context.rsplit("|", 1)[0]].add((name, line))
    return dict(covered)


def _package_path(filename: str) -> str:
    """A measured file's path from its package folder on (the clone's copy and an installed one are one file)."""
    parts = Path(filename).parts
    for root in ("sfbench_jax", "phm_kernels", "kernels"):
        if root in parts:
            index = len(parts) - 1 - parts[::-1].index(root)
            return str(Path("phm_kernels" if root == "kernels" else root, *parts[index + 1:]))
    return filename


def redundant(seconds: dict[str, float], covered: dict[str, set[tuple[str, int]]],
              keep: tuple[str, ...]) -> list[tuple[str, float]]:
    """Tests (longest first) whose every line a test not in the list also runs; a test whose id starts with one of
    `keep` (an id, or a module's path) is never listed."""
    runs_line: Counter[tuple[str, int]] = Counter()
    for lines in covered.values():
        runs_line.update(lines)
    listed = []
    for test in sorted(seconds, key=seconds.__getitem__, reverse=True):
        lines = covered.get(test, set())
        if test.startswith(keep) or test not in covered or any(runs_line[line] < 2 for line in lines):
            continue
        runs_line.subtract(lines)
        listed.append((test, seconds[test]))
    return listed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--coverage", type=Path, required=True, help="coverage data file recorded with contexts")
    parser.add_argument("--durations", type=Path, required=True, help="pytest output with --durations=0")
    parser.add_argument("--min-seconds", type=float, default=5.0, help="list only tests at least this long")
    parser.add_argument("--output", type=Path, help="the list file whose ids to replace (its header is kept)")
    parser.add_argument("--append", action="store_true",
                        help="add to the ids in --output instead of replacing them (for a run of the default suite "
                             "with the list, -m 'not slow')")
    parser.add_argument("--keep", action="append", default=[],
                        help="a test id or module path never to list (repeatable), e.g. the modules of a shared "
                             "session fixture, which the slow step would otherwise build again")
    args = parser.parse_args(argv)
    for path in (args.coverage, args.durations):
        if not path.is_file():
            parser.error(f"{path} is not a file; run the default suite as the module docstring shows first")
    seconds = test_seconds(args.durations)
    if not seconds:
        parser.error(f"{args.durations} holds no test durations; run pytest with --durations=0 and keep its output")
    covered = lines_per_test(args.coverage)
    if not covered:
        parser.error(f"{args.coverage} holds no per-test contexts; record it with --cov-context=test")
    listed = [(test, time) for test, time in redundant(seconds, covered, tuple(args.keep)) if time >= args.min_seconds]
    lines = [f"{test}  # {time:.1f} s" for test, time in listed]
    if args.append and args.output is None:
        parser.error("--append needs --output, the list to add to")
    if args.output is None:
        print("\n".join(lines))
    else:
        kept = args.output.read_text().splitlines() if args.output.is_file() else []
        if not args.append:  # the header only
            kept = kept[:next((i for i, line in enumerate(kept) if not line.startswith("#")), len(kept))]
        temporary = args.output.with_name(args.output.name + ".tmp")
        temporary.write_text("\n".join([*kept, *lines]) + "\n")
        temporary.replace(args.output)
    print(f"{len(listed)} tests, {sum(time for _, time in listed):.1f} s of {sum(seconds.values()):.1f} s",
          file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
