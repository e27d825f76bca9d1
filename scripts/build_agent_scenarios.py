"""Build the ground truth of the agent-evaluation scenarios.

Every scenario file in ``sfbench_jax/agent_eval/scenarios/`` names a ground-truth recipe
(``ground_truth_recipe: {builder, params}``). This script runs that builder and writes
``scenarios/ground_truth/<id>.gt.json`` plus ``MANIFEST.json`` (file -> sha256). Ground truth is
never edited by hand; ``--check`` recomputes everything and fails on any difference.

Two kinds of builder:

* **Formula builders** (ISO 10816 zones and unit conversion, bearing defect frequencies, IEC 61508
  PFD / SIL and ISO 13849 PL bands, FMEA, OSHA noise, EU hand-arm exposure, NEMA unbalance, FAA
  91.409, turbofan module bands, trend tests, maintenance economics, Weibull age replacement,
  RUL-conditioned schedules) compute the answer with plain Python / NumPy / SciPy written in this
  file, from the standard's or paper's formula and tables typed in here. They never call the
  `phm_kernels` function the tool wraps, so a kernel bug (a wrong constant, a wrong formula) makes
  the reference solution fail CI instead of moving the ground truth with it.
* **Data builders** read the real data under the data root with the kernel library's loaders.
  Facts of the data (true C-MAPSS RUL, a CWRU recording's condition, the cycle at which a cell
  first fell below 1.4 Ah) come from the files. Where a scenario asks what a named model or
  detector reports (the health-index RUL baseline, envelope analysis, the battery fade models and
  detectors), the builder runs that published algorithm through the kernel library, never
  through the MCP server, so the server's adapters are still checked against an independent path.

Floats are rounded to 6 significant digits; validators use tolerances well above that (and above the
kernels' float32 and grid resolution). The kernels run in float32, whose last bit depends on the CPU's
vector instructions (their width), so a data builder's rounded value can move by one unit in its sixth
digit from one machine to another: ``--check`` accepts exactly that and nothing more (structure, keys,
strings, integers and booleans must be equal), and a rewrite keeps a committed file that agrees to that
unit, so the files do not churn between machines. The committed files must match ``MANIFEST.json``.

Usage::

    python scripts/build_agent_scenarios.py --data-root ../shared/data          # (re)write
    python scripts/build_agent_scenarios.py --data-root ../shared/data --check  # verify
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from scipy import optimize, special, stats

from sfbench_jax.agent_eval.lint import file_sha256
from sfbench_jax.agent_eval.scenario import default_scenario_dir, load_scenarios

Builder = Callable[[Mapping[str, Any], Any], dict[str, Any]]
BUILDERS: dict[str, Builder] = {}
#: Builders whose answer is a formula computed in this file (no kernel, no data).
FORMULA_BUILDERS: set[str] = set()
MANIFEST = "MANIFEST.json"
BEARING_LABELS = ("normal", "outer_race", "inner_race", "ball")


def builder(name: str, *, formula: bool = False) -> Callable[[Builder], Builder]:
    """Register a ground-truth builder under ``name`` (``formula``: independent of kernels)."""
    def register(fn: Builder) -> Builder:
        BUILDERS[name] = fn
        if formula:
            FORMULA_BUILDERS.add(name)
        return fn
    return register


def r6(value: Any) -> float | None:
    """A float rounded to 6 significant digits (None for +/-inf and NaN)."""
    number = float(np.asarray(value).reshape(-1)[0])
    return float(f"{number:.6g}") if np.isfinite(number) else None


def code(value: Any) -> int:
    """An int code from a 0-d kernel output."""
    return int(np.asarray(value).reshape(-1)[0])


# =============================================================================================
# Independent formulas (plain Python / NumPy / SciPy; tables typed from the standards)
# =============================================================================================

# ISO 10816-1 Annex B, zone boundaries A/B, B/C, C/D in mm/s RMS per machine class.
ISO_10816_1_MM_S = {"I": (0.71, 1.8, 4.5), "II": (1.12, 2.8, 7.1), "III": (1.8, 4.5, 11.2),
                    "IV": (2.8, 7.1, 18.0)}
# ISO 10816-3 Annex A (velocity), per (group, foundation).
ISO_10816_3_MM_S = {(1, "rigid"): (2.3, 4.5, 7.1), (1, "flexible"): (3.5, 7.1, 11.0),
                    (2, "rigid"): (1.4, 2.8, 4.5), (2, "flexible"): (2.3, 4.5, 7.1)}
# Linear unit -> (quantity: 0 displacement, 1 velocity, 2 acceleration; SI factor).
VIBRATION_UNITS = {"m": (0, 1.0), "mm": (0, 1e-3), "um": (0, 1e-6), "mil": (0, 25.4e-6),
                   "in": (0, 0.0254), "m/s": (1, 1.0), "mm/s": (1, 1e-3), "in/s": (1, 0.0254),
                   "m/s2": (2, 1.0), "mm/s2": (2, 1e-3), "g": (2, 9.80665)}
AMPLITUDE_MEASURES = {"rms": 1.0, "pk": math.sqrt(2.0), "pp": 2.0 * math.sqrt(2.0)}
# Rolling-element bearings: (balls, ball diameter, pitch diameter, contact angle deg).
BEARING_GEOMETRY = {"cwru_drive_end": (9, 0.3126, 1.537, 0.0),  # SKF 6205-2RS JEM (CWRU)
                    "cwru_fan_end": (8, 0.2656, 1.122, 0.0)}    # SKF 6203-2RS JEM (CWRU)


def iso_zone(velocity_mm_s: float, bounds: Sequence[float]) -> str:
    """Zone A-D of a velocity; a value on a boundary is in the upper zone."""
    return "ABCD"[sum(velocity_mm_s >= b for b in bounds)]


def iso_bounds(params: Mapping[str, Any]) -> tuple[float, float, float]:
    """Boundaries for ISO10816-1 (machine_class) or ISO10816-3 (group, foundation)."""
    if params["standard"] == "ISO10816-1":
        return ISO_10816_1_MM_S[params["machine_class"]]
    return ISO_10816_3_MM_S[(int(params["group"]), params["foundation"])]


def convert_vibration(value: float, from_unit: str, to_unit: str,
                      frequency_hz: float | None = None) -> float:
    """Single-tone amplitude conversion (peak = sqrt2 RMS, v = 2 pi f x, a = 2 pi f v)."""
    (q_from, si_from), m_from = VIBRATION_UNITS[from_unit.split()[0]], from_unit.split()[1]
    (q_to, si_to), m_to = VIBRATION_UNITS[to_unit.split()[0]], to_unit.split()[1]
    rms_si = value * si_from / AMPLITUDE_MEASURES[m_from]
    omega = 2.0 * math.pi * (frequency_hz or 1.0)
    return rms_si * omega ** (q_to - q_from) / si_to * AMPLITUDE_MEASURES[m_to]


def bearing_frequencies(rpm: float, n_balls: int, ball_d: float, pitch_d: float,
                        angle_deg: float = 0.0) -> dict[str, float]:
    """Defect frequencies (Hz) from the textbook kinematic formulas."""
    shaft = rpm / 60.0
    rho = ball_d / pitch_d * math.cos(math.radians(angle_deg))
    bsf = pitch_d / (2.0 * ball_d) * shaft * (1.0 - rho**2)
    return {"shaft": shaft, "ftf": shaft / 2.0 * (1.0 - rho),
            "bpfo": n_balls * shaft / 2.0 * (1.0 - rho), "bpfi": n_balls * shaft / 2.0 * (1.0 + rho),
            "bsf": bsf, "bsf2": 2.0 * bsf}


def sil_of_pfd(pfd: float) -> int:
    """IEC 61508-1 low-demand SIL of a PFDavg (edge values belong to the worse band)."""
    if not 0.0 < pfd < 1.0:
        return 0
    for sil, upper in ((4, 1e-4), (3, 1e-3), (2, 1e-2), (1, 1e-1)):
        if pfd < upper:
            return sil
    return 0


def sil_of_pfh(pfh: float) -> int:
    """IEC 61508-1 high-demand SIL of a PFH (1/h)."""
    for sil, upper in ((4, 1e-8), (3, 1e-7), (2, 1e-6), (1, 1e-5)):
        if pfh < upper:
            return sil
    return 0


PL_UPPER_BOUNDS = (("e", 1e-7), ("d", 1e-6), ("c", 3e-6), ("b", 1e-5), ("a", 1e-4))


def pl_of_pfh(pfh_d: float) -> str:
    """ISO 13849-1 performance level of a PFH_D (1/h); 'none' above 1e-4."""
    return next((level for level, upper in PL_UPPER_BOUNDS if pfh_d < upper), "none")


def fmea_levels(severity: int, occurrence: int, detection: int) -> tuple[int, str, bool]:
    """RPN, risk level (low < 50 <= medium < 100 <= high < 200 <= critical) and whether the
    severity rule (S >= 9 -> at least high) raised the level."""
    rpn = severity * occurrence * detection
    band = sum(rpn >= edge for edge in (50, 100, 200))
    raised = severity >= 9 and band < 2
    return rpn, ("low", "medium", "high", "critical")[max(band, 2) if raised else band], raised


def truncated_normal_cdf(t: Any, mean: float, std: float) -> Any:
    """CDF of Normal(mean, std) truncated to t >= 0 (0 below zero)."""
    at_zero = stats.norm.cdf(-mean / std)
    cdf = (stats.norm.cdf((np.asarray(t, dtype=np.float64) - mean) / std) - at_zero) / (
        1.0 - at_zero)
    return np.where(np.asarray(t) > 0, cdf, 0.0)


def truncated_normal_survival_integral(t: Any, mean: float, std: float) -> Any:
    """int_0^t (1 - F(u)) du in closed form: with Q the normal tail, x Q(x) - phi(x) is an
    antiderivative of Q(x), so the integral is std [G(b) - G(a)] / Q(a), a = -mean/std."""
    def antiderivative(x: Any) -> Any:
        return x * stats.norm.sf(x) - stats.norm.pdf(x)

    a = -mean / std
    b = (np.asarray(t, dtype=np.float64) - mean) / std
    return std * (antiderivative(b) - antiderivative(a)) / stats.norm.sf(a)


def renewal_cost_rate(t: Any, mean: float, std: float, c_p: float, c_f: float) -> Any:
    """[c_p (1 - F(t)) + c_f F(t)] / int_0^t (1 - F(u)) du for a truncated-normal life."""
    cdf = truncated_normal_cdf(t, mean, std)
    return (c_p * (1.0 - cdf) + c_f * cdf) / truncated_normal_survival_integral(t, mean, std)


def schedule(mean: float, std: float, c_p: float, c_f: float,
             margin: float | None = None) -> dict[str, Any]:
    """Cost-optimal (or safety-margin) maintenance time under an uncertain RUL."""
    if margin is not None:
        t_star = (1.0 - margin) * mean
    else:
        grid = np.linspace(1e-3, 1.0, 20001) * (mean + 6.0 * std)
        best = int(np.argmin(renewal_cost_rate(grid, mean, std, c_p, c_f)))
        lo, hi = grid[max(best - 1, 0)], grid[min(best + 1, grid.size - 1)]
        t_star = float(optimize.minimize_scalar(
            lambda t: float(renewal_cost_rate(t, mean, std, c_p, c_f)), bounds=(lo, hi),
            method="bounded", options={"xatol": 1e-9 * (mean + std)}).x)
    return {"maintain_in": t_star, "rul_threshold": mean - t_star,
            "p_fail_before": float(truncated_normal_cdf(t_star, mean, std))}


def weibull_age_cost_rate(age: float, beta: float, eta: float, c_p: float, c_f: float) -> float:
    """Barlow-Proschan age-replacement cost rate with a Weibull life."""
    scaled = (age / eta) ** beta
    reliability = math.exp(-scaled)
    mean_up_time = eta * special.gamma(1.0 + 1.0 / beta) * special.gammainc(1.0 / beta, scaled)
    return (c_p * reliability + c_f * (1.0 - reliability)) / mean_up_time


def mann_kendall(values: Sequence[float], alpha: float = 0.05) -> dict[str, Any]:
    """Mann-Kendall S, tie-corrected variance, continuity-corrected z, p, Sen slope, label."""
    y = np.asarray(values, dtype=np.float64)
    n = y.size
    i, j = np.triu_indices(n, k=1)
    s = float(np.sum(np.sign(y[j] - y[i])))
    _, ties = np.unique(y, return_counts=True)
    var_s = (n * (n - 1) * (2 * n + 5) - float(np.sum(ties * (ties - 1) * (2 * ties + 5)))) / 18.0
    z = 0.0 if s == 0 or var_s <= 0 else (s - math.copysign(1.0, s)) / math.sqrt(var_s)
    p_value = math.erfc(abs(z) / math.sqrt(2.0))
    trend = "NO_TREND" if p_value >= alpha else ("INCREASING" if s > 0 else "DECREASING")
    return {"trend": trend, "p_value": p_value, "sen_slope": float(np.median((y[j] - y[i]) / (j - i)))}


def trend_time_to_threshold(values: Sequence[float], threshold: float) -> dict[str, Any]:
    """Linear and log-linear least-squares trends, AIC choice, crossing time after the last point."""
    y = np.asarray(values, dtype=np.float64)
    t = np.arange(1.0, y.size + 1.0)
    b1, b0 = np.polyfit(t, y, 1)
    sse_lin = float(np.sum((y - (b0 + b1 * t)) ** 2))
    aic_lin = y.size * math.log(sse_lin / y.size) + 4.0
    aic_exp = math.inf
    if np.all(y > 0):
        a1, a0 = np.polyfit(t, np.log(y), 1)
        sse_exp = float(np.sum((y - np.exp(a0 + a1 * t)) ** 2))
        aic_exp = y.size * math.log(sse_exp / y.size) + 4.0
    if aic_exp < aic_lin:
        model, crossing = "exponential", (math.log(threshold) - a0) / a1
    else:
        model, crossing = "linear", (threshold - b0) / b1
    return {"model": model, "time_to_threshold": max(crossing - t[-1], 0.0)}


# =============================================================================================
# Formula builders
# =============================================================================================


@builder("vibration_zone", formula=True)
def vibration_zone(params: Mapping[str, Any], store: Any) -> dict[str, Any]:
    """A reading converted to mm/s RMS and its ISO 10816 zone."""
    del store
    value = convert_vibration(params["value"], params["from_unit"], "mm/s rms",
                              params.get("frequency_hz"))
    bounds = iso_bounds(params)
    return {"velocity_mm_s_rms": r6(value), "zone": iso_zone(value, bounds),
            "percent_of_cd_limit": r6(100.0 * value / bounds[2])}


@builder("vibration_fleet", formula=True)
def vibration_fleet(params: Mapping[str, Any], store: Any) -> dict[str, Any]:
    """Several machines' readings: each one's velocity and zone, and the worst machine."""
    del store
    machines = {}
    for machine in params["machines"]:
        value = convert_vibration(machine["value"], machine["from_unit"], "mm/s rms",
                                  machine.get("frequency_hz"))
        bounds = iso_bounds(machine)
        machines[machine["name"]] = {"velocity_mm_s_rms": r6(value),
                                     "zone": iso_zone(value, bounds),
                                     "ratio_to_cd": r6(value / bounds[2])}
    worst = max(machines, key=lambda m: machines[m]["ratio_to_cd"])
    return {"machines": machines, "worst_machine": worst,
            "n_zone_c_or_d": sum(m["zone"] in "CD" for m in machines.values())}


@builder("vibration_trend", formula=True)
def vibration_trend(params: Mapping[str, Any], store: Any) -> dict[str, Any]:
    """Trend of periodic readings, the current zone and the time to a threshold."""
    del store
    readings = params["readings"]
    trend = mann_kendall(readings)
    fit = trend_time_to_threshold(readings, params["threshold"])
    out = {"trend": trend["trend"], "sen_slope": r6(trend["sen_slope"]), "model": fit["model"],
           "time_to_threshold": r6(fit["time_to_threshold"]),
           # the crossing in the question's unit: offset + scale x periods (e.g. weeks for fortnightly
           # readings, the reading number counting the first as 1)
           "threshold_time": r6(float(params.get("time_offset", 0.0))
                                + float(params.get("time_scale", 1.0)) * fit["time_to_threshold"])}
    if "standard" in params:
        out["current_zone"] = iso_zone(readings[-1], iso_bounds(params))
    return out


@builder("bearing_peak_match", formula=True)
def bearing_peak_match(params: Mapping[str, Any], store: Any) -> dict[str, Any]:
    """Defect frequencies of a bearing and the component whose frequency matches a peak."""
    del store
    geometry = BEARING_GEOMETRY.get(params["bearing"]) or tuple(params["geometry"])
    freqs = bearing_frequencies(params["rpm"], *geometry)
    candidates = {"shaft_1x": freqs["shaft"], "cage": freqs["ftf"], "outer_race": freqs["bpfo"],
                  "inner_race": freqs["bpfi"], "ball": freqs["bsf2"]}
    errors = {k: abs(params["peak_hz"] - v) / v for k, v in candidates.items()}
    best = min(errors, key=errors.get)
    out = {"frequencies_hz": {k: r6(v) for k, v in freqs.items()},
           "matched_component": best if errors[best] <= params.get("tolerance", 0.03) else "none",
           "matched_frequency_hz": r6(candidates[best]), "relative_error": r6(errors[best])}
    if "velocity_mm_s" in params:
        out["zone"] = iso_zone(params["velocity_mm_s"], iso_bounds(params))
    return out


#: The fleet's action per module health band (HEALTHY .. CRITICAL), stated in the scenarios' context.
MODULE_ACTIONS = ("continue", "inspect_next_check", "plan_removal", "remove_now")


@builder("component_health", formula=True)
def component_health(params: Mapping[str, Any], store: Any) -> dict[str, Any]:
    """Module health band (m = max(|eff|, |flow|) against 0.01 / 0.03 / 0.05) and signature."""
    del store
    efficiency, flow = float(params["efficiency"]), float(params["flow"])
    band = sum(max(abs(efficiency), abs(flow)) >= edge for edge in (0.01, 0.03, 0.05))
    if abs(efficiency) < 0.005 and abs(flow) < 0.005:
        signature = "NONE"
    else:
        ratio = abs(flow) / abs(efficiency) if efficiency != 0 else math.inf
        signature = ("EFFICIENCY_DOMINANT" if ratio < 0.5 else "FLOW_DOMINANT" if ratio > 2.0
                     else "COUPLED")
    status = ("Operating Normally", "Abnormal Degradation", "Abnormal Degradation",
              "Imminent Failure")[band]
    out = {"health_band": ("HEALTHY", "DEGRADED", "SEVERE", "CRITICAL")[band], "status": status,
           "action": MODULE_ACTIONS[band],
           "signature": signature,
           "flow_to_efficiency_ratio": r6(abs(flow) / abs(efficiency)) if efficiency else None}
    if "choices" in params:
        out["choice"] = next(k for k, v in params["choices"].items() if v == status)
    return out


@builder("pm_roi", formula=True)
def pm_roi(params: Mapping[str, Any], store: Any) -> dict[str, Any]:
    """Preventive programme cost, reactive failure cost, residual cost, ROI and payback."""
    del store
    cost, frequency, hours, rate = params["pm"]
    pm_annual = frequency * (cost + hours * rate)
    p, repair, failure_hours, failure_rate, *other = params["failure"]
    reactive = p * (repair + failure_hours * failure_rate + (other[0] if other else 0.0))
    residual = reactive * float(params["residual_fraction"])
    years, discount = int(params.get("years", 1)), float(params.get("discount_rate", 0.0))
    annuity = sum((1.0 + discount) ** -y for y in range(1, years + 1))
    savings = reactive - (pm_annual + residual)
    program = float(params["program_cost"])
    return {"pm_annual_cost": r6(pm_annual), "reactive_annual_cost": r6(reactive),
            "residual_annual_cost": r6(residual), "annual_savings": r6(savings),
            "roi": r6((savings * annuity - program) / program),
            "payback_months": r6(12.0 * program / savings) if savings > 0 else None,
            "net_benefit": r6(savings * annuity - program)}


@builder("pm_frequency_choice", formula=True)
def pm_frequency_choice(params: Mapping[str, Any], store: Any) -> dict[str, Any]:
    """Total annual cost (PM + expected failures) of each option and the cheapest option."""
    del store
    repair, hours, rate, *other = params["failure"]
    totals = {}
    for option in params["options"]:
        pm = option["frequency_per_year"] * (option["preventive_cost"]
                                             + option["downtime_hours"] * option["hourly_rate"])
        failures = option["failure_probability"] * (repair + hours * rate + (other[0] if other
                                                                             else 0.0))
        totals[option["name"]] = pm + failures
    best = min(totals, key=totals.get)
    return {"total_annual_cost": {k: r6(v) for k, v in totals.items()}, "best_option": best,
            "best_total": r6(totals[best])}


@builder("rul_schedule", formula=True)
def rul_schedule(params: Mapping[str, Any], store: Any) -> dict[str, Any]:
    """Cost-optimal (or margin) maintenance time for an uncertain RUL."""
    del store
    plan = schedule(params["rul_mean"], params["rul_std"], params["preventive_cost"],
                    params["failure_cost"], params.get("safety_margin"))
    # the time to act in the question's unit (RUL unit / time_divisor, e.g. operating hours per day)
    plan["maintain_in_converted"] = plan["maintain_in"] / float(params.get("time_divisor", 1.0))
    return {key: r6(value) for key, value in plan.items()}


@builder("age_replacement", formula=True)
def age_replacement(params: Mapping[str, Any], store: Any) -> dict[str, Any]:
    """Optimal age-replacement interval for a Weibull life (Barlow & Proschan 1965)."""
    del store
    beta, eta = float(params["beta"]), float(params["eta"])
    c_p, c_f = float(params["preventive_cost"]), float(params["failure_cost"])
    run_to_failure = c_f / (eta * special.gamma(1.0 + 1.0 / beta))
    hours = float(params.get("hours_per_year", 0.0))  # operating hours a year, for the yearly figures
    if beta <= 1.0:
        return {"status": "run_to_failure", "optimal_age": None, "cost_rate": r6(run_to_failure),
                "savings_fraction": 0.0, "annual_cost": r6(run_to_failure * hours), "annual_saving": 0.0}
    grid = np.linspace(1e-3, 5.0, 5001) * eta
    best = int(np.argmin([weibull_age_cost_rate(t, beta, eta, c_p, c_f) for t in grid]))
    age = float(optimize.minimize_scalar(
        lambda t: weibull_age_cost_rate(t, beta, eta, c_p, c_f),
        bounds=(grid[max(best - 1, 0)], grid[min(best + 1, grid.size - 1)]), method="bounded",
        options={"xatol": 1e-9 * eta}).x)
    rate = weibull_age_cost_rate(age, beta, eta, c_p, c_f)
    return {"status": "optimal", "optimal_age": r6(age), "cost_rate": r6(rate),
            "savings_fraction": r6(1.0 - rate / run_to_failure), "annual_cost": r6(rate * hours),
            "annual_saving": r6((run_to_failure - rate) * hours)}


@builder("fmea", formula=True)
def fmea(params: Mapping[str, Any], store: Any) -> dict[str, Any]:
    """RPN and four-level risk of each failure mode, and the top priority."""
    del store
    modes = params["modes"]
    rated = [(m["name"], *fmea_levels(m["severity"], m["occurrence"], m["detection"]),
              m["severity"]) for m in modes]
    order = sorted(range(len(rated)), key=lambda k: (-rated[k][1], -rated[k][4], k))
    return {"modes": {name: {"rpn": rpn, "risk_level": level, "severity_override": raised,
                             "rpn_points_below_critical": 200 - rpn}
                      for name, rpn, level, raised, _ in rated},
            "ranking": [rated[k][0] for k in order], "top_priority": rated[order[0]][0],
            "top_risk_level": rated[order[0]][2],
            "n_high_or_critical": sum(r[2] in {"high", "critical"} for r in rated)}


@builder("sil_check", formula=True)
def sil_check(params: Mapping[str, Any], store: Any) -> dict[str, Any]:
    """Simplified PFDavg (IEC 61508-6 Annex B) and compliance with target SILs."""
    del store
    lam_t = float(params["lambda_du"]) * float(params["proof_test_h"])
    if params["architecture"] == "1oo1":
        pfd = lam_t / 2.0
    else:
        beta = float(params["beta"])
        pfd = ((1.0 - beta) * lam_t) ** 2 / 3.0 + beta * lam_t / 2.0
    return {"pfd_avg": r6(pfd), "achieved_sil": sil_of_pfd(pfd),
            "risk_reduction_factor": r6(1.0 / pfd),
            "compliant": {str(t): pfd < 10.0 ** (-t) for t in params["targets"]},
            "sil_margin": sil_of_pfd(pfd) - int(params.get("required_sil", min(params["targets"])))}


@builder("sil_high_demand", formula=True)
def sil_high_demand(params: Mapping[str, Any], store: Any) -> dict[str, Any]:
    """High-demand SIL of a PFH and compliance with a target SIL."""
    del store
    pfh, target = float(params["pfh"]), int(params["target_sil"])
    achieved = sil_of_pfh(pfh)
    return {"achieved_sil": achieved, "compliant": pfh < 10.0 ** (-(target + 4)),
            "sil_margin": achieved - target}


@builder("pl_check", formula=True)
def pl_check(params: Mapping[str, Any], store: Any) -> dict[str, Any]:
    """Achieved ISO 13849 PL for a PFH_D and compliance with a required PL."""
    del store
    achieved = pl_of_pfh(float(params["pfh_d"]))
    order = ("none", "a", "b", "c", "d", "e")
    return {"achieved_pl": achieved,
            "compliant": order.index(achieved) >= order.index(params["required_pl"]),
            "pl_margin": order.index(achieved) - order.index(params["required_pl"])}


@builder("noise", formula=True)
def noise(params: Mapping[str, Any], store: Any) -> dict[str, Any]:
    """OSHA 29 CFR 1910.95 daily dose and TWA."""
    del store
    def dose_from(threshold: float) -> float:  # Appendix A integrates from 80 dBA, Table G-16 from 90
        return 100.0 * sum(hours / (8.0 / 2.0 ** ((level - 90.0) / 5.0))
                           for level, hours in zip(params["levels_dba"], params["hours"], strict=True)
                           if level >= threshold)

    dose, pel_dose = dose_from(80.0), dose_from(90.0)
    return {"dose_pct": r6(dose), "twa_dba": r6(16.61 * math.log10(dose / 100.0) + 90.0),
            "pel_dose_pct": r6(pel_dose), "over_pel": pel_dose > 100.0, "over_action_level": dose >= 50.0,
            "pel_dose_excess_pct": r6(pel_dose - 100.0)}


@builder("hand_arm", formula=True)
def hand_arm(params: Mapping[str, Any], store: Any) -> dict[str, Any]:
    """EU 2002/44/EC daily exposure A(8) against the action and limit values."""
    del store
    a8 = math.sqrt(sum(a * a * h for a, h in zip(params["acceleration"], params["hours"],
                                                  strict=True)) / 8.0)
    action, limit = {"hand_arm": (2.5, 5.0), "whole_body": (0.5, 1.15)}[params["kind"]]
    return {"a8": r6(a8), "over_action_value": a8 > action, "over_limit_value": a8 > limit,
            "percent_of_limit": r6(100.0 * a8 / limit)}


@builder("voltage_unbalance", formula=True)
def voltage_unbalance(params: Mapping[str, Any], store: Any) -> dict[str, Any]:
    """NEMA MG 1 percent unbalance."""
    del store
    volts = [float(v) for v in params["voltages"]]
    mean = sum(volts) / 3.0
    pct = 100.0 * max(abs(v - mean) for v in volts) / mean
    return {"unbalance_pct": r6(pct), "derating_required": pct > 1.0, "not_recommended": pct > 5.0,
            "excess_over_derating_pct": r6(pct - 1.0)}


@builder("faa", formula=True)
def faa(params: Mapping[str, Any], store: Any) -> dict[str, Any]:
    """FAA 14 CFR 91.409 inspection flags."""
    del store
    hours, months, hire = (float(params["hours_since_100h"]),
                           float(params["months_since_annual"]), bool(params["for_hire"]))
    annual_due, hundred_due = months >= 12.0, hire and hours >= 100.0
    return {"annual_due": annual_due, "hundred_hour_due": hundred_due,
            "within_10h_ferry_allowance": hire and 100.0 < hours <= 110.0,
            "hundred_hour_overdue": hire and hours > 110.0,
            "may_fly_for_hire": not annual_due and not hundred_due}


# =============================================================================================
# Data builders (real files; named models and detectors through the kernel library)
# =============================================================================================


def _store(data_root: Path) -> Any:
    from sfbench_jax.mcp.datasets import DataStore

    return DataStore(data_root)


def _resolve(name: str, family: str) -> Any:
    from sfbench_jax.mcp.datasets import resolve_dataset

    return resolve_dataset(name, family=family)


def _cmapss_reference(params: Mapping[str, Any], store: Any) -> tuple[Any, np.ndarray]:
    from phm_kernels import cmapss

    name = _resolve(params["dataset"], "cmapss").name
    data = store.cmapss(name)

    def fit_and_predict() -> np.ndarray:
        model = cmapss.fit_linear_health_index_baseline(data)
        return np.asarray(cmapss.predict_linear_health_index_baseline(model, data.test))

    return data, store.cached(("reference_rul", name), fit_and_predict)


def _rul_errors(truth: np.ndarray, pred: np.ndarray) -> dict[str, float]:
    error = pred - truth
    score = np.where(error < 0, np.expm1(-error / 13.0), np.expm1(error / 10.0))
    return {"mae": float(np.mean(np.abs(error))), "rmse": float(np.sqrt(np.mean(error**2))),
            "phm08": float(np.sum(score))}


@builder("cmapss_rul_fleet")
def cmapss_rul_fleet(params: Mapping[str, Any], store: Any) -> dict[str, Any]:
    """True test RUL (data), the lowest-true-RUL units, the reference model's metrics and the
    accepted ranges (reference +/- ``tolerance``, PHMForge's +/-20% rule)."""
    data, pred = _cmapss_reference(params, store)
    units = data.test.unit_ids.astype(int)
    truth = np.asarray(data.test_rul, dtype=np.float64)
    top_n = int(params.get("top_n", 10))
    tolerance = float(params.get("tolerance", 0.2))
    true_top = units[np.lexsort((units, truth))[:top_n]]  # ascending true RUL, ties by id
    pred_top = units[np.lexsort((units, pred))[:top_n]]
    metrics = _rul_errors(truth, pred)
    overlap = len(set(true_top.tolist()) & set(pred_top.tolist())) / top_n
    mae, rmse = metrics["mae"], metrics["rmse"]
    return {"units": {"ids": units.tolist(), "rul": truth.tolist()}, "n_units": int(units.size),
            "top_risk_by_true_rul": true_top.tolist(),
            "reference": {"mae": r6(mae), "rmse": r6(rmse), "phm08": r6(metrics["phm08"]),
                          "top_risk_overlap": r6(overlap),
                          "most_urgent_unit": int(pred_top[0]),
                          "most_urgent_predicted_rul": r6(pred[pred_top[0] - 1]),
                          "runner_up_gap": r6(pred[pred_top[1] - 1] - pred[pred_top[0] - 1])},
            "mae_range": [r6((1 - tolerance) * mae), r6((1 + tolerance) * mae)],
            "rmse_range": [r6((1 - tolerance) * rmse), r6((1 + tolerance) * rmse)],
            "min_top_risk_overlap": r6(max(0.0, overlap - 0.1))}


@builder("cmapss_rul_acceptance")
def cmapss_rul_acceptance(params: Mapping[str, Any], store: Any) -> dict[str, Any]:
    """Reference metrics of the baseline against externally published acceptance ranges."""
    data, pred = _cmapss_reference(params, store)
    metrics = _rul_errors(np.asarray(data.test_rul, dtype=np.float64), pred)
    mae_ok = params["mae_range"][0] <= metrics["mae"] <= params["mae_range"][1]
    rmse_ok = params["rmse_range"][0] <= metrics["rmse"] <= params["rmse_range"][1]
    return {"mae": r6(metrics["mae"]), "rmse": r6(metrics["rmse"]), "phm08": r6(metrics["phm08"]),
            "mae_ok": mae_ok, "rmse_ok": rmse_ok, "meets_acceptance": mae_ok and rmse_ok}


@builder("cmapss_units_rul")
def cmapss_units_rul(params: Mapping[str, Any], store: Any) -> dict[str, Any]:
    """Reference-model RUL of a few engines, the most urgent of them, and their true RUL."""
    data, pred = _cmapss_reference(params, store)
    units = data.test.unit_ids.astype(int).tolist()
    chosen = [int(u) for u in params["units"]]
    urgent = min(chosen, key=lambda u: (float(pred[units.index(u)]), u))
    return {"predicted_rul": {str(u): r6(pred[units.index(u)]) for u in chosen},
            "most_urgent_unit": urgent,
            "true_rul": {str(u): float(data.test_rul[units.index(u)]) for u in chosen}}


@builder("cmapss_urgent_schedule")
def cmapss_urgent_schedule(params: Mapping[str, Any], store: Any) -> dict[str, Any]:
    """The unit with the lowest predicted RUL (or a named ``unit``) and its cost-optimal
    maintenance time (formula)."""
    data, pred = _cmapss_reference(params, store)
    units = data.test.unit_ids.astype(int)
    urgent = int(params.get("unit") or units[np.lexsort((units, pred))[0]])
    rul = float(pred[urgent - 1])
    plan = schedule(rul, params["rul_std"], params["preventive_cost"], params["failure_cost"])
    return {"most_urgent_unit": urgent, "predicted_rul": r6(rul),
            "true_rul": float(data.test_rul[urgent - 1]), "maintain_in": r6(plan["maintain_in"]),
            "p_fail_before": r6(plan["p_fail_before"])}


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


def _cell(store: Any, battery_id: str) -> _Cell:
    return _Cell(store.battery(battery_id))


def _actual_eol(cell: _Cell, eol_ah: float = 1.4) -> int | None:
    """First cycle with capacity below 1.4 Ah (a fact of the data; None if never reached)."""
    below = np.flatnonzero(np.asarray(cell.capacity_ah) < eol_ah)
    return int(cell.cycle[below[0]]) if below.size else None


def _battery_prediction(cell: _Cell, model: str, observed: int) -> Any:
    import phm_kernels as kern

    cycles = cell.cycle.astype(float)
    if model == "linear":
        return kern.linear_fade_rul(cycles, cell.capacity_ah, observed_cycles=observed)
    kelvin = float(np.mean(cell.avg_temperature_c[:observed])) + 273.15
    return kern.exp_fade_rul(cycles, cell.capacity_ah, observed_cycles=observed,
                             temperature_k=kelvin)


@builder("battery_rul")
def battery_rul(params: Mapping[str, Any], store: Any) -> dict[str, Any]:
    """A fade model's RUL from the first cycles, and the observed EOL cycle (data)."""
    cell = _cell(store, params["battery_id"])
    observed = int(params["observed_cycles"])
    result = _battery_prediction(cell, params["model"], observed)
    eol = _actual_eol(cell)
    predicted_eol = r6(result.k_eol)
    return {"predicted_rul": r6(result.rul), "predicted_eol_cycle": predicted_eol,
            "soh_first_at_last_cycle": r6(cell.capacity_ah[-1] / cell.capacity_ah[0]),
            "actual_eol_cycle": eol, "eol_observed": eol is not None,
            "actual_rul": None if eol is None else eol - observed,
            "prediction_error_cycles": None if eol is None or predicted_eol is None
            else r6(predicted_eol - eol)}


@builder("battery_rul_compare")
def battery_rul_compare(params: Mapping[str, Any], store: Any) -> dict[str, Any]:
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


def _diagnose(store: Any, record: str, band: Sequence[float]) -> str:
    import phm_kernels as kern

    signal = store.cwru(record)
    segment = round(signal.fs_hz)  # whole segments only, as the kernel uses them
    samples = signal.drive_end[: (signal.drive_end.shape[0] // segment) * segment]
    result = kern.diagnose_bearing(samples, fs=signal.fs_hz, rpm=signal.rpm, f_lo=band[0],
                                   f_hi=band[1])
    return BEARING_LABELS[code(result.label)]


def _conditions() -> Mapping[str, str]:
    from sfbench_jax.mcp.datasets import CWRU_CONDITIONS

    return CWRU_CONDITIONS


@builder("bearing_fleet")
def bearing_fleet(params: Mapping[str, Any], store: Any) -> dict[str, Any]:
    """True conditions (data) and the envelope-analysis labels of several recordings."""
    band = tuple(params.get("band_hz", (2000.0, 4000.0)))
    records = [_resolve(r, "cwru_bearing").name for r in params["records"]]
    truth = [_conditions()[r] for r in records]
    labels = [_diagnose(store, r, band) for r in records]
    accuracy = sum(t == p for t, p in zip(truth, labels, strict=True)) / len(records)
    return {"conditions": {"ids": records, "labels": truth},
            "envelope_labels": dict(zip(records, labels, strict=True)),
            "envelope_accuracy": r6(accuracy)}


@builder("bearing_single")
def bearing_single(params: Mapping[str, Any], store: Any) -> dict[str, Any]:
    """True condition of one recording (data), the envelope label and the defect frequencies
    at the recorded speed (formula)."""
    record = _resolve(params["record"], "cwru_bearing").name
    signal = store.cwru(record)
    freqs = bearing_frequencies(signal.rpm, *BEARING_GEOMETRY["cwru_drive_end"])
    out = {"condition": _conditions()[record], "rpm": signal.rpm, "bpfo_hz": r6(freqs["bpfo"]),
           "bpfi_hz": r6(freqs["bpfi"]), "bsf2_hz": r6(freqs["bsf2"]),
           **{f"{name}_cpm": r6(60.0 * freqs[name]) for name in ("bpfo", "bpfi", "bsf2")}}
    if "band_hz" in params:
        label = _diagnose(store, record, params["band_hz"])
        out.update(envelope_label=label, envelope_correct=label == out["condition"],
                   envelope_accuracy=1.0 if label == out["condition"] else 0.0,
                   defect_missed=label == "normal" and out["condition"] != "normal")
    return out


@builder("battery_labels")
def battery_labels(params: Mapping[str, Any], store: Any) -> dict[str, Any]:
    """Impedance-trend and thermal labels of one cell."""
    import phm_kernels as kern

    cell = _cell(store, params["battery_id"])
    impedance = kern.impedance_trend_analyzer(cell.re_ohm, cell.rct_ohm)
    thermal = kern.thermal_anomaly_checker(cell.max_temperature_c, cell.avg_temperature_c,
                                           cell.re_ohm, cell.rct_ohm)
    return {"impedance_label": kern.IMPEDANCE_LABELS[code(impedance.label)],
            "impedance_jump_points": int(np.sum(np.asarray(impedance.jump))),
            "degradation_after_cleaning": bool(np.asarray(impedance.degradation_after_cleaning)),
            "thermal_label": kern.THERMAL_LABELS[code(thermal.label)],
            "thermal_spike_detected": code(thermal.n_spikes) > 0,
            "thermal_spike_active": bool(np.asarray(thermal.spike_active)),
            "resistance_trend": mann_kendall(np.asarray(cell.re_ohm) + np.asarray(cell.rct_ohm))[
                "trend"],
            "re_first_ohm": r6(cell.re_ohm[0]), "re_last_ohm": r6(cell.re_ohm[-1]),
            "rct_first_ohm": r6(cell.rct_ohm[0]), "rct_last_ohm": r6(cell.rct_ohm[-1]),
            "first_anomalous_cycle": _first_anomaly(cell), "n_cycles": int(cell.cycle.shape[0])}


def _unit_rows(store: Any, dataset: str, split: str, unit: int) -> np.ndarray:
    """One unit's rows as a (cycles, 26) table in NASA column order."""
    table = getattr(store.cmapss(_resolve(dataset, "cmapss").name), split)
    rows = table.unit == unit
    return np.column_stack([table.unit[rows], table.cycle[rows], table.settings[rows],
                            table.sensors[rows]]).astype(np.float64)


@builder("sensor_trend")
def sensor_trend(params: Mapping[str, Any], store: Any) -> dict[str, Any]:
    """Mann-Kendall trend and Sen slope (formula) of one sensor of one engine (data)."""
    rows = _unit_rows(store, params["dataset"], params["split"], int(params["unit"]))
    column = 5 + int(params["sensor"].removeprefix("s")) - 1
    mk = mann_kendall(rows[:, column])
    return {"trend": mk["trend"], "sen_slope": r6(mk["sen_slope"]), "n_cycles": int(rows.shape[0])}


@builder("engine_signals")
def engine_signals(params: Mapping[str, Any], store: Any) -> dict[str, Any]:
    """First cycle at which an informative sensor leaves its early-life reference."""
    import phm_kernels as kern

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


def _battery_stage(soh_rated: float) -> str:
    """HEALTHY > 0.90 >= EARLY > 0.80 >= ACCELERATED > 0.70 >= EOL (rated SOH)."""
    stages = ("HEALTHY", "EARLY_DEGRADATION", "ACCELERATED_DEGRADATION", "EOL")
    return stages[sum(soh_rated <= edge for edge in (0.9, 0.8, 0.7))]


@builder("battery_soh_stage")
def battery_soh_stage(params: Mapping[str, Any], store: Any) -> dict[str, Any]:
    """SOH (first-cycle and rated, formula on the data) and degradation stage at one cycle."""
    cell = _cell(store, params["battery_id"])
    index = int(params["cycle"]) - 1
    capacity = float(cell.capacity_ah[index])
    soh_rated = capacity / 2.0
    return {"soh_first_cycle": r6(capacity / float(cell.capacity_ah[0])),
            "soh_rated": r6(soh_rated), "capacity_ah": r6(capacity),
            "stage": _battery_stage(soh_rated), "eol_cycle": _actual_eol(cell)}


def _anomalies(cell: _Cell) -> Any:
    import phm_kernels as kern

    values = np.stack([getattr(cell, f) for f in _Cell.FEATURES], axis=1)
    return kern.rolling_zscore_anomaly_multi(values)


def _first_anomaly(cell: _Cell) -> int | None:
    hits = np.flatnonzero(np.asarray(_anomalies(cell).any_flag))
    return int(cell.cycle[hits[0]]) if hits.size else None


@builder("battery_anomaly")
def battery_anomaly(params: Mapping[str, Any], store: Any) -> dict[str, Any]:
    """First cycle flagged by the debounced z-score detector over the five features."""
    cell = _cell(store, params["battery_id"])
    events = np.asarray(_anomalies(cell).n_events)
    return {"first_anomalous_cycle": _first_anomaly(cell),
            "flagged_features": [f for f, n in zip(_Cell.FEATURES, events, strict=True) if n > 0],
            "capacity_flagged": bool(events[_Cell.FEATURES.index("capacity_ah")] > 0)}


@builder("battery_baseline")
def battery_baseline(params: Mapping[str, Any], store: Any) -> dict[str, Any]:
    """A cell's feature against a fleet baseline (robust z, debounced)."""
    import phm_kernels as kern

    cell = _cell(store, params["battery_id"])
    fleet = [_cell(store, b) for b in params["baseline_ids"]]
    feature = params.get("feature", "capacity_ah")
    length = min(int(c.cycle.shape[0]) for c in [cell, *fleet])
    result = kern.compare_to_baseline(getattr(cell, feature)[:length],
                                      np.stack([getattr(f, feature)[:length] for f in fleet]))
    worst = float(np.max(np.abs(np.asarray(result.z))))
    return {"is_outlier": bool(np.asarray(result.is_outlier)),
            "n_events": code(result.n_events), "n_cycles_compared": length,
            "worst_deviation_in_thresholds": r6(worst / 3.0)}  # |z| > 3 is the outlier threshold


@builder("battery_health_report")
def battery_health_report(params: Mapping[str, Any], store: Any) -> dict[str, Any]:
    """Triage of the health report (the kernel's ladder, `phm_kernels.health_report_triage`) from the stage,
    the anomalies, the thermal spike and the linear-fade RUL."""
    import phm_kernels as kern

    cell = _cell(store, params["battery_id"])
    cycle = int(params["cycle"])
    stage = _battery_stage(float(cell.capacity_ah[cycle - 1]) / 2.0)
    first = _first_anomaly(cell)
    thermal = kern.thermal_anomaly_checker(cell.max_temperature_c[:cycle],
                                           cell.avg_temperature_c[:cycle], cell.re_ohm,
                                           cell.rct_ohm)
    rul = float(np.asarray(kern.linear_fade_rul(cell.cycle.astype(float), cell.capacity_ah,
                                                observed_cycles=cycle).rul))
    level = kern.health_report_triage(stage, rul, bool(np.asarray(thermal.spike_active)),
                                      first is not None and first <= cycle)
    return {"triage_level": kern.TRIAGE_LEVELS[code(level)], "stage": stage, "predicted_rul": r6(rul)}


@builder("battery_schedule")
def battery_schedule(params: Mapping[str, Any], store: Any) -> dict[str, Any]:
    """Linear-fade RUL of a cell fed into the RUL-conditioned schedule (formula)."""
    cell = _cell(store, params["battery_id"])
    observed = int(params["observed_cycles"])
    rul = float(np.asarray(_battery_prediction(cell, "linear", observed).rul))
    plan = schedule(rul, params["rul_std"], params["preventive_cost"], params["failure_cost"],
                    params.get("safety_margin"))
    return {"predicted_rul": r6(rul), "maintain_in": r6(plan["maintain_in"]),
            "replace_at_cycle": r6(observed + plan["maintain_in"]),
            "p_fail_before": r6(plan["p_fail_before"])}


# =============================================================================================


def question_answers(name: str, truth: Mapping[str, Any], params: Mapping[str, Any]) -> dict[str, Any]:
    """What a data scenario asks beyond the builder's facts (answers derived from the facts, not a
    tool's output key): a drift over the record, cycles after a first flag, an end-of-life cycle, a fade in
    percent, a total resistance, a decision, a time in another unit. Plain arithmetic on the builder's values."""
    extra: dict[str, Any] = {}
    if name == "sensor_trend":
        extra["drift_over_life"] = r6(truth["sen_slope"] * (truth["n_cycles"] - 1))
    elif name == "engine_signals":
        first = truth["first_anomalous_cycle"]
        extra["cycles_after_first_departure"] = None if first is None else truth["n_cycles"] - first
    elif name == "battery_health_report":
        rul = truth["predicted_rul"]
        extra["predicted_eol_cycle"] = None if rul is None else r6(int(params["cycle"]) + rul)
    elif name == "battery_soh_stage":
        extra["capacity_fade_pct"] = r6(100.0 * (1.0 - truth["soh_first_cycle"]))
    elif name == "battery_rul":
        extra["capacity_lost_pct"] = r6(100.0 * (1.0 - truth["soh_first_at_last_cycle"]))
    elif name == "battery_labels":
        extra["rct_growth_pct"] = r6(100.0 * (truth["rct_last_ohm"] / truth["rct_first_ohm"] - 1.0))
        extra["total_resistance_last_ohm"] = r6(truth["re_last_ohm"] + truth["rct_last_ohm"])
        first = truth["first_anomalous_cycle"]
        extra["cycles_after_first_anomaly"] = None if first is None else truth["n_cycles"] - first
    elif name == "bearing_fleet":
        extra["usable_as_healthy_reference"] = all(label == "normal" for label in truth["conditions"]["labels"]) \
            and truth["envelope_accuracy"] == 1.0
    elif name == "cmapss_urgent_schedule":
        extra["maintain_in_converted"] = r6(truth["maintain_in"] / float(params.get("time_divisor", 1.0)))
    return extra


class _LazyStore:
    """Opens the data store on first use, so formula-only runs need no data root."""

    def __init__(self, data_root: Path | None) -> None:
        self._root = data_root
        self._store: Any = None

    def __getattr__(self, name: str) -> Any:
        if self._store is None:
            if self._root is None:
                raise SystemExit("this scenario's ground truth reads the real data: pass "
                                 "--data-root or set SFBENCH_DATA_ROOT")
            self._store = _store(self._root)
        return getattr(self._store, name)


def build_all(data_root: Path | None, scenario_dir: Path,
              ids: list[str] | None = None) -> dict[str, bytes]:
    """Ground-truth file name -> bytes for every (selected) scenario.

    Args:
        data_root: Shared data folder (None is enough for formula-only scenarios).
        scenario_dir: Scenario folder.
        ids: Optional subset of scenario ids.

    Returns:
        The file contents to write.

    Raises:
        KeyError: If a scenario names an unknown builder.
    """
    store = _LazyStore(data_root)
    files: dict[str, bytes] = {}
    for scenario in load_scenarios(scenario_dir, ids=ids):
        recipe = scenario.ground_truth_recipe
        if recipe["builder"] not in BUILDERS:
            raise KeyError(f"{scenario.id}: unknown ground-truth builder {recipe['builder']!r}; "
                           f"known: {sorted(BUILDERS)}")
        truth = BUILDERS[recipe["builder"]](recipe.get("params", {}), store)
        truth = {**truth, **question_answers(recipe["builder"], truth, recipe.get("params", {}))}
        document = {"scenario_id": scenario.id, "builder": recipe["builder"], **truth}
        text = json.dumps(document, sort_keys=True, indent=2) + "\n"
        files[Path(scenario.ground_truth_ref).name] = text.encode()
    return files


def agree_to_sixth_digit(committed: Any, computed: Any) -> bool:
    """Whether two parsed ground-truth documents agree: the same structure, keys, strings, integers,
    booleans and nulls, and floats within one unit in their sixth significant digit (what float32
    rounding on another CPU can move a value rounded by ``r6``)."""
    if isinstance(committed, float) and isinstance(computed, float):
        scale = max(abs(committed), abs(computed))
        unit = 10.0 ** (math.floor(math.log10(scale)) - 5) if scale > 0 else 0.0
        return abs(committed - computed) <= unit * (1 + 1e-9)
    if type(committed) is not type(computed):
        return False
    if isinstance(committed, dict):
        return committed.keys() == computed.keys() and all(
            agree_to_sixth_digit(committed[k], computed[k]) for k in committed)
    if isinstance(committed, list):
        return len(committed) == len(computed) and all(
            agree_to_sixth_digit(a, b) for a, b in zip(committed, computed, strict=True))
    return committed == computed


def _agrees(path: Path, content: bytes) -> bool:
    """Whether the committed file ``path`` holds ``content``, to one unit in the sixth digit."""
    if not path.is_file():
        return False
    committed = path.read_bytes()
    return committed == content or agree_to_sixth_digit(json.loads(committed), json.loads(content))


def _manifest(out_dir: Path) -> dict[str, str]:
    path = out_dir / MANIFEST
    return json.loads(path.read_text())["files"] if path.is_file() else {}


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
    out_dir = args.scenarios / "ground_truth"
    files = build_all(Path(args.data_root) if args.data_root else None, args.scenarios, args.ids)
    if args.check:
        manifest = _manifest(out_dir)
        bad = [name for name, content in sorted(files.items()) if not _agrees(out_dir / name, content)]
        bad += [f"{name} (manifest)" for name in sorted(files) if (out_dir / name).is_file()
                and manifest.get(name) != file_sha256(out_dir / name)]
        last_digit = sum((out_dir / name).is_file() and (out_dir / name).read_bytes() != content
                         and name not in bad for name, content in files.items())
        for name in bad:
            print(f"differs: {name}", file=sys.stderr)
        print(f"checked {len(files)} ground-truth files, {len(bad)} differ"
              + (f" ({last_digit} agree to one unit in the sixth significant digit, float32 on this CPU)"
                 if last_digit else ""))
        return 1 if bad else 0
    out_dir.mkdir(parents=True, exist_ok=True)
    written = 0
    for name, content in files.items():
        if not _agrees(out_dir / name, content):
            (out_dir / name).write_bytes(content)
            written += 1
    manifest = _manifest(out_dir)
    manifest.update({name: file_sha256(out_dir / name) for name in files})
    keep = {Path(s.ground_truth_ref).name for s in load_scenarios(args.scenarios)}
    manifest = {k: v for k, v in sorted(manifest.items()) if k in keep}
    manifest_path = out_dir / MANIFEST
    manifest_path.write_text(json.dumps({"generator": "scripts/build_agent_scenarios.py",
                                         "files": manifest}, sort_keys=True, indent=2) + "\n")
    print(f"wrote {written} of {len(files)} ground-truth files to {out_dir} (the others agree with the "
          "committed ones to one unit in the sixth significant digit and are kept)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
