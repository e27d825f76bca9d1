"""Results of the Python front door: `Result` (one evaluated model, frozen: `.summary`, `.per_window`, `.save`) and
`load_runs` (the verifying reader of run folders, as a DataFrame).

A `Result` holds what `sfbench` would write for the same cell, in memory: its tables are the pipeline's
(`pipeline.outputs.tables`: the same columns as summary.csv and per_window.parquet) and `save` writes a normal sealed
run folder through the pipeline's own writer (`pipeline.runner.save_run`), which every reader accepts
(`sfbench-report`, `sfbench-collect`, `load_runs`, the MCP tools). Nothing here computes a score.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from sfbench_jax.config import RunConfig
from sfbench_jax.data.prepared import PreparedData
from sfbench_jax.evaluation import Evaluation
from sfbench_jax.pipeline.cell import EvaluatedModel, Selection
from sfbench_jax.pipeline.outputs.tables import per_window_table, summary_table
from sfbench_jax.pipeline.runner import save_run
from sfbench_jax.run_folder.claim import RunFolderTakenError, real_folder
from sfbench_jax.run_folder.loading import gather_runs
from sfbench_jax.run_folder.record import describe_record, holds_completed_run


@dataclass(frozen=True, repr=False)
class Result:
    """One evaluated model (`sfb.evaluate`): its scores as `sfbench` reports them, and `save` to a run folder.

    Attributes:
        config: the run's settings (`RunConfig`), as its manifest records them.
        evaluated: the pipeline's record of the model (`pipeline.cell.EvaluatedModel`: the engine's `evaluation`
            with per-window losses, scores and intervals; the selection's clean validation MSE).
        selection: how it was selected (its candidates and the winner).
        anchor: the dataset's SeasonalNaive winner on the same windows and faults (the normalised scores' reference).
        data: the prepared dataset it was scored on.
        timings: the phases' wall seconds (for the manifest).
        notes: contract checks that could not apply (recorded in the manifest).
    """

    config: RunConfig
    evaluated: EvaluatedModel
    selection: Selection
    anchor: EvaluatedModel | None
    data: PreparedData
    timings: Mapping[str, float] = field(default_factory=dict)
    notes: tuple[str, ...] = ()

    @property
    def evaluation(self) -> Evaluation:
        """The engine's output: per-window losses `(1 + 8, K)`, scores and 95% intervals."""
        return self.evaluated.evaluation

    @property
    def summary(self) -> pd.DataFrame:
        """The summary row, the same columns as `sfbench`'s summary.csv (a new DataFrame at each access)."""
        return summary_table([self.evaluated], self.anchor)

    @property
    def per_window(self) -> pd.DataFrame:
        """Per-window clean and faulted losses and drawn severities, the columns of per_window.parquet."""
        return per_window_table([self.evaluated])

    def save(self, folder: str | Path, *, overwrite: bool = False, figures: bool = False) -> Path:
        """Write a sealed run folder (summary.csv, per_window.parquet, candidates.csv, manifest.json and the
        completion record; `figures`: the scenario heatmap too) with the pipeline's writer, and return its path.

        Raises:
            RunFolderTakenError: `folder` holds a completed run and `overwrite` is false (nothing written;
                with `overwrite` the earlier run is kept beside it as `.NAME.replaced-TIME`).
            RunFolderBusyError: another process is writing a run into `folder`.
        """
        target = real_folder(Path(folder))
        if not overwrite and holds_completed_run(target):
            what = describe_record(target)
            raise RunFolderTakenError(
                f"{folder} already holds a completed run{f' ({what})' if what else ''}; Result.save never overwrites "
                "one. Save into another folder, or replace it with .save(folder, overwrite=True) (the earlier run is "
                f"then kept beside it as .{target.name}.replaced-TIME).")
        config = dataclasses.replace(self.config, overwrite=overwrite, figures=figures)
        written = save_run(config, self.data, self.evaluated, self.selection, Path(folder), dict(self.timings),
                           self.anchor, notes=self.notes)
        return written.files["summary"].parent

    def __repr__(self) -> str:
        scores, model = self.evaluation.scores, self.evaluated
        worst = self.evaluation.losses.scenario_keys[scores.worst_index]
        return (f"Result({model.dataset} / {model.architecture} / {model.method}, K={len(self.evaluation.losses.clean)}"
                f": MSE_c {scores.mse_c:.4f}, D_w {scores.d_w:.4f} ({worst}), MSE_w {scores.mse_w:.4f})")


def load_runs(folders: str | Path | Iterable[str | Path]) -> pd.DataFrame:
    """Every run folder under `folders` (searched recursively, as `sfbench-report --runs` does), each verified
    (its completion record, then its summary against its own per-window losses), as one DataFrame: the summary.csv
    columns of each run and `run_dir`. A run stored twice is one row; two folders with the same settings and other
    numbers are refused.

    Raises:
        DamagedRunError / DamagedRunsError: a folder is incomplete, cut or edited (each named with its file).
        RunConflictError: two runs with the same settings hold different numbers (both named).
        FileNotFoundError: a folder does not exist.
        ValueError: no run folder under `folders`.
    """
    roots = [Path(folders)] if isinstance(folders, (str, Path)) else [Path(folder) for folder in folders]
    runs = gather_runs(roots)
    if not runs.runs:
        raise ValueError(f"sfb.load_runs: no run folder (summary.csv with its run_record.json) under "
                         f"{[str(root) for root in roots]}; give the folders that Result.save or sfbench wrote.")
    return runs.summary
