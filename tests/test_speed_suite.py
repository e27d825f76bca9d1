"""The speed suite's bookkeeping (`benchmarks/suite.py`), without measuring anything: a merged run keeps its other
parts and records each part's own commit and date, a run of another set-up (sizes, device, host CPU, versions) is
refused before any measuring, and `--docs` replaces exactly the page's generated block (a page without its markers
is refused)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import suite

PROCESS_ROW = {"command": "sfbench eval=quick", "runs": 2, "wall_seconds": 3.0, "cpu_seconds": 3.5,
               "phases": {"before_run_seconds": 1.2, "evaluate_seconds": 0.4}}


def _earlier_run(quick: bool = True) -> dict:
    environment = suite.environment(quick)
    return {"environment": environment, "part_environments": {"processes": {
        "date": "2026-11-01 10:00 UTC", "commit": "abc1234", "load_average": [0.5, 0.5, 0.5], "seconds": 60.0}},
        "processes": [PROCESS_ROW]}


def test_merge_measures_only_the_named_parts_and_keeps_the_others(monkeypatch: pytest.MonkeyPatch,
                                                                 tmp_path: Path) -> None:
    earlier = tmp_path / "speed.json"
    earlier.write_text(json.dumps(_earlier_run()))
    measured = []
    monkeypatch.setitem(suite.PARTS, "fault_pass", lambda quick, timeout: measured.append(quick) or [])
    result = suite.main(["--quick", "--merge", str(earlier), "--parts", "fault_pass", "--out", str(tmp_path / "new")])
    assert measured == [True]
    assert result["processes"] == [PROCESS_ROW]
    assert result["part_environments"]["processes"]["commit"] == "abc1234"
    assert result["part_environments"]["fault_pass"]["date"] != "2026-11-01 10:00 UTC"
    page = (tmp_path / "new" / "speed.md").read_text()
    assert "Measured 2026-11-01 10:00 UTC at commit abc1234 in 1 min (load average 0.5 at its start)." in page
    assert "`sfbench eval=quick`" in page


def test_merge_refuses_a_run_of_another_set_up_before_measuring(monkeypatch: pytest.MonkeyPatch,
                                                               tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    earlier = tmp_path / "speed.json"
    earlier.write_text(json.dumps(_earlier_run(quick=False)))
    monkeypatch.setitem(suite.PARTS, "fault_pass", lambda quick, timeout: pytest.fail("measured"))
    with pytest.raises(SystemExit):
        suite.main(["--quick", "--merge", str(earlier), "--parts", "fault_pass", "--out", str(tmp_path / "new")])
    assert "quick: False there, True now" in capsys.readouterr().err
    assert not (tmp_path / "new").exists()


def test_docs_block_is_replaced_between_its_markers_only(tmp_path: Path) -> None:
    page = f"# Speed\n\nintro\n\n{suite.DOCS_BEGIN}\n\nold table\n\n{suite.DOCS_END}\n\n## Accounts\n"
    replaced = suite.docs_page(page, "new table", tmp_path / "speed.md")
    assert replaced == f"# Speed\n\nintro\n\n{suite.DOCS_BEGIN}\n\nnew table\n\n{suite.DOCS_END}\n\n## Accounts\n"
    with pytest.raises(ValueError, match="needs exactly one line"):
        suite.docs_page("# Speed\n\nno markers\n", "new table", tmp_path / "speed.md")


def test_the_table_names_the_host_cpu_and_merge_refuses_another(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture) -> None:
    earlier = _earlier_run()
    assert earlier["environment"]["host_cpu"] == suite.host_cpu()
    assert f"host CPUs, {suite.host_cpu()}, load average" in suite.markdown(earlier)
    earlier["environment"]["host_cpu"] = "Other CPU (sse4_2; no avx512f, avx2)"
    (tmp_path / "speed.json").write_text(json.dumps(earlier))
    monkeypatch.setitem(suite.PARTS, "fault_pass", lambda quick, timeout: pytest.fail("measured"))
    with pytest.raises(SystemExit):
        suite.main(["--quick", "--merge", str(tmp_path / "speed.json"), "--parts", "fault_pass", "--out",
                    str(tmp_path / "new")])
    assert "host_cpu: 'Other CPU (sse4_2; no avx512f, avx2)' there" in capsys.readouterr().err
