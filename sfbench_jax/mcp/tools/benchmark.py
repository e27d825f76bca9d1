"""Forecasting-benchmark tools: datasets, fault scenarios, a SeasonalNaive robustness score and
severity-response curves.

What lives here: thin adapters over the engine's library API ``sfbench_jax.api``
(``list_datasets``, ``list_scenarios``, ``seasonal_naive_robustness``, ``seasonal_naive_curves``,
``stored_run_curves``). Datasets are passed by registered name only and stored runs by folder name
(looked up under ``SFBENCH_RUNS_DIR``, default ``./outputs``); the data root is the server's. What
does not: any evaluation logic (the engine owns it).
"""

from __future__ import annotations

import importlib
import os
import re
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field

from sfbench_jax.mcp.datasets import DataStore, reject_path_like
from sfbench_jax.mcp.errors import DomainToolError, UnavailableToolError, UnknownDatasetError
from sfbench_jax.mcp.tools._common import ToolDef, ToolResult

__all__ = ["TOOLS", "list_fault_scenarios", "list_forecasting_datasets",
           "seasonal_naive_robustness", "severity_curves"]

#: Where `severity_curves` looks for stored runs (a run is named by its folder name).
RUNS_DIR_VARIABLE = "SFBENCH_RUNS_DIR"


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


class SeverityCurvesResult(ToolResult):
    """Degradation D_p(s) per scenario at a grid of fixed severities, with 95% bands."""

    dataset: str
    run: str
    curves: dict[str, Any]


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


def _checked_dataset(api: Any, dataset: str) -> None:
    reject_path_like(dataset, "dataset")
    names = _dataset_names(api)
    if not re.fullmatch(r"[A-Za-z0-9_.-]{1,64}", dataset) or dataset not in names:
        raise UnknownDatasetError(f"dataset={dataset!r} is not a registered forecasting "
                                  f"dataset; valid names: {', '.join(names)}")


def severity_curves(
        store: DataStore,
        dataset: Annotated[str, Field(description="registered forecasting dataset name "
                                                  "(see list_forecasting_datasets)")],
        run: Annotated[str, Field(description="seasonal_naive (selected on clean validation, no "
                                              "stored run needed) or the folder name of a stored "
                                              "sfbench run of this dataset under the server's runs "
                                              "folder (SFBENCH_RUNS_DIR, default ./outputs)")]
        = "seasonal_naive",
        k: Annotated[int, Field(ge=1, le=100_000, description="test windows to score")] = 2_000,
        severities: Annotated[list[float] | None, Field(
            min_length=1, max_length=101, description="severity grid in [0, 1] (default 0, 0.05, "
                                                      "..., 1)")] = None,
) -> SeverityCurvesResult:
    """Severity-response curves: at which fault intensity a forecaster breaks. For every scenario,
    the degradation D_p(s) = MSE under the fault at severity s / clean MSE on a grid of severities,
    with 95% window-bootstrap bands, computed in one compiled pass; never trains."""
    api = _api()
    _checked_dataset(api, dataset)
    reject_path_like(run, "run")
    if not re.fullmatch(r"[A-Za-z0-9_.=-]{1,128}", run):
        raise DomainToolError(f"run={run!r} is not a run name (letters, digits, _ . = -)")
    try:
        if run == "seasonal_naive":
            curves = api.seasonal_naive_curves(dataset, data_root=store.data_root, k=k, severities=severities)
        else:
            runs_dir = Path(os.environ.get(RUNS_DIR_VARIABLE, "outputs")).expanduser()
            folder = api.find_stored_run(runs_dir, dataset, run)
            curves = api.stored_run_curves(folder, data_root=store.data_root, k=k, severities=severities)
    except FileNotFoundError as exc:
        raise UnavailableToolError(f"{exc}") from exc
    except (ValueError, RuntimeError) as exc:  # config, grid and stored-candidate checks
        raise DomainToolError(f"{type(exc).__name__}: {exc}") from exc
    return SeverityCurvesResult(dataset=dataset, run=run, curves=curves,
                                kernel="sfbench_jax.api.severity curves",
                                units={"d": "ratio to the clean MSE", "mse_c": "normalised MSE"})


TOOLS = (
    ToolDef(list_forecasting_datasets, "benchmark"),
    ToolDef(list_fault_scenarios, "benchmark"),
    ToolDef(seasonal_naive_robustness, "benchmark"),
    ToolDef(severity_curves, "benchmark"),
)
