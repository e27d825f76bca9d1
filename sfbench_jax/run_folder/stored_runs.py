"""The run-folder format and its stored runs: which files a run folder holds, sealing it (the last step of every
writer), reading it back verified, keying every run by all the settings that change its numbers, finding the run
folders under some folders and refusing ambiguous sets. The pipeline writes through it and the analysis, the API and
the MCP tools read through it; it sits below all of them.

`find_runs` is the one way every reader (`sfbench-collect`, `sfbench-report`, the API, the MCP tools) finds runs:
a sweep folder yields exactly its jobs, a run inside another run folder or a stray run in a sweep is refused by
name, symbolic links are followed with a cycle guard.

A run folder holds `summary.csv` (one row) and `manifest.json` (its resolved config); `per_window.parquet`,
`candidates.csv` and for a trained model `training_curves.parquet` lie beside them (the names are the constants below),
and `run_record.json` (`run_folder.record`), written last, vouches for all of them. `load_run` is the one way a run is
read: it verifies the record (every file's size and SHA-256) and then recomputes the summary's scores from the run's own
per-window losses (`check_numbers`), so a cut or edited file is refused with a `DamagedRunError` naming the folder and
the file before any number enters a table. `seal_run` is the matching last step of every writer.

A run's key is its resolved configuration without the settings that never change a number (chunking, devices,
progress, folders, caches, figures, overwrite), plus the block size the engine used (it fixes the float rounding)
and the data checksum. Two folders with the same key and the same numbers are one run stored twice (the first
folder is kept); the same key with different numbers is an error naming both.

Nothing here computes a new score; `sfbench_jax.report.collect` checks a sweep's runs against what it expected.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import pandas as pd

from sfbench_jax.evaluate.scores import robustness_scores
from sfbench_jax.faults.registry import SCENARIO_KEYS
from sfbench_jax.run_folder.record import (
    JOB_FILE,
    RECORD_FILE,
    RECORDED_FILES,
    DamagedRunError,
    verify_record,
    write_record,
)

SUMMARY_FILE, MANIFEST_FILE = "summary.csv", "manifest.json"
PER_WINDOW_FILE, CANDIDATES_FILE = "per_window.parquet", "candidates.csv"
TRAINING_CURVES_FILE = "training_curves.parquet"

#: Resolved settings that never change a number (dotted names in the manifest's config).
SETTINGS_WITHOUT_EFFECT = frozenset({
    "eval.chunk_size", "eval.num_devices", "eval.progress", "eval.memory_budget_mb", "eval.block_size",
    "train.group_size", "train.num_devices", "train.store_dir", "train.progress",
    "data_root", "cache_dir", "compilation_cache", "figures", "overwrite",
    "tracking.backend", "tracking.uri", "tracking.experiment",
})
#: Config settings renamed since older runs were stored (old dotted name -> current): the one place old names are
#: read, by `read_manifest`, so an old run's key and its rebuilt RunConfig are those of a new run.
RENAMED_SETTINGS = {"eval.rng": "eval.rng_mode", "train.devices": "train.num_devices"}
#: A folder holding one of these is a sweep's (merged outputs), not a run folder.
SWEEP_FILES = ("expected_cells.json", "collect_report.json")
#: Relative tolerance of the summary-against-per-window check: float64 rounding (the engine's arithmetic is
#: repeated exactly, so real runs agree to the last bit; an edited digit is off by far more).
NUMBERS_RTOL = 1e-12
#: Key entries always shown when a run is named.
NAMED_ALWAYS = ("dataset", "architecture", "method")


class RunConflictError(ValueError):
    """Two run folders share a key but hold different numbers."""


class NaNForecastsError(DamagedRunError):
    """A run's per-window losses hold NaN: its model forecast NaN (its numbers are NaN, not changed after the run)."""

    def __init__(self, folder: Path, windows: int, total: int, column: str) -> None:
        ValueError.__init__(self, f"The run in {folder} has NaN forecasts: {windows} of {total} windows give a NaN "
                                  f"loss (most in {column} of its {PER_WINDOW_FILE}), so its scores are NaN; the "
                                  "numbers were not changed after the run. The model diverged or returns NaN (e.g. a "
                                  "training that blew up, a plug-in model's NaN output): fix the model and re-run "
                                  "the job.")
        self.folder, self.file = Path(folder), PER_WINDOW_FILE
        self.problem = f"holds NaN losses in {windows} of {total} windows (NaN forecasts)"


