"""Helpers for the report tests: hand-written summary rows, and a stored run rewritten with other numbers that
still agree with each other (a run of the same settings that gave other numbers)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from sfbench_jax.faults import SCENARIO_KEYS


def summary_rows(values: dict[tuple[str, str], tuple[float, float, float]]) -> pd.DataFrame:
    """Rows with (d_w, mse_c, mse_w) per (dataset, architecture); per-scenario D spread below D_w."""
    rows = []
    for (dataset, architecture), (d_w, mse_c, mse_w) in values.items():
        row = {"dataset": dataset, "architecture": architecture, "method": "baseline", "d_w": d_w, "mse_c": mse_c,
               "mse_w": mse_w, "hyperparameters": "{}"}
        for index, key in enumerate(SCENARIO_KEYS):
            row[f"d_{key}"] = d_w - 0.01 * index
        rows.append(row)
    return pd.DataFrame(rows)


def rewrite_consistently(run_dir: Path, *, scale: float) -> None:
    """Scale a stored run's per-window losses, recompute its summary's scores from them as the engine does and
    write its completion record again (through `seal_run`, the writers' last step)."""
    from sfbench_jax.evaluation.scores import robustness_scores
    from sfbench_jax.run_folder.record import seal_run

    per_window = pd.read_parquet(run_dir / "per_window.parquet")
    keys = [c.removeprefix("mse_") for c in per_window.columns if c.startswith("mse_") and c != "mse_clean"]
    for column in ["mse_clean", *(f"mse_{key}" for key in keys)]:
        per_window[column] = (per_window[column] * scale).astype(np.float32)
    per_window.to_parquet(run_dir / "per_window.parquet", index=False)
    scores = robustness_scores(per_window["mse_clean"].to_numpy(),
                               np.stack([per_window[f"mse_{key}"].to_numpy() for key in keys]))
    summary = pd.read_csv(run_dir / "summary.csv")
    summary.loc[0, ["mse_c", "d_w", "mse_w", "d_mean", "mpc"]] = [scores.mse_c, scores.d_w, scores.mse_w,
                                                                   scores.d_mean, scores.mpc]
    for index, key in enumerate(keys):
        summary.loc[0, [f"mse_{key}", f"d_{key}"]] = [scores.mse_p[index], scores.d_p[index]]
    summary.loc[0, "worst_scenario"] = keys[scores.worst_index]
    for column in [c for c in summary.columns if c.startswith(("mse_", "mpc_")) and c.endswith(("_ci_lo", "_ci_hi"))]:
        summary.loc[0, column] = summary.loc[0, column] * scale  # the intervals of the scaled losses scale too
    summary.to_csv(run_dir / "summary.csv", index=False)
    seal_run(run_dir)
