"""A damaged run never makes a table (issue 21, defect 1 and the run-folder errors of defect 7): a summary cut
inside its `d_w` field or mid-row, a hand-edited number in a single run, a changed per-window, manifest or
candidates file, or a run without its completion record is named with the folder and the file by
`sfbench-collect` and `sfbench-report` (exit 2, no table written), and the intact runs of the sweep are untouched.
Truncated bookkeeping files (`expected_cells.json`, `cell.json`, `manifest.json`) are named with the fix."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pandas as pd
import pytest

from sfbench_jax.cli.sfbench_collect import main as collect_main
from sfbench_jax.cli.sfbench_report import main as report_main
from sfbench_jax.run_folder.damage import DamagedRunError
from sfbench_jax.run_folder.loading import load_run
from sfbench_jax.run_folder.names import RECORD_FILE
from sfbench_jax.run_folder.record import write_record

from .conftest import report_command
from .test_collect import JOB_FOLDERS, _copy_sweep

DAMAGED_JOB = JOB_FOLDERS[3]  # DLinear, eval.seed=1


def _digests(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def _cut_summary(path: Path, where: str) -> None:
    """Cut `summary.csv` three characters into its d_w field, or in the middle of its row."""
    text = path.read_text()
    header, row = text.splitlines()[:2]
    if where == "inside d_w":
        column = header.split(",").index("d_w")
        offset = len(header) + 1 + sum(len(field) + 1 for field in row.split(",")[:column]) + 3
    else:
        offset = len(header) + 1 + len(row) // 2
    path.write_text(text[:offset])


def _error_line(stderr: str, command: str) -> str:
    lines = [line for line in stderr.splitlines() if line.startswith(f"{command}:")]
    assert len(lines) == 1, stderr
    return lines[0]


@pytest.mark.parametrize("where", ["inside d_w", "mid-row"])
def test_a_cut_summary_is_named_and_no_table_is_written(analysis_root: Path, tmp_path: Path, where: str,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    sweep = _copy_sweep(analysis_root, tmp_path / "sweep")
    damaged = sweep / DAMAGED_JOB
    _cut_summary(damaged / "summary.csv", where)
    intact = {name: _digests(sweep / name) for name in JOB_FOLDERS if name != DAMAGED_JOB}

    assert collect_main([str(sweep), "--no-figures"]) == 2
    line = _error_line(capsys.readouterr().err, "sfbench-collect")
    assert f"Run folder {damaged} is damaged: summary.csv does not match its completion record" in line
    assert "Re-run the job" in line and "No table was written." in line
    assert sorted(p.name for p in sweep.iterdir() if p.is_file()) == ["collect_report.json", "expected_cells.json"]
    assert json.loads((sweep / "collect_report.json").read_text())["status"] == "damaged"

    output = tmp_path / "report"
    assert report_main(["table10", "--runs", str(sweep), "--output", str(output)]) == 2
    assert f"Run folder {damaged} is damaged: summary.csv" in _error_line(capsys.readouterr().err, "sfbench-report")
    assert sorted(p.name for p in output.iterdir()) == ["collect_report.json"]  # the sweep check's record only
    assert {name: _digests(sweep / name) for name in intact} == intact


@pytest.mark.parametrize("name", ["per_window.parquet", "manifest.json", "candidates.csv"])
def test_any_changed_file_of_a_run_is_named(analysis_root: Path, tmp_path: Path, name: str,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    sweep = _copy_sweep(analysis_root, tmp_path / "sweep")
    path = sweep / DAMAGED_JOB / name
    data = path.read_bytes()
    path.write_bytes(data[: len(data) - 7])  # cut, as a full disk or a killed copy leaves it
    assert collect_main([str(sweep), "--no-figures"]) == 2
    line = _error_line(capsys.readouterr().err, "sfbench-collect")
    assert f"Run folder {sweep / DAMAGED_JOB} is damaged: {name} does not match its completion record" in line
    assert not (sweep / "summary.csv").exists()


def test_a_hand_edited_number_in_a_single_run_is_refused(analysis_root: Path, tmp_path: Path,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    runs = tmp_path / "runs"
    for architecture in ("seasonal_naive", "dlinear"):
        shutil.copytree(analysis_root / "runs" / "etth1" / architecture / "canonical", runs / architecture)
    output = tmp_path / "report"
    assert report_main(["table4", "--runs", str(runs), "--output", str(output)]) == 0
    capsys.readouterr()
    target = runs / "dlinear" / "summary.csv"
    summary = pd.read_csv(target)
    summary.loc[0, "d_w"] = 0.5  # no duplicate to compare with: only the run's own files can tell
    summary.to_csv(target, index=False)
    shutil.rmtree(output)
    assert report_main(["table4", "--runs", str(runs), "--output", str(output)]) == 2
    line = _error_line(capsys.readouterr().err, "sfbench-report")
    assert f"Run folder {runs / 'dlinear'} is damaged: summary.csv does not match its completion record" in line
    assert not output.exists() or not list(output.iterdir())

    # even with a record written over the edited file, the number disagrees with the run's per-window losses
    record = json.loads((runs / "dlinear" / RECORD_FILE).read_text())
    write_record(runs / "dlinear", run_key=record["run_key"])
    with pytest.raises(DamagedRunError, match=r"summary.csv says d_w = 0.5, but its per_window.parquet gives 1\.\d+"):
        load_run(runs / "dlinear")
    completed = report_command("table4", "--runs", str(runs), "--output", str(output))
    assert completed.returncode == 2
    assert "summary.csv says d_w = 0.5, but its per_window.parquet gives" in completed.stderr
    assert "Traceback" not in completed.stderr and not (output / "table4_architectures.md").exists()


def test_a_killed_job_without_record_is_missing_not_merged(analysis_root: Path, tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    sweep = _copy_sweep(analysis_root, tmp_path / "sweep")
    (sweep / DAMAGED_JOB / RECORD_FILE).unlink()  # killed after its summary, before its record
    assert collect_main([str(sweep), "--no-figures"]) == 1
    err = capsys.readouterr().err
    assert f"job {DAMAGED_JOB} unfinished: the job started but wrote no complete run (no completion record" in err
    assert not (sweep / "summary.csv").exists()
    plain = tmp_path / "plain"
    shutil.copytree(sweep / DAMAGED_JOB, plain / "run")
    assert report_main(["table10", "--runs", str(plain), "--output", str(tmp_path / "out")]) == 2
    assert "run_record.json is missing: the run never completed" in capsys.readouterr().err


@pytest.mark.parametrize(("name", "fix"), [
    ("expected_cells.json", "re-run the sweep (finished jobs are kept), or pass the expected cells with --expect"),
    (f"{DAMAGED_JOB}/cell.json", f"Delete the job folder {{sweep}}/{DAMAGED_JOB} and re-run the sweep"),
    (f"{DAMAGED_JOB}/manifest.json", "Re-run the job (into a new folder, or into this one with overwrite=true)"),
])
def test_truncated_bookkeeping_files_are_named_with_the_fix(analysis_root: Path, tmp_path: Path, name: str,
                                                            fix: str, capsys: pytest.CaptureFixture[str]) -> None:
    sweep = _copy_sweep(analysis_root, tmp_path / "sweep")
    path = sweep / name
    path.write_text(path.read_text()[:25])
    assert collect_main([str(sweep), "--no-figures"]) == 2
    line = _error_line(capsys.readouterr().err, "sfbench-collect")
    assert str(path) in line or f"{path.parent} is damaged: {path.name}" in line
    assert fix.format(sweep=sweep) in line and "JSONDecodeError" not in line