def flatten(mapping: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """Nested mapping -> `{dotted.name: value}` (lists become tuples so values are hashable)."""
    flat: dict[str, Any] = {}
    for key, value in mapping.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping) and value:
            flat.update(flatten(value, f"{name}."))
        else:
            flat[name] = _hashable(value)
    return flat


def _hashable(value: Any) -> Any:
    if isinstance(value, Mapping):
        return tuple(sorted((str(k), _hashable(v)) for k, v in value.items()))
    if isinstance(value, (list, tuple)):
        return tuple(_hashable(v) for v in value)
    return value


def run_key(manifest: Mapping[str, Any], row: Mapping[str, Any]) -> dict[str, Any]:
    """Every setting of a run that changes its numbers, as `{name: value}`.

    The names are the summary's (`dataset`, `architecture`, `method`, `variant`, `selection_metric`,
    `eval_seed`, `rng_mode`, `k`, `channel_fraction`) followed by the remaining resolved config entries in
    dotted form (`train.master_seed`, `model.grid.lr`, ...), the engine's block size and the data checksum.
    """
    config = flatten(manifest.get("config", {}))
    key: dict[str, Any] = {
        "dataset": str(row["dataset"]), "architecture": str(row["architecture"]), "method": str(row["method"]),
        "variant": _text(row.get("variant")), "selection_metric": _text(row.get("selection_metric")),
        "eval_seed": int(row["eval_seed"]), "rng_mode": str(row["rng_mode"]), "k": int(row["k"]),
        "channel_fraction": _number(row.get("channel_fraction")),
    }
    engines = [model.get("engine", {}) for model in manifest.get("models", [])]
    key["engine.block_size"] = engines[0].get("block_size") if engines else None
    key["data.content_sha256"] = manifest.get("data", {}).get("content_sha256")
    already = {"dataset.name", "model.name", "method.name", "eval.seed", "eval.rng_mode", "eval.k",
               "eval.channel_fraction"}
    for name in sorted(config):
        if name not in SETTINGS_WITHOUT_EFFECT and name not in already:
            key[name] = config[name]
    if key.get("eval.scenarios") == SCENARIO_KEYS:  # the default (runs from before the setting existed lack it)
        del key["eval.scenarios"]
    return key


def _text(value: Any) -> str:
    return "" if value is None or (isinstance(value, float) and np.isnan(value)) else str(value)


def _number(value: Any) -> float | None:
    if value is None or value == "" or (isinstance(value, float) and np.isnan(value)):
        return None
    return float(value)


def key_identity(key: Mapping[str, Any]) -> str:
    """A stable text identity of a run key."""
    return json.dumps({name: _jsonable(value) for name, value in key.items()}, sort_keys=True)


def _jsonable(value: Any) -> Any:
    if isinstance(value, tuple):
        return [_jsonable(v) for v in value]
    if isinstance(value, (np.integer, np.floating)):
        return value.item()
    return value


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


#: Files only a run folder holds (a sweep's merged outputs never do): a folder with one is a run folder, whatever
#: else lies in it (e.g. a `collect_report.json` an older `sfbench-collect RUN` wrote there).
RUN_ONLY_FILES = (RECORD_FILE, MANIFEST_FILE, PER_WINDOW_FILE, CANDIDATES_FILE, TRAINING_CURVES_FILE)


