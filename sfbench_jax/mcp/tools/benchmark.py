"""Forecasting-benchmark tools: datasets, fault scenarios, a SeasonalNaive robustness score and
severity-response curves.

What lives here: thin adapters over the engine's library API ``sfbench_jax.api`` (``list_datasets``,
``list_scenarios``, ``list_models``, ``list_methods``, ``seasonal_naive_robustness``, ``seasonal_naive_curves``,
``stored_run_curves``) and the cost bounds of their arguments. Datasets are passed by registered name only and
stored runs by folder name under the server's runs root (``--runs-root``; ``sfbench_jax.mcp.runs``), rebuilt
only under the server's `RebuildPolicy` (registered architectures and methods, no host model unless allowed,
no folder outside the runs and store roots); the data root is the server's. What does not: any evaluation
logic (the engine owns it).
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import Field

from sfbench_jax import api
from sfbench_jax.mcp.datasets import DataStore, reject_path_like
from sfbench_jax.mcp.errors import (
    DomainToolError,
    OverBudgetError,
    RefusedToolError,
    UnavailableToolError,
    UnknownDatasetError,
)
from sfbench_jax.mcp.runs import NO_RUNS_ROOT, check_run_name
from sfbench_jax.mcp.tools._common import ToolDef, ToolResult

__all__ = ["MAX_CURVE_CELLS", "MAX_CURVE_WINDOWS", "TOOLS", "list_fault_scenarios", "list_forecasting_datasets",
           "list_methods", "list_models", "seasonal_naive_robustness", "severity_curves"]

#: Most test windows of one severity_curves call.
MAX_CURVE_WINDOWS = 20_000
#: Most windows x severities of one severity_curves call: each such cell is nine forecasts (clean and eight
#: scenarios) plus its bootstrap share; the bound keeps a SeasonalNaive call well inside the default call budget
#: and its memory under a gigabyte (docs/speed.md "Measured constants").
MAX_CURVE_CELLS = 420_000


class ForecastingDatasets(ToolResult):
    """The forecasting benchmark's registered datasets."""

    datasets: list[dict[str, Any]]


class FaultScenarios(ToolResult):
    """The benchmark's scored sensor-fault scenarios."""

    scenarios: list[dict[str, Any]]


class RegisteredModels(ToolResult):
    """The registered forecasting architectures."""

    models: list[dict[str, Any]]


class RegisteredMethods(ToolResult):
    """The registered robustness methods."""

    methods: list[dict[str, Any]]


class RobustnessResult(ToolResult):
    """SeasonalNaive robustness summary on one dataset."""

    dataset: str
    summary: dict[str, Any]


class SeverityCurvesResult(ToolResult):
    """Degradation D_p(s) per scenario at a grid of fixed severities, with 95% bands."""

    dataset: str
    run: str
    curves: dict[str, Any]


def _dataset_names() -> list[str]:
    return sorted(str(d.get("name", d.get("key", ""))) for d in api.list_datasets())


def list_forecasting_datasets() -> ForecastingDatasets:
    """List the sensor-fault forecasting benchmark's registered datasets."""
    return ForecastingDatasets(datasets=list(api.list_datasets()),
                               kernel="sfbench_jax.api.list_datasets")


def list_fault_scenarios() -> FaultScenarios:
    """List the benchmark's scored sensor-fault scenarios: the paper's eight (in benchmark order; they make D_w),
    then the extra scenarios of installed plug-ins, marked `extra` (scored only when a run names them)."""
    return FaultScenarios(scenarios=list(api.list_scenarios()),
                          kernel="sfbench_jax.api.list_scenarios")


def list_models() -> RegisteredModels:
    """List the registered forecasting architectures (built-ins, then plug-ins) with their labels and capabilities
    (trainable, channel-independent, channel-sparse evaluation, RevIN) and the package each came from."""
    return RegisteredModels(models=list(api.list_models()), kernel="sfbench_jax.api.list_models")


def list_methods() -> RegisteredMethods:
    """List the registered robustness methods (built-ins, then plug-ins) with their kind, label, the architectures
    they apply to, their recipe keys and the package each came from; a method whose own code fails is listed with
    `problem` naming it and the error (the others as usual)."""
    return RegisteredMethods(methods=list(api.list_methods()), kernel="sfbench_jax.api.list_methods")


def seasonal_naive_robustness(
        store: DataStore,
        dataset: Annotated[str, Field(description="registered forecasting dataset name "
                                                  "(see list_forecasting_datasets)")],
        k: Annotated[int, Field(ge=1, le=100_000,
                                description="test windows to score")] = 10_000,
        eval_seed: Annotated[int | None, Field(ge=0)] = None,
        rng_mode: Annotated[Literal["jax", "reference"], Field(
            description="jax (fast counter-based streams) or reference (the original "
                        "benchmark's generator)")] = "jax",
) -> RobustnessResult:
    """Robustness of the SeasonalNaive forecaster under the benchmark's sensor faults:
    clean and worst-case MSE, worst scenario and per-scenario degradation."""
    data_root = store.data_root
    reject_path_like(dataset, "dataset")
    names = _dataset_names()
    if not re.fullmatch(r"[A-Za-z0-9_.-]{1,64}", dataset) or dataset not in names:
        raise UnknownDatasetError(f"dataset={dataset!r} is not a registered forecasting "
                                  f"dataset; valid names: {', '.join(names)}")
    try:
        summary = api.seasonal_naive_robustness(dataset, data_root=data_root, k=k,
                                                eval_seed=eval_seed, rng_mode=rng_mode)
    except FileNotFoundError as exc:
        raise UnavailableToolError(_missing_data(dataset, exc)) from exc
    except ValueError as exc:  # the engine's config and contract checks (PHMInputError too)
        raise DomainToolError(f"{type(exc).__name__}: {exc}") from exc
    return RobustnessResult(dataset=dataset, summary=dict(summary),
                            kernel="sfbench_jax.api.seasonal_naive_robustness",
                            units={"mse_c": "normalised MSE", "mse_w": "normalised MSE"})


