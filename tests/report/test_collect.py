"""Collecting runs never loses one: a real multirun over evaluation seeds x two architectures keeps one row per
job, a deleted job folder is named exactly (and no table is written), copies of a run are merged, and two
runs with the same settings but different numbers are refused with both folders named (damaged runs:
test_run_records.py)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pandas as pd
import pytest

from sfbench_jax.cli.sfbench_collect import main as collect_main
from sfbench_jax.report.collect import Cell, collect, read_expected_jobs
from sfbench_jax.run_folder.loading import RunConflictError, gather_runs

from .conftest import run_command
from .fixture_runs import EVAL_SEEDS
from .summaries import rewrite_consistently

JOB_FOLDERS = [f"{number}_etth1_{architecture}_baseline" for number, architecture in
               enumerate(["seasonal_naive", "dlinear"] * len(EVAL_SEEDS))]


def _copy_sweep(analysis_root: Path, target: Path) -> Path:
    """The multirun's job folders and expected jobs, without its merged outputs."""
    source = analysis_root / "seeds_multirun"
    target.mkdir()
    shutil.copy(source / "expected_cells.json", target)
    for name in JOB_FOLDERS:
        shutil.copytree(source / name, target / name)
    return target


def test_multirun_over_eval_seeds_collects_every_run(analysis_root: Path) -> None:
    sweep = analysis_root / "seeds_multirun"
    merged = pd.read_csv(sweep / "summary.csv")
    assert len(merged) == 4
    assert sorted(zip(merged.architecture, merged.eval_seed, strict=True)) == sorted(
        (a, s) for a in ("dlinear", "seasonal_naive") for s in EVAL_SEEDS)
    report = json.loads((sweep / "collect_report.json").read_text())
    assert report["status"] == "complete" and report["rows"] == 4 and report["expected_jobs"] == 4
    assert len(read_expected_jobs(sweep)) == 4
    # the numbers differ by seed: collection keyed each run by its eval seed
    assert merged.groupby("architecture")["d_w"].nunique().tolist() == [2, 2]
    # no canonical-seed run in this sweep, so Table 4 is skipped with the reason
    assert report["views"]["table4"].startswith("skipped: no baseline run at the canonical evaluation realisation")


def test_deleted_run_is_named_and_no_table_is_written(analysis_root: Path, tmp_path: Path) -> None:
    sweep = _copy_sweep(analysis_root, tmp_path / "sweep")
    shutil.rmtree(sweep / JOB_FOLDERS[3])  # DLinear, eval.seed=1
    output = tmp_path / "report"
    # as a real process (`python -m sfbench_jax.cli.sfbench_report`): the module's exit status reaches the shell
    completed = run_command("-m", "sfbench_jax.cli.sfbench_report", "table10", "--runs", str(sweep), "--output",
                            str(output))
    assert completed.returncode == 1
    lines = [line for line in completed.stderr.splitlines() if line.startswith("  - ")]
    assert lines == [f"  - {sweep}: (dataset=etth1, architecture=dlinear, method=baseline, eval.seed=1): no job "
                     "folder for job 3 (the job never started or its folder was deleted)"]
    assert sorted(p.name for p in output.iterdir()) == ["collect_report.json"]  # the check's record, no table
    assert collect_main([str(sweep)]) == 1
    assert not (sweep / "summary.csv").exists() and not list(sweep.glob("table*"))
    report = json.loads((sweep / "collect_report.json").read_text())
    assert [m["run"] for m in report["missing"]] == [
        "(dataset=etth1, architecture=dlinear, method=baseline, eval.seed=1)"]
    assert report["missing"][0]["cell"] == ["etth1", "dlinear", "baseline"]


def test_copies_merge_and_conflicts_name_both_folders(analysis_root: Path, tmp_path: Path) -> None:
    source = analysis_root / "runs" / "etth1" / "dlinear" / "canonical"
    first, second = tmp_path / "a" / "dlinear", tmp_path / "b" / "dlinear"
    shutil.copytree(source, first)
    shutil.copytree(source, second)
    runs = gather_runs([tmp_path])
    assert len(runs.runs) == 1 and runs.duplicates == ((first.resolve(), second.resolve()),)
    rewrite_consistently(second, scale=1.01)  # the same settings, other (self-consistent, sealed) numbers
    with pytest.raises(RunConflictError) as raised:
        gather_runs([tmp_path])
    assert str(first.resolve()) in str(raised.value) and str(second.resolve()) in str(raised.value)


def test_runs_differing_only_in_eval_settings_are_distinct(analysis: object) -> None:
    runs = analysis.runs
    etth1_dlinear = [run for run in runs.runs if run.row["dataset"] == "etth1" and run.row["architecture"] == "dlinear"
                     and run.row["method"] == "baseline"]
    # canonical, two seeds, one channel fraction
    assert len(etth1_dlinear) == 4
    assert {"eval_seed", "channel_fraction"} <= set(runs.varying)
    assert "eval_seed=1" in runs.describe(next(r for r in etth1_dlinear if r.row["eval_seed"] == 1))


def test_collect_command_with_explicit_cells(analysis_root: Path, tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    sweep = _copy_sweep(analysis_root, tmp_path / "sweep")
    (sweep / "expected_cells.json").unlink()
    assert collect_main([str(sweep), "--no-figures"]) == 2  # neither expected_cells.json nor --expect
    assert "--expect dataset=" in capsys.readouterr().err
    assert collect_main([str(sweep), "--no-figures", "--expect", "dataset=etth1", "model=dlinear,seasonal_naive"]) == 0
    assert len(pd.read_csv(sweep / "summary.csv")) == 4
    assert collect_main([str(sweep), "--expect", "dataset=etth1", "model=gru"]) == 1
    with pytest.raises(Exception, match="no job folder for this cell"):
        collect(sweep, [Cell("etth1", "gru", "baseline")], figures=False)
