"""Helpers for the report tests: hand-written summary rows."""

from __future__ import annotations

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
