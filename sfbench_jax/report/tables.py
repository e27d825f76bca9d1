"""Tidy result tables: one summary row per evaluated model and the per-window losses."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from sfbench_jax.evaluate.evaluation import Evaluation
from sfbench_jax.faults.registry import SCENARIOS

SCENARIO_DISPLAY = {fault.key: fault.display_name for fault in SCENARIOS}


@dataclass(frozen=True)
class EvaluatedModel:
    """One evaluated model and how it was chosen."""

    dataset: str
    architecture: str
    method: str
    hyperparameters: dict[str, Any]
    mse_val: float
    evaluation: Evaluation


def summary_row(model: EvaluatedModel) -> dict[str, Any]:
    """The summary-table row of one evaluated model (scores, intervals, selection, settings)."""
    evaluation, scores, ci = model.evaluation, model.evaluation.scores, model.evaluation.intervals
    keys = evaluation.losses.scenario_keys
    row: dict[str, Any] = {
        "dataset": model.dataset,
        "architecture": model.architecture,
        "method": model.method,
        "hyperparameters": json.dumps(model.hyperparameters, sort_keys=True),
        "rng_mode": evaluation.options.rng,
        "eval_seed": evaluation.options.eval_data_seed,
        "k": len(evaluation.losses.clean),
        "channel_fraction": evaluation.options.fixed_fraction,
        "mse_val": model.mse_val,
        "mse_c": scores.mse_clean, "mse_c_ci_lo": ci.mse_clean.low, "mse_c_ci_hi": ci.mse_clean.high,
        "mse_w": scores.mse_worst, "mse_w_ci_lo": ci.mse_worst.low, "mse_w_ci_hi": ci.mse_worst.high,
        "d_w": scores.d_worst, "d_w_ci_lo": ci.d_worst.low, "d_w_ci_hi": ci.d_worst.high,
        "d_mean": scores.d_mean, "d_mean_ci_lo": ci.d_mean.low, "d_mean_ci_hi": ci.d_mean.high,
        "mpc": scores.mse_mean, "mpc_ci_lo": ci.mse_mean.low, "mpc_ci_hi": ci.mse_mean.high,
        "worst_scenario": keys[scores.worst_index],
    }
    for index, key in enumerate(keys):
        row[f"d_{key}"] = float(scores.degradation[index])
        row[f"d_{key}_ci_lo"] = ci.degradation[index].low
        row[f"d_{key}_ci_hi"] = ci.degradation[index].high
    for index, key in enumerate(keys):
        row[f"mse_{key}"] = float(scores.mse_faulted[index])
        row[f"mse_{key}_ci_lo"] = ci.mse_faulted[index].low
        row[f"mse_{key}_ci_hi"] = ci.mse_faulted[index].high
    return row


def summary_table(models: list[EvaluatedModel]) -> pd.DataFrame:
    """One row per evaluated model."""
    frame = pd.DataFrame([summary_row(model) for model in models])
    for column in ("dataset", "architecture", "method", "rng_mode", "worst_scenario"):
        frame[column] = frame[column].astype("string")
    return frame


def per_window_table(models: list[EvaluatedModel]) -> pd.DataFrame:
    """Per-window clean and faulted losses and drawn severities, one row per (model, test sample)."""
    frames = []
    for model in models:
        losses = model.evaluation.losses
        columns: dict[str, Any] = {
            "dataset": model.dataset, "architecture": model.architecture, "method": model.method,
            "sample_id": np.arange(len(losses.clean), dtype=np.int32),
            "start_row": losses.sample_starts.astype(np.int32),
            "mse_clean": losses.clean.astype(np.float32),
        }
        for index, key in enumerate(losses.scenario_keys):
            columns[f"mse_{key}"] = losses.faulted[index].astype(np.float32)
        for index, key in enumerate(losses.scenario_keys):
            columns[f"severity_{key}"] = losses.severity[index]
        frames.append(pd.DataFrame(columns))
    frame = pd.concat(frames, ignore_index=True)
    for column in ("dataset", "architecture", "method"):
        frame[column] = frame[column].astype("category")
    return frame
