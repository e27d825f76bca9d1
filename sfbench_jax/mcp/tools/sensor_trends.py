"""Degradation-trend tools (prognostics server): trend tests and sensor anomalies of one engine.

What lives here: ``detect_degradation_trend`` (Mann-Kendall with Sen's slope plus a
linear/exponential fit, on a literal series or a C-MAPSS unit's sensor) and
``analyze_engine_signals`` (the debounced rolling z-score detector on an engine's sensors). What
does not: the statistics (`phm_kernels.trends`).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

import numpy as np
from phm_kernels import trends
from pydantic import BaseModel, Field

from sfbench_jax.mcp import handles as hdl
from sfbench_jax.mcp.datasets import DataStore, resolve_dataset
from sfbench_jax.mcp.errors import (
    DomainToolError,
    InvalidArgumentsError,
    UnknownHandleError,
    kernel_errors,
)
from sfbench_jax.mcp.inputs import as_float_array
from sfbench_jax.mcp.tools._common import (
    ToolDef,
    ToolResult,
    code_label,
    column_anomalies,
    first_flagged,
    kernel_label,
    maybe_finite,
    scalar,
)
from sfbench_jax.mcp.tools.data import CMAPSS_SENSORS, cmapss_split

__all__ = ["TOOLS", "analyze_engine_signals", "detect_degradation_trend"]

# The 14 sensors that vary in the single-condition sets (FD001/FD003): the literature's default.
INFORMATIVE_SENSORS = ("s2", "s3", "s4", "s7", "s8", "s9", "s11", "s12", "s13", "s14", "s15",
                       "s17", "s20", "s21")


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


def _unit_rows(store: DataStore, dataset_handle: str, unit_id: int,
               tool: str) -> tuple[Any, np.ndarray]:
    """The C-MAPSS split a ``ds:`` handle names and the row mask of one unit."""
    handle = hdl.parse_handle(dataset_handle, argument="dataset_handle", kinds=("ds",))
    if resolve_dataset(handle.dataset, argument="dataset_handle").family != "cmapss":
        raise UnknownHandleError(f"{tool} reads C-MAPSS handles; for batteries use the battery "
                                 "tools")
    table = cmapss_split(store, handle, argument="dataset_handle")
    rows = table.unit == unit_id
    if not np.any(rows):
        units = table.unit_ids
        raise DomainToolError(f"unit_id={unit_id} is not in {dataset_handle} (units "
                              f"{units[0]}..{units[-1]})")
    return table, rows


def _padded(y: np.ndarray, t: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Pad a series to a power of two with a mask, so series of similar length share a compile."""
    size = max(16, 1 << int(np.ceil(np.log2(y.shape[0]))))
    mask = np.zeros(size, bool)
    mask[: y.shape[0]] = True
    t_pad = np.concatenate([t, t[-1] + np.arange(1.0, size - t.shape[0] + 1.0)])
    y_pad = np.concatenate([y, np.full(size - y.shape[0], y[-1])])
    return t_pad, y_pad, mask


def detect_degradation_trend(
        store: DataStore,
        cycle_data: Annotated[list[float] | str | None, Field(
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
        if unit_id is None or sensor is None:
            raise InvalidArgumentsError("with dataset_handle, pass unit_id and sensor (s1..s21)")
        if sensor not in CMAPSS_SENSORS:
            raise InvalidArgumentsError(f"sensor={sensor!r}; choose from s1..s21")
        table, rows = _unit_rows(store, dataset_handle, unit_id, "detect_degradation_trend")
        t = table.cycle[rows].astype(np.float64)
        y = table.sensors[rows, CMAPSS_SENSORS.index(sensor)]
        label = f"{dataset_handle} unit {unit_id} {sensor}"
    else:
        y = as_float_array(cycle_data, argument="cycle_data", min_items=3)
        t, label = np.arange(1.0, y.shape[0] + 1.0), "cycle_data"
    t_pad, y_pad, mask = _padded(y, t)
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
        kernel=kernel_label(trends.mann_kendall, trends.trend_fit),
        units={"sen_slope": "per cycle", "time_to_threshold": "cycles"})


def analyze_engine_signals(
        store: DataStore,
        dataset_handle: Annotated[str, Field(description="ds: handle of a C-MAPSS split")],
        unit_id: Annotated[int, Field(ge=1)],
        sensors: Annotated[list[str] | None, Field(
            description="sensors to analyse (default: the 14 informative FD001 sensors)")] = None,
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
    table, rows = _unit_rows(store, dataset_handle, unit_id, "analyze_engine_signals")
    cycles = table.cycle[rows]
    values = table.sensors[rows][:, [CMAPSS_SENSORS.index(x) for x in chosen]]
    with kernel_errors():
        result = trends.rolling_zscore_anomaly_multi(
            values, window=window, threshold=threshold, min_persistence=min_persistence,
            baseline=baseline)
    per_sensor = {name: SensorAnomalies(n_events=column.n_events,
                                        first_flagged_cycle=column.first_flagged_cycle)
                  for name, column in zip(chosen, column_anomalies(result, cycles), strict=True)}
    anomalous = [n for n in chosen if per_sensor[n].n_events > 0]
    return EngineSignals(
        dataset_handle=dataset_handle, unit_id=unit_id, n_cycles=int(cycles.shape[0]),
        sensors_analyzed=chosen, anomalous_sensors=anomalous,
        n_anomalous_sensors=len(anomalous),
        first_anomalous_cycle=first_flagged(result.any_flag, cycles), sensors=per_sensor,
        kernel=kernel_label(trends.rolling_zscore_anomaly_multi),
        units={"first_flagged_cycle": "cycles"})


def _warm_up(store: DataStore) -> None:
    detect_degradation_trend(store, cycle_data=[1.0, 1.2, 1.1, 1.5, 1.7, 1.6, 2.0, 2.2])


TOOLS = (
    ToolDef(detect_degradation_trend, "prognostics", warmup=_warm_up),
    ToolDef(analyze_engine_signals, "prognostics"),
)
