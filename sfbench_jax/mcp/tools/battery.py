"""Battery-prognostics tools over the NASA PCoE Li-ion cells B0005, B0006, B0007, B0018: cycle
data, state of health, degradation stage, anomalies and capacity-fade RUL.

What lives here: `Cell` (a loaded cell with temperatures in degC) and `cell_of`, the tools
``fetch_cycle_summary``, ``fetch_impedance_data``, ``capacity_soh_calculator``,
``degradation_stage_classifier``, ``anomaly_detector``, ``rul_predictor_linear`` and
``rul_predictor_empirical``. Tool names follow PHMForge's battery server; cycles are 1-based
discharge-cycle indices. What does not: the diagnostics that combine several checks
(``battery_diagnostics.py``) and the kernels' arithmetic (`phm_kernels.battery`, `.trends`).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

import numpy as np
from phm_kernels import battery, trends
from pydantic import BaseModel, Field

from sfbench_jax.mcp.datasets import DataStore, resolve_battery_id
from sfbench_jax.mcp.errors import DomainToolError, InvalidArgumentsError, kernel_errors
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

__all__ = ["FEATURES", "TOOLS", "BatteryId", "Cell", "Cycle", "anomaly_detector",
           "capacity_soh_calculator", "cell_of", "check_cycle", "degradation_stage_classifier",
           "fetch_cycle_summary", "fetch_impedance_data", "rul_predictor_empirical",
           "rul_predictor_linear"]

BatteryId = Annotated[str, Field(description="cell id: B0005, B0006, B0007 or B0018")]
Cycle = Annotated[int, Field(ge=1, description="1-based discharge cycle")]
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


def cell_of(store: DataStore, battery_id: str) -> Cell:
    """The cell a battery id names, read through the store."""
    return Cell(store.battery(resolve_battery_id(battery_id)))


def check_cycle(cell: Cell, cycle: int, argument: str = "cycle") -> int:
    """``cycle`` if the cell has it, else a domain error naming its cycle range."""
    total = int(cell.cycle.shape[0])
    if not 1 <= cycle <= total:
        raise DomainToolError(f"{argument}={cycle} is outside 1..{total} for {cell.battery_id}")
    return cycle


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


def fetch_cycle_summary(store: DataStore, battery_id: BatteryId, start_cycle: Cycle = 1,
                        end_cycle: Annotated[int | None, Field(ge=1)] = None) -> CycleSummary:
    """Per-cycle discharge capacity, max/avg temperature, min voltage and duration."""
    cell = cell_of(store, battery_id)
    last = int(cell.cycle.shape[0]) if end_cycle is None else end_cycle
    check_cycle(cell, start_cycle, "start_cycle")
    check_cycle(cell, last, "end_cycle")
    if last < start_cycle:
        raise InvalidArgumentsError("end_cycle must be >= start_cycle")
    rows = [CycleRow(cycle=int(cell.cycle[i]),
                     **{name: float(getattr(cell, name)[i]) for name in FEATURES})
            for i in range(start_cycle - 1, last)]
    return CycleSummary(battery_id=cell.battery_id, n_cycles_total=int(cell.cycle.shape[0]),
                        rows=rows, kernel="none (data access)", units=dict(_UNITS))


def fetch_impedance_data(store: DataStore, battery_id: BatteryId) -> ImpedanceSummary:
    """EIS records (Re, Rct) of a cell with a Mann-Kendall trend on Re + Rct."""
    cell = cell_of(store, battery_id)
    with kernel_errors():
        trend = trends.mann_kendall(cell.re_ohm + cell.rct_ohm)
    return ImpedanceSummary(
        battery_id=cell.battery_id, n_records=int(cell.re_ohm.shape[0]),
        re_first=float(cell.re_ohm[0]), re_last=float(cell.re_ohm[-1]),
        rct_first=float(cell.rct_ohm[0]), rct_last=float(cell.rct_ohm[-1]),
        resistance_trend=code_label(trend.trend, trends.TREND_LABELS),
        resistance_trend_p_value=scalar(trend.p_value),
        resistance_sen_slope_per_record=scalar(trend.sen_slope),
        kernel=kernel_label(trends.mann_kendall), units={"re_*": "ohm", "rct_*": "ohm"})


def capacity_soh_calculator(store: DataStore, battery_id: BatteryId, cycle: Cycle) -> SohResult:
    """State of health at a cycle against the first cycle (and the 2.0 Ah rating), plus
    the cell's end-of-life cycle (first capacity below 1.4 Ah)."""
    cell = cell_of(store, battery_id)
    index = check_cycle(cell, cycle) - 1
    with kernel_errors():
        soh = battery.battery_soh(cell.capacity_ah)
    eol_index = int(scalar(soh.eol_index))
    return SohResult(battery_id=cell.battery_id, cycle=cycle,
                     capacity_ah=float(cell.capacity_ah[index]),
                     soh_first_cycle=float(np.asarray(soh.soh_first)[index]),
                     soh_rated=float(np.asarray(soh.soh_rated)[index]),
                     fade_pct=float(np.asarray(soh.fade_pct)[index]),
                     eol_reached=bool(np.asarray(soh.eol_reached)[index]),
                     eol_cycle=None if eol_index < 0 else int(cell.cycle[eol_index]),
                     kernel=kernel_label(battery.battery_soh),
                     units={"capacity_ah": "Ah", "soh_*": "fraction", "fade_pct": "%"})


