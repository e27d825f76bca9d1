"""Tidy result tables: one summary row per evaluated model, the per-window losses, and the candidates of a
selection with their training curves.

A summary row carries the reference-normalised scores (`mce`, `rel_mce`, protocol 6.5) when the run's anchor (its
dataset's SeasonalNaive winner, evaluated on the same windows and faults) is given, and `rpc` always.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pandas as pd

from sfbench_jax.evaluation.normalised import normalised_scores, relative_performance
from sfbench_jax.faults.registry import SCENARIOS
from sfbench_jax.pipeline.cell import EvaluatedModel, Selection

SCENARIO_DISPLAY = {fault.key: fault.display_name for fault in SCENARIOS}


def anchor_columns(model: EvaluatedModel, anchor: EvaluatedModel | None) -> dict[str, Any]:
    """`mce`, `rel_mce` (NaN without an anchor or when the anchor's denominators are not positive), `rpc` and
    the anchor's hyperparameters.

    Raises:
        ValueError: the anchor was evaluated on other windows or faults than the model.
    """
    scores = model.evaluation.scores
    columns: dict[str, Any] = {"mce": np.nan, "rel_mce": np.nan, "rpc": relative_performance(scores.mse_c, scores.mpc),
                               "anchor_hyperparameters": ""}
    if anchor is None:
        return columns
    losses, reference = model.evaluation.losses, anchor.evaluation.losses
    normalised = normalised_scores(losses.clean, losses.faulted, losses.severity, reference.clean,
                                   reference.faulted, reference.severity)
    columns.update(mce=normalised.mce, rel_mce=normalised.rel_mce,
                   anchor_hyperparameters=json.dumps(anchor.hyperparameters, sort_keys=True))
    return columns


def summary_row(model: EvaluatedModel, anchor: EvaluatedModel | None = None) -> dict[str, Any]:
    """The summary-table row of one evaluated model (scores, intervals, selection, settings; `anchor`: the
    dataset's SeasonalNaive winner on the same windows and faults, for `mce` and `rel_mce`)."""
    evaluation, scores, ci = model.evaluation, model.evaluation.scores, model.evaluation.intervals
    keys = evaluation.losses.scenario_keys
    row: dict[str, Any] = {
        "dataset": model.dataset,
        "architecture": model.architecture,
        "method": model.method,
        "variant": model.variant,
        "hyperparameters": json.dumps(model.hyperparameters, sort_keys=True),
        "selection_metric": model.selection_metric,
        "selection_value": model.selection_value,
        "rng_mode": evaluation.options.rng_mode,
        "eval_seed": evaluation.options.seed,
        "k": len(evaluation.losses.clean),
        "channel_fraction": evaluation.options.channel_fraction,
        "mse_val": model.mse_val,
        "mse_c": scores.mse_c, "mse_c_ci_lo": ci.mse_c.low, "mse_c_ci_hi": ci.mse_c.high,
        "mse_w": scores.mse_w, "mse_w_ci_lo": ci.mse_w.low, "mse_w_ci_hi": ci.mse_w.high,
        "d_w": scores.d_w, "d_w_ci_lo": ci.d_w.low, "d_w_ci_hi": ci.d_w.high,
        "d_mean": scores.d_mean, "d_mean_ci_lo": ci.d_mean.low, "d_mean_ci_hi": ci.d_mean.high,
        "mpc": scores.mpc, "mpc_ci_lo": ci.mpc.low, "mpc_ci_hi": ci.mpc.high,
        "worst_scenario": keys[scores.worst_index],
        "ignores_input": model.ignores_input,
        **anchor_columns(model, anchor),
    }
    row.update(_scenario_columns(keys, scores, ci))
    if evaluation.extra is not None:  # extra scenarios: their own columns, outside the aggregate scores
        extra = evaluation.extra
        row.update(_scenario_columns(extra.losses.scenario_keys, extra.scores, extra.intervals))
    return row


def _scenario_columns(keys: tuple[str, ...], scores: Any, ci: Any) -> dict[str, float]:
    """`d_<key>` then `mse_<key>` (with their interval ends) of every scenario in `keys`."""
    columns: dict[str, float] = {}
    for index, key in enumerate(keys):
        columns[f"d_{key}"] = float(scores.d_p[index])
        columns[f"d_{key}_ci_lo"] = ci.d_p[index].low
        columns[f"d_{key}_ci_hi"] = ci.d_p[index].high
    for index, key in enumerate(keys):
        columns[f"mse_{key}"] = float(scores.mse_p[index])
        columns[f"mse_{key}_ci_lo"] = ci.mse_p[index].low
        columns[f"mse_{key}_ci_hi"] = ci.mse_p[index].high
    return columns


def summary_table(models: list[EvaluatedModel], anchor: EvaluatedModel | None = None) -> pd.DataFrame:
    """One row per evaluated model (`anchor`: see `summary_row`)."""
    frame = pd.DataFrame([summary_row(model, anchor) for model in models])
    for column in ("dataset", "architecture", "method", "variant", "selection_metric", "rng_mode", "worst_scenario"):
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
        extra = model.evaluation.extra
        for scored in (losses,) if extra is None else (losses, extra.losses):  # the eight, then any extras
            for index, key in enumerate(scored.scenario_keys):
                columns[f"mse_{key}"] = scored.faulted[index].astype(np.float32)
            for index, key in enumerate(scored.scenario_keys):
                columns[f"severity_{key}"] = scored.severity[index]
        frames.append(pd.DataFrame(columns))
    frame = pd.concat(frames, ignore_index=True)
    for column in ("dataset", "architecture", "method"):
        frame[column] = frame[column].astype("category")
    return frame


def candidates_table(selection: Selection) -> pd.DataFrame:
    """One row per candidate of the selection: identity, outcome and whether it won."""
    winner = selection.winner.candidate_hash
    rows = [{
        "dataset": result.dataset, "architecture": result.architecture, "method": result.method,
        "variant": result.variant, "recipe": json.dumps(result.recipe, sort_keys=True),
        "trial_number": result.trial_number, "grid_index": result.grid_index,
        "candidate_hash": result.candidate_hash, "hyperparameters": json.dumps(result.hparams, sort_keys=True),
        "lr": float(result.hparams["lr"]) if "lr" in result.hparams else np.nan, "model_seed": result.model_seed,
        "status": result.status, "best_val_loss": result.best_val_loss, "best_epoch": result.best_epoch,
        "epochs_run": result.epochs_run, "stop_reason": result.stop_reason, "train_seconds": result.train_seconds,
        "group_size": result.group_size, "selection_metric": selection.selection_metric,
        "is_winner": result.candidate_hash == winner,
    } for result in selection.candidates]
    frame = pd.DataFrame(rows)
    for column in ("dataset", "architecture", "method", "variant", "status", "stop_reason"):
        frame[column] = frame[column].astype("string")
    return frame


def training_curves_table(selection: Selection) -> pd.DataFrame:
    """Per-candidate validation and training loss per epoch (tidy; empty for untrained models)."""
    rows: list[dict[str, Any]] = []
    for result in selection.candidates:
        for epoch, (val, train) in enumerate(zip(result.val_curve, result.train_curve, strict=False)):
            rows.append({"trial_number": result.trial_number, "candidate_hash": result.candidate_hash,
                         "epoch": epoch, "val_loss": float("nan") if val is None else val,
                         "train_loss": float("nan") if train is None else train})
    frame = pd.DataFrame(rows, columns=["trial_number", "candidate_hash", "epoch", "val_loss", "train_loss"])
    return frame.astype({"trial_number": "int32", "epoch": "int32", "val_loss": "float64",
                         "train_loss": "float64"})
