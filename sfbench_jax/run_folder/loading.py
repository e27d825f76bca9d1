"""Loading stored runs, verified: `load_run` is the one way a run is read. It verifies the completion record (every
file's size and SHA-256, `run_folder.record`), the record's files against the manifest's, then the summary's scores
against the run's own per-window losses and intervals (`run_folder.summary`), so a cut or edited file is refused with
a `DamagedRunError` naming the folder and the file before any number enters a table.

`gather_runs` reads every run under some folders (`run_folder.finding.find_runs`) into a `RunSet`: one run per key
(`run_folder.keys`); a run stored twice with the same numbers is kept once, the same key with different numbers is
an error naming both folders. Nothing here computes a new score; `sfbench_jax.report.collect` checks a sweep's runs
against what it expected.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from sfbench_jax.run_folder.damage import DamagedRunError, DamagedRunsError
from sfbench_jax.run_folder.finding import find_run_folders
from sfbench_jax.run_folder.keys import hashable, key_identity, run_key
from sfbench_jax.run_folder.manifest import check_files_match_manifest, read_manifest
from sfbench_jax.run_folder.names import PER_WINDOW_FILE
from sfbench_jax.run_folder.record import verify_record
from sfbench_jax.run_folder.summary import check_intervals, check_numbers, read_summary_row

#: Key entries always shown when a run is named.
NAMED_ALWAYS = ("dataset", "architecture", "method")


class RunConflictError(ValueError):
    """Two run folders share a key but hold different numbers."""


@dataclass(frozen=True)
class StoredRun:
    """One run folder.

    Attributes:
        directory: the folder.
        key: `run_key` of the run.
        row: its summary row.
        manifest: its manifest.
    """

    directory: Path
    key: dict[str, Any] = field(repr=False)
    row: dict[str, Any] = field(repr=False)
    manifest: dict[str, Any] = field(repr=False)

    @property
    def identity(self) -> str:
        """The key's text identity."""
        return key_identity(self.key)

    def path(self, name: str) -> Path:
        """A file of the run folder (e.g. `per_window.parquet`)."""
        return self.directory / name

    def per_window(self) -> pd.DataFrame:
        """The stored per-window losses and severities.

        Raises:
            FileNotFoundError: naming the folder.
        """
        path = self.path(PER_WINDOW_FILE)
        if not path.is_file():
            raise FileNotFoundError(f"{path} is missing; re-run the job to store its per-window losses.")
        return pd.read_parquet(path)

    def describe(self, varying: Sequence[str] = ()) -> str:
        """`(dataset=..., architecture=..., method=..., <varying settings>)`."""
        names = list(NAMED_ALWAYS) + [name for name in varying if name not in NAMED_ALWAYS]
        parts = [f"{name}={_shown(self.key.get(name))}" for name in names]
        return "(" + ", ".join(parts) + ")"


def _shown(value: Any) -> str:
    return "null" if value is None or value == "" else str(value)


def load_run(directory: Path) -> StoredRun:
    """Read one run folder, verified: its completion record, the record's files against the manifest's
    (`check_files_match_manifest`), then its summary's scores against its per-window losses (`check_numbers`)
    and every point estimate against its own stored interval (`check_intervals`).

    Raises:
        DamagedRunError: no valid record, a file that differs from it, or a summary number its per-window losses
            do not give (the folder, the file and the fix are named).
    """
    directory = Path(directory)
    record = verify_record(directory)
    row = read_summary_row(directory)
    manifest = read_manifest(directory)
    check_files_match_manifest(directory, record["files"], manifest)
    check_numbers(directory, row)
    check_intervals(directory, row)
    return StoredRun(directory=directory, key=run_key(manifest, row), row=row, manifest=manifest)


def load_runs(directories: Iterable[Path]) -> list[StoredRun]:
    """`load_run` of every folder; every damaged folder is named, not only the first.

    Raises:
        DamagedRunError: one folder is damaged.
        DamagedRunsError: several are.
    """
    runs, damaged = [], []
    for directory in directories:
        try:
            runs.append(load_run(directory))
        except DamagedRunError as error:
            damaged.append(error)
    if len(damaged) == 1:
        raise damaged[0]
    if damaged:
        raise DamagedRunsError(damaged)
    return runs


@dataclass(frozen=True)
class RunSet:
    """The distinct runs found under some folders.

    Attributes:
        runs: one StoredRun per key, in folder order.
        duplicates: `(kept folder, repeated folder)` for runs stored twice with the same numbers.
    """

    runs: tuple[StoredRun, ...]
    duplicates: tuple[tuple[Path, Path], ...] = ()

    @cached_property
    def varying(self) -> tuple[str, ...]:
        """Key entries that differ between the runs (what tells them apart)."""
        names: list[str] = []
        for name in dict.fromkeys(n for run in self.runs for n in run.key):
            if len({hashable(run.key.get(name)) for run in self.runs}) > 1:
                names.append(name)
        return tuple(names)

    def describe(self, run: StoredRun) -> str:
        """A run named by the settings that tell it apart from the others."""
        return run.describe(self.varying)

    @cached_property
    def summary(self) -> pd.DataFrame:
        """Every run's summary row, with `run_dir` (the folder) appended."""
        if not self.runs:
            return pd.DataFrame()
        frame = pd.DataFrame([{**run.row, "run_dir": str(run.directory)} for run in self.runs])
        for column in ("dataset", "architecture", "method", "worst_scenario", "rng_mode"):
            frame[column] = frame[column].astype(str)
        return frame

    def by_directory(self, directory: str | Path) -> StoredRun:
        """The run stored in `directory`."""
        wanted = Path(directory).resolve()
        for run in self.runs:
            if run.directory.resolve() == wanted:
                return run
        raise KeyError(f"No run stored in {directory}.")


def same_numbers(first: Mapping[str, Any], second: Mapping[str, Any]) -> bool:
    """Whether two summary rows hold the same numbers (every numeric column, NaN equal to NaN)."""
    names = sorted(set(first) | set(second))
    for name in names:
        a, b = first.get(name), second.get(name)
        if isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool):
            if not (a == b or (np.isnan(a) and np.isnan(b))):
                return False
        elif a != b and not (_missing(a) and _missing(b)):
            return False
    return True


def _missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and np.isnan(value))


def gather_runs(roots: Iterable[Path]) -> RunSet:
    """Read and verify every run folder under `roots`, merge copies of the same run and refuse conflicting ones.

    Raises:
        DamagedRunError / DamagedRunsError: a run folder is incomplete or damaged (each one named).
        RunConflictError: two folders with the same key hold different numbers (both are named).
        FileNotFoundError: a root does not exist.
    """
    kept: dict[str, StoredRun] = {}
    duplicates: list[tuple[Path, Path]] = []
    for run in load_runs(find_run_folders(roots)):
        first = kept.get(run.identity)
        if first is None:
            kept[run.identity] = run
        elif same_numbers(first.row, run.row):
            duplicates.append((first.directory, run.directory))
        else:
            raise RunConflictError(
                f"Two runs with the same settings hold different numbers: {first.directory} and {run.directory} "
                f"{run.describe()} (e.g. d_w {first.row.get('d_w')} vs {run.row.get('d_w')}). Delete the stale "
                "one, or keep them in separate folders and report them separately.")
    return RunSet(runs=tuple(kept.values()), duplicates=tuple(duplicates))
