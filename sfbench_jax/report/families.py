"""Score families of stored runs (protocol 6.5-6.6): mCE and relative mCE against the dataset's SeasonalNaive
anchor (from the summary, or recomputed from the stored per-window losses and severities of the run and of
the anchor run on the same realisation), rPC, and the per-dataset log-log effective-robustness fit with
rho-bar for every row.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from sfbench_jax.config import ANCHOR_MODEL
from sfbench_jax.evaluation.normalised import RhoFit, effective_robustness, normalised_scores, rho_fit
from sfbench_jax.faults.registry import SCENARIO_KEYS
from sfbench_jax.report.published import PUBLISHED_BASELINES
from sfbench_jax.report.realisations import REALISATION_COLUMNS, is_perturbed_selection, with_method_columns
from sfbench_jax.run_folder.loading import RunSet, StoredRun


def stored_losses(run: StoredRun) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """`(clean (K,), faulted (P, K), severity (P, K))` from a run's per_window.parquet (float64)."""
    frame = run.per_window()
    clean = frame["mse_clean"].to_numpy(np.float64)
    faulted = np.stack([frame[f"mse_{key}"].to_numpy(np.float64) for key in SCENARIO_KEYS])
    severity = np.stack([frame[f"severity_{key}"].to_numpy(np.float64) for key in SCENARIO_KEYS])
    return clean, faulted, severity


def _realisation(row: pd.Series | dict) -> tuple:
    fraction = row["channel_fraction"]
    fraction = None if fraction is None or (isinstance(fraction, float) and np.isnan(fraction)) else float(fraction)
    return (str(row["dataset"]), int(row["eval_seed"]), str(row["rng_mode"]), int(row["k"]), fraction)


def anchor_runs(runs: RunSet) -> dict[tuple, StoredRun]:
    """The SeasonalNaive baseline run of every (dataset, realisation) in the set."""
    anchors: dict[tuple, StoredRun] = {}
    for run in runs.runs:
        if run.row["architecture"] == ANCHOR_MODEL and run.row["method"] == "baseline":
            anchors.setdefault(_realisation(run.row), run)
    return anchors


def normalised_from_stored(run: StoredRun, anchor: StoredRun) -> tuple[float, float]:
    """mCE and relative mCE of a stored run against a stored anchor run (per-window files)."""
    clean, faulted, severity = stored_losses(run)
    anchor_clean, anchor_faulted, anchor_severity = stored_losses(anchor)
    scores = normalised_scores(clean, faulted, severity, anchor_clean, anchor_faulted, anchor_severity)
    return scores.mce, scores.rel_mce


def fill_normalised(frame: pd.DataFrame, runs: RunSet | None) -> pd.DataFrame:
    """`frame` with `mce`, `rel_mce` (filled from stored per-window losses where the summary lacks them and the
    set holds the anchor run of the same realisation) and `rpc`."""
    frame = frame.copy()
    for column in ("mce", "rel_mce"):
        frame[column] = pd.to_numeric(frame[column], errors="coerce") if column in frame.columns else np.nan
    frame["rpc"] = frame["mse_c"] / frame["mpc"]
    if runs is None:
        return frame
    anchors = anchor_runs(runs)
    for index, row in frame[frame["mce"].isna()].iterrows():
        anchor = anchors.get(_realisation(row))
        if anchor is not None and "run_dir" in row:
            frame.loc[index, ["mce", "rel_mce"]] = normalised_from_stored(runs.by_directory(row["run_dir"]), anchor)
    return frame


def rho_fits(frame: pd.DataFrame, *, published_frontier: bool = False) -> pd.DataFrame:
    """The frontier fit per (dataset, realisation) over the clean-selected baseline winners (protocol 6.6).

    Args:
        frame: summary rows.
        published_frontier: add the published winners (protocol 8.1/8.5) of architectures the rows lack (e.g.
            Chronos-2) to the fitted points.
    """
    frame = with_method_columns(frame)
    baselines = frame[(frame["method"] == "baseline") & ~is_perturbed_selection(frame)]
    records = []
    for values, group in _by_realisation(baselines):
        points = list(zip(group["architecture"].astype(str), group["mse_c"], group["mpc"], strict=True))
        if published_frontier:
            present = {name for name, _, _ in points}
            points += [(name, *pair) for name, pair in PUBLISHED_BASELINES.get(str(values[0]), {}).items()
                       if name not in present]
        fit = rho_fit([p[1] for p in points], [p[2] for p in points])
        records.append({**dict(zip(["dataset", *REALISATION_COLUMNS], values, strict=True)),
                        "slope": fit.slope, "intercept": fit.intercept, "r_squared": fit.r_squared,
                        "rmse_log": fit.rmse, "rows_used": fit.rows_used, "status": fit.status,
                        "architectures": ",".join(p[0] for p in points)})
    return pd.DataFrame(records)


def _by_realisation(frame: pd.DataFrame):
    keys = ["dataset", *REALISATION_COLUMNS]
    filled = frame.assign(channel_fraction=pd.to_numeric(frame["channel_fraction"], errors="coerce").fillna(-1.0))
    for values, group in filled.groupby(keys, sort=False):
        values = list(values)
        values[-1] = np.nan if values[-1] < 0 else values[-1]
        yield tuple(values), group


def with_rho(frame: pd.DataFrame, fits: pd.DataFrame) -> pd.DataFrame:
    """`frame` with `rho` (rho-bar) and `rho_status` from the fit of its dataset and realisation."""
    frame = frame.copy()
    lookup = {_realisation(row): row for _, row in fits.iterrows()} if not fits.empty else {}
    values, statuses = [], []
    for _, row in frame.iterrows():
        fit_row = lookup.get(_realisation(row))
        if fit_row is None:
            values.append(np.nan)
            statuses.append("no baseline winners on this realisation")
            continue
        fit = RhoFit(fit_row["slope"], fit_row["intercept"], fit_row["r_squared"], fit_row["rmse_log"],
                     int(fit_row["rows_used"]), str(fit_row["status"]))
        value, status = effective_robustness(fit, float(row["mse_c"]), float(row["mpc"]))
        values.append(value)
        statuses.append(status)
    frame["rho"], frame["rho_status"] = values, statuses
    return frame


def scored_frame(frame: pd.DataFrame, runs: RunSet | None, *, published_frontier: bool = False
                 ) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Summary rows with every score family (`mce`, `rel_mce`, `rpc`, `rho`) and the frontier fits."""
    frame = fill_normalised(with_method_columns(frame), runs)
    fits = rho_fits(frame, published_frontier=published_frontier)
    return with_rho(frame, fits), fits


def channel_scoped(row: pd.Series | dict, scenarios: Sequence[str]) -> tuple[float, float]:
    """D_w and D-bar over the given scenarios only (e.g. the seven channel-scoped ones)."""
    values = np.array([float(row[f"d_{key}"]) for key in scenarios])
    return float(values.max()), float(values.mean())