def is_run_folder(directory: Path) -> bool:
    """A folder that holds (part of) a run: its completion record or any file a run writes (a sweep's merged
    outputs aside: `summary.csv` beside a sweep file is a sweep's). Whether the run is complete is `load_run`'s
    check."""
    directory = Path(directory)
    if any((directory / name).is_file() for name in RUN_ONLY_FILES):
        return True
    if any((directory / name).is_file() for name in SWEEP_FILES):
        return False
    return any((directory / name).is_file() for name in RECORDED_FILES if name != JOB_FILE)


class ExtraRunsError(ValueError):
    """Run folders where no run belongs (inside another run folder, or in a sweep but not one of its jobs), or a
    symbolic link that cannot be followed (a cycle, or out of the folders a reader may read); each one named."""

    def __init__(self, refused: Sequence[Refused]) -> None:
        self.refused = list(refused)
        super().__init__(f"{len(self.refused)} folder(s) cannot be read as runs: "
                         + " | ".join(f"{item.folder} {item.reason}" for item in self.refused))


class Refused(NamedTuple):
    """A folder `find_runs` does not read: `kind` is "outside" (a link out of the folder read), "cycle", "nested"
    (a run inside a run folder) or "stray" (a run in a sweep that is not one of its jobs); `reason` says why."""

    folder: Path
    kind: str
    reason: str


@dataclass(frozen=True)
class FoundRuns:
    """What `find_runs` found.

    Attributes:
        folders: the run folders to read (resolved, sorted, each once): every run below a plain folder, exactly
            the job folders of a sweep.
        refused: each run folder that is not read and each link that is not followed, with the reason.
    """

    folders: tuple[Path, ...]
    refused: tuple[Refused, ...] = ()


def _is_sweep(folder: Path) -> bool:
    return not is_run_folder(folder) and any((folder / name).is_file() for name in SWEEP_FILES)


def _subfolders(folder: Path) -> list[Path]:
    """Not-hidden sub-folders (symbolic links to folders included), sorted."""
    try:
        entries = sorted(os.scandir(folder), key=lambda entry: entry.name)
    except OSError:
        return []
    return [Path(entry.path) for entry in entries if not entry.name.startswith(".") and entry.is_dir()]


def find_runs(roots: Iterable[Path], *, within: Path | None = None) -> FoundRuns:
    """The one way every reader (`sfbench-collect`, `sfbench-report`, the API, the MCP tools) finds the runs of
    some folders (docs/reliability.md):

    * below a plain folder, every run folder (complete or not; hidden folders, e.g. staging, skipped);
    * in a sweep folder (one with `expected_cells.json` or `collect_report.json`), exactly its jobs: the direct
      sub-folders holding `cell.json`; any other run folder there (a stray run beside the jobs) is refused;
    * a run folder inside another run folder (e.g. a run copied into a job's folder) is refused, never merged;
    * symbolic links are followed; one leading back to a folder it lies in (a cycle), or out of `within`, is
      refused by name; each resolved folder is entered once (links to one folder from many places, e.g. a chain
      of folders each linking twice to the next, are walked in time linear in the folders, not in the paths).

    Raises:
        FileNotFoundError: a root does not exist.
    """
    found: set[Path] = set()
    entered: set[Path] = set()
    refused: list[Refused] = []
    limit = None if within is None else Path(within).resolve()
    for root in roots:
        root = Path(root)
        if not root.exists():
            raise FileNotFoundError(f"{root} does not exist; pass folders that hold sfbench runs (--runs FOLDER).")
        if root.is_file():
            continue
        stack: list[tuple[Path, tuple[Path, ...], Path | None, Path | None]] = [(root, (), None, None)]
        while stack:
            folder, ancestors, run_above, sweep = stack.pop()
            real = folder.resolve()
            problem = _refusal(folder, real, ancestors, limit, run_above, sweep)
            if problem is not None and problem.kind in ("outside", "cycle"):
                refused.append(problem)
                continue
            if real in entered:  # the same folder through another link: read (and refused, if so) once
                continue
            entered.add(real)
            if problem is not None:
                refused.append(problem)
            elif is_run_folder(folder):
                found.add(real)
            is_run = is_run_folder(folder)
            inner_sweep = folder if _is_sweep(folder) else sweep
            inner_run = folder if is_run else run_above
            stack.extend((sub, (*ancestors, real), inner_run, inner_sweep) for sub in reversed(_subfolders(folder)))
    return FoundRuns(folders=tuple(sorted(found)), refused=tuple(refused))


