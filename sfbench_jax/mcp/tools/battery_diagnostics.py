"""Battery diagnostic tools (battery-prognostics server): thermal and impedance checks, fleet
comparison and the health-report triage that chains the other battery tools.

What lives here: ``thermal_anomaly_checker``, ``impedance_trend_analyzer``,
``compare_to_baseline`` and ``generate_health_report``. What does not: cell access and the
single-measure tools (``battery.py``) and the kernels' arithmetic (`phm_kernels.battery`).
"""

from __future__ import annotations

from typing import Annotated, Literal

import numpy as np
from phm_kernels import battery, trends
from pydantic import Field

from sfbench_jax.mcp.datasets import DataStore
from sfbench_jax.mcp.errors import DomainToolError, InvalidArgumentsError, kernel_errors
from sfbench_jax.mcp.tools._common import ToolDef, ToolResult, code_label, flag, kernel_label, scalar
from sfbench_jax.mcp.tools.battery import (
    BatteryId,
    Cycle,
    anomaly_detector,
    cell_of,
    check_cycle,
    degradation_stage_classifier,
    rul_predictor_linear,
)

__all__ = ["TOOLS", "compare_to_baseline", "generate_health_report", "impedance_trend_analyzer",
           "thermal_anomaly_checker"]

Feature = Literal["capacity_ah", "max_temperature_c", "avg_temperature_c", "min_voltage_v",
                  "duration_s"]


class ThermalResult(ToolResult):
    """Thermal event classification."""

    battery_id: str
    up_to_cycle: int
    label: Literal["normal_aging", "thermal_spike", "internal_resistance_rise"]
    n_spike_cycles: int
    spike_on_last_cycle: bool
    temperature_sen_slope: float
    spike_delta_c: float


class ImpedanceTrendResult(ToolResult):
    """Sensor fault vs real degradation in the EIS series."""

    battery_id: str
    label: Literal["sensor_fault", "real_degradation", "inconclusive"]
    n_non_physical: int
    n_jump_points: int
    degradation_after_cleaning: bool
    trend_after_cleaning: str


class BaselineResult(ToolResult):
    """A cell's feature against a fleet baseline."""

    battery_id: str
    baseline_ids: list[str]
    feature: str
    n_cycles_compared: int
    is_outlier: bool
    n_events: int
    max_abs_z: float


class HealthReport(ToolResult):
    """Triage report chaining SOH, stage, anomalies, thermal check and a linear-fade RUL."""

    battery_id: str
    cycle: int
    soh_rated: float
    stage: str
    predicted_rul: float | None
    any_anomaly: bool
    thermal_label: str
    triage_level: Literal["routine", "elevated", "urgent", "emergency"]


def thermal_anomaly_checker(store: DataStore, battery_id: BatteryId,
                            up_to_cycle: Annotated[int | None, Field(ge=1)] = None
                            ) -> ThermalResult:
    """Classify thermal behaviour: normal_aging, thermal_spike or internal_resistance_rise."""
    cell = cell_of(store, battery_id)
    last = int(cell.cycle.shape[0]) if up_to_cycle is None else check_cycle(
        cell, up_to_cycle, "up_to_cycle")
    with kernel_errors():
        result = battery.thermal_anomaly_checker(
            cell.max_temperature_c[:last], cell.avg_temperature_c[:last], cell.re_ohm,
            cell.rct_ohm)
    return ThermalResult(battery_id=cell.battery_id, up_to_cycle=last,
                         label=code_label(result.label, battery.THERMAL_LABELS),
                         n_spike_cycles=int(scalar(result.n_spikes)),
                         spike_on_last_cycle=flag(result.spike_active),
                         temperature_sen_slope=scalar(result.temperature_sen_slope),
                         spike_delta_c=scalar(result.spike_delta),
                         kernel=kernel_label(battery.thermal_anomaly_checker),
                         units={"temperature_sen_slope": "degC per cycle"})