def degradation_stage_classifier(store: DataStore, battery_id: BatteryId,
                                 cycle: Cycle) -> StageResult:
    """Degradation stage (HEALTHY / EARLY / ACCELERATED / EOL) from the SOH at one cycle."""
    cell = cell_of(store, battery_id)
    index = check_cycle(cell, cycle) - 1
    with kernel_errors():
        soh_rated = float(np.asarray(battery.battery_soh(cell.capacity_ah).soh_rated)[index])
        stage = battery.battery_stage(soh_rated)
    return StageResult(battery_id=cell.battery_id, cycle=cycle, soh_rated=soh_rated,
                       stage=code_label(stage, battery.BATTERY_STAGES),
                       kernel=kernel_label(battery.battery_stage), units={"soh_rated": "fraction"})


def anomaly_detector(store: DataStore, battery_id: BatteryId,
                     threshold: Annotated[float, Field(gt=0)] = 3.0,
                     min_persistence: Annotated[int, Field(ge=1, le=50)] = 3,
                     window: Annotated[int, Field(ge=2, le=50)] = 10) -> AnomalyReport:
    """Debounced rolling z-score anomalies over the five standard per-cycle features."""
    cell = cell_of(store, battery_id)
    with kernel_errors():
        result = trends.rolling_zscore_anomaly_multi(
            np.stack([getattr(cell, name) for name in FEATURES], axis=1), window=window,
            threshold=threshold, min_persistence=min_persistence)
    first_anomalous = first_flagged(result.any_flag, cell.cycle)
    return AnomalyReport(
        battery_id=cell.battery_id, threshold=threshold, min_persistence=min_persistence,
        window=window,
        features={name: FeatureAnomalies(**column._asdict()) for name, column
                  in zip(FEATURES, column_anomalies(result, cell.cycle), strict=True)},
        any_anomaly=first_anomalous is not None, first_anomalous_cycle=first_anomalous,
        kernel=kernel_label(trends.rolling_zscore_anomaly_multi))


def _observed(cell: Cell, observed_cycles: int) -> int:
    total = int(cell.cycle.shape[0])
    if not 3 <= observed_cycles <= total:
        raise DomainToolError(f"observed_cycles={observed_cycles} must be in 3..{total} for "
                              f"{cell.battery_id}")
    return observed_cycles


def rul_predictor_linear(store: DataStore, battery_id: BatteryId,
                         observed_cycles: Annotated[int, Field(ge=3)]) -> RulPrediction:
    """Linear capacity-fade RUL from the first observed_cycles cycles (error-floor
    baseline); EOL is capacity below 1.4 Ah."""
    cell = cell_of(store, battery_id)
    n = _observed(cell, observed_cycles)
    with kernel_errors():
        # Full arrays with observed_cycles (a traced mask): one compile per cell length.
        result = battery.linear_fade_rul(cell.cycle.astype(float), cell.capacity_ah,
                                         observed_cycles=n)
    return RulPrediction(
        battery_id=cell.battery_id, model="linear", observed_cycles=n,
        predicted_rul=maybe_finite(result.rul), predicted_eol_cycle=maybe_finite(result.k_eol),
        status=code_label(result.status, battery.FADE_STATUS),
        fit={"slope_ah_per_cycle": scalar(result.slope), "intercept_ah": scalar(result.intercept),
             "r2": scalar(result.r2)},
        kernel=kernel_label(battery.linear_fade_rul), units={"predicted_rul": "cycles"})


def rul_predictor_empirical(
        store: DataStore, battery_id: BatteryId, observed_cycles: Annotated[int, Field(ge=3)],
        target_temperature_c: Annotated[float | None, Field(
            gt=-50, lt=100, description="temperature to predict at; default: the cell's own "
                                        "mean temperature (Arrhenius factor ~1 near 24 degC)")
        ] = None,
) -> RulPrediction:
    """Arrhenius-aware exponential capacity-fade RUL from the first observed_cycles cycles."""
    cell = cell_of(store, battery_id)
    n = _observed(cell, observed_cycles)
    cell_k = float(np.mean(cell.avg_temperature_c[:n])) + _KELVIN
    with kernel_errors():
        result = battery.exp_fade_rul(
            cell.cycle.astype(float), cell.capacity_ah, observed_cycles=n, temperature_k=cell_k,
            target_temperature_k=None if target_temperature_c is None
            else target_temperature_c + _KELVIN)
    return RulPrediction(
        battery_id=cell.battery_id, model="empirical_arrhenius", observed_cycles=n,
        predicted_rul=maybe_finite(result.rul), predicted_eol_cycle=maybe_finite(result.k_eol),
        status=code_label(result.status, battery.FADE_STATUS),
        fit={"c0_ah": scalar(result.c0), "decay_rate_eff": scalar(result.decay_rate_eff),
             "decay_rate_used": scalar(result.decay_rate_used),
             "cell_temperature_c": cell_k - _KELVIN},
        kernel=kernel_label(battery.exp_fade_rul), units={"predicted_rul": "cycles"})


TOOLS = tuple(ToolDef(tool, "battery") for tool in (
    fetch_cycle_summary, fetch_impedance_data, capacity_soh_calculator,
    degradation_stage_classifier, anomaly_detector, rul_predictor_linear,
    rul_predictor_empirical))