def _refusal(folder: Path, real: Path, ancestors: tuple[Path, ...], limit: Path | None, run_above: Path | None,
             sweep: Path | None) -> Refused | None:
    """Why `find_runs` does not read (or enter) `folder`, if it does not."""
    if limit is not None and not real.is_relative_to(limit):
        return Refused(folder, "outside", "is a symbolic link out of the folder being read; copy the run in instead")
    if real in ancestors:
        return Refused(folder, "cycle", f"is a symbolic link back to {real}, a folder it lies in (a cycle); remove "
                                        "the link")
    if not is_run_folder(folder):
        return None
    if run_above is not None:
        return Refused(folder, "nested", f"lies inside the run folder {run_above} (a copied run?); move it out, "
                                         "into a folder of its own, or delete it")
    if sweep is not None and not (folder.parent == sweep and (folder / JOB_FILE).is_file()):
        return Refused(folder, "stray", f"is not a job of the sweep {sweep} (no {JOB_FILE} of that sweep); move it "
                                        "out of the sweep folder, or delete it")
    return None


def find_run_folders(roots: Iterable[Path]) -> list[Path]:
    """The run folders `find_runs` finds under `roots` (sorted, each once), refusing what it refuses.

    Raises:
        FileNotFoundError: a root does not exist.
        ExtraRunsError: a run folder where no run belongs, or a link that cannot be followed (each named).
    """
    result = find_runs(roots)
    if result.refused:
        raise ExtraRunsError(result.refused)
    return list(result.folders)


