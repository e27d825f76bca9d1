"""Collecting a sweep: merged tables when every expected cell is present, a named refusal otherwise,
and the sfbench-collect command's exit codes."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from sfbench_jax.cli.collect import main as collect_main
from sfbench_jax.report.collect import (
    Cell,
    MissingCellsError,
    collect,
    read_expected_cells,
    write_expected_cells,
)

from .summaries import summary_rows


def _job(sweep: Path, name: str, cell: Cell, values: tuple[float, float, float] | None, error: str = "") -> None:
    folder = sweep / name
    folder.mkdir(parents=True)
    (folder / "cell.json").write_text(json.dumps(dict(zip(("dataset", "architecture", "method"), cell, strict=True))))
    if values is not None:
        summary_rows({(cell.dataset, cell.architecture): values}).to_csv(folder / "summary.csv", index=False)
    elif error:
        (folder / "job_failed.json").write_text(json.dumps({"error": "DataContractError", "message": error}))


CELLS = [Cell("etth1", "dlinear", "baseline"), Cell("etth1", "seasonal_naive", "baseline"),
         Cell("beijing_air_tiantan", "dlinear", "baseline"), Cell("beijing_air_tiantan", "seasonal_naive", "baseline")]


def test_complete_sweep_is_merged(tmp_path: Path) -> None:
    for number, cell in enumerate(CELLS):
        _job(tmp_path, f"{number}_{cell.dataset}_{cell.architecture}", cell, (1.0 + number / 10, 0.5, 0.6))
    write_expected_cells(tmp_path, CELLS, [["dataset=etth1"]])
    assert sorted(read_expected_cells(tmp_path)) == sorted(CELLS)
    collection = collect(tmp_path, figures=False)
    merged = pd.read_csv(tmp_path / "summary.csv")
    assert list(zip(merged.dataset, merged.architecture, strict=True)) == [
        ("beijing_air_tiantan", "seasonal_naive"), ("beijing_air_tiantan", "dlinear"),
        ("etth1", "seasonal_naive"), ("etth1", "dlinear")]
    assert len(collection.summary) == 4
    table = (tmp_path / "table4_architectures.md").read_text()
    assert "| Beijing Air Tiantan | D_w | 1.300 | **1.200** |" in table
    report = json.loads((tmp_path / "collect_report.json").read_text())
    assert report["status"] == "complete" and report["missing"] == []


def test_missing_cells_are_named_and_nothing_is_published(tmp_path: Path) -> None:
    _job(tmp_path, "0_etth1_dlinear", CELLS[0], (1.2, 0.4, 0.5))
    _job(tmp_path, "1_etth1_seasonal_naive", CELLS[1], (1.3, 0.6, 0.8))
    _job(tmp_path, "2_beijing_air_tiantan_dlinear", CELLS[2], None, error="raw Beijing CSV not found")
    write_expected_cells(tmp_path, CELLS)
    with pytest.raises(MissingCellsError) as raised:
        collect(tmp_path, figures=False)
    message = str(raised.value)
    assert "2 expected cell(s) missing" in message
    assert ("(dataset=beijing_air_tiantan, architecture=dlinear, method=baseline): job "
            "2_beijing_air_tiantan_dlinear failed: DataContractError: raw Beijing CSV not found") in message
    assert ("(dataset=beijing_air_tiantan, architecture=seasonal_naive, method=baseline): no job folder for this "
            "cell") in message
    assert not (tmp_path / "summary.csv").exists() and not (tmp_path / "table4_architectures.md").exists()
    report = json.loads((tmp_path / "collect_report.json").read_text())
    assert report["status"] == "incomplete"
    assert [m["cell"] for m in report["missing"]] == [["beijing_air_tiantan", "dlinear", "baseline"],
                                                     ["beijing_air_tiantan", "seasonal_naive", "baseline"]]


def test_collect_command_exit_codes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _job(tmp_path, "0_etth1_dlinear", CELLS[0], (1.2, 0.4, 0.5))
    assert collect_main([str(tmp_path), "--no-figures"]) == 2  # no expected_cells.json and no --expect
    assert "--expect dataset=" in capsys.readouterr().err
    assert collect_main([str(tmp_path), "--no-figures", "--expect", "dataset=etth1", "model=dlinear"]) == 0
    assert (tmp_path / "table4_architectures.csv").is_file()
    code = collect_main([str(tmp_path), "--no-figures", "--expect", "dataset=etth1", "model=dlinear,gru"])
    assert code == 1
    assert "(dataset=etth1, architecture=gru, method=baseline)" in capsys.readouterr().err
    assert collect_main([str(tmp_path / "absent")]) == 2
