"""C-MAPSS RUL model tools (prognostics server): fit a model, predict every unit's RUL.

What lives here: ``train_rul_model`` and ``predict_rul``, which return ``model:`` and ``pred:``
handles plus small summaries, and `predicted_units`, which recomputes (or reads from the store's
cache) the predictions a ``pred:`` handle names, for the metric tools. The served model is the
deterministic linear health-index baseline of `phm_kernels.cmapss`, fitted in milliseconds;
learned models are trained offline with the kernel library's scripts, not inside a tool call.
What does not: the model arithmetic (the kernels) and the metrics (``rul_metrics.py``).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

import numpy as np
from phm_kernels import cmapss
from pydantic import Field

from sfbench_jax.mcp import handles as hdl
from sfbench_jax.mcp.datasets import DataStore, resolve_dataset
from sfbench_jax.mcp.errors import UnknownHandleError, kernel_errors
from sfbench_jax.mcp.tools._common import ToolDef, ToolResult, kernel_label
from sfbench_jax.mcp.tools.data import cmapss_split

__all__ = ["RUL_MODEL_TYPES", "TOOLS", "predict_rul", "predicted_units", "rul_model_types",
           "train_rul_model"]

RUL_MODEL_TYPES: tuple[str, ...] = ("linear_health_index",)


class RulModel(ToolResult):
    """A fitted RUL model (a handle plus what it was fitted on)."""

    handle: str
    dataset: str
    model_type: str
    n_training_units: int
    settings: dict[str, Any]


class RulPredictions(ToolResult):
    """Last-cycle RUL predictions for every unit of a split."""

    handle: str
    model_handle: str
    dataset_handle: str
    n_units: int
    unit_ids: list[int]
    predicted_rul: list[float] = Field(description="one value per unit, in unit_ids order")
    lowest_rul_units: list[int] = Field(description="the top_n units with the lowest "
                                                    "predicted RUL, most urgent first")
    lowest_rul_values: list[float] = Field(description="their predicted RUL, same order")
    mean_predicted_rul: float


def rul_model_types() -> tuple[str, ...]:
    """Model types ``train_rul_model`` accepts."""
    return RUL_MODEL_TYPES


def _fitted_model(store: DataStore, dataset_name: str, model_type: str) -> Any:
    if model_type not in RUL_MODEL_TYPES:
        raise UnknownHandleError(f"model type {model_type!r} is not available; choose from "
                                 f"{list(RUL_MODEL_TYPES)}")
    dataset = resolve_dataset(dataset_name, family="cmapss")

    def fit() -> Any:
        with kernel_errors():
            return cmapss.fit_linear_health_index_baseline(store.cmapss(dataset.name))

    return store.cached(("rul_model", dataset.name, model_type), fit)


def predicted_units(store: DataStore, handle: hdl.Handle) -> tuple[np.ndarray, np.ndarray]:
    """Unit ids and predicted RUL of the predictions a ``pred:`` handle names.

    Args:
        store: The server's data store (caches the model and the predictions).
        handle: A parsed ``pred:`` handle.

    Returns:
        ``(unit_ids, predicted_rul)``, int64 and float64, in unit order.
    """
    model = _fitted_model(store, handle.dataset, handle.model_type)
    split = cmapss_split(store, handle, argument="predictions")

    def predict() -> tuple[np.ndarray, np.ndarray]:
        with kernel_errors():
            values = cmapss.predict_linear_health_index_baseline(model, split)
        return split.unit_ids.astype(np.int64), np.asarray(values, dtype=np.float64)

    return store.cached(("rul_pred", str(handle)), predict)


def train_rul_model(
        store: DataStore,
        dataset_name: Annotated[str, Field(description="C-MAPSS dataset whose run-to-failure "
                                                       "training split to fit on")],
        model_type: Literal["linear_health_index"] = "linear_health_index",
) -> RulModel:
    """Fit an RUL model on a C-MAPSS training split and return its handle.

    linear_health_index: regime-normalised sensors regressed onto a 1-to-0 health index;
    RUL is when the smoothed index trend reaches 0 (capped at 125 cycles).
    """
    dataset = resolve_dataset(dataset_name, family="cmapss")
    model = _fitted_model(store, dataset.name, model_type)
    return RulModel(
        handle=hdl.model_handle(dataset.name, model_type), dataset=dataset.name,
        model_type=model_type,
        n_training_units=int(store.cmapss(dataset.name).train.unit_ids.shape[0]),
        settings={"rul_cap": float(model.cap), "ewma_alpha": float(model.alpha),
                  "trend_window": int(model.window), "n_sensors": len(model.sensor_indices)},
        kernel=kernel_label(cmapss.fit_linear_health_index_baseline),
        units={"rul_cap": "cycles"})


def predict_rul(
        store: DataStore,
        model_handle: Annotated[str, Field(description="model: handle from train_rul_model")],
        dataset_handle: Annotated[str, Field(description="ds: handle of a C-MAPSS split")],
        top_n: Annotated[int, Field(ge=1, le=50)] = 10,
) -> RulPredictions:
    """Predict the RUL after each unit's last observed cycle and return a predictions
    handle (for the metric tools) plus the values."""
    model = hdl.parse_handle(model_handle, argument="model_handle", kinds=("model",))
    data = hdl.parse_handle(dataset_handle, argument="dataset_handle", kinds=("ds",))
    resolve_dataset(data.dataset, argument="dataset_handle", family="cmapss")
    handle = hdl.Handle(kind="pred", dataset=model.dataset, model_type=model.model_type,
                        target=data.dataset, split=data.split)
    units, values = predicted_units(store, handle)
    order = np.lexsort((units, values))[:top_n]
    return RulPredictions(
        handle=str(handle), model_handle=model_handle, dataset_handle=dataset_handle,
        n_units=int(units.shape[0]), unit_ids=[int(u) for u in units],
        predicted_rul=[round(float(v), 3) for v in values],
        lowest_rul_units=[int(u) for u in units[order]],
        lowest_rul_values=[round(float(v), 3) for v in values[order]],
        mean_predicted_rul=float(np.mean(values)),
        kernel=kernel_label(cmapss.predict_linear_health_index_baseline),
        units={"predicted_rul": "cycles"})


TOOLS = (
    ToolDef(train_rul_model, "prognostics"),
    ToolDef(predict_rul, "prognostics"),
)
