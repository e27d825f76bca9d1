"""Collecting a multirun: merge the jobs' summary rows into one table per sweep and publish the
paper views (Table 4 architecture block, Figure 5 trade-offs, the scenario heatmap) only when every
expected (dataset, architecture, method) cell is present.

Each job folder holds `cell.json` (written when the job starts), then either `summary.csv` (done) or
`job_failed.json` (the recorded error). The expected cells come from the sweep definition
(`expected_cells.json`, written when the multirun starts) or from the caller. A missing cell is never
dropped silently: collection writes `collect_report.json` naming every missing cell and why, and
raises `MissingCellsError` without publishing the tables.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

import pandas as pd

from sfbench_jax.data.registry import DISPLAY_ORDER
from sfbench_jax.files import write_csv, write_json, write_text
from sfbench_jax.report.architectures import (
    ARCHITECTURE_ORDER,
    ordered,
    table4_block,
    table4_markdown,
)

CELL_FILE, FAILED_FILE, SUMMARY_FILE = "cell.json", "job_failed.json", "summary.csv"
EXPECTED_FILE, REPORT_FILE = "expected_cells.json", "collect_report.json"


class Cell(NamedTuple):
    """One (dataset, architecture, method) cell of a sweep."""

    dataset: str
    architecture: str
    method: str

    def __str__(self) -> str:
        return f"(dataset={self.dataset}, architecture={self.architecture}, method={self.method})"


class MissingCellsError(RuntimeError):
    """Expected cells have no result; `missing` maps each to the reason."""

    def __init__(self, missing: dict[Cell, str], sweep_dir: Path) -> None:
        self.missing = missing
        lines = "\n".join(f"  - {cell}: {reason}" for cell, reason in sorted(missing.items()))
        super().__init__(f"{len(missing)} expected cell(s) missing in {sweep_dir}; the merged tables were NOT "
                         f"written:\n{lines}\nFix the failing jobs and re-run the sweep (finished candidates are "
                         f"reused), then `sfbench-collect {sweep_dir}`.")


@dataclass(frozen=True)
class JobRecord:
    """What one job folder says.

    Attributes:
        directory: the job folder.
        cell: the job's cell.
        status: "done", "failed" or "unfinished".
        message: the recorded error of a failed job.
    """

    directory: Path
    cell: Cell
    status: str
    message: str = ""


@dataclass(frozen=True)
class Collection:
    """A complete collection and the files it wrote."""

    summary: pd.DataFrame
    jobs: list[JobRecord]
    files: dict[str, Path]


def write_expected_cells(sweep_dir: Path, cells: Iterable[Cell], jobs: Sequence[Sequence[str]] = ()) -> Path:
    """Record the cells a sweep is expected to produce (before its jobs run)."""
    unique = sorted(set(cells))
    payload = {"cells": [list(cell) for cell in unique], "jobs": [list(job) for job in jobs]}
    return write_json(payload, Path(sweep_dir) / EXPECTED_FILE)


def read_expected_cells(sweep_dir: Path) -> list[Cell]:
    """The cells recorded by `write_expected_cells`.

    Raises:
        FileNotFoundError: naming the file and how to give the cells instead.
    """
    path = Path(sweep_dir) / EXPECTED_FILE
    if not path.is_file():
        raise FileNotFoundError(f"{path} not found: this folder was not written by an sfbench multirun. Pass the "
                                "expected cells explicitly, e.g. --expect dataset=etth1,beijing_air_tiantan "
                                "model=dlinear,patchtst method=baseline.")
    return [Cell(*cell) for cell in json.loads(path.read_text())["cells"]]


def read_jobs(sweep_dir: Path) -> list[JobRecord]:
    """Every job folder (a direct sub-folder with a cell.json) of a sweep."""
    records = []
    for directory in sorted(p for p in Path(sweep_dir).iterdir() if (p / CELL_FILE).is_file()):
        cell_payload = json.loads((directory / CELL_FILE).read_text())
        cell = Cell(cell_payload["dataset"], cell_payload["architecture"], cell_payload["method"])
        if (directory / SUMMARY_FILE).is_file():
            records.append(JobRecord(directory, cell, "done"))
        elif (directory / FAILED_FILE).is_file():
            failure = json.loads((directory / FAILED_FILE).read_text())
            records.append(JobRecord(directory, cell, "failed", f"{failure['error']}: {failure['message']}"))
        else:
            records.append(JobRecord(directory, cell, "unfinished", "the job started but wrote no result"))
    return records


def _sorted_summary(frame: pd.DataFrame) -> pd.DataFrame:
    datasets = ordered(list(frame["dataset"].astype(str).unique()), DISPLAY_ORDER)
    architectures = ordered(list(frame["architecture"].astype(str).unique()), ARCHITECTURE_ORDER)
    keys = frame.apply(lambda r: (datasets.index(str(r["dataset"])), architectures.index(str(r["architecture"])),
                                  str(r["method"])), axis=1)
    return frame.loc[keys.sort_values().index].reset_index(drop=True)


def collect(sweep_dir: Path, expected: Sequence[Cell] | None = None, *, output_dir: Path | None = None,
            figures: bool = True) -> Collection:
    """Merge a sweep's job results and publish the merged tables and figures.

    Args:
        sweep_dir: the multirun folder (job sub-folders inside).
        expected: cells that must be present; None reads `expected_cells.json`.
        output_dir: where to write (default: `sweep_dir`).
        figures: also write the PNG figures.

    Raises:
        MissingCellsError: an expected cell has no finished job (after writing collect_report.json).
        FileNotFoundError: no expected cells given and none recorded.
    """
    sweep_dir = Path(sweep_dir)
    output_dir = sweep_dir if output_dir is None else Path(output_dir)
    expected = read_expected_cells(sweep_dir) if expected is None else list(expected)
    jobs = read_jobs(sweep_dir)
    done = {job.cell: job for job in jobs if job.status == "done"}
    missing: dict[Cell, str] = {}
    for cell in sorted(set(expected)):
        if cell in done:
            continue
        reasons = [f"job {job.directory.name} {job.status}: {job.message}" for job in jobs if job.cell == cell]
        missing[cell] = "; ".join(reasons) if reasons else "no job folder for this cell (the job never started)"
    report: dict[str, Any] = {
        "sweep_dir": str(sweep_dir), "expected": [list(c) for c in sorted(set(expected))],
        "jobs": [{"folder": job.directory.name, "cell": list(job.cell), "status": job.status,
                  "message": job.message} for job in jobs],
        "missing": [{"cell": list(cell), "reason": reason} for cell, reason in sorted(missing.items())],
        "status": "incomplete" if missing else "complete",
    }
    files = {"report": write_json(report, output_dir / REPORT_FILE)}
    if missing:
        raise MissingCellsError(missing, sweep_dir)
    frames = [pd.read_csv(done[cell].directory / SUMMARY_FILE) for cell in sorted(done)]
    summary = _sorted_summary(pd.concat(frames, ignore_index=True))
    files["summary"] = write_csv(summary, output_dir / SUMMARY_FILE)
    block = table4_block(summary)
    files["table4_csv"] = write_csv(block, output_dir / "table4_architectures.csv")
    files["table4_md"] = write_text(table4_markdown(block), output_dir / "table4_architectures.md")
    if figures:
        from sfbench_jax.report.figures import scenario_heatmap, tradeoff_figure

        files["heatmap"] = scenario_heatmap(summary, output_dir / "scenario_heatmap.png")
        files["tradeoffs"] = tradeoff_figure(summary, output_dir / "tradeoffs.png")
    return Collection(summary=summary, jobs=jobs, files=files)