def impedance_trend_analyzer(store: DataStore, battery_id: BatteryId) -> ImpedanceTrendResult:
    """Tell sensor faults from real degradation in the cell's EIS (Re, Rct) series."""
    cell = cell_of(store, battery_id)
    with kernel_errors():
        result = battery.impedance_trend_analyzer(cell.re_ohm, cell.rct_ohm)
    return ImpedanceTrendResult(
        battery_id=cell.battery_id, label=code_label(result.label, battery.IMPEDANCE_LABELS),
        n_non_physical=int(np.sum(np.asarray(result.non_physical))),
        n_jump_points=int(np.sum(np.asarray(result.jump))),
        degradation_after_cleaning=flag(result.degradation_after_cleaning),
        trend_after_cleaning=code_label(result.trend_after_cleaning.trend, trends.TREND_LABELS),
        kernel=kernel_label(battery.impedance_trend_analyzer))


def compare_to_baseline(store: DataStore, battery_id: BatteryId,
                        baseline_ids: Annotated[list[str], Field(min_length=2)],
                        feature: Feature = "capacity_ah") -> BaselineResult:
    """Compare a cell's per-cycle feature with a fleet of at least two other cells
    (robust z-score, debounced); cycles are aligned from cycle 1 to the shortest record."""
    cell = cell_of(store, battery_id)
    fleet = [cell_of(store, b) for b in baseline_ids]
    if cell.battery_id in {f.battery_id for f in fleet}:
        raise InvalidArgumentsError("baseline_ids must not contain the target cell")
    length = min(int(c.cycle.shape[0]) for c in [cell, *fleet])
    with kernel_errors():
        result = battery.compare_to_baseline(
            getattr(cell, feature)[:length],
            np.stack([getattr(f, feature)[:length] for f in fleet]))
    return BaselineResult(battery_id=cell.battery_id,
                          baseline_ids=[f.battery_id for f in fleet], feature=feature,
                          n_cycles_compared=length, is_outlier=flag(result.is_outlier),
                          n_events=int(scalar(result.n_events)),
                          max_abs_z=float(np.max(np.abs(np.asarray(result.z)))),
                          kernel=kernel_label(battery.compare_to_baseline),
                          units={"max_abs_z": "robust z"})


def generate_health_report(store: DataStore, battery_id: BatteryId, cycle: Cycle) -> HealthReport:
    """Health triage (routine / elevated / urgent / emergency) at a cycle from SOH stage,
    anomalies, the thermal check and a linear-fade RUL fitted on cycles 1..cycle."""
    cell = cell_of(store, battery_id)
    check_cycle(cell, cycle)
    if cycle < 11:
        raise DomainToolError("generate_health_report needs at least 11 cycles of history")
    stage = degradation_stage_classifier(store, battery_id, cycle)
    anomalies = anomaly_detector(store, battery_id)
    any_anomaly = anomalies.first_anomalous_cycle is not None and \
        anomalies.first_anomalous_cycle <= cycle
    thermal = thermal_anomaly_checker(store, battery_id, up_to_cycle=cycle)
    rul = rul_predictor_linear(store, battery_id, observed_cycles=cycle)
    with kernel_errors():
        level = battery.health_report_triage(
            stage.stage, np.inf if rul.predicted_rul is None else rul.predicted_rul,
            thermal.spike_on_last_cycle, any_anomaly)
    return HealthReport(battery_id=cell.battery_id, cycle=cycle, soh_rated=stage.soh_rated,
                        stage=stage.stage, predicted_rul=rul.predicted_rul,
                        any_anomaly=any_anomaly, thermal_label=thermal.label,
                        triage_level=code_label(level, battery.TRIAGE_LEVELS),
                        kernel=kernel_label(battery.health_report_triage)
                        + " (+ soh, stage, anomaly, thermal, linear_fade_rul)",
                        units={"predicted_rul": "cycles"})


TOOLS = tuple(ToolDef(tool, "battery") for tool in (
    thermal_anomaly_checker, impedance_trend_analyzer, compare_to_baseline,
    generate_health_report))
