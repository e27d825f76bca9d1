"""Collecting a multirun: check that every expected job finished, merge the runs into one summary, and publish
the paper views the runs support (Table 4 and Figures 2/5 for an architecture sweep, Table 10 for an eval-seed
sweep, ...). Nothing is published while a job is missing.

Each job folder holds `cell.json` (written when the job starts, with the job's overrides), then either a finished run
(`summary.csv`, `manifest.json`, ..., and last its completion record `run_record.json`) or `job_failed.json` (the
recorded error); a folder with neither is an unfinished (e.g. killed) job. Every finished run is verified
(`run_folder.loading.load_run`) before it is merged: a damaged one stops the collection, named, and no table is
written. What was expected comes from the sweep definition (`expected_cells.json`, written when the multirun starts:
every job's overrides and (dataset, architecture, method) cell) or from the caller (cells). Runs are keyed by every
setting that changes their numbers (`run_folder.keys`), so a sweep over `eval.seed`, `eval.channel_fraction` or
`eval.rng_mode` keeps one row per job. A missing job is never dropped silently: collection writes `collect_report.json`
naming every missing job by the settings that tell it apart and why it is missing, and raises `MissingCellsError`. """

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

import pandas as pd

from sfbench_jax.data.registry import DISPLAY_ORDER
from sfbench_jax.report.architectures import ARCHITECTURE_ORDER, ordered
from sfbench_jax.run_folder.damage import DamagedRunError, DamagedRunsError
from sfbench_jax.run_folder.finding import ExtraRunsError, Refused, is_run_folder
from sfbench_jax.run_folder.keys import SETTINGS_WITHOUT_EFFECT
from sfbench_jax.run_folder.loading import RunSet, gather_runs
from sfbench_jax.run_folder.locks import live_writer
from sfbench_jax.run_folder.names import SUMMARY_FILE
from sfbench_jax.run_folder.record import holds_completed_run
from sfbench_jax.storage.atomic import write_csv, write_json

CELL_FILE, FAILED_FILE = "cell.json", "job_failed.json"
EXPECTED_FILE, REPORT_FILE = "expected_cells.json", "collect_report.json"


class SweepFileError(ValueError):
    """A sweep's bookkeeping file (`expected_cells.json`, `cell.json`, `job_failed.json`) cannot be read."""


