"""Battery-prognostics-server tools over the NASA PCoE Li-ion cells B0005, B0006, B0007, B0018.

What lives here: thin adapters over `phm_kernels.battery` (SOH, degradation stage, debounced
rolling z-score anomaly detection, linear and Arrhenius-exponential fade RUL, fleet-baseline
comparison, thermal and impedance checks, health-report triage) and `phm_kernels.trends`
(impedance trend statistics), fed with per-cycle features read by ``DataStore``. Tool names
follow PHMForge's battery server. What does not: the kernels' arithmetic. Cycles are 1-based
discharge-cycle indices.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

import numpy as np
from pydantic import BaseModel, Field

from sfbench_jax.mcp.datasets import DataStore, resolve_battery_id
from sfbench_jax.mcp.errors import DomainToolError, InvalidArgumentsError, kernel_errors
from sfbench_jax.mcp.tools import ToolContext, ToolDef
from sfbench_jax.mcp.tools._common import ToolResult, code_label, flag, maybe_finite, scalar

__all__ = ["build"]

BatteryId = Annotated[str, Field(description="cell id: B0005, B0006, B0007 or B0018")]
Cycle = Annotated[int, Field(ge=1, description="1-based discharge cycle")]
Feature = Literal["capacity_ah", "max_temperature_c", "avg_temperature_c", "min_voltage_v",
                  "duration_s"]
_UNITS = {"capacity_ah": "Ah", "max_temperature_c": "degC", "avg_temperature_c": "degC",
          "min_voltage_v": "V", "duration_s": "s"}
FEATURES: tuple[str, ...] = tuple(_UNITS)
_KELVIN = 273.15


class Cell:
    """A loaded cell (``phm_kernels.loaders.BatteryCell``) with temperatures in degC."""

    def __init__(self, loaded: Any) -> None:
        self.battery_id: str = loaded.cell
        self.cycle: np.ndarray = loaded.cycle
        self.capacity_ah: np.ndarray = loaded.capacity_ah
        self.max_temperature_c: np.ndarray = loaded.max_temperature_k - _KELVIN
        self.avg_temperature_c: np.ndarray = loaded.avg_temperature_k - _KELVIN
        self.min_voltage_v: np.ndarray = loaded.min_voltage_v
        self.duration_s: np.ndarray = loaded.duration_s
        self.re_ohm: np.ndarray = loaded.re_ohm
        self.rct_ohm: np.ndarray = loaded.rct_ohm


class CycleRow(BaseModel):
    """The five standard features of one discharge cycle."""

    cycle: int
    capacity_ah: float
    max_temperature_c: float
    avg_temperature_c: float
    min_voltage_v: float
    duration_s: float


class CycleSummary(ToolResult):
    """Per-cycle features of a cell over a cycle range."""

    battery_id: str
    n_cycles_total: int
    rows: list[CycleRow]


class ImpedanceSummary(ToolResult):
    """EIS record statistics of a cell."""

    battery_id: str
    n_records: int
    re_first: float
    re_last: float
    rct_first: float
    rct_last: float
    resistance_trend: str
    resistance_trend_p_value: float
    resistance_sen_slope_per_record: float


class SohResult(ToolResult):
    """State of health at one cycle."""

    battery_id: str
    cycle: int
    capacity_ah: float
    soh_first_cycle: float = Field(description="C_k / C_1 (primary, PHMForge's reference)")
    soh_rated: float = Field(description="C_k / 2.0 Ah")
    fade_pct: float
    eol_reached: bool = Field(description="capacity below 1.4 Ah at this cycle")
    eol_cycle: int | None = Field(description="first cycle below 1.4 Ah in the whole record; "
                                              "None if never reached (censored)")


class StageResult(ToolResult):
    """Degradation stage at one cycle."""

    battery_id: str
    cycle: int
    soh_rated: float
    stage: Literal["HEALTHY", "EARLY_DEGRADATION", "ACCELERATED_DEGRADATION", "EOL"]


class FeatureAnomalies(BaseModel):
    """Anomaly events of one feature."""

    n_events: int
    first_flagged_cycle: int | None
    n_flagged_cycles: int


class AnomalyReport(ToolResult):
    """Debounced rolling z-score anomalies over the five standard features."""

    battery_id: str
    threshold: float
    min_persistence: int
    window: int
    features: dict[str, FeatureAnomalies]
    any_anomaly: bool
    first_anomalous_cycle: int | None


class RulPrediction(ToolResult):
    """Capacity-fade RUL prediction (PHMForge's PredictionResult fields)."""

    battery_id: str
    model: Literal["linear", "empirical_arrhenius"]
    observed_cycles: int
    predicted_rul: float | None = Field(description="cycles after the last observed cycle; "
                                                    "None when no fade is observed")
    predicted_eol_cycle: float | None
    status: str
    fit: dict[str, float]


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


def _check_cycle(cell: Cell, cycle: int, argument: str = "cycle") -> int:
    total = int(cell.cycle.shape[0])
    if not 1 <= cycle <= total:
        raise DomainToolError(f"{argument}={cycle} is outside 1..{total} for {cell.battery_id}")
    return cycle


def build(context: ToolContext) -> list[ToolDef]:
    """Declare the battery-server tools.

    Args:
        context: Tool context (the data store).

    Returns:
        Tool declarations.
    """
    from phm_kernels import battery, trends

    store: DataStore = context.store

    def cell_of(battery_id: str) -> Cell:
        return Cell(store.battery(resolve_battery_id(battery_id)))

    def features(cell: Cell) -> np.ndarray:
        return np.stack([getattr(cell, name) for name in FEATURES], axis=1)

    def fetch_cycle_summary(battery_id: BatteryId, start_cycle: Cycle = 1,
                            end_cycle: Annotated[int | None, Field(ge=1)] = None) -> CycleSummary:
        """Per-cycle discharge capacity, max/avg temperature, min voltage and duration."""
        cell = cell_of(battery_id)
        last = int(cell.cycle.shape[0]) if end_cycle is None else end_cycle
        _check_cycle(cell, start_cycle, "start_cycle")
        _check_cycle(cell, last, "end_cycle")
        if last < start_cycle:
            raise InvalidArgumentsError("end_cycle must be >= start_cycle")
        rows = [CycleRow(cycle=int(cell.cycle[i]),
                         **{name: float(getattr(cell, name)[i]) for name in FEATURES})
                for i in range(start_cycle - 1, last)]
        return CycleSummary(battery_id=cell.battery_id, n_cycles_total=int(cell.cycle.shape[0]),
                            rows=rows, kernel="none (data access)", units=dict(_UNITS))

    def fetch_impedance_data(battery_id: BatteryId) -> ImpedanceSummary:
        """EIS records (Re, Rct) of a cell with a Mann-Kendall trend on Re + Rct."""
        cell = cell_of(battery_id)
        with kernel_errors():
            trend = trends.mann_kendall(cell.re_ohm + cell.rct_ohm)
        return ImpedanceSummary(
            battery_id=cell.battery_id, n_records=int(cell.re_ohm.shape[0]),
            re_first=float(cell.re_ohm[0]), re_last=float(cell.re_ohm[-1]),
            rct_first=float(cell.rct_ohm[0]), rct_last=float(cell.rct_ohm[-1]),
            resistance_trend=code_label(trend.trend, trends.TREND_LABELS),
            resistance_trend_p_value=scalar(trend.p_value),
            resistance_sen_slope_per_record=scalar(trend.sen_slope),
            kernel="trends.mann_kendall", units={"re_*": "ohm", "rct_*": "ohm"})

    def soh_of(cell: Cell) -> Any:
        with kernel_errors():
            return battery.battery_soh(cell.capacity_ah)

    def capacity_soh_calculator(battery_id: BatteryId, cycle: Cycle) -> SohResult:
        """State of health at a cycle against the first cycle (and the 2.0 Ah rating), plus
        the cell's end-of-life cycle (first capacity below 1.4 Ah)."""
        cell = cell_of(battery_id)
        index = _check_cycle(cell, cycle) - 1
        soh = soh_of(cell)
        eol_index = int(scalar(soh.eol_index))
        return SohResult(battery_id=cell.battery_id, cycle=cycle,
                         capacity_ah=float(cell.capacity_ah[index]),
                         soh_first_cycle=float(np.asarray(soh.soh_first)[index]),
                         soh_rated=float(np.asarray(soh.soh_rated)[index]),
                         fade_pct=float(np.asarray(soh.fade_pct)[index]),
                         eol_reached=bool(np.asarray(soh.eol_reached)[index]),
                         eol_cycle=None if eol_index < 0 else int(cell.cycle[eol_index]),
                         kernel="battery.battery_soh",
                         units={"capacity_ah": "Ah", "soh_*": "fraction", "fade_pct": "%"})

    def degradation_stage_classifier(battery_id: BatteryId, cycle: Cycle) -> StageResult:
        """Degradation stage (HEALTHY / EARLY / ACCELERATED / EOL) from the SOH at one cycle."""
        cell = cell_of(battery_id)
        index = _check_cycle(cell, cycle) - 1
        soh_rated = float(np.asarray(soh_of(cell).soh_rated)[index])
        with kernel_errors():
            stage = battery.battery_stage(soh_rated)
        return StageResult(battery_id=cell.battery_id, cycle=cycle, soh_rated=soh_rated,
                           stage=code_label(stage, battery.BATTERY_STAGES),
                           kernel="battery.battery_stage", units={"soh_rated": "fraction"})

    def anomaly_detector(battery_id: BatteryId,
                         threshold: Annotated[float, Field(gt=0)] = 3.0,
                         min_persistence: Annotated[int, Field(ge=1, le=50)] = 3,
                         window: Annotated[int, Field(ge=2, le=50)] = 10) -> AnomalyReport:
        """Debounced rolling z-score anomalies over the five standard per-cycle features."""
        cell = cell_of(battery_id)
        with kernel_errors():
            result = battery.rolling_zscore_anomaly_multi(
                features(cell), window=window, threshold=threshold,
                min_persistence=min_persistence)
        flags = np.asarray(result.flags)
        per_feature = {}
        for j, name in enumerate(FEATURES):
            hits = np.flatnonzero(flags[:, j])
            per_feature[name] = FeatureAnomalies(
                n_events=int(np.asarray(result.n_events)[j]),
                first_flagged_cycle=int(cell.cycle[hits[0]]) if hits.size else None,
                n_flagged_cycles=int(hits.size))
        any_flag = np.flatnonzero(np.asarray(result.any_flag))
        return AnomalyReport(battery_id=cell.battery_id, threshold=threshold,
                             min_persistence=min_persistence, window=window,
                             features=per_feature, any_anomaly=bool(any_flag.size),
                             first_anomalous_cycle=int(cell.cycle[any_flag[0]])
                             if any_flag.size else None,
                             kernel="battery.rolling_zscore_anomaly_multi")

    def observed(cell: Cell, observed_cycles: int) -> int:
        total = int(cell.cycle.shape[0])
        if not 3 <= observed_cycles <= total:
            raise DomainToolError(f"observed_cycles={observed_cycles} must be in 3..{total} for "
                                  f"{cell.battery_id}")
        return observed_cycles

    def rul_predictor_linear(battery_id: BatteryId,
                             observed_cycles: Annotated[int, Field(ge=3)]) -> RulPrediction:
        """Linear capacity-fade RUL from the first observed_cycles cycles (error-floor
        baseline); EOL is capacity below 1.4 Ah."""
        cell = cell_of(battery_id)
        n = observed(cell, observed_cycles)
        with kernel_errors():
            # Full arrays with observed_cycles (a traced mask): one compile per cell length.
            result = battery.linear_fade_rul(cell.cycle.astype(float), cell.capacity_ah,
                                             observed_cycles=n)
        return RulPrediction(
            battery_id=cell.battery_id, model="linear", observed_cycles=n,
            predicted_rul=maybe_finite(result.rul), predicted_eol_cycle=maybe_finite(result.k_eol),
            status=code_label(result.status, battery.FADE_STATUS),
            fit={"slope_ah_per_cycle": scalar(result.slope), "intercept_ah":
                 scalar(result.intercept), "r2": scalar(result.r2)},
            kernel="battery.linear_fade_rul", units={"predicted_rul": "cycles"})

    def rul_predictor_empirical(
            battery_id: BatteryId, observed_cycles: Annotated[int, Field(ge=3)],
            target_temperature_c: Annotated[float | None, Field(
                gt=-50, lt=100, description="temperature to predict at; default: the cell's "
                                            "own mean temperature (Arrhenius factor ~1 near "
                                            "24 degC)")] = None,
    ) -> RulPrediction:
        """Arrhenius-aware exponential capacity-fade RUL from the first observed_cycles cycles."""
        cell = cell_of(battery_id)
        n = observed(cell, observed_cycles)
        cell_k = float(np.mean(cell.avg_temperature_c[:n])) + 273.15
        with kernel_errors():
            result = battery.exp_fade_rul(
                cell.cycle.astype(float), cell.capacity_ah, observed_cycles=n,
                temperature_k=cell_k,
                target_temperature_k=None if target_temperature_c is None
                else target_temperature_c + 273.15)
        return RulPrediction(
            battery_id=cell.battery_id, model="empirical_arrhenius", observed_cycles=n,
            predicted_rul=maybe_finite(result.rul), predicted_eol_cycle=maybe_finite(result.k_eol),
            status=code_label(result.status, battery.FADE_STATUS),
            fit={"c0_ah": scalar(result.c0), "decay_rate_eff": scalar(result.decay_rate_eff),
                 "decay_rate_used": scalar(result.decay_rate_used),
                 "cell_temperature_c": cell_k - 273.15},
            kernel="battery.exp_fade_rul", units={"predicted_rul": "cycles"})

    def thermal_anomaly_checker(battery_id: BatteryId,
                                up_to_cycle: Annotated[int | None, Field(ge=1)] = None
                                ) -> ThermalResult:
        """Classify thermal behaviour: normal_aging, thermal_spike or internal_resistance_rise."""
        cell = cell_of(battery_id)
        last = int(cell.cycle.shape[0]) if up_to_cycle is None else _check_cycle(
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
                             kernel="battery.thermal_anomaly_checker",
                             units={"temperature_sen_slope": "degC per cycle"})

    def impedance_trend_analyzer(battery_id: BatteryId) -> ImpedanceTrendResult:
        """Tell sensor faults from real degradation in the cell's EIS (Re, Rct) series."""
        cell = cell_of(battery_id)
        with kernel_errors():
            result = battery.impedance_trend_analyzer(cell.re_ohm, cell.rct_ohm)
        return ImpedanceTrendResult(
            battery_id=cell.battery_id, label=code_label(result.label, battery.IMPEDANCE_LABELS),
            n_non_physical=int(np.sum(np.asarray(result.non_physical))),
            n_jump_points=int(np.sum(np.asarray(result.jump))),
            degradation_after_cleaning=flag(result.degradation_after_cleaning),
            trend_after_cleaning=code_label(result.trend_after_cleaning.trend,
                                            trends.TREND_LABELS),
            kernel="battery.impedance_trend_analyzer")

    def compare_to_baseline(battery_id: BatteryId,
                            baseline_ids: Annotated[list[str], Field(min_length=2)],
                            feature: Feature = "capacity_ah") -> BaselineResult:
        """Compare a cell's per-cycle feature with a fleet of at least two other cells
        (robust z-score, debounced); cycles are aligned from cycle 1 to the shortest record."""
        cell = cell_of(battery_id)
        fleet = [cell_of(b) for b in baseline_ids]
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
                              kernel="battery.compare_to_baseline",
                              units={"max_abs_z": "robust z"})

    def generate_health_report(battery_id: BatteryId, cycle: Cycle) -> HealthReport:
        """Health triage (routine / elevated / urgent / emergency) at a cycle from SOH stage,
        anomalies, the thermal check and a linear-fade RUL fitted on cycles 1..cycle."""
        cell = cell_of(battery_id)
        _check_cycle(cell, cycle)
        if cycle < 11:
            raise DomainToolError("generate_health_report needs at least 11 cycles of history")
        stage = degradation_stage_classifier(battery_id, cycle)
        anomalies = anomaly_detector(battery_id)
        any_anomaly = anomalies.first_anomalous_cycle is not None and \
            anomalies.first_anomalous_cycle <= cycle
        thermal = thermal_anomaly_checker(battery_id, up_to_cycle=cycle)
        rul = rul_predictor_linear(battery_id, observed_cycles=cycle)
        with kernel_errors():
            level = battery.health_report_triage(
                stage.stage, np.inf if rul.predicted_rul is None else rul.predicted_rul,
                thermal.spike_on_last_cycle, any_anomaly)
        return HealthReport(battery_id=cell.battery_id, cycle=cycle, soh_rated=stage.soh_rated,
                            stage=stage.stage, predicted_rul=rul.predicted_rul,
                            any_anomaly=any_anomaly, thermal_label=thermal.label,
                            triage_level=code_label(level, battery.TRIAGE_LEVELS),
                            kernel="battery.health_report_triage (+ soh, stage, anomaly, "
                                   "thermal, linear_fade_rul)",
                            units={"predicted_rul": "cycles"})

    group = "battery"
    return [
        ToolDef(fetch_cycle_summary, group),
        ToolDef(fetch_impedance_data, group),
        ToolDef(capacity_soh_calculator, group),
        ToolDef(degradation_stage_classifier, group),
        ToolDef(anomaly_detector, group),
        ToolDef(rul_predictor_linear, group),
        ToolDef(rul_predictor_empirical, group),
        ToolDef(thermal_anomaly_checker, group),
        ToolDef(impedance_trend_analyzer, group),
        ToolDef(compare_to_baseline, group),
        ToolDef(generate_health_report, group),
    ]
