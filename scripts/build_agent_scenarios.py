"""Build the ground truth of the agent-evaluation scenarios by calling the PHM kernels.

Every scenario file in ``sfbench_jax/agent_eval/scenarios/`` names a ground-truth recipe
(``ground_truth_recipe: {builder, params}``). This script runs that builder, which reads the
real data under the data root and calls `phm_kernels` directly (never the MCP server, so the
server's adapters are checked against an independent path), and writes
``scenarios/ground_truth/<id>.gt.json`` plus ``MANIFEST.json`` (file -> sha256). Ground truth is
never edited by hand; ``--check`` recomputes everything and fails on any difference.

Floats are rounded to 6 significant digits so files are stable across platforms; validators
use tolerances well above that.

Usage::

    python scripts/build_agent_scenarios.py --data-root ../shared/data          # (re)write
    python scripts/build_agent_scenarios.py --data-root ../shared/data --check  # verify
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import phm_kernels as kern
from phm_kernels import cmapss

from sfbench_jax.agent_eval.scenario import default_scenario_dir, load_scenarios
from sfbench_jax.mcp.datasets import CWRU_CONDITIONS, DataStore, resolve_dataset

Builder = Callable[[Mapping[str, Any], DataStore], dict[str, Any]]
BUILDERS: dict[str, Builder] = {}
MANIFEST = "MANIFEST.json"
BEARING_LABELS = ("normal", "outer_race", "inner_race", "ball")


def builder(name: str) -> Callable[[Builder], Builder]:
    """Register a ground-truth builder under ``name``."""
    def register(fn: Builder) -> Builder:
        BUILDERS[name] = fn
        return fn
    return register


def r6(value: Any) -> float | None:
    """A float rounded to 6 significant digits (None for +/-inf and NaN)."""
    number = float(np.asarray(value).reshape(-1)[0])
    return float(f"{number:.6g}") if np.isfinite(number) else None


def code(value: Any) -> int:
    """An int code from a 0-d kernel output."""
    return int(np.asarray(value).reshape(-1)[0])


# ---------------------------------------------------------------------------------------------
# RUL prediction


def _cmapss_reference(params: Mapping[str, Any], store: DataStore) -> tuple[Any, np.ndarray]:
    name = resolve_dataset(params["dataset"], family="cmapss").name
    data = store.cmapss(name)

    def fit_and_predict() -> np.ndarray:
        model = cmapss.fit_linear_health_index_baseline(data)
        return np.asarray(cmapss.predict_linear_health_index_baseline(model, data.test))

    return data, store.cached(("reference_rul", name), fit_and_predict)


@builder("cmapss_rul_fleet")
def cmapss_rul_fleet(params: Mapping[str, Any], store: DataStore) -> dict[str, Any]:
    """True test RUL (data), the lowest-true-RUL units, the reference model's metrics and the
    accepted ranges (reference +/- ``tolerance``, PHMForge's +/-20% rule)."""
    data, pred = _cmapss_reference(params, store)
    units = data.test.unit_ids.astype(int)
    truth = data.test_rul
    top_n = int(params.get("top_n", 10))
    tolerance = float(params.get("tolerance", 0.2))
    true_top = units[np.lexsort((units, truth))[:top_n]]  # ascending true RUL, ties by id
    pred_top = units[np.lexsort((units, pred))[:top_n]]
    metrics = kern.regression_metrics(truth, pred)
    overlap = len(set(true_top.tolist()) & set(pred_top.tolist())) / top_n
    mae, rmse = float(np.asarray(metrics.mae)), float(np.asarray(metrics.rmse))
    return {"units": {"ids": units.tolist(), "rul": truth.tolist()},
            "top_risk_by_true_rul": true_top.tolist(),
            "reference": {"mae": r6(mae), "rmse": r6(rmse),
                          "phm08": r6(kern.phm08_score(truth, pred)),
                          "top_risk_overlap": r6(overlap),
                          "most_urgent_unit": int(pred_top[0]),
                          "most_urgent_predicted_rul": r6(pred[pred_top[0] - 1])},
            "mae_range": [r6((1 - tolerance) * mae), r6((1 + tolerance) * mae)],
            "rmse_range": [r6((1 - tolerance) * rmse), r6((1 + tolerance) * rmse)],
            "min_top_risk_overlap": r6(max(0.0, overlap - 0.1))}


@builder("cmapss_rul_acceptance")
def cmapss_rul_acceptance(params: Mapping[str, Any], store: DataStore) -> dict[str, Any]:
    """Reference metrics of the baseline against externally published acceptance ranges."""
    data, pred = _cmapss_reference(params, store)
    result = kern.verify_rul_predictions(data.test_rul, pred, mae_range=tuple(params["mae_range"]),
                                      rmse_range=tuple(params["rmse_range"]))
    return {"mae": r6(result.mae), "rmse": r6(result.rmse), "phm08": r6(result.score),
            "mae_ok": bool(np.asarray(result.mae_ok)), "rmse_ok": bool(np.asarray(result.rmse_ok)),
            "meets_acceptance": bool(np.asarray(result.mae_ok))
            and bool(np.asarray(result.rmse_ok))}


@builder("cmapss_urgent_schedule")
def cmapss_urgent_schedule(params: Mapping[str, Any], store: DataStore) -> dict[str, Any]:
    """The unit with the lowest predicted RUL and its cost-optimal maintenance time."""
    data, pred = _cmapss_reference(params, store)
    units = data.test.unit_ids.astype(int)
    urgent = int(units[np.lexsort((units, pred))[0]])
    rul = float(pred[urgent - 1])
    plan = kern.rul_threshold_schedule(rul, params["rul_std"], params["preventive_cost"],
                                    params["failure_cost"])
    return {"most_urgent_unit": urgent, "predicted_rul": r6(rul),
            "true_rul": float(data.test_rul[urgent - 1]), "maintain_in": r6(plan.maintain_in),
            "p_fail_before": r6(plan.p_fail_before)}


class _Cell:
    """A loaded cell with the five standard features (temperatures in degC, as the tools use)."""

    FEATURES = ("capacity_ah", "max_temperature_c", "avg_temperature_c", "min_voltage_v",
                "duration_s")

    def __init__(self, loaded: Any) -> None:
        self.cycle = loaded.cycle
        self.capacity_ah = loaded.capacity_ah
        self.max_temperature_c = loaded.max_temperature_k - 273.15
        self.avg_temperature_c = loaded.avg_temperature_k - 273.15
        self.min_voltage_v = loaded.min_voltage_v
        self.duration_s = loaded.duration_s
        self.re_ohm = loaded.re_ohm
        self.rct_ohm = loaded.rct_ohm


def _cell(store: DataStore, battery_id: str) -> _Cell:
    return _Cell(store.battery(battery_id))


def _actual_eol(cell: _Cell) -> int | None:
    soh = kern.battery_soh(cell.capacity_ah)
    index = code(soh.eol_index)
    return None if index < 0 else int(cell.cycle[index])


def _battery_prediction(cell: _Cell, model: str, observed: int) -> Any:
    cycles = cell.cycle.astype(float)
    if model == "linear":
        return kern.linear_fade_rul(cycles, cell.capacity_ah, observed_cycles=observed)
    kelvin = float(np.mean(cell.avg_temperature_c[:observed])) + 273.15
    return kern.exp_fade_rul(cycles, cell.capacity_ah, observed_cycles=observed,
                          temperature_k=kelvin)


@builder("battery_rul")
def battery_rul(params: Mapping[str, Any], store: DataStore) -> dict[str, Any]:
    """A fade model's RUL from the first cycles, and the observed EOL cycle (data)."""
    cell = _cell(store, params["battery_id"])
    observed = int(params["observed_cycles"])
    result = _battery_prediction(cell, params["model"], observed)
    eol = _actual_eol(cell)
    predicted_eol = r6(result.k_eol)
    soh_first = np.asarray(kern.battery_soh(cell.capacity_ah).soh_first)
    return {"predicted_rul": r6(result.rul), "predicted_eol_cycle": predicted_eol,
            "soh_first_at_last_cycle": r6(soh_first[-1]),
            "actual_eol_cycle": eol, "eol_observed": eol is not None,
            "actual_rul": None if eol is None else eol - observed,
            "prediction_error_cycles": None if eol is None or predicted_eol is None
            else r6(predicted_eol - eol)}


@builder("battery_rul_compare")
def battery_rul_compare(params: Mapping[str, Any], store: DataStore) -> dict[str, Any]:
    """Linear vs empirical fade predictions and which lands closer to the observed EOL."""
    cell = _cell(store, params["battery_id"])
    observed = int(params["observed_cycles"])
    eol = _actual_eol(cell)
    out: dict[str, Any] = {"actual_eol_cycle": eol}
    errors = {}
    for model in ("linear", "empirical"):
        result = _battery_prediction(cell, model, observed)
        out[f"{model}_predicted_rul"] = r6(result.rul)
        out[f"{model}_predicted_eol_cycle"] = r6(result.k_eol)
        errors[model] = abs(float(np.asarray(result.k_eol)) - eol)
    out["closer_model"] = min(errors, key=errors.get)
    return out


# ---------------------------------------------------------------------------------------------
# Fault classification


def _diagnose(store: DataStore, record: str, band: tuple[float, float]) -> Any:
    signal = store.cwru(record)
    segment = int(round(signal.fs_hz))  # whole segments only, as the kernel uses them
    samples = signal.drive_end[: (signal.drive_end.shape[0] // segment) * segment]
    return kern.diagnose_bearing(samples, fs=signal.fs_hz, rpm=signal.rpm, f_lo=band[0],
                                 f_hi=band[1])


@builder("bearing_fleet")
def bearing_fleet(params: Mapping[str, Any], store: DataStore) -> dict[str, Any]:
    """True conditions (data) and the envelope-analysis labels of several recordings."""
    band = tuple(params.get("band_hz", (2000.0, 4000.0)))
    records = [resolve_dataset(r, family="cwru_bearing").name for r in params["records"]]
    truth = [CWRU_CONDITIONS[r] for r in records]
    labels = [BEARING_LABELS[code(_diagnose(store, r, band).label)] for r in records]
    index = {label: i for i, label in enumerate(BEARING_LABELS)}
    metrics = kern.classification_metrics(np.asarray([index[x] for x in truth]),
                                       np.asarray([index[x] for x in labels]),
                                       n_classes=len(BEARING_LABELS))
    return {"conditions": {"ids": records, "labels": truth},
            "envelope_labels": dict(zip(records, labels, strict=True)),
            "envelope_accuracy": r6(metrics.accuracy)}


@builder("bearing_single")
def bearing_single(params: Mapping[str, Any], store: DataStore) -> dict[str, Any]:
    """True condition of one recording and its defect frequencies at the recorded speed."""
    record = resolve_dataset(params["record"], family="cwru_bearing").name
    signal = store.cwru(record)
    freqs = kern.bearing_fault_frequencies(signal.rpm, **kern.CWRU_DRIVE_END._asdict())
    return {"condition": CWRU_CONDITIONS[record], "rpm": signal.rpm,
            "bpfo_hz": r6(freqs.bpfo), "bpfi_hz": r6(freqs.bpfi), "bsf2_hz": r6(freqs.bsf2)}


@builder("battery_labels")
def battery_labels(params: Mapping[str, Any], store: DataStore) -> dict[str, Any]:
    """Impedance-trend and thermal labels of one cell."""
    cell = _cell(store, params["battery_id"])
    impedance = kern.impedance_trend_analyzer(cell.re_ohm, cell.rct_ohm)
    thermal = kern.thermal_anomaly_checker(cell.max_temperature_c, cell.avg_temperature_c,
                                        cell.re_ohm, cell.rct_ohm)
    return {"impedance_label": kern.IMPEDANCE_LABELS[code(impedance.label)],
            "impedance_jump_points": int(np.sum(np.asarray(impedance.jump))),
            "degradation_after_cleaning": bool(np.asarray(impedance.degradation_after_cleaning)),
            "thermal_label": kern.THERMAL_LABELS[code(thermal.label)],
            "thermal_spike_detected": code(thermal.n_spikes) > 0}


# ---------------------------------------------------------------------------------------------
# Health analysis


@builder("component_health")
def component_health(params: Mapping[str, Any], store: DataStore) -> dict[str, Any]:
    """Module health band and efficiency/flow signature."""
    del store
    from phm_kernels import turbofan

    health = turbofan.component_health(params["component"], params["efficiency"],
                                       params["flow"])
    signature = turbofan.efficiency_flow_signature(params["component"], params["efficiency"],
                                                   params["flow"])
    band = code(health.band)
    out = {"health_band": turbofan.HEALTH_BANDS[band],
           "status": turbofan.PHMFORGE_HEALTH_LABELS[band],
           "signature": turbofan.SIGNATURE_CLASSES[code(signature.signature)]}
    if "choices" in params:
        out["choice"] = next(k for k, v in params["choices"].items() if v == out["status"])
    return out


def _unit_rows(store: DataStore, dataset: str, split: str, unit: int) -> np.ndarray:
    """One unit's rows as a (cycles, 26) table in NASA column order."""
    table = getattr(store.cmapss(resolve_dataset(dataset, family="cmapss").name), split)
    rows = table.unit == unit
    return np.column_stack([table.unit[rows], table.cycle[rows], table.settings[rows],
                            table.sensors[rows]]).astype(np.float64)


@builder("sensor_trend")
def sensor_trend(params: Mapping[str, Any], store: DataStore) -> dict[str, Any]:
    """Mann-Kendall trend and Sen slope of one sensor of one engine."""
    rows = _unit_rows(store, params["dataset"], params["split"], int(params["unit"]))
    column = 5 + int(params["sensor"].removeprefix("s")) - 1
    mk = kern.mann_kendall(rows[:, column])
    return {"trend": kern.TREND_LABELS[code(mk.trend)], "sen_slope": r6(mk.sen_slope),
            "n_cycles": int(rows.shape[0])}


@builder("engine_signals")
def engine_signals(params: Mapping[str, Any], store: DataStore) -> dict[str, Any]:
    """First cycle at which an informative sensor leaves its early-life reference."""
    rows = _unit_rows(store, params["dataset"], params["split"], int(params["unit"]))
    sensors = params["sensors"]
    values = rows[:, [5 + int(s.removeprefix("s")) - 1 for s in sensors]]
    result = kern.rolling_zscore_anomaly_multi(values, window=int(params["window"]),
                                            threshold=float(params["threshold"]),
                                            min_persistence=int(params["min_persistence"]),
                                            baseline="reference")
    any_flag = np.flatnonzero(np.asarray(result.any_flag))
    counts = np.asarray(result.n_events)
    departing = [s for s, c in zip(sensors, counts, strict=True) if c > 0]
    return {"first_anomalous_cycle": int(rows[any_flag[0], 1]) if any_flag.size else None,
            "anomalous_sensors": departing, "n_anomalous_sensors": len(departing),
            "n_cycles": int(rows.shape[0])}


@builder("battery_soh_stage")
def battery_soh_stage(params: Mapping[str, Any], store: DataStore) -> dict[str, Any]:
    """SOH (first-cycle and rated) and degradation stage at one cycle."""
    cell = _cell(store, params["battery_id"])
    index = int(params["cycle"]) - 1
    soh = kern.battery_soh(cell.capacity_ah)
    soh_rated = float(np.asarray(soh.soh_rated)[index])
    return {"soh_first_cycle": r6(np.asarray(soh.soh_first)[index]), "soh_rated": r6(soh_rated),
            "capacity_ah": r6(cell.capacity_ah[index]),
            "stage": kern.BATTERY_STAGES[code(kern.battery_stage(soh_rated))],
            "eol_cycle": _actual_eol(cell)}


def _anomalies(cell: _Cell) -> Any:
    values = np.stack([getattr(cell, f) for f in _Cell.FEATURES], axis=1)
    return kern.rolling_zscore_anomaly_multi(values)


def _first_anomaly(cell: _Cell) -> int | None:
    hits = np.flatnonzero(np.asarray(_anomalies(cell).any_flag))
    return int(cell.cycle[hits[0]]) if hits.size else None


@builder("battery_anomaly")
def battery_anomaly(params: Mapping[str, Any], store: DataStore) -> dict[str, Any]:
    """First cycle flagged by the debounced z-score detector over the five features."""
    cell = _cell(store, params["battery_id"])
    events = np.asarray(_anomalies(cell).n_events)
    return {"first_anomalous_cycle": _first_anomaly(cell),
            "flagged_features": [f for f, n in zip(_Cell.FEATURES, events, strict=True) if n > 0],
            "capacity_flagged": bool(events[_Cell.FEATURES.index("capacity_ah")] > 0)}


@builder("battery_health_report")
def battery_health_report(params: Mapping[str, Any], store: DataStore) -> dict[str, Any]:
    """Triage of the health report: stage, anomalies, thermal spike and linear-fade RUL."""
    cell = _cell(store, params["battery_id"])
    cycle = int(params["cycle"])
    soh_rated = float(np.asarray(kern.battery_soh(cell.capacity_ah).soh_rated)[cycle - 1])
    stage = code(kern.battery_stage(soh_rated))
    first = _first_anomaly(cell)
    thermal = kern.thermal_anomaly_checker(cell.max_temperature_c[:cycle],
                                        cell.avg_temperature_c[:cycle], cell.re_ohm, cell.rct_ohm)
    rul = kern.linear_fade_rul(cell.cycle.astype(float), cell.capacity_ah, observed_cycles=cycle)
    level = kern.health_report_triage(stage, float(np.asarray(rul.rul)),
                                   bool(np.asarray(thermal.spike_active)),
                                   first is not None and first <= cycle)
    return {"triage_level": kern.TRIAGE_LEVELS[code(level)], "stage": kern.BATTERY_STAGES[stage],
            "predicted_rul": r6(rul.rul)}


@builder("vibration_zone")
def vibration_zone(params: Mapping[str, Any], store: DataStore) -> dict[str, Any]:
    """A reading converted to mm/s RMS and its ISO 10816 zone."""
    del store
    value = kern.vib_convert(params["value"], from_unit=params["from_unit"], to_unit="mm/s rms",
                          freq_hz=params.get("frequency_hz"))
    if params["standard"] == "ISO10816-1":
        zone = kern.iso10816_1_zone(value, machine_class=params["machine_class"])
    else:
        zone = kern.iso10816_3_zone(value, group=params["group"], foundation=params["foundation"])
    return {"velocity_mm_s_rms": r6(value), "zone": kern.ISO_ZONES[code(zone.zone)]}


# ---------------------------------------------------------------------------------------------
# Cost-benefit


@builder("pm_roi")
def pm_roi(params: Mapping[str, Any], store: DataStore) -> dict[str, Any]:
    """Preventive programme cost, reactive failure cost, residual cost and ROI."""
    del store
    pm = kern.annual_preventive_cost(*params["pm"], allow_fractional_frequency=True)
    failure = kern.expected_failure_cost(*params["failure"])
    reactive = float(np.asarray(failure.expected_cost))
    residual = reactive * float(params["residual_fraction"])
    roi = kern.maintenance_roi(reactive, float(np.asarray(pm.annual_cost)), residual,
                            params["program_cost"], years=params.get("years", 1),
                            discount_rate=params.get("discount_rate", 0.0))
    return {"pm_annual_cost": r6(pm.annual_cost), "reactive_annual_cost": r6(reactive),
            "residual_annual_cost": r6(residual), "annual_savings": r6(roi.savings),
            "roi": r6(roi.roi), "payback_months": r6(12.0 * float(np.asarray(roi.payback_years)))}


@builder("pm_frequency_choice")
def pm_frequency_choice(params: Mapping[str, Any], store: DataStore) -> dict[str, Any]:
    """Total annual cost (PM + expected failures) of each option and the cheapest option."""
    del store
    totals = {}
    for option in params["options"]:
        pm = kern.annual_preventive_cost(option["preventive_cost"], option["frequency_per_year"],
                                      option["downtime_hours"], option["hourly_rate"])
        failure = kern.expected_failure_cost(option["failure_probability"], *params["failure"])
        totals[option["name"]] = float(np.asarray(pm.annual_cost)) + float(
            np.asarray(failure.expected_cost))
    best = min(totals, key=totals.get)
    return {"total_annual_cost": {k: r6(v) for k, v in totals.items()}, "best_option": best,
            "best_total": r6(totals[best])}


@builder("rul_schedule")
def rul_schedule(params: Mapping[str, Any], store: DataStore) -> dict[str, Any]:
    """Cost-optimal (or margin) maintenance time for an uncertain RUL."""
    del store
    result = kern.rul_threshold_schedule(params["rul_mean"], params["rul_std"],
                                      params["preventive_cost"], params["failure_cost"],
                                      safety_margin=params.get("safety_margin"))
    return {"maintain_in": r6(result.maintain_in), "rul_threshold": r6(result.rul_threshold),
            "p_fail_before": r6(result.p_fail_before)}


@builder("battery_schedule")
def battery_schedule(params: Mapping[str, Any], store: DataStore) -> dict[str, Any]:
    """Linear-fade RUL of a cell fed into the RUL-conditioned schedule."""
    cell = _cell(store, params["battery_id"])
    observed = int(params["observed_cycles"])
    rul = float(np.asarray(_battery_prediction(cell, "linear", observed).rul))
    result = kern.rul_threshold_schedule(rul, params["rul_std"], params["preventive_cost"],
                                      params["failure_cost"],
                                      safety_margin=params.get("safety_margin"))
    return {"predicted_rul": r6(rul), "maintain_in": r6(result.maintain_in),
            "replace_at_cycle": r6(observed + float(np.asarray(result.maintain_in))),
            "p_fail_before": r6(result.p_fail_before)}


@builder("age_replacement")
def age_replacement(params: Mapping[str, Any], store: DataStore) -> dict[str, Any]:
    """Optimal age-replacement interval for a Weibull life."""
    del store
    result = kern.optimal_age_replacement(params["beta"], params["eta"], params["preventive_cost"],
                                       params["failure_cost"])
    return {"status": kern.AGE_REPLACEMENT_STATUS[code(result.status)],
            "optimal_age": r6(result.optimal_age), "cost_rate": r6(result.cost_rate),
            "savings_fraction": r6(result.savings_fraction)}


# ---------------------------------------------------------------------------------------------
# Safety and policy


@builder("fmea")
def fmea(params: Mapping[str, Any], store: DataStore) -> dict[str, Any]:
    """RPN and four-level risk of each failure mode, and the top priority."""
    del store
    modes = params["modes"]
    result = kern.fmea_rpn([m["severity"] for m in modes], [m["occurrence"] for m in modes],
                        [m["detection"] for m in modes])
    levels = [kern.RISK_LEVELS[c] for c in np.asarray(result.risk_level).tolist()]
    rpn = [int(v) for v in np.asarray(result.rpn).tolist()]
    ranks = np.asarray(result.rank).tolist()
    top = modes[int(np.argmin(ranks))]["name"]
    return {"modes": {m["name"]: {"rpn": r, "risk_level": lv}
                      for m, r, lv in zip(modes, rpn, levels, strict=True)},
            "top_priority": top, "top_risk_level": levels[int(np.argmin(ranks))],
            "n_high_or_critical": sum(lv in {"high", "critical"} for lv in levels)}


@builder("sil_check")
def sil_check(params: Mapping[str, Any], store: DataStore) -> dict[str, Any]:
    """Simplified PFDavg of a safety function and its compliance with target SILs."""
    del store
    if params["architecture"] == "1oo1":
        pfd = kern.pfd_avg_1oo1(params["lambda_du"], params["proof_test_h"])
    else:
        pfd = kern.pfd_avg_1oo2(params["lambda_du"], params["proof_test_h"], params["beta"])
    value = float(np.asarray(pfd.pfd_avg))
    return {"pfd_avg": r6(value), "achieved_sil": code(pfd.sil),
            "compliant": {str(t): bool(np.asarray(kern.check_sil_compliance(
                value, target_sil=t).compliant)) for t in params["targets"]}}


@builder("pl_check")
def pl_check(params: Mapping[str, Any], store: DataStore) -> dict[str, Any]:
    """Achieved ISO 13849 PL for a PFH_D and compliance with a required PL."""
    del store
    result = kern.check_pl_compliance(params["pfh_d"], required_pl=params["required_pl"])
    return {"achieved_pl": kern.PL_LEVELS[code(result.achieved_pl)],
            "compliant": bool(np.asarray(result.compliant))}


@builder("noise")
def noise(params: Mapping[str, Any], store: DataStore) -> dict[str, Any]:
    """OSHA daily dose and TWA."""
    del store
    result = kern.osha_noise_dose(params["levels_dba"], params["hours"])
    return {"dose_pct": r6(result.dose_pct), "twa_dba": r6(result.twa_dba),
            "over_pel": bool(np.asarray(result.over_pel)),
            "over_action_level": bool(np.asarray(result.over_action_level))}


@builder("hand_arm")
def hand_arm(params: Mapping[str, Any], store: DataStore) -> dict[str, Any]:
    """EU 2002/44/EC daily exposure A(8)."""
    del store
    result = kern.vibration_exposure_a8(params["acceleration"], params["hours"],
                                        kind=params["kind"])
    return {"a8": r6(result.a8), "over_action_value": bool(np.asarray(result.over_action_value)),
            "over_limit_value": bool(np.asarray(result.over_limit_value))}


@builder("voltage_unbalance")
def voltage_unbalance(params: Mapping[str, Any], store: DataStore) -> dict[str, Any]:
    """NEMA MG 1 percent unbalance."""
    del store
    result = kern.nema_voltage_unbalance(params["voltages"])
    return {"unbalance_pct": r6(result.unbalance_pct),
            "derating_required": bool(np.asarray(result.derating_required)),
            "not_recommended": bool(np.asarray(result.not_recommended))}


@builder("faa")
def faa(params: Mapping[str, Any], store: DataStore) -> dict[str, Any]:
    """FAA 14 CFR 91.409 inspection flags."""
    del store
    result = kern.faa_91_409_status(params["hours_since_100h"], params["months_since_annual"],
                                 for_hire=params["for_hire"])
    return {name: bool(np.asarray(getattr(result, name))) for name in result._fields}


# ---------------------------------------------------------------------------------------------


def build_all(data_root: Path, scenario_dir: Path,
              ids: list[str] | None = None) -> dict[str, bytes]:
    """Ground-truth file name -> bytes for every (selected) scenario.

    Args:
        data_root: Shared data folder.
        scenario_dir: Scenario folder.
        ids: Optional subset of scenario ids.

    Returns:
        The file contents to write.

    Raises:
        KeyError: If a scenario names an unknown builder.
    """
    store = DataStore(data_root)
    files: dict[str, bytes] = {}
    for scenario in load_scenarios(scenario_dir, ids=ids):
        recipe = scenario.ground_truth_recipe
        if recipe["builder"] not in BUILDERS:
            raise KeyError(f"{scenario.id}: unknown ground-truth builder {recipe['builder']!r}; "
                           f"known: {sorted(BUILDERS)}")
        truth = BUILDERS[recipe["builder"]](recipe.get("params", {}), store)
        document = {"scenario_id": scenario.id, "builder": recipe["builder"], **truth}
        text = json.dumps(document, sort_keys=True, indent=2) + "\n"
        files[Path(scenario.ground_truth_ref).name] = text.encode()
    return files


def main(argv: list[str] | None = None) -> int:
    """Entry point (see the module docstring)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-root", default=os.environ.get("SFBENCH_DATA_ROOT"),
                        help="shared data folder (default: $SFBENCH_DATA_ROOT)")
    parser.add_argument("--scenarios", type=Path, default=default_scenario_dir())
    parser.add_argument("--ids", nargs="+", default=None)
    parser.add_argument("--check", action="store_true",
                        help="recompute and compare with the committed files; write nothing")
    args = parser.parse_args(argv)
    if not args.data_root:
        parser.error("pass --data-root or set SFBENCH_DATA_ROOT")
    out_dir = args.scenarios / "ground_truth"
    files = build_all(Path(args.data_root), args.scenarios, args.ids)
    if args.check:
        bad = [name for name, content in sorted(files.items())
               if not (out_dir / name).is_file() or (out_dir / name).read_bytes() != content]
        manifest_path = out_dir / MANIFEST
        manifest = json.loads(manifest_path.read_text())["files"] if manifest_path.is_file() else {}
        bad += [f"{name} (manifest)" for name, content in sorted(files.items())
                if manifest.get(name) != hashlib.sha256(content).hexdigest()]
        for name in bad:
            print(f"differs: {name}", file=sys.stderr)
        print(f"checked {len(files)} ground-truth files, {len(bad)} differ")
        return 1 if bad else 0
    out_dir.mkdir(parents=True, exist_ok=True)
    for name, content in files.items():
        (out_dir / name).write_bytes(content)
    manifest_path = out_dir / MANIFEST
    manifest = json.loads(manifest_path.read_text())["files"] if manifest_path.is_file() else {}
    manifest.update({name: hashlib.sha256(c).hexdigest() for name, c in files.items()})
    keep = {Path(s.ground_truth_ref).name for s in load_scenarios(args.scenarios)}
    manifest = {k: v for k, v in sorted(manifest.items()) if k in keep}
    manifest_path.write_text(json.dumps({"generator": "scripts/build_agent_scenarios.py",
                                         "files": manifest}, sort_keys=True, indent=2) + "\n")
    print(f"wrote {len(files)} ground-truth files to {out_dir}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