def read_sweep_json(path: Path, fix: str) -> dict[str, Any]:
    """A JSON object from a sweep's bookkeeping file.

    Raises:
        SweepFileError: naming the file, what is wrong and `fix`.
    """
    try:
        payload = json.loads(Path(path).read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise SweepFileError(f"{path} cannot be read ({error}): it was cut or changed. {fix}") from error
    if not isinstance(payload, dict):
        raise SweepFileError(f"{path} does not hold a JSON object: it was changed. {fix}")
    return payload


class Cell(NamedTuple):
    """One (dataset, architecture, method) cell of a sweep."""

    dataset: str
    architecture: str
    method: str

    def __str__(self) -> str:
        return f"(dataset={self.dataset}, architecture={self.architecture}, method={self.method})"


@dataclass(frozen=True)
class ExpectedJob:
    """One job a sweep launched: its number, overrides and cell."""

    number: int
    overrides: tuple[str, ...]
    cell: Cell

    def describe(self, varying: Sequence[str]) -> str:
        """The cell plus the overrides that tell this job apart from the sweep's other jobs."""
        shown = [item for item in self.overrides if _override_name(item) in varying
                 and _override_name(item) not in ("dataset", "model", "method")]
        text = str(self.cell)
        return text[:-1] + "".join(f", {item}" for item in shown) + ")"


def _override_name(item: str) -> str:
    return item.lstrip("+~").split("=", 1)[0]


def effective_overrides(items: Iterable[str]) -> tuple[str, ...]:
    """Overrides without the settings that never change a number (`overwrite`, `figures`, `cache_dir`, chunking,
    ...: `run_folder.keys.SETTINGS_WITHOUT_EFFECT`): a job run with `overwrite=true` or `figures=false` is the same
    job of its sweep."""
    return tuple(item for item in items if _override_name(item) not in SETTINGS_WITHOUT_EFFECT)


def normalised_overrides(items: Iterable[str]) -> tuple[str, ...]:
    """Overrides as a sorted tuple without hydra.* entries (the identity of a job)."""
    return tuple(sorted(item.strip() for item in items if not _override_name(item.strip()).startswith("hydra")))


class Missing(NamedTuple):
    """An expected job (or cell) without a finished run: its name, cell and why."""

    name: str
    cell: Cell
    reason: str


class MissingCellsError(RuntimeError):
    """Expected jobs have no result; `missing` lists each (named) job with the reason."""

    def __init__(self, missing: Sequence[Missing], sweep_dir: Path) -> None:
        self.missing = list(missing)
        lines = "\n".join(f"  - {item.name}: {item.reason}" for item in self.missing)
        super().__init__(f"{len(self.missing)} expected cell(s) missing in {sweep_dir}; the merged tables were NOT "
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
        overrides: the job's overrides (from cell.json; empty for folders written before they were recorded).
    """

    directory: Path
    cell: Cell
    status: str
    message: str = ""
    overrides: tuple[str, ...] = ()


@dataclass(frozen=True)
class Collection:
    """A complete collection and the files it wrote."""

    summary: pd.DataFrame
    jobs: list[JobRecord]
    files: dict[str, Path]
    runs: RunSet | None = None


def write_expected_cells(sweep_dir: Path, cells: Iterable[Cell], jobs: Sequence[Sequence[str]] = ()) -> Path:
    """Record what a sweep is expected to produce (before its jobs run): the unique cells, and every job's
    overrides with its cell when `cells` lists one cell per job."""
    cells = list(cells)
    jobs = [list(job) for job in jobs]
    payload: dict[str, Any] = {"cells": [list(cell) for cell in sorted(set(cells))], "jobs": jobs}
    if jobs and len(cells) == len(jobs):
        payload["job_cells"] = [list(cell) for cell in cells]
    return write_json(payload, Path(sweep_dir) / EXPECTED_FILE)


class SweepSettingsError(ValueError):
    """A sweep started into a folder that holds jobs of other settings (they would be skipped, the tables stale)."""


def check_sweep_folder(sweep_dir: Path, jobs: Sequence[Sequence[str]]) -> None:
    """Refuse, before any job, a sweep whose folder holds completed jobs of other settings: its jobs would be
    skipped (their folders hold completed runs), its collection would fail and the earlier tables stay. A sweep
    that re-runs the folder's jobs (settings without effect aside, e.g. `overwrite=true`: `effective_overrides`),
    or adds jobs to them, is accepted, and so is one beside failed or unfinished jobs of other settings (their
    folders are re-used or left unread).

    Raises:
        SweepSettingsError: naming the first such job folders, the settings that differ and the fix.
        SweepFileError: a job's `cell.json` cannot be read.
    """
    sweep_dir = Path(sweep_dir)
    if not sweep_dir.is_dir():
        return
    wanted = {effective_overrides(normalised_overrides(job)) for job in jobs}
    items = {item for job in wanted for item in job}
    foreign = [record for record in read_jobs(sweep_dir) if record.status == "done" and record.overrides
               and effective_overrides(record.overrides) not in wanted]
    if not foreign:
        return
    named = "; ".join(
        f"job {record.directory.name} ran "
        f"{' '.join(i for i in effective_overrides(record.overrides) if i not in items) or '(none)'}"
        for record in foreign[:3])
    new = sorted({item for job in wanted for item in job
                  if not any(item in effective_overrides(r.overrides) for r in foreign)})
    raise SweepSettingsError(
        f"The sweep folder {sweep_dir} holds {len(foreign)} job(s) of other settings than this sweep ({named}; this "
        f"sweep: {' '.join(new) or 'other job numbers'}): its jobs would be skipped and its tables left stale. "
        "Nothing was written. Choose a new folder with hydra.sweep.dir=PATH, or delete those job folders.")


def _expected_payload(sweep_dir: Path) -> dict[str, Any]:
    path = Path(sweep_dir) / EXPECTED_FILE
    if not path.is_file():
        raise FileNotFoundError(f"{path} not found: this folder was not written by an sfbench multirun. Pass the "
                                "expected cells explicitly, e.g. --expect dataset=etth1,beijing_air_tiantan "
                                "model=dlinear,patchtst method=baseline.")
    payload = read_sweep_json(path, "It is written when the multirun starts: re-run the sweep (finished jobs are "
                              "kept), or pass the expected cells with --expect dataset=... model=... method=....")
    if not isinstance(payload.get("cells"), list) or not isinstance(payload.get("jobs", []), list):
        raise SweepFileError(f"{path} lacks its `cells` list: it was changed. Re-run the sweep, or pass the expected "
                             "cells with --expect dataset=... model=... method=....")
    return payload


def read_expected_cells(sweep_dir: Path) -> list[Cell]:
    """The cells recorded by `write_expected_cells`.

    Raises:
        FileNotFoundError: naming the file and how to give the cells instead.
    """
    return [Cell(*cell) for cell in _expected_payload(sweep_dir)["cells"]]


def read_expected_jobs(sweep_dir: Path) -> list[ExpectedJob]:
    """Every job recorded by `write_expected_cells` with its cell (empty for records without job cells)."""
    payload = _expected_payload(sweep_dir)
    if "job_cells" not in payload:
        return []
    return [ExpectedJob(number, normalised_overrides(job), Cell(*cell))
            for number, (job, cell) in enumerate(zip(payload["jobs"], payload["job_cells"], strict=True))]


def _job_record(directory: Path) -> JobRecord:
    fix = (f"Delete the job folder {directory} and re-run the sweep (finished jobs are kept), or re-run that job "
           "on its own.")
    payload = read_sweep_json(directory / CELL_FILE, fix)
    try:
        cell = Cell(str(payload["dataset"]), str(payload["architecture"]), str(payload["method"]))
    except KeyError as error:
        raise SweepFileError(f"{directory / CELL_FILE} lacks {error}: it was changed. {fix}") from error
    overrides = normalised_overrides(payload.get("overrides", []))
    if holds_completed_run(directory):  # verified (and refused if damaged) when the runs are gathered
        return JobRecord(directory, cell, "done", overrides=overrides)
    if (directory / FAILED_FILE).is_file():
        failure = read_sweep_json(directory / FAILED_FILE, fix)
        return JobRecord(directory, cell, "failed", f"{failure.get('error')}: {failure.get('message')}", overrides)
    writer = live_writer(directory)
    if writer is not None:
        return JobRecord(directory, cell, "unfinished", f"the job is being written now by a running sfbench "
                         f"({writer}); wait for it to end and collect again", overrides)
    return JobRecord(directory, cell, "unfinished", "the job started but wrote no complete run (no completion "
                     "record: it was killed, or failed while writing)", overrides)


def read_jobs(sweep_dir: Path) -> list[JobRecord]:
    """Every job folder (a direct sub-folder with a cell.json, not hidden: staging and replaced runs are) of a sweep.

    Raises:
        SweepFileError: a job's `cell.json` or `job_failed.json` cannot be read (the file and the fix named).
    """
    return [_job_record(directory)
            for directory in sorted(p for p in Path(sweep_dir).iterdir()
                                    if not p.name.startswith(".") and (p / CELL_FILE).is_file())]


def varying_overrides(expected: Sequence[ExpectedJob]) -> list[str]:
    """Override names whose value differs between the expected jobs."""
    values: dict[str, set[str]] = {}
    for job in expected:
        for item in job.overrides:
            name, _, value = item.lstrip("+~").partition("=")
            values.setdefault(name, set()).add(value)
    return sorted(name for name, seen in values.items()
                  if len(seen) > 1 or any(name not in {_override_name(i) for i in job.overrides} for job in expected))


def missing_jobs(expected: Sequence[ExpectedJob], jobs: Sequence[JobRecord]) -> list[Missing]:
    """Expected jobs without a finished folder, named by the overrides that tell them apart, with the reason."""
    varying = varying_overrides(expected)
    by_overrides: dict[tuple[str, ...], list[JobRecord]] = {}
    for record in jobs:
        by_overrides.setdefault(effective_overrides(record.overrides), []).append(record)
    missing = []
    for job in expected:
        found = by_overrides.get(effective_overrides(job.overrides), [])
        if any(record.status == "done" for record in found):
            continue
        reasons = [f"job {record.directory.name} {record.status}: {record.message}" for record in found]
        missing.append(Missing(job.describe(varying), job.cell, "; ".join(reasons) if reasons else (
            f"no job folder for job {job.number} (the job never started or its folder was deleted)")))
    return missing


def missing_cells(expected: Sequence[Cell], jobs: Sequence[JobRecord]) -> list[Missing]:
    """Expected cells without any finished job, with the reason."""
    done = {job.cell for job in jobs if job.status == "done"}
    missing = []
    for cell in sorted(set(expected)):
        if cell in done:
            continue
        reasons = [f"job {job.directory.name} {job.status}: {job.message}" for job in jobs if job.cell == cell]
        missing.append(Missing(str(cell), cell, "; ".join(reasons) if reasons else
                               "no job folder for this cell (the job never started)"))
    return missing


def sorted_summary(frame: pd.DataFrame) -> pd.DataFrame:
    """Rows in the paper's dataset and architecture order, then method and the run's settings."""
    datasets = ordered(list(frame["dataset"].astype(str).unique()), DISPLAY_ORDER)
    architectures = ordered(list(frame["architecture"].astype(str).unique()), ARCHITECTURE_ORDER)
    columns = [c for c in ("variant", "selection_metric", "rng_mode", "eval_seed", "channel_fraction", "k")
               if c in frame.columns]
    keys = frame.apply(lambda r: (datasets.index(str(r["dataset"])), architectures.index(str(r["architecture"])),
                                  str(r["method"]), *(str(r[c]) for c in columns)), axis=1)
    return frame.loc[keys.sort_values().index].reset_index(drop=True)


def check_sweep(sweep_dir: Path, expected: Sequence[Cell] | None = None,
                output_dir: Path | None = None) -> tuple[list[JobRecord], list[Missing]]:
    """Compare a sweep folder with what it expected and write `collect_report.json`.

    Returns:
        `(job records, missing jobs or cells with their reasons)`.
    """
    sweep_dir = Path(sweep_dir)
    output_dir = sweep_dir if output_dir is None else Path(output_dir)
    refuse_run_folder(sweep_dir, "is a run folder, not a sweep folder (it holds a run's files)")
    refuse_run_folder(output_dir, "is a run folder: nothing is ever written into one")
    jobs = read_jobs(sweep_dir)
    expected_jobs = read_expected_jobs(sweep_dir) if expected is None else []
    cells = read_expected_cells(sweep_dir) if expected is None else list(expected)
    missing = missing_jobs(expected_jobs, jobs) if expected_jobs else missing_cells(cells, jobs)
    report: dict[str, Any] = {
        "sweep_dir": str(sweep_dir), "expected": [list(c) for c in sorted(set(cells))],
        "expected_jobs": len(expected_jobs) or None,
        "jobs": [{"folder": job.directory.name, "cell": list(job.cell), "status": job.status,
                  "message": job.message, "overrides": list(job.overrides)} for job in jobs],
        "missing": [{"cell": list(item.cell), "run": item.name, "reason": item.reason} for item in missing],
        "status": "incomplete" if missing else "complete",
    }
    write_json(report, output_dir / REPORT_FILE)
    return jobs, missing


def refuse_run_folder(folder: Path, problem: str) -> None:
    """Refuse a folder that holds a run where a sweep folder (or an output folder) is wanted, before anything is
    written: a run folder is only ever written by its run.

    Raises:
        ValueError: naming the folder, the problem and the fix.
    """
    if Path(folder).is_dir() and is_run_folder(folder):
        raise ValueError(f"{folder} {problem}; sfbench-collect collects a sweep folder and writes nothing into a "
                         "run folder. Pass the sweep folder, write elsewhere with --output FOLDER, or read runs with "
                         f"`sfbench-report NAME --runs {folder}`. Nothing was written.")


def collect(sweep_dir: Path, expected: Sequence[Cell] | None = None, *, output_dir: Path | None = None,
            figures: bool = True) -> Collection:
    """Check a sweep, merge its runs and publish the views its runs support.

    Args:
        sweep_dir: the multirun folder (job sub-folders inside).
        expected: cells that must be present; None reads `expected_cells.json` (every job of the sweep).
        output_dir: where to write (default: `sweep_dir`).
        figures: also write the PNG figures.

    Raises:
        MissingCellsError: an expected job has no finished run (after writing collect_report.json).
        FileNotFoundError: no expected cells given and none recorded.
        SweepFileError: a bookkeeping file of the sweep cannot be read.
        DamagedRunError / DamagedRunsError: a finished run is damaged (named; nothing but collect_report.json is
            written).
        ExtraRunsError: a run folder in the sweep that is not one of its jobs (e.g. a run copied into a job's
            folder), or a symbolic-link cycle (each named; nothing but collect_report.json is written).
        RunConflictError: two runs with the same settings hold different numbers.
    """
    from sfbench_jax.report.catalog import publish_views

    sweep_dir = Path(sweep_dir)
    output_dir = sweep_dir if output_dir is None else Path(output_dir)
    jobs, missing = check_sweep(sweep_dir, expected, output_dir)
    if missing:
        raise MissingCellsError(missing, sweep_dir)
    try:
        runs = gather_runs([sweep_dir])  # the same finder as sfbench-report: exactly the sweep's jobs
    except (DamagedRunError, DamagedRunsError, ExtraRunsError) as error:
        report = json.loads((output_dir / REPORT_FILE).read_text())
        write_json({**report, "status": "damaged", "damaged": str(error)}, output_dir / REPORT_FILE)
        raise
    done = {job.directory.resolve() for job in jobs if job.status == "done"}
    strays = [Refused(run.directory, "stray", f"is not a job of the sweep {sweep_dir} (no {CELL_FILE}); move it out "
                      "of the sweep folder, or delete it") for run in runs.runs if run.directory.resolve() not in done]
    if strays:
        raise ExtraRunsError(strays)
    summary = sorted_summary(runs.summary)
    files = {"report": output_dir / REPORT_FILE, "summary": write_csv(summary, output_dir / SUMMARY_FILE)}
    views = publish_views(runs, output_dir, figures=figures)
    files.update(views.files)
    report = json.loads((output_dir / REPORT_FILE).read_text())
    report.update(rows=len(summary), duplicates=[[str(a), str(b)] for a, b in runs.duplicates],
                  views=views.notes)
    write_json(report, output_dir / REPORT_FILE)
    return Collection(summary=summary, jobs=jobs, files=files, runs=runs)
