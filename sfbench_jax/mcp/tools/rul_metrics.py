"""Metric tools (prognostics server): RUL regression metrics, verification and label accuracy.

What lives here: ``calculate_mae``, ``calculate_rmse``, ``verify_ground_truth`` and
``calculate_accuracy``, plus the resolution of their inputs: each accepts a handle (``gt:`` for
the truth, ``pred:`` for predictions) or a literal list / JSON-string array. What does not: the
metric arithmetic (`phm_kernels.metrics`) and ground-truth values in results.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

import numpy as np
from phm_kernels import metrics
from pydantic import Field

from sfbench_jax.mcp import handles as hdl
from sfbench_jax.mcp.datasets import CWRU_CONDITIONS, DataStore, resolve_dataset
from sfbench_jax.mcp.errors import UnknownHandleError, kernel_errors
from sfbench_jax.mcp.inputs import as_float_array, as_label_list
from sfbench_jax.mcp.tools._common import ToolDef, ToolResult, flag, kernel_label, scalar
from sfbench_jax.mcp.tools.rul import predicted_units

__all__ = ["TOOLS", "calculate_accuracy", "calculate_mae", "calculate_rmse",
           "verify_ground_truth"]

ArrayArg = list[float] | str
TruthArg = Annotated[ArrayArg, Field(description="gt handle or list of true RUL")]
PredictionsArg = Annotated[ArrayArg, Field(description="pred handle or list of predicted RUL")]


class RegressionResult(ToolResult):
    """One regression metric of RUL predictions."""

    value: float
    n: int
    metric: str


class VerificationResult(ToolResult):
    """RUL predictions verified against ground truth."""

    mae: float
    rmse: float
    bias: float
    phm08_score: float
    n: int
    mae_ok: bool | None
    rmse_ok: bool | None
    n_negative_predictions: int
    ground_truth_status: Literal["verified", "outside_range"]


class AccuracyResult(ToolResult):
    """Scores of predicted labels against ground-truth labels, and nothing that names a true label.

    No label set, per-class F1 or confusion matrix: with one item and a wrong guess those would
    spell out the true class, turning the verification tool into an answer oracle.
    """

    accuracy: float
    macro_f1: float
    n: int


def _is_handle(value: Any) -> bool:
    return isinstance(value, str) and not value.lstrip().startswith("[")


def _truth_values(store: DataStore, value: Any) -> np.ndarray:
    if _is_handle(value):
        handle = hdl.parse_handle(value, argument="ground_truth", kinds=("gt",))
        dataset = resolve_dataset(handle.dataset, argument="ground_truth")
        if dataset.family != "cmapss":
            raise UnknownHandleError(f"ground_truth={value!r} holds labels, not RUL values; "
                                     "use calculate_accuracy for labels")
        return store.cmapss(dataset.name).test_rul
    return as_float_array(value, argument="ground_truth")


def _prediction_values(store: DataStore, value: Any) -> np.ndarray:
    if _is_handle(value):
        return predicted_units(store, hdl.parse_handle(value, argument="predictions",
                                                       kinds=("pred",)))[1]
    return as_float_array(value, argument="predictions")


def _regression(store: DataStore, metric: str, ground_truth: Any,
                predictions: Any) -> RegressionResult:
    truth = _truth_values(store, ground_truth)
    pred = _prediction_values(store, predictions)
    with kernel_errors():
        result = metrics.regression_metrics(truth, pred)
    return RegressionResult(value=scalar(getattr(result, metric)), n=int(truth.shape[0]),
                            metric=metric, kernel=kernel_label(metrics.regression_metrics),
                            units={"value": "cycles"})


def calculate_mae(store: DataStore, ground_truth: TruthArg,
                  predictions: PredictionsArg) -> RegressionResult:
    """Mean absolute error of RUL predictions against ground truth."""
    return _regression(store, "mae", ground_truth, predictions)


def calculate_rmse(store: DataStore, ground_truth: TruthArg,
                   predictions: PredictionsArg) -> RegressionResult:
    """Root mean squared error of RUL predictions against ground truth."""
    return _regression(store, "rmse", ground_truth, predictions)


def _pair(bounds: list[float] | None, default: tuple[float, float]) -> tuple[float, float]:
    """An accepted `[low, high]` range (two items, as the argument's schema requires), else the default."""
    low, high = bounds or default
    return low, high


def verify_ground_truth(
        store: DataStore, ground_truth: ArrayArg, predictions: ArrayArg,
        mae_range: Annotated[list[float] | None, Field(
            min_length=2, max_length=2, description="accepted [low, high] MAE")] = None,
        rmse_range: Annotated[list[float] | None, Field(
            min_length=2, max_length=2, description="accepted [low, high] RMSE")] = None,
) -> VerificationResult:
    """Verify RUL predictions against ground truth: MAE, RMSE, bias, PHM08 score, ranges."""
    truth = _truth_values(store, ground_truth)
    pred = _prediction_values(store, predictions)
    wide = (0.0, float(np.finfo(np.float32).max))
    with kernel_errors():
        result = metrics.verify_rul_predictions(truth, pred, mae_range=_pair(mae_range, wide),
                                                rmse_range=_pair(rmse_range, wide))
    mae_ok = flag(result.mae_ok) if mae_range else None
    rmse_ok = flag(result.rmse_ok) if rmse_range else None
    inside = all(v is not False for v in (mae_ok, rmse_ok))
    return VerificationResult(
        mae=scalar(result.mae), rmse=scalar(result.rmse), bias=scalar(result.bias),
        phm08_score=scalar(result.score), n=int(truth.shape[0]), mae_ok=mae_ok,
        rmse_ok=rmse_ok, n_negative_predictions=int(scalar(result.n_negative_predictions)),
        ground_truth_status="verified" if inside else "outside_range",
        kernel=kernel_label(metrics.verify_rul_predictions),
        units={"mae": "cycles", "rmse": "cycles", "bias": "cycles"})


def _label_values(value: Any, argument: str) -> list[str]:
    out = []
    for label in as_label_list(value, argument=argument):
        if label.startswith("gt:"):
            handle = hdl.parse_handle(label, argument=argument, kinds=("gt",))
            dataset = resolve_dataset(handle.dataset, argument=argument)
            if dataset.name not in CWRU_CONDITIONS:
                raise UnknownHandleError(f"{label!r} holds no condition label")
            out.append(CWRU_CONDITIONS[dataset.name])
        else:
            out.append(label.replace(" ", "_").replace("-", "_"))
    return out


def calculate_accuracy(
        ground_truth: Annotated[list[str] | str, Field(
            description="true labels, or gt handles (one per item)")],
        predictions: Annotated[list[str] | str, Field(description="predicted labels")],
) -> AccuracyResult:
    """Accuracy and macro-F1 of predicted labels against ground truth (scores only: no true label,
    label set or confusion matrix is returned)."""
    truth = _label_values(ground_truth, "ground_truth")
    pred = _label_values(predictions, "predictions")
    labels = sorted(set(truth) | set(pred))
    index = {label: i for i, label in enumerate(labels)}
    with kernel_errors():
        result = metrics.classification_metrics(
            np.asarray([index[x] for x in truth], np.int32),
            np.asarray([index[x] for x in pred], np.int32), n_classes=len(labels))
    return AccuracyResult(
        accuracy=scalar(result.accuracy), macro_f1=scalar(result.macro_f1), n=len(truth),
        kernel=kernel_label(metrics.classification_metrics), units={"accuracy": "fraction"})


def _warm_up(store: DataStore) -> None:
    truth, pred = [112.0, 98.0, 69.0, 82.0], [100.0, 105.0, 69.0, 90.0]
    calculate_mae(store, truth, pred)
    verify_ground_truth(store, truth, pred, [0, 20], [0, 30])
    calculate_accuracy(["normal", "ball"], ["normal", "normal"])


TOOLS = (
    ToolDef(calculate_mae, "prognostics", warmup=_warm_up),
    ToolDef(calculate_rmse, "prognostics"),
    ToolDef(verify_ground_truth, "prognostics"),
    ToolDef(calculate_accuracy, "prognostics"),
)
