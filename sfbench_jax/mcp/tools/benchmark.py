"""Forecasting-benchmark tools: datasets, fault scenarios and a SeasonalNaive robustness score.

What lives here: thin adapters over the engine's library API ``sfbench_jax.api``
(``list_datasets``, ``list_scenarios``, ``seasonal_naive_robustness``). Datasets are passed by
registered name only; the data root is the server's. What does not: any evaluation logic (the
engine owns it).
"""

from __future__ import annotations

import importlib
import re
from typing import Annotated, Any, Literal

from pydantic import Field

from sfbench_jax.mcp.datasets import DataStore, reject_path_like
from sfbench_jax.mcp.errors import DomainToolError, UnavailableToolError, UnknownDatasetError
from sfbench_jax.mcp.tools._common import ToolDef, ToolResult

__all__ = ["TOOLS", "list_fault_scenarios", "list_forecasting_datasets",
           "seasonal_naive_robustness"]


class ForecastingDatasets(ToolResult):
    """The forecasting benchmark's registered datasets."""

    datasets: list[dict[str, Any]]


class FaultScenarios(ToolResult):
    """The benchmark's scored sensor-fault scenarios."""

    scenarios: list[dict[str, Any]]


class RobustnessResult(ToolResult):
    """SeasonalNaive robustness summary on one dataset."""

    dataset: str
    summary: dict[str, Any]


def _api() -> Any:
    try:
        return importlib.import_module("sfbench_jax.api")
    except ImportError as exc:
        raise UnavailableToolError(
            "the forecasting engine API (sfbench_jax.api) is not installed in this build") \
            from exc


def _dataset_names(api: Any) -> list[str]:
    return sorted(str(d.get("name", d.get("key", ""))) for d in api.list_datasets())


def list_forecasting_datasets() -> ForecastingDatasets:
    """List the sensor-fault forecasting benchmark's registered datasets."""
    return ForecastingDatasets(datasets=list(_api().list_datasets()),
                               kernel="sfbench_jax.api.list_datasets")


def list_fault_scenarios() -> FaultScenarios:
    """List the benchmark's scored sensor-fault scenarios (in benchmark order)."""
    return FaultScenarios(scenarios=list(_api().list_scenarios()),
                          kernel="sfbench_jax.api.list_scenarios")


def seasonal_naive_robustness(
        store: DataStore,
        dataset: Annotated[str, Field(description="registered forecasting dataset name "
                                                  "(see list_forecasting_datasets)")],
        k: Annotated[int, Field(ge=1, le=100_000,
                                description="test windows to score")] = 10_000,
        eval_seed: Annotated[int | None, Field(ge=0)] = None,
        rng: Annotated[Literal["jax", "reference"], Field(
            description="jax (fast counter-based streams) or reference (the original "
                        "benchmark's generator)")] = "jax",
) -> RobustnessResult:
    """Robustness of the SeasonalNaive forecaster under the benchmark's sensor faults:
    clean and worst-case MSE, worst scenario and per-scenario degradation."""
    data_root = store.data_root
    reject_path_like(dataset, "dataset")
    api = _api()
    names = _dataset_names(api)
    if not re.fullmatch(r"[A-Za-z0-9_.-]{1,64}", dataset) or dataset not in names:
        raise UnknownDatasetError(f"dataset={dataset!r} is not a registered forecasting "
                                  f"dataset; valid names: {', '.join(names)}")
    try:
        summary = api.seasonal_naive_robustness(dataset, data_root=data_root, k=k,
                                                eval_seed=eval_seed, rng=rng)
    except FileNotFoundError as exc:
        raise UnavailableToolError(f"dataset {dataset!r} has no data under this server's "
                                   f"data root: {exc}") from exc
    except ValueError as exc:  # the engine's config and contract checks (PHMInputError too)
        raise DomainToolError(f"{type(exc).__name__}: {exc}") from exc
    return RobustnessResult(dataset=dataset, summary=dict(summary),
                            kernel="sfbench_jax.api.seasonal_naive_robustness",
                            units={"mse_c": "normalised MSE", "mse_w": "normalised MSE"})


TOOLS = (
    ToolDef(list_forecasting_datasets, "benchmark"),
    ToolDef(list_fault_scenarios, "benchmark"),
    ToolDef(seasonal_naive_robustness, "benchmark"),
)
