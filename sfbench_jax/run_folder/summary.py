"""A run's summary row (`summary.csv`) checked against the run's own files: every score recomputed from its
per-window losses exactly as the engine computes it (`check_numbers`), every point estimate inside its own stored
95% interval (`check_intervals`). A cut or edited number is refused with a `DamagedRunError` naming the folder, the
number and both values before it enters a table. Nothing here computes a new score.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from sfbench_jax.evaluation.scores import robustness_scores
from sfbench_jax.faults.registry import SCENARIO_KEYS
from sfbench_jax.run_folder.damage import DamagedRunError, NaNForecastsError
from sfbench_jax.run_folder.names import PER_WINDOW_FILE, SUMMARY_FILE

#: Relative tolerance of the summary-against-per-window check: float64 rounding (the engine's arithmetic is
#: repeated exactly, so real runs agree to the last bit; an edited digit is off by far more).
NUMBERS_RTOL = 1e-12


#: Tolerance of the interval check (float rounding of a quantile against its point estimate).
INTERVAL_RTOL = 1e-9


def read_summary_row(directory: Path) -> dict[str, Any]:
    """A run folder's one summary row, unchecked.

    Raises:
        DamagedRunError: the summary cannot be read or does not hold one row.
    """
    try:
        summary = pd.read_csv(Path(directory) / SUMMARY_FILE)
    except (OSError, ValueError) as error:
        raise DamagedRunError(directory, SUMMARY_FILE, f"cannot be read ({error})") from error
    if len(summary) != 1:
        raise DamagedRunError(directory, SUMMARY_FILE, f"holds {len(summary)} rows; a run folder holds one")
    return {name: _plain(value) for name, value in summary.iloc[0].items()}


def check_numbers(directory: Path, row: Mapping[str, Any]) -> None:
    """Recompute a summary row's scores from the run's own `per_window.parquet` exactly as the engine does
    (`evaluation.scores.robustness_scores`): MSE_c, every scenario's MSE and D (extra scenarios' included), D_w and
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


def _plain(value: Any) -> Any:
    return value.item() if isinstance(value, np.generic) else value


def _as_float(value: Any) -> float | None:
    """A stored number as a float; None for an empty, NaN or unreadable cell."""
    try:
        if value is None or value == "" or (isinstance(value, float) and np.isnan(value)):
            return None
        return float(value)
    except (TypeError, ValueError):
        return None
