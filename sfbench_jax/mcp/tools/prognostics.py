"""Prognostics-server tools: data access by handle, RUL models and metrics, engine health,
vibration severity and bearing diagnosis.

What lives here: thin adapters over `phm_kernels` (metrics, trends, vibration, bearing, C-MAPSS
RUL and turbofan health kernels) and over the registered datasets of ``sfbench_jax.mcp.datasets``.
Data-loading tools return handles (``ds:``, ``gt:``, ``model:``, ``pred:``) and small summaries,
never raw arrays; metric tools accept either a handle or a literal list / JSON-string array.
What does not: the kernels' arithmetic, and ground-truth values (``load_ground_truth`` returns a
handle and a summary, so an agent cannot copy the truth into its predictions).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

import numpy as np
from pydantic import BaseModel, Field

from sfbench_jax.mcp import handles as hdl
from sfbench_jax.mcp.datasets import (
    CWRU_CONDITIONS,
    PHM_DATASETS,
    DataStore,
    PHMDataset,
    resolve_dataset,
)
from sfbench_jax.mcp.errors import (
    DomainToolError,
    InvalidArgumentsError,
    UnknownHandleError,
    kernel_errors,
)
from sfbench_jax.mcp.inputs import as_float_array, as_label_list
from sfbench_jax.mcp.tools import ToolContext, ToolDef
from sfbench_jax.mcp.tools._common import ToolResult, code_label, flag, maybe_finite, scalar

__all__ = ["build", "rul_model_types"]

ArrayArg = list[float] | str
BEARING_LABELS = ("normal", "outer_race", "inner_race", "ball")
CMAPSS_SENSORS = tuple(f"s{i}" for i in range(1, 22))
CMAPSS_COLUMNS = ("unit", "cycle", "setting1", "setting2", "setting3", *CMAPSS_SENSORS)
# The 14 sensors that vary in the single-condition sets (FD001/FD003): the literature's default.
INFORMATIVE_SENSORS = ("s2", "s3", "s4", "s7", "s8", "s9", "s11", "s12", "s13", "s14", "s15",
                       "s17", "s20", "s21")


# ----------------------------------------------------------------------------------------------
# Result models


class DatasetInfo(BaseModel):
    """One registered dataset."""

    name: str
    family: str
    asset_class: str
    description: str
    splits: list[str]


class DatasetList(ToolResult):
    """Registered PHM datasets."""

    datasets: list[DatasetInfo]


class LoadedDataset(ToolResult):
    """A loaded dataset split (a handle plus a summary)."""

    handle: str
    dataset: str
    split: str
    summary: dict[str, Any]


class GroundTruth(ToolResult):
    """A ground-truth handle and what it holds (values stay on the server)."""

    handle: str
    dataset: str
    kind: str
    n_items: int
    note: str


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
    """Classification metrics of predicted labels against ground-truth labels."""

    accuracy: float
    macro_f1: float
    n: int
    labels: list[str]
    per_class_f1: dict[str, float]
    confusion: list[list[int]]


class TrendResult(ToolResult):
    """Degradation trend of one series."""

    trend: Literal["NO_TREND", "INCREASING", "DECREASING"]
    p_value: float
    kendall_tau: float
    sen_slope: float
    model: Literal["linear", "exponential"]
    linear_slope: float
    r2_linear: float
    time_to_threshold: float | None
    n: int
    series: str


class ComponentHealthResult(ToolResult):
    """Health band of one turbofan module."""

    component: Literal["FAN", "LPC", "HPC", "HPT", "LPT"]
    health_band: Literal["HEALTHY", "DEGRADED", "SEVERE", "CRITICAL"]
    status: Literal["Operating Normally", "Abnormal Degradation", "Imminent Failure"]
    severity_magnitude: float
    margin_to_next_band: float | None


class SignatureResult(ToolResult):
    """Efficiency- vs flow-dominated degradation of one module."""

    component: str
    signature: Literal["NONE", "EFFICIENCY_DOMINANT", "FLOW_DOMINANT", "COUPLED"]
    flow_to_efficiency_ratio: float
    mechanism_hint: str
    note: str


class SensorAnomalies(BaseModel):
    """Anomaly events of one sensor."""

    n_events: int
    first_flagged_cycle: int | None


class EngineSignals(ToolResult):
    """Debounced rolling z-score anomalies per sensor of one engine."""

    dataset_handle: str
    unit_id: int
    n_cycles: int
    sensors_analyzed: list[str]
    anomalous_sensors: list[str]
    n_anomalous_sensors: int
    first_anomalous_cycle: int | None
    sensors: dict[str, SensorAnomalies]


class VibrationZone(ToolResult):
    """ISO 10816 evaluation zone of a velocity RMS."""

    zone: Literal["A", "B", "C", "D"]
    zone_meaning: str
    velocity_rms_mm_s: float
    ratio_to_cd_boundary: float
    margin_to_next_zone_mm_s: float | None
    standard_edition: str


class ConversionResult(ToolResult):
    """A converted single-tone vibration amplitude."""

    value: float
    from_unit: str
    to_unit: str
    note: str


class BearingFrequencies(ToolResult):
    """Bearing defect frequencies."""

    shaft_hz: float
    ftf_hz: float
    bpfo_hz: float
    bpfi_hz: float
    bsf_hz: float
    bsf2_hz: float


class BearingDiagnosisResult(ToolResult):
    """Envelope-spectrum bearing diagnosis of one recording."""

    dataset: str
    fault_label: Literal["normal", "outer_race", "inner_race", "ball"]
    detected: dict[str, bool]
    harmonic_snr_sum_db: dict[str, float]
    peak_freq_hz: dict[str, float]
    defect_frequencies_hz: dict[str, float]
    band_hz: list[float]


_ZONE_MEANING = {
    "A": "newly commissioned condition",
    "B": "acceptable for unrestricted long-term operation",
    "C": "unsatisfactory for long-term continuous operation; plan remedial action",
    "D": "severe enough to cause damage",
}


def _splits(dataset: PHMDataset) -> list[str]:
    if dataset.family == "cmapss":
        return ["train", "test"]
    return ["discharge"] if dataset.family == "nasa_battery" else ["signal"]


# ----------------------------------------------------------------------------------------------
# RUL models served by predict_rul (deterministic, fitted in milliseconds; learned models are
# trained offline with the kernel library's scripts, not inside a tool call).

RUL_MODEL_TYPES: tuple[str, ...] = ("linear_health_index",)


def rul_model_types() -> tuple[str, ...]:
    """Model types ``train_rul_model`` accepts."""
    return RUL_MODEL_TYPES


def build(context: ToolContext) -> list[ToolDef]:
    """Declare the prognostics-server tools.

    Args:
        context: Tool context (the data store).

    Returns:
        Tool declarations.
    """
    from phm_kernels import battery as battery_kernels
    from phm_kernels import bearing as bearing_kernels
    from phm_kernels import cmapss as cmapss_kernels
    from phm_kernels import metrics, trends, turbofan, vibration

    store: DataStore = context.store

    # -- handle resolution ------------------------------------------------------------------

    def truth_values(value: Any, argument: str) -> np.ndarray:
        if isinstance(value, str) and not value.lstrip().startswith("["):
            handle = hdl.parse_handle(value, argument=argument, kinds=("gt",))
            dataset = resolve_dataset(handle.dataset, argument=argument)
            if dataset.family != "cmapss":
                raise UnknownHandleError(f"{argument}={value!r} holds labels, not RUL values; "
                                         "use calculate_accuracy for labels")
            return store.cmapss(dataset.name).test_rul
        return as_float_array(value, argument=argument)

    def prediction_values(value: Any, argument: str) -> np.ndarray:
        if isinstance(value, str) and not value.lstrip().startswith("["):
            handle = hdl.parse_handle(value, argument=argument, kinds=("pred",))
            return predict_units(handle)[1]
        return as_float_array(value, argument=argument)

    def fitted_model(dataset_name: str, model_type: str) -> Any:
        if model_type not in RUL_MODEL_TYPES:
            raise UnknownHandleError(f"model type {model_type!r} is not available; choose from "
                                     f"{list(RUL_MODEL_TYPES)}")
        dataset = resolve_dataset(dataset_name, family="cmapss")

        def fit() -> Any:
            with kernel_errors():
                return cmapss_kernels.fit_linear_health_index_baseline(store.cmapss(dataset.name))

        return store.cached(("rul_model", dataset.name, model_type), fit)

    def predict_units(handle: hdl.Handle) -> tuple[np.ndarray, np.ndarray]:
        model = fitted_model(handle.dataset, handle.model_type)
        target = resolve_dataset(handle.target, argument="predictions", family="cmapss")
        if handle.split not in ("train", "test"):
            raise UnknownHandleError(f"split {handle.split!r} in a pred: handle; use train or test")
        split = getattr(store.cmapss(target.name), handle.split)

        def predict() -> tuple[np.ndarray, np.ndarray]:
            with kernel_errors():
                values = cmapss_kernels.predict_linear_health_index_baseline(model, split)
            return split.unit_ids.astype(np.int64), np.asarray(values, dtype=np.float64)

        return store.cached(("rul_pred", str(handle)), predict)

    # -- data access ------------------------------------------------------------------------

    def list_phm_datasets() -> DatasetList:
        """List the registered PHM datasets (names to pass to load_dataset and other tools)."""
        return DatasetList(
            datasets=[DatasetInfo(name=d.name, family=d.family, asset_class=d.asset_class,
                                  description=d.description, splits=_splits(d))
                      for d in PHM_DATASETS.values()],
            kernel="none (registry)")

    def load_dataset(
            dataset_name: Annotated[str, Field(description="registered dataset name, e.g. "
                                                           "cmapss_fd001 (see list_phm_datasets)")],
            split: Annotated[str, Field(description="train or test for C-MAPSS; discharge for "
                                                    "batteries; signal for CWRU")] = "test",
    ) -> LoadedDataset:
        """Load a registered dataset split and return a handle plus a small summary."""
        dataset = resolve_dataset(dataset_name)
        valid = _splits(dataset)
        if dataset.family != "cmapss" and split == "test":
            split = valid[0]
        if split not in valid:
            raise InvalidArgumentsError(f"split={split!r} is not a split of {dataset.name}; "
                                        f"choose from {valid}")
        summary: dict[str, Any]
        if dataset.family == "cmapss":
            table = getattr(store.cmapss(dataset.name), split)
            units, lengths = table.unit_ids, table.lengths
            summary = {"n_units": int(units.shape[0]), "n_rows": int(table.unit.shape[0]),
                       "unit_ids": [int(units[0]), int(units[-1])],
                       "cycles_per_unit": {"min": int(lengths.min()), "max": int(lengths.max())},
                       "columns": list(CMAPSS_COLUMNS)}
        elif dataset.family == "nasa_battery":
            cell = store.battery(dataset.name)
            summary = {"battery_id": cell.cell, "n_cycles": int(cell.cycle.shape[0]),
                       "features": ["capacity_ah", "max_temperature_c", "avg_temperature_c",
                                    "min_voltage_v", "duration_s"],
                       "n_impedance_records": int(cell.eis_index.shape[0])}
        else:
            record = store.cwru(dataset.name)
            summary = {"n_samples": int(record.drive_end.shape[0]),
                       "sampling_rate_hz": record.fs_hz, "rpm": record.rpm,
                       "duration_s": record.drive_end.shape[0] / record.fs_hz,
                       **{k: v for k, v in dataset.info.items() if k in {"bearing", "note"}}}
        return LoadedDataset(handle=hdl.dataset_handle(dataset.name, split), dataset=dataset.name,
                             split=split, summary=summary, kernel="none (data access)",
                             units={"cycles_per_unit": "cycles"} if dataset.family == "cmapss"
                             else {})

    def load_ground_truth(
            dataset_name: Annotated[str, Field(description="registered dataset name")],
    ) -> GroundTruth:
        """Return a handle to a dataset's ground truth (C-MAPSS test RUL, CWRU condition label).

        Pass the handle to calculate_mae / calculate_rmse / verify_ground_truth /
        calculate_accuracy; the values themselves stay on the server.
        """
        dataset = resolve_dataset(dataset_name)
        if dataset.family == "cmapss":
            n, kind = int(store.cmapss(dataset.name).test_rul.shape[0]), "rul_after_last_test_cycle"
            note = "true RUL of each test unit after its last observed cycle, in unit order"
        elif dataset.family == "cwru_bearing":
            n, kind = 1, "bearing_condition_label"
            note = f"one label from {list(BEARING_LABELS)}"
        else:
            raise DomainToolError(f"{dataset.name} has no separate ground-truth file: its "
                                  "capacity history is the data itself (use the battery tools)")
        return GroundTruth(handle=hdl.ground_truth_handle(dataset.name), dataset=dataset.name,
                           kind=kind, n_items=n, note=note, kernel="none (data access)",
                           units={"values": "cycles"} if dataset.family == "cmapss" else {})

    # -- RUL model --------------------------------------------------------------------------

    def train_rul_model(
            dataset_name: Annotated[str, Field(description="C-MAPSS dataset whose run-to-failure "
                                                           "training split to fit on")],
            model_type: Literal["linear_health_index"] = "linear_health_index",
    ) -> RulModel:
        """Fit an RUL model on a C-MAPSS training split and return its handle.

        linear_health_index: regime-normalised sensors regressed onto a 1-to-0 health index;
        RUL is when the smoothed index trend reaches 0 (capped at 125 cycles).
        """
        dataset = resolve_dataset(dataset_name, family="cmapss")
        model = fitted_model(dataset.name, model_type)
        return RulModel(
            handle=hdl.model_handle(dataset.name, model_type), dataset=dataset.name,
            model_type=model_type,
            n_training_units=int(store.cmapss(dataset.name).train.unit_ids.shape[0]),
            settings={"rul_cap": float(model.cap), "ewma_alpha": float(model.alpha),
                      "trend_window": int(model.window),
                      "n_sensors": len(model.sensor_indices)},
            kernel="cmapss.fit_linear_health_index_baseline", units={"rul_cap": "cycles"})

    def predict_rul(
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
        units, values = predict_units(handle)
        order = np.lexsort((units, values))[:top_n]
        return RulPredictions(
            handle=str(handle), model_handle=model_handle, dataset_handle=dataset_handle,
            n_units=int(units.shape[0]), unit_ids=[int(u) for u in units],
            predicted_rul=[round(float(v), 3) for v in values],
            lowest_rul_units=[int(u) for u in units[order]],
            lowest_rul_values=[round(float(v), 3) for v in values[order]],
            mean_predicted_rul=float(np.mean(values)),
            kernel="cmapss.predict_linear_health_index_baseline",
            units={"predicted_rul": "cycles"})

    # -- metrics ----------------------------------------------------------------------------

    def regression(metric: str, ground_truth: Any, predictions: Any) -> RegressionResult:
        truth = truth_values(ground_truth, "ground_truth")
        pred = prediction_values(predictions, "predictions")
        with kernel_errors():
            result = metrics.regression_metrics(truth, pred)
        return RegressionResult(value=scalar(getattr(result, metric)), n=int(truth.shape[0]),
                                metric=metric,
                                kernel="metrics.regression_metrics", units={"value": "cycles"})

    def calculate_mae(
            ground_truth: Annotated[ArrayArg, Field(description="gt handle or list of true RUL")],
            predictions: Annotated[ArrayArg, Field(description="pred handle or list of "
                                                               "predicted RUL")],
    ) -> RegressionResult:
        """Mean absolute error of RUL predictions against ground truth."""
        return regression("mae", ground_truth, predictions)

    def calculate_rmse(
            ground_truth: Annotated[ArrayArg, Field(description="gt handle or list of true RUL")],
            predictions: Annotated[ArrayArg, Field(description="pred handle or list of "
                                                               "predicted RUL")],
    ) -> RegressionResult:
        """Root mean squared error of RUL predictions against ground truth."""
        return regression("rmse", ground_truth, predictions)

    def verify_ground_truth(
            ground_truth: ArrayArg, predictions: ArrayArg,
            mae_range: Annotated[list[float] | None, Field(
                min_length=2, max_length=2, description="accepted [low, high] MAE")] = None,
            rmse_range: Annotated[list[float] | None, Field(
                min_length=2, max_length=2, description="accepted [low, high] RMSE")] = None,
    ) -> VerificationResult:
        """Verify RUL predictions against ground truth: MAE, RMSE, bias, PHM08 score, ranges."""
        truth = truth_values(ground_truth, "ground_truth")
        pred = prediction_values(predictions, "predictions")
        wide = (0.0, float(np.finfo(np.float32).max))
        with kernel_errors():
            result = metrics.verify_rul_predictions(
                truth, pred, mae_range=tuple(mae_range or wide),
                rmse_range=tuple(rmse_range or wide))
        mae_ok = flag(result.mae_ok) if mae_range else None
        rmse_ok = flag(result.rmse_ok) if rmse_range else None
        inside = all(v is not False for v in (mae_ok, rmse_ok))
        return VerificationResult(
            mae=scalar(result.mae), rmse=scalar(result.rmse), bias=scalar(result.bias),
            phm08_score=scalar(result.score), n=int(truth.shape[0]), mae_ok=mae_ok,
            rmse_ok=rmse_ok, n_negative_predictions=int(scalar(result.n_negative_predictions)),
            ground_truth_status="verified" if inside else "outside_range",
            kernel="metrics.verify_rul_predictions",
            units={"mae": "cycles", "rmse": "cycles", "bias": "cycles"})

    def label_values(value: Any, argument: str) -> list[str]:
        labels = as_label_list(value, argument=argument)
        out = []
        for label in labels:
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
        """Accuracy, macro-F1 and confusion matrix of predicted labels against ground truth."""
        truth = label_values(ground_truth, "ground_truth")
        pred = label_values(predictions, "predictions")
        labels = sorted(set(truth) | set(pred))
        index = {label: i for i, label in enumerate(labels)}
        with kernel_errors():
            result = metrics.classification_metrics(
                np.asarray([index[x] for x in truth], np.int32),
                np.asarray([index[x] for x in pred], np.int32), n_classes=len(labels))
        f1 = [float(v) for v in np.asarray(result.f1).tolist()]
        return AccuracyResult(
            accuracy=scalar(result.accuracy), macro_f1=scalar(result.macro_f1), n=len(truth),
            labels=labels, per_class_f1=dict(zip(labels, f1, strict=True)),
            confusion=np.asarray(result.confusion).astype(int).tolist(),
            kernel="metrics.classification_metrics", units={"accuracy": "fraction"})

    # -- degradation trends -----------------------------------------------------------------

    def series_from_handle(handle_text: str, unit_id: int | None,
                           sensor: str | None) -> tuple[np.ndarray, np.ndarray, str]:
        handle = hdl.parse_handle(handle_text, argument="dataset_handle", kinds=("ds",))
        dataset = resolve_dataset(handle.dataset, argument="dataset_handle")
        if dataset.family != "cmapss":
            raise UnknownHandleError("detect_degradation_trend reads C-MAPSS handles; for "
                                     "batteries use the battery tools")
        if unit_id is None or sensor is None:
            raise InvalidArgumentsError("with dataset_handle, pass unit_id and sensor (s1..s21)")
        if sensor not in CMAPSS_SENSORS:
            raise InvalidArgumentsError(f"sensor={sensor!r}; choose from s1..s21")
        table = getattr(store.cmapss(dataset.name), handle.split)
        rows = table.unit == unit_id
        if not np.any(rows):
            units = table.unit_ids
            raise DomainToolError(f"unit_id={unit_id} is not in {handle_text} (units "
                                  f"{units[0]}..{units[-1]})")
        column = CMAPSS_SENSORS.index(sensor)
        return (table.cycle[rows].astype(np.float64), table.sensors[rows, column],
                f"{handle_text} unit {unit_id} {sensor}")

    def detect_degradation_trend(
            cycle_data: Annotated[ArrayArg | None, Field(
                description="series values (one per cycle), or omit and give "
                            "dataset_handle")] = None,
            dataset_handle: Annotated[str | None, Field(description="ds: handle (C-MAPSS)")] = None,
            unit_id: Annotated[int | None, Field(ge=1)] = None,
            sensor: Annotated[str | None, Field(description="C-MAPSS sensor s1..s21")] = None,
            threshold: Annotated[float | None, Field(
                description="level whose crossing time to estimate")] = None,
            alpha: Annotated[float, Field(gt=0, lt=1)] = 0.05,
    ) -> TrendResult:
        """Mann-Kendall trend test with Sen's slope plus a linear/exponential trend fit."""
        if (cycle_data is None) == (dataset_handle is None):
            raise InvalidArgumentsError("pass exactly one of cycle_data or dataset_handle")
        if dataset_handle is not None:
            t, y, label = series_from_handle(dataset_handle, unit_id, sensor)
        else:
            y = as_float_array(cycle_data, argument="cycle_data", min_items=3)
            t, label = np.arange(1.0, y.shape[0] + 1.0), "cycle_data"
        # Pad to a power of two with a mask so that series of similar length share one compile.
        size = max(16, 1 << int(np.ceil(np.log2(y.shape[0]))))
        mask = np.zeros(size, bool)
        mask[: y.shape[0]] = True
        t_pad = np.concatenate([t, t[-1] + np.arange(1.0, size - t.shape[0] + 1.0)])
        y_pad = np.concatenate([y, np.full(size - y.shape[0], y[-1])])
        with kernel_errors():
            mk = trends.mann_kendall(y_pad, alpha=alpha, mask=mask)
            fit = trends.trend_fit(t_pad, y_pad, y_threshold=threshold, mask=mask)
        return TrendResult(
            trend=code_label(mk.trend, trends.TREND_LABELS), p_value=scalar(mk.p_value),
            kendall_tau=scalar(mk.tau), sen_slope=scalar(mk.sen_slope),
            model=code_label(fit.model, trends.TREND_MODELS), linear_slope=scalar(fit.slope),
            r2_linear=scalar(fit.r2_linear),
            time_to_threshold=maybe_finite(fit.time_to_threshold) if threshold is not None
            else None, n=int(y.shape[0]), series=label,
            kernel="trends.mann_kendall, trends.trend_fit",
            units={"sen_slope": "per cycle", "time_to_threshold": "cycles"})

    def analyze_engine_signals(
            dataset_handle: Annotated[str, Field(description="ds: handle of a C-MAPSS split")],
            unit_id: Annotated[int, Field(ge=1)],
            sensors: Annotated[list[str] | None, Field(
                description="sensors to analyse (default: the 14 informative FD001 "
                            "sensors)")] = None,
            threshold: Annotated[float, Field(gt=0)] = 3.0,
            min_persistence: Annotated[int, Field(ge=1, le=50)] = 3,
            window: Annotated[int, Field(ge=2, le=100)] = 20,
            baseline: Annotated[Literal["reference", "gated", "trailing"], Field(
                description="reference: frozen first `window` cycles (early life); gated: "
                            "tracks sub-threshold drift; trailing: previous `window` cycles")
            ] = "reference",
    ) -> EngineSignals:
        """Find sensors of one engine that leave their early-life baseline (debounced rolling
        z-score per sensor)."""
        chosen = list(sensors or INFORMATIVE_SENSORS)
        bad = [x for x in chosen if x not in CMAPSS_SENSORS]
        if bad:
            raise InvalidArgumentsError(f"unknown sensors {bad}; choose from s1..s21")
        cycles, _, _ = series_from_handle(dataset_handle, unit_id, chosen[0])
        handle = hdl.parse_handle(dataset_handle, argument="dataset_handle", kinds=("ds",))
        table = getattr(store.cmapss(handle.dataset), handle.split)
        values = table.sensors[table.unit == unit_id][:, [CMAPSS_SENSORS.index(x) for x in chosen]]
        with kernel_errors():
            result = battery_kernels.rolling_zscore_anomaly_multi(
                values, window=window, threshold=threshold, min_persistence=min_persistence,
                baseline=baseline)
        flags = np.asarray(result.flags)
        per_sensor: dict[str, SensorAnomalies] = {}
        for j, name in enumerate(chosen):
            hits = np.flatnonzero(flags[:, j])
            per_sensor[name] = SensorAnomalies(
                n_events=int(np.asarray(result.n_events)[j]),
                first_flagged_cycle=int(cycles[hits[0]]) if hits.size else None)
        any_hits = np.flatnonzero(np.asarray(result.any_flag))
        anomalous = [n for n in chosen if per_sensor[n].n_events > 0]
        return EngineSignals(
            dataset_handle=dataset_handle, unit_id=unit_id, n_cycles=int(cycles.shape[0]),
            sensors_analyzed=chosen, anomalous_sensors=anomalous,
            n_anomalous_sensors=len(anomalous),
            first_anomalous_cycle=int(cycles[any_hits[0]]) if any_hits.size else None,
            sensors=per_sensor, kernel="battery.rolling_zscore_anomaly_multi",
            units={"first_flagged_cycle": "cycles"})

    # -- turbofan module health -------------------------------------------------------------

    def assess_component_health(
            component: Literal["FAN", "LPC", "HPC", "HPT", "LPT"],
            efficiency: Annotated[float, Field(
                ge=-0.5, le=0.5, description="fractional efficiency deviation, e.g. -0.021")],
            flow_modifier: Annotated[float, Field(
                ge=-0.5, le=0.5, description="fractional flow-capacity deviation")],
    ) -> ComponentHealthResult:
        """Health band of a turbofan module (Fan/LPC/HPC/HPT/LPT) from its efficiency and flow
        deviations (fractions, not percent)."""
        with kernel_errors():
            result = turbofan.component_health(component, efficiency, flow_modifier)
        code = int(scalar(result.band))
        return ComponentHealthResult(
            component=component, health_band=turbofan.HEALTH_BANDS[code],
            status=turbofan.PHMFORGE_HEALTH_LABELS[code],
            severity_magnitude=scalar(result.magnitude),
            margin_to_next_band=maybe_finite(result.margin_to_next),
            kernel="turbofan.component_health", units={"severity_magnitude": "fraction"})

    def diagnose_timing_issues(
            efficiency_deviation: Annotated[float, Field(ge=-0.5, le=0.5)],
            flow_deviation: Annotated[float, Field(ge=-0.5, le=0.5)],
            component: Literal["FAN", "LPC", "HPC", "HPT", "LPT"] = "HPC",
    ) -> SignatureResult:
        """Is a module's degradation efficiency-dominated, flow-dominated or coupled?"""
        with kernel_errors():
            result = turbofan.efficiency_flow_signature(component, efficiency_deviation,
                                                        flow_deviation)
        return SignatureResult(
            component=component,
            signature=code_label(result.signature, turbofan.SIGNATURE_CLASSES),
            flow_to_efficiency_ratio=scalar(result.ratio),
            mechanism_hint=code_label(result.mechanism_hint, turbofan.MECHANISM_HINTS),
            note="the mechanism hint is advisory (qualitative gas-path analysis)",
            kernel="turbofan.efficiency_flow_signature", units={"ratio": "dimensionless"})

    # -- vibration and bearings -------------------------------------------------------------

    def assess_vibration_severity(
            velocity_rms_mm_s: Annotated[float, Field(ge=0, description="broadband velocity "
                                                                       "RMS, mm/s")],
            standard: Literal["ISO10816-1", "ISO10816-3"] = "ISO10816-1",
            machine_class: Literal["I", "II", "III", "IV"] = "II",
            group: Literal[1, 2] = 2,
            foundation: Literal["rigid", "flexible"] = "rigid",
    ) -> VibrationZone:
        """ISO 10816 (now ISO 20816) evaluation zone A-D of a vibration velocity.

        ISO10816-1 uses machine_class I-IV; ISO10816-3 uses group 1/2 and foundation.
        """
        with kernel_errors():
            if standard == "ISO10816-1":
                result = vibration.iso10816_1_zone(velocity_rms_mm_s, machine_class=machine_class)
                edition = vibration.ISO10816_EDITIONS["iso10816_1"]
            else:
                result = vibration.iso10816_3_zone(velocity_rms_mm_s, group=group,
                                                   foundation=foundation)
                edition = vibration.ISO10816_EDITIONS["iso10816_3"]
        zone = code_label(result.zone, vibration.ISO_ZONES)
        return VibrationZone(zone=zone, zone_meaning=_ZONE_MEANING[zone],
                             velocity_rms_mm_s=velocity_rms_mm_s,
                             ratio_to_cd_boundary=scalar(result.ratio_to_cd),
                             margin_to_next_zone_mm_s=maybe_finite(result.margin_to_next),
                             standard_edition=edition,
                             kernel="vibration.iso10816_1_zone" if standard == "ISO10816-1"
                             else "vibration.iso10816_3_zone",
                             units={"velocity_rms_mm_s": "mm/s RMS"})

    def convert_vibration_units(
            value: float,
            from_unit: Annotated[str, Field(description="'<unit> <measure>', e.g. 'in/s pk'")],
            to_unit: Annotated[str, Field(description="e.g. 'mm/s rms'")],
            frequency_hz: Annotated[float | None, Field(
                gt=0, description="tone frequency; needed between displacement, velocity and "
                                  "acceleration")] = None,
    ) -> ConversionResult:
        """Convert a single-tone vibration amplitude between units (in/s, mm/s, g, um) and
        measures (rms, pk, pp)."""
        with kernel_errors():
            result = vibration.vib_convert(value, from_unit=from_unit, to_unit=to_unit,
                                           freq_hz=frequency_hz)
        return ConversionResult(value=scalar(result), from_unit=from_unit, to_unit=to_unit,
                                note="exact for a pure tone only; integrate broadband spectra "
                                     "bin by bin", kernel="vibration.vib_convert",
                                units={"value": to_unit})

    def calculate_bearing_frequencies(
            rpm: Annotated[float, Field(gt=0)],
            bearing: Literal["cwru_drive_end", "cwru_fan_end", "custom"] = "cwru_drive_end",
            n_balls: Annotated[int | None, Field(ge=3)] = None,
            ball_diameter: Annotated[float | None, Field(gt=0)] = None,
            pitch_diameter: Annotated[float | None, Field(gt=0)] = None,
            contact_angle_deg: Annotated[float, Field(ge=0, lt=90)] = 0.0,
    ) -> BearingFrequencies:
        """Bearing defect frequencies (FTF, BPFO, BPFI, BSF, 2xBSF) for a shaft speed.

        Use bearing='custom' with n_balls, ball_diameter and pitch_diameter for other bearings.
        """
        if bearing == "custom":
            if None in (n_balls, ball_diameter, pitch_diameter):
                raise InvalidArgumentsError("bearing='custom' needs n_balls, ball_diameter and "
                                            "pitch_diameter")
            geometry = bearing_kernels.BearingGeometry(n_balls, ball_diameter, pitch_diameter,
                                                      contact_angle_deg)
        else:
            geometry = (bearing_kernels.CWRU_DRIVE_END if bearing == "cwru_drive_end"
                        else bearing_kernels.CWRU_FAN_END)
        with kernel_errors():
            result = bearing_kernels.bearing_fault_frequencies(rpm, **geometry._asdict())
        return BearingFrequencies(shaft_hz=scalar(result.shaft_hz), ftf_hz=scalar(result.ftf),
                                  bpfo_hz=scalar(result.bpfo), bpfi_hz=scalar(result.bpfi),
                                  bsf_hz=scalar(result.bsf), bsf2_hz=scalar(result.bsf2),
                                  kernel="bearing.bearing_fault_frequencies",
                                  units={"*_hz": "Hz"})


    def diagnose_bearing_fault(
            dataset_handle: Annotated[str, Field(description="ds: handle of a CWRU recording")],
            band_low_hz: Annotated[float, Field(gt=0)] = 2000.0,
            band_high_hz: Annotated[float, Field(gt=0)] = 4000.0,
    ) -> BearingDiagnosisResult:
        """Envelope-spectrum diagnosis of a drive-end recording: normal, outer_race, inner_race
        or ball, with per-target detection and SNR."""
        handle = hdl.parse_handle(dataset_handle, argument="dataset_handle", kinds=("ds",))
        dataset = resolve_dataset(handle.dataset, argument="dataset_handle")
        if dataset.family != "cwru_bearing":
            raise UnknownHandleError(f"{dataset_handle!r} is not a bearing recording; load a "
                                     "cwru_rec_* dataset")
        record = store.cwru(dataset.name)
        # The kernel averages whole 1-second segments and ignores the remainder; trimming it
        # here gives the same result and lets recordings of similar length share one compile.
        segment = int(round(record.fs_hz))
        signal = record.drive_end[: (record.drive_end.shape[0] // segment) * segment]
        with kernel_errors():
            result = bearing_kernels.diagnose_bearing(signal, fs=record.fs_hz,
                                              rpm=record.rpm, f_lo=band_low_hz,
                                              f_hi=band_high_hz)
        targets = ("outer_race", "inner_race", "ball")
        match = result.match
        detected = np.asarray(match.detected).reshape(-1).tolist()
        snr = np.asarray(match.score).reshape(-1).tolist()
        peaks = np.asarray(match.peak_freq)
        peak_first = peaks[:, 0] if peaks.ndim == 2 else peaks
        freqs = result.frequencies
        return BearingDiagnosisResult(
            dataset=dataset.name, fault_label=BEARING_LABELS[int(scalar(result.label))],
            detected={t: bool(d) for t, d in zip(targets, detected, strict=True)},
            harmonic_snr_sum_db={t: float(s) for t, s in zip(targets, snr, strict=True)},
            peak_freq_hz={t: float(p) for t, p in zip(targets, peak_first.tolist(), strict=True)},
            defect_frequencies_hz={"bpfo": scalar(freqs.bpfo), "bpfi": scalar(freqs.bpfi),
                                   "bsf2": scalar(freqs.bsf2), "shaft": scalar(freqs.shaft_hz)},
            band_hz=[band_low_hz, band_high_hz], kernel="bearing.diagnose_bearing",
            units={"harmonic_snr_sum_db": "dB (sum of positive harmonic SNRs)", "*_hz": "Hz"})

    def warm() -> None:
        calculate_mae([112.0, 98.0, 69.0, 82.0], [100.0, 105.0, 69.0, 90.0])
        verify_ground_truth([112.0, 98.0, 69.0, 82.0], [100.0, 105.0, 69.0, 90.0], [0, 20],
                            [0, 30])
        calculate_accuracy(["normal", "ball"], ["normal", "normal"])
        assess_vibration_severity(2.0)
        assess_vibration_severity(3.0, standard="ISO10816-3")
        calculate_bearing_frequencies(1797.0)
        detect_degradation_trend(cycle_data=[1.0, 1.2, 1.1, 1.5, 1.7, 1.6, 2.0, 2.2])
        assess_component_health("HPC", -0.021, -0.008)
        diagnose_timing_issues(-0.010, -0.030)

    group = "prognostics"
    return [
        ToolDef(list_phm_datasets, group),
        ToolDef(load_dataset, group),
        ToolDef(load_ground_truth, group),
        ToolDef(train_rul_model, group),
        ToolDef(predict_rul, group),
        ToolDef(calculate_mae, group, warmup=warm),
        ToolDef(calculate_rmse, group),
        ToolDef(verify_ground_truth, group),
        ToolDef(calculate_accuracy, group),
        ToolDef(detect_degradation_trend, group),
        ToolDef(analyze_engine_signals, group),
        ToolDef(assess_component_health, group),
        ToolDef(diagnose_timing_issues, group),
        ToolDef(assess_vibration_severity, group),
        ToolDef(convert_vibration_units, group),
        ToolDef(calculate_bearing_frequencies, group),
        ToolDef(diagnose_bearing_fault, group),
    ]