def _missing_data(dataset: str, error: FileNotFoundError) -> str:
    missing = f" ({error.filename.rsplit('/', 1)[-1]} is missing)" if isinstance(error.filename, str) else ""
    return (f"dataset {dataset!r} has no data under this server's data root{missing}. Ask the operator to "
            "start the server with --data-root pointing at the shared data folder")


def _checked_dataset(dataset: str) -> None:
    reject_path_like(dataset, "dataset")
    names = _dataset_names()
    if not re.fullmatch(r"[A-Za-z0-9_.-]{1,64}", dataset) or dataset not in names:
        raise UnknownDatasetError(f"dataset={dataset!r} is not a registered forecasting "
                                  f"dataset; valid names: {', '.join(names)}")


def _check_curve_cost(k: int, severities: list[float] | None) -> None:
    count = 21 if severities is None else len(severities)
    if k * count > MAX_CURVE_CELLS:
        raise OverBudgetError(
            f"k={k} windows x {count} severities = {k * count:,} cells is more than this tool computes in one "
            f"call ({MAX_CURVE_CELLS:,}: each cell is nine forecasts and its bootstrap share, and a call must "
            "end within the server's time budget). Use fewer windows or severities; for a larger grid run "
            "sfbench-report curves, which has no budget")


def _stored_curves(store: DataStore, dataset: str, run: str, k: int,
                   severities: list[float] | None) -> dict[str, Any]:
    from sfbench_jax.api.runs import DamagedRunError, NotStoredError, RunInProgressError, UntrustedRunError

    if store.runs is None:
        raise UnavailableToolError(NO_RUNS_ROOT)
    folder = store.runs.find(dataset, run, store.data_root)
    try:
        return api.stored_run_curves(folder, data_root=store.data_root, k=k, severities=severities,
                                     policy=store.runs.policy(store.data_root))
    except UntrustedRunError as exc:
        raise RefusedToolError(f"the stored run {run!r}: {exc}") from None
    except RunInProgressError as exc:
        raise UnavailableToolError(f"the stored run {run!r} is being written now ({exc.writer}); ask again once "
                                   "its job has finished") from None
    except DamagedRunError as exc:
        raise UnavailableToolError(f"the stored run {run!r} is damaged: {exc.file} {exc.problem}. Re-run its job "
                                   "(or ask the operator to)") from None
    except NotStoredError:
        raise UnavailableToolError(f"the stored run {run!r} lacks candidates in its candidate store (the tool "
                                   "never trains). Re-run its job, or ask the operator to give the server the "
                                   "store's folder with --store-root") from None


def severity_curves(
        store: DataStore,
        dataset: Annotated[str, Field(description="registered forecasting dataset name "
                                                  "(see list_forecasting_datasets)")],
        run: Annotated[str, Field(description="seasonal_naive (selected on clean validation, no "
                                              "stored run needed) or the folder name of a stored "
                                              "sfbench run of this dataset under the server's runs "
                                              "root (--runs-root)")]
        = "seasonal_naive",
        k: Annotated[int, Field(ge=1, le=MAX_CURVE_WINDOWS, description=(
            "test windows to score; k x the number of severities is at most "
            f"{MAX_CURVE_CELLS:,}"))] = 2_000,
        severities: Annotated[list[Annotated[float, Field(allow_inf_nan=False)]] | None, Field(
            min_length=1, max_length=101, description="severity grid in [0, 1] (default 0, 0.05, "
                                                      "..., 1)")] = None,
) -> SeverityCurvesResult:
    """Severity-response curves: at which fault intensity a forecaster breaks. For every scenario,
    the degradation D_p(s) = MSE under the fault at severity s / clean MSE on a grid of severities,
    with 95% window-bootstrap bands, computed in one compiled pass; never trains."""
    _checked_dataset(dataset)
    if run != api.ANCHOR_MODEL:
        check_run_name(run)
    _check_curve_cost(k, severities)
    try:
        if run == api.ANCHOR_MODEL:
            curves = api.seasonal_naive_curves(dataset, data_root=store.data_root, k=k, severities=severities)
        else:
            curves = _stored_curves(store, dataset, run, k, severities)
    except FileNotFoundError as exc:
        raise UnavailableToolError(_missing_data(dataset, exc)) from exc
    except (ValueError, RuntimeError) as exc:  # config, grid and stored-run checks
        raise DomainToolError(f"{type(exc).__name__}: {exc}") from exc
    return SeverityCurvesResult(dataset=dataset, run=run, curves=curves,
                                kernel="sfbench_jax.api.severity curves",
                                units={"d": "ratio to the clean MSE", "mse_c": "normalised MSE"})


TOOLS = (
    ToolDef(list_forecasting_datasets, "benchmark"),
    ToolDef(list_fault_scenarios, "benchmark"),
    ToolDef(list_models, "benchmark"),
    ToolDef(list_methods, "benchmark"),
    ToolDef(seasonal_naive_robustness, "benchmark", is_exclusive=True),
    ToolDef(severity_curves, "benchmark", is_exclusive=True),
)
