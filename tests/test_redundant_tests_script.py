"""`scripts/redundant_tests.py` on a coverage data file written with coverage.py's own API (per-test contexts, as
pytest-cov records them) and a `--durations=0` log: which tests it lists, that `--output` keeps the header and
`--append` the ids already listed."""

from __future__ import annotations

from pathlib import Path

import pytest
from coverage import CoverageData

DURATIONS = """\
============================= slowest durations ==============================
30.00s setup    tests/test_a.py::test_fixture_heavy
9.00s call     tests/test_a.py::test_long_equivalence
8.00s call     tests/test_a.py::test_long_unique
7.00s call     tests/test_a.py::test_long_twin
2.00s call     tests/test_a.py::test_short
1.00s call     tests/test_b.py::test_kept
0.50s call     tests/test_a.py::test_fixture_heavy
"""


def _coverage(path: Path, source: Path) -> Path:
    data = CoverageData(basename=str(path))
    lines = {  # test id -> lines of sfbench_jax/module.py it ran
        "tests/test_a.py::test_long_equivalence": [1, 2, 3],
        "tests/test_a.py::test_long_unique": [1, 4],
        "tests/test_a.py::test_long_twin": [1, 2, 3],  # the same lines as the equivalence: one of them must stay
        "tests/test_a.py::test_short": [1, 2],
        "tests/test_b.py::test_kept": [1, 2, 3],
        "tests/test_a.py::test_fixture_heavy": [5],
    }
    for test, numbers in lines.items():
        data.set_context(f"{test}|run")
        data.add_lines({str(source): numbers})
    data.set_context("")
    data.add_lines({str(source): [6]})  # at import: no test's label
    data.write()
    return path


def test_lists_the_longest_tests_whose_lines_others_run(load_script, tmp_path: Path) -> None:
    script = load_script("redundant_tests")
    source = tmp_path / "sfbench_jax" / "module.py"
    coverage = _coverage(tmp_path / ".coverage", source)
    durations = tmp_path / "durations.log"
    durations.write_text(DURATIONS)
    assert script.test_seconds(durations)["tests/test_a.py::test_fixture_heavy"] == 0.5  # the body only
    output = tmp_path / "slow_by_coverage.txt"
    output.write_text("# header line one\n# header line two\ntests/old.py::test_gone  # 1.0 s\n")
    assert script.main(["--coverage", str(coverage), "--durations", str(durations), "--min-seconds", "2.5",
                        "--keep", "tests/test_b.py", "--output", str(output)]) == 0
    # the equivalence goes first (longest); its twin then runs lines only test_b runs, which is kept, so it goes
    # too; the unique test stays; the short one is under --min-seconds
    assert output.read_text().splitlines() == ["# header line one", "# header line two",
                                               "tests/test_a.py::test_long_equivalence  # 9.0 s",
                                               "tests/test_a.py::test_long_twin  # 7.0 s"]


def test_a_line_also_run_at_import_keeps_no_test_and_append_keeps_the_list(load_script, tmp_path: Path) -> None:
    script = load_script("redundant_tests")
    source = tmp_path / "sfbench_jax" / "module.py"
    data = CoverageData(basename=str(tmp_path / ".coverage"))
    for test, numbers in {"tests/test_c.py::test_long": [1, 7], "tests/test_c.py::test_other": [1],
                          "tests/test_c.py::test_alone": [8]}.items():
        data.set_context(f"{test}|run")
        data.add_lines({str(source): numbers})
    data.set_context("")
    data.add_lines({str(source): [7]})  # line 7 also runs at import: only test_long runs it under a label
    data.write()
    durations = tmp_path / "durations.log"
    durations.write_text("9.00s call     tests/test_c.py::test_long\n8.00s call     tests/test_c.py::test_alone\n"
                         "1.00s call     tests/test_c.py::test_other\n")
    output = tmp_path / "slow_by_coverage.txt"
    output.write_text("# header\ntests/old.py::test_listed_before  # 4.0 s\n")
    assert script.main(["--coverage", str(tmp_path / ".coverage"), "--durations", str(durations), "--min-seconds",
                        "2", "--output", str(output), "--append"]) == 0
    assert output.read_text().splitlines() == ["# header", "tests/old.py::test_listed_before  # 4.0 s",
                                               "tests/test_c.py::test_long  # 9.0 s"]


def test_a_coverage_file_without_contexts_is_refused(load_script, tmp_path: Path) -> None:
    script = load_script("redundant_tests")
    data = CoverageData(basename=str(tmp_path / ".coverage"))
    data.add_lines({str(tmp_path / "sfbench_jax" / "module.py"): [1]})
    data.write()
    (tmp_path / "durations.log").write_text(DURATIONS)
    with pytest.raises(SystemExit):
        script.main(["--coverage", str(tmp_path / ".coverage"), "--durations", str(tmp_path / "durations.log")])


def test_a_log_without_durations_is_refused(load_script, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    script = load_script("redundant_tests")
    coverage = _coverage(tmp_path / ".coverage", tmp_path / "sfbench_jax" / "module.py")
    (tmp_path / "durations.log").write_text("1444 passed, 57 skipped in 824.00s\n")  # run without --durations=0
    output = tmp_path / "slow_by_coverage.txt"
    output.write_text("# header\ntests/test_a.py::test_long_twin  # 7.0 s\n")
    with pytest.raises(SystemExit):
        script.main(["--coverage", str(coverage), "--durations", str(tmp_path / "durations.log"),
                     "--output", str(output)])
    assert "holds no test durations; run pytest with --durations=0" in capsys.readouterr().err
    assert output.read_text() == "# header\ntests/test_a.py::test_long_twin  # 7.0 s\n"  # the list is untouched


def test_append_without_a_list_to_add_to_is_refused(load_script, tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    script = load_script("redundant_tests")
    coverage = _coverage(tmp_path / ".coverage", tmp_path / "sfbench_jax" / "module.py")
    (tmp_path / "durations.log").write_text(DURATIONS)
    with pytest.raises(SystemExit):
        script.main(["--coverage", str(coverage), "--durations", str(tmp_path / "durations.log"), "--append"])
    assert "--append needs --output, the list to add to" in capsys.readouterr().err