def _read_json(directory: Path, name: str) -> dict[str, Any]:
    try:
        payload = json.loads((Path(directory) / name).read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise DamagedRunError(directory, name, f"cannot be read ({error})") from error
    if not isinstance(payload, dict):
        raise DamagedRunError(directory, name, "does not hold a JSON object")
    return payload


def _read_row(directory: Path) -> dict[str, Any]:
    try:
        summary = pd.read_csv(Path(directory) / SUMMARY_FILE)
    except (OSError, ValueError) as error:
        raise DamagedRunError(directory, SUMMARY_FILE, f"cannot be read ({error})") from error
    if len(summary) != 1:
        raise DamagedRunError(directory, SUMMARY_FILE, f"holds {len(summary)} rows; a run folder holds one")
    return {name: _plain(value) for name, value in summary.iloc[0].items()}


def read_manifest(directory: Path) -> dict[str, Any]:
    """A run folder's manifest with the settings of older versions under their current names (`RENAMED_SETTINGS`).

    Raises:
        DamagedRunError: the manifest cannot be read or holds no JSON object.
    """
    manifest = _read_json(directory, MANIFEST_FILE)
    config = manifest.get("config")
    if not isinstance(config, dict):
        return manifest
    config = {section: dict(values) if isinstance(values, dict) else values for section, values in config.items()}
    for old, new in RENAMED_SETTINGS.items():
        (section, name), new_name = old.split("."), new.split(".")[1]
        values = config.get(section)
        if isinstance(values, dict) and name in values and new_name not in values:
            values[new_name] = values.pop(name)
    return {**manifest, "config": config}


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
    row = _read_row(directory)
    manifest = read_manifest(directory)
    check_files_match_manifest(directory, record["files"], manifest)
    check_numbers(directory, row)
    check_intervals(directory, row)
    return StoredRun(directory=directory, key=run_key(manifest, row), row=row, manifest=manifest)


def seal_run(directory: Path, names: Iterable[str] | None = None) -> Path:
    """Write the completion record of a run folder whose files are all written: the last write of every writer
    (the pipeline, the selector-pressure re-selection). The summary is checked against the per-window losses
    and the files against the manifest first, so a run is never sealed with numbers its own losses do not give
    or with files it did not write.

    Args:
        directory: the run folder.
        names: the files this run wrote (default: those its manifest lists, the manifest and a job's cell.json).

    Raises:
        DamagedRunError: the summary and the per-window losses disagree, or `names` are not the manifest's files
            (nothing is sealed).
    """
    directory = Path(directory)
    row = _read_row(directory)
    check_numbers(directory, row)
    check_intervals(directory, row)
    manifest = read_manifest(directory)
    if names is None:
        names = [*manifest_files(directory, manifest), *([JOB_FILE] if (directory / JOB_FILE).is_file() else [])]
    names = list(dict.fromkeys(names))
    check_files_match_manifest(directory, names, manifest)
    key = json.loads(key_identity(run_key(manifest, row)))
    return write_record(directory, run_key=key, names=names)


def manifest_files(directory: Path, manifest: Mapping[str, Any]) -> list[str]:
    """The run files a manifest says its run wrote (`files`), with the manifest itself.

    Raises:
        DamagedRunError: the manifest lists no files.
    """
    listed = manifest.get("files")
    if not isinstance(listed, dict) or not all(isinstance(name, str) for name in listed.values()):
        raise DamagedRunError(directory, MANIFEST_FILE, "lists no `files` (the files its run wrote)")
    return [*listed.values(), MANIFEST_FILE]


def check_files_match_manifest(directory: Path, recorded: Iterable[str], manifest: Mapping[str, Any]) -> None:
    """The files a record vouches for are exactly those the manifest's run wrote (a job's cell.json aside).

    Raises:
        DamagedRunError: naming the files only one of them lists (files of two runs mixed in one folder).
    """
    listed, recorded = set(manifest_files(directory, manifest)), set(recorded) - {JOB_FILE}
    if listed != recorded:
        extra, absent = sorted(recorded - listed), sorted(listed - recorded)
        raise DamagedRunError(directory, RECORD_FILE, f"does not vouch for the files its manifest lists (recorded "
                              f"but not written by this run: {extra or 'none'}; written but not recorded: "
                              f"{absent or 'none'}): files of two runs are mixed in one folder")


#: Tolerance of the interval check (float rounding of a quantile against its point estimate).
INTERVAL_RTOL = 1e-9


def check_intervals(directory: Path, row: Mapping[str, Any]) -> None:
    """Every point estimate of a summary row with a stored 95% interval (`X`, `X_ci_lo`, `X_ci_hi`) lies inside it.

    Raises:
        DamagedRunError: naming the first estimate outside its interval.
    """
    for name in row:
        if not name.endswith("_ci_lo"):
            continue
        point = name.removesuffix("_ci_lo")
        value, low, high = (_as_float(row.get(n)) for n in (point, name, f"{point}_ci_hi"))
        if value is None or low is None or high is None:
            continue
        slack = INTERVAL_RTOL * max(abs(value), abs(low), abs(high), 1e-300)
        if not low - slack <= value <= high + slack:
            raise DamagedRunError(directory, SUMMARY_FILE, f"says {point} = {value!r}, outside its own stored 95% "
                                  f"interval [{low!r}, {high!r}]: the numbers were changed after the run")


def _per_window_scores(directory: Path) -> tuple[list[str], Any, int, dict[str, tuple[float, float]]]:
    """The paper's scenario keys, their scores, the window count, and each extra scenario's (MSE, D): extras
    (`eval.scenarios`) are scored beside the eight, never in D_w, MSE_w, D-bar or mPC."""
    path = Path(directory) / PER_WINDOW_FILE
    try:
        frame = pd.read_parquet(path)
    except (OSError, ValueError) as error:
        raise DamagedRunError(directory, PER_WINDOW_FILE, f"cannot be read ({error})") from error
    losses = frame[[c for c in frame.columns if c.startswith("mse_")]]
    if losses.isna().to_numpy().any():
        raise NaNForecastsError(directory, int(losses.isna().any(axis=1).sum()), len(frame),
                                str(losses.isna().sum().idxmax()))
    columns = [c.removeprefix("mse_") for c in frame.columns if c.startswith("mse_") and c != "mse_clean"]
    keys = [key for key in columns if key in SCENARIO_KEYS]
    if "mse_clean" not in frame.columns or not keys:
        raise DamagedRunError(directory, PER_WINDOW_FILE, "lacks the mse_clean / mse_<scenario> columns")
    clean = frame["mse_clean"].to_numpy()
    extras = [key for key in columns if key not in SCENARIO_KEYS]
    try:
        scores = robustness_scores(clean, np.stack([frame[f"mse_{key}"].to_numpy() for key in keys]))
        extra = robustness_scores(clean, np.stack([frame[f"mse_{key}"].to_numpy() for key in extras])) \
            if extras else None
    except ValueError as error:
        raise DamagedRunError(directory, PER_WINDOW_FILE, f"gives no scores ({error})") from error
    extra_scores = {} if extra is None else {
        key: (float(extra.mse_p[i]), float(extra.d_p[i])) for i, key in enumerate(extras)}
    return keys, scores, len(frame), extra_scores


def check_numbers(directory: Path, row: Mapping[str, Any]) -> None:
    """Recompute a summary row's scores from the run's own `per_window.parquet` exactly as the engine does
    (`evaluate.scores.robustness_scores`): MSE_c, every scenario's MSE and D (extra scenarios' included), D_w and
    its scenario, MSE_w, D-bar and mPC over the paper's eight, and the window count, each equal up to float64
    rounding (`NUMBERS_RTOL`).

    Raises:
        DamagedRunError: the first number that differs, named with both values.
    """
    keys, scores, windows, extra_scores = _per_window_scores(directory)
    expected: dict[str, Any] = {"mse_c": scores.mse_c, "d_w": scores.d_w, "mse_w": scores.mse_w,
                                "d_mean": scores.d_mean, "mpc": scores.mpc}
    for index, key in enumerate(keys):
        expected[f"mse_{key}"], expected[f"d_{key}"] = float(scores.mse_p[index]), float(scores.d_p[index])
    for key, (mse, degradation) in extra_scores.items():
        expected[f"mse_{key}"], expected[f"d_{key}"] = mse, degradation
    for name, value in expected.items():
        stored = _as_float(row.get(name))
        if stored is None or not np.isclose(stored, value, rtol=NUMBERS_RTOL, atol=0.0):
            raise DamagedRunError(directory, SUMMARY_FILE, f"says {name} = {row.get(name)}, but its "
                                  f"{PER_WINDOW_FILE} gives {value!r}: the numbers were changed after the run")
    if str(row.get("worst_scenario")) != keys[scores.worst_index] or _as_float(row.get("k")) != windows:
        raise DamagedRunError(directory, SUMMARY_FILE, f"says worst_scenario = {row.get('worst_scenario')}, k = "
                              f"{row.get('k')}, but its {PER_WINDOW_FILE} gives {keys[scores.worst_index]}, "
                              f"{windows}: the numbers were changed after the run")


def _as_float(value: Any) -> float | None:
    try:
        return _number(value)
    except (TypeError, ValueError):
        return None


def _plain(value: Any) -> Any:
    return value.item() if isinstance(value, np.generic) else value


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
            if len({_hashable(run.key.get(name)) for run in self.runs}) > 1:
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


class DamagedRunsError(ValueError):
    """Several run folders are damaged; `errors` holds each one's `DamagedRunError`."""

    def __init__(self, errors: Sequence[DamagedRunError]) -> None:
        self.errors = list(errors)
        super().__init__(f"{len(self.errors)} run folders are damaged: " + " | ".join(str(e) for e in self.errors))


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
