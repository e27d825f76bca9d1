"""Independent ground truth: every scenario's expected answer re-derived without the kernels.

What lives here: one derivation per ground-truth builder name of ``scripts/build_agent_scenarios.py``
(`DERIVATIONS`, looked up by the name a scenario's ``ground_truth_recipe`` gives), each computing the
builder's answer document from the recipe's parameters and, for the data scenarios, from the raw files
under the data root, and `derive`, which applies one to a scenario. Nothing here imports
``phm_kernels``, ``sfbench_jax.mcp`` or the build script (``tests/agent_eval/test_eval_independent_truth.py``
checks the imports); the files are parsed here with plain NumPy / pandas / SciPy (`TruthData`).

How it differs from the path that wrote the ``.gt.json`` files. The formulas are typed again from
the standards and papers (the tables and bands of ISO 10816, IEC 61508, ISO 13849, OSHA 1910.95,
EU 2002/44/EC, NEMA MG 1, 14 CFR 91.409, IEC 60812 bands) and computed by other routes where one
exists: the renewal cost rate of a truncated-normal residual life with ``scipy.stats.truncnorm`` and
numerical integration instead of the closed form; the Weibull age-replacement optimum from the
first-order condition ``h(T) int_0^T R - F(T) = c_p / (c_f - c_p)`` solved with ``brentq`` instead
of a grid search over the cost rate; Sen's slope with ``scipy.stats.theilslopes``; line fits with
``numpy.polyfit``; the envelope with ``scipy.signal.hilbert``. The named models and detectors the
data scenarios ask about (the linear health-index RUL baseline of C-MAPSS, the linear and
log-linear capacity-fade models, the debounced z-score detectors, the robust fleet baseline, the
impedance and thermal checks, envelope analysis with harmonic matching) are re-implemented in float64
from their published definitions (``shared/spec/phm_kernels.md`` sections 1.7, 2.4-2.5, 4.1-4.3,
5.2-5.8) and the project's stated conventions for them; the kernels were read only to learn which
convention a default picks. Facts of the data come from the files: true C-MAPSS RUL from the
``RUL_FD00x`` files, the CWRU condition from the published meaning of the record number, the
first cycle a cell's capacity fell below 1.4 Ah from the discharge records.

What does not live here: the comparison with the committed files (the test) and the scenario
validators.
"""

from __future__ import annotations

import bisect
import functools
import gzip
import hashlib
import math
import re
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from scipy import integrate, optimize, signal, stats

__all__ = ["DERIVATIONS", "TruthData", "derive"]

Derivation = Callable[[Mapping[str, Any], "TruthData"], dict[str, Any]]
DERIVATIONS: dict[str, Derivation] = {}


def _derivation(name: str) -> Callable[[Derivation], Derivation]:
    """Register the independent derivation of the ground-truth builder ``name``."""
    def register(fn: Derivation) -> Derivation:
        DERIVATIONS[name] = fn
        return fn
    return register


def derive(recipe: Mapping[str, Any], data: TruthData) -> dict[str, Any]:
    """The independent answer document of one scenario's ground-truth recipe.

    Args:
        recipe: The scenario's ``ground_truth_recipe`` (``builder`` and ``params``).
        data: Raw-file access for the data scenarios.

    Returns:
        A document with (at least) the keys the named builder writes.

    Raises:
        KeyError: The recipe names a builder without an independent derivation.
    """
    name = recipe["builder"]
    if name not in DERIVATIONS:
        raise KeyError(f"no independent derivation for ground-truth builder {name!r}; add one to "
                       f"DERIVATIONS (known: {sorted(DERIVATIONS)})")
    params = recipe.get("params", {})
    document = DERIVATIONS[name](params, data)
    return {**document, **_asked(name, document, params)}


def _asked(name: str, doc: Mapping[str, Any], params: Mapping[str, Any]) -> dict[str, Any]:
    """The values a data scenario asks for beyond the facts, from this module's own facts."""
    if name == "sensor_trend":
        return {"drift_over_life": doc["sen_slope"] * (doc["n_cycles"] - 1)}
    if name == "engine_signals":
        first = doc["first_anomalous_cycle"]
        return {"cycles_after_first_departure": None if first is None else doc["n_cycles"] - first}
    if name == "battery_health_report":
        rul = doc["predicted_rul"]
        return {"predicted_eol_cycle": None if rul is None else float(params["cycle"]) + rul}
    if name == "battery_soh_stage":
        return {"capacity_fade_pct": (1.0 - doc["soh_first_cycle"]) * 100.0}
    if name == "battery_rul":
        return {"capacity_lost_pct": (1.0 - doc["soh_first_at_last_cycle"]) * 100.0}
    if name == "battery_labels":
        out = {"rct_growth_pct": (doc["rct_last_ohm"] - doc["rct_first_ohm"]) / doc["rct_first_ohm"] * 100.0,
               "total_resistance_last_ohm": doc["re_last_ohm"] + doc["rct_last_ohm"]}
        first = doc["first_anomalous_cycle"]
        out["cycles_after_first_anomaly"] = None if first is None else doc["n_cycles"] - first
        return out
    if name == "bearing_fleet":
        healthy = set(doc["conditions"]["labels"]) == {"normal"}
        return {"usable_as_healthy_reference": healthy and doc["envelope_accuracy"] == 1.0}
    if name == "cmapss_urgent_schedule":
        return {"maintain_in_converted": doc["maintain_in"] / float(params.get("time_divisor", 1.0))}
    return {}


def _finite_or_none(value: float) -> float | None:
    return float(value) if math.isfinite(value) else None


# =============================================================================================
# Vibration severity (ISO 10816-1 Annex B, ISO 10816-3 Annex A) and single-tone unit conversion
# =============================================================================================

# Zone boundaries A|B, B|C, C|D in mm/s RMS; a value on a boundary lies in the upper zone.
_ISO_10816_1_CLASS = {"I": (0.71, 1.8, 4.5), "II": (1.12, 2.8, 7.1), "III": (1.8, 4.5, 11.2),
                      "IV": (2.8, 7.1, 18.0)}
_ISO_10816_3_GROUP = {"1/rigid": (2.3, 4.5, 7.1), "1/flexible": (3.5, 7.1, 11.0),
                      "2/rigid": (1.4, 2.8, 4.5), "2/flexible": (2.3, 4.5, 7.1)}
# Metres per unit and the time-derivative order (0 displacement, 1 velocity, 2 acceleration).
_LENGTH_UNITS = {"m": (1.0, 0), "mm": (1e-3, 0), "um": (1e-6, 0), "mil": (25.4e-6, 0),
                 "in": (0.0254, 0), "m/s": (1.0, 1), "mm/s": (1e-3, 1), "in/s": (0.0254, 1),
                 "m/s2": (1.0, 2), "mm/s2": (1e-3, 2), "g": (9.80665, 2)}
# Amplitude of a sine relative to its RMS value.
_PEAK_FACTOR = {"rms": 1.0, "pk": math.sqrt(2.0), "pp": 2.0 * math.sqrt(2.0)}


def _zone_boundaries(spec: Mapping[str, Any]) -> tuple[float, float, float]:
    if spec["standard"] == "ISO10816-1":
        return _ISO_10816_1_CLASS[str(spec["machine_class"])]
    return _ISO_10816_3_GROUP[f"{int(spec['group'])}/{spec['foundation']}"]


def _zone(velocity_mm_s: float, boundaries: Sequence[float]) -> str:
    return "ABCD"[bisect.bisect_right(list(boundaries), velocity_mm_s)]


def _velocity_mm_s_rms(value: float, unit: str, frequency_hz: float | None) -> float:
    """A tone's amplitude as velocity RMS in mm/s (integrate or differentiate by j 2 pi f)."""
    quantity, measure = unit.split()
    metres, order = _LENGTH_UNITS[quantity]
    rms_si = value * metres / _PEAK_FACTOR[measure]
    if order != 1:
        if not frequency_hz:
            raise ValueError(f"converting {unit!r} to velocity needs the tone's frequency")
        rms_si *= (2.0 * math.pi * frequency_hz) ** (1 - order)
    return rms_si * 1e3


@_derivation("vibration_zone")
def _vibration_zone(params: Mapping[str, Any], data: TruthData) -> dict[str, Any]:
    velocity = _velocity_mm_s_rms(params["value"], params["from_unit"], params.get("frequency_hz"))
    limits = _zone_boundaries(params)
    return {"velocity_mm_s_rms": velocity, "zone": _zone(velocity, limits),
            "percent_of_cd_limit": velocity / limits[2] * 100.0}


@_derivation("vibration_fleet")
def _vibration_fleet(params: Mapping[str, Any], data: TruthData) -> dict[str, Any]:
    machines: dict[str, dict[str, Any]] = {}
    for spec in params["machines"]:
        velocity = _velocity_mm_s_rms(spec["value"], spec["from_unit"], spec.get("frequency_hz"))
        bounds = _zone_boundaries(spec)
        machines[spec["name"]] = {"velocity_mm_s_rms": velocity, "zone": _zone(velocity, bounds),
                                  "ratio_to_cd": velocity / bounds[2]}
    ranked = sorted(machines, key=lambda name: -machines[name]["ratio_to_cd"])
    return {"machines": machines, "worst_machine": ranked[0],
            "n_zone_c_or_d": sum(m["zone"] in ("C", "D") for m in machines.values())}


# =============================================================================================
# Trends: Mann-Kendall with Sen's slope, linear vs exponential fit by AIC
# =============================================================================================


def _mann_kendall(values: Sequence[float] | np.ndarray, alpha: float = 0.05) -> dict[str, Any]:
    """Mann (1945) / Kendall (1975) with tie correction and continuity correction; Sen (1968)."""
    y = np.asarray(values, dtype=np.float64)
    n = y.size
    s = 0.0
    for i in range(n - 1):
        s += float(np.sum(np.sign(y[i + 1:] - y[i])))
    _, group_sizes = np.unique(y, return_counts=True)
    ties = sum(t * (t - 1) * (2 * t + 5) for t in group_sizes.tolist())
    variance = (n * (n - 1) * (2 * n + 5) - ties) / 18.0
    if s == 0 or variance <= 0:
        z = 0.0
    else:
        z = (s - 1.0) / math.sqrt(variance) if s > 0 else (s + 1.0) / math.sqrt(variance)
    p_value = 2.0 * float(stats.norm.sf(abs(z)))
    trend = "NO_TREND" if p_value >= alpha else ("INCREASING" if s > 0 else "DECREASING")
    sen = float(stats.theilslopes(y, np.arange(n, dtype=np.float64)).slope)
    return {"s": s, "p_value": p_value, "trend": trend, "sen_slope": sen}


def _trend_to_threshold(values: Sequence[float], threshold: float) -> dict[str, Any]:
    """Least-squares line and log-line in t = 1..n; lower AIC (n ln(SSE/n) + 2k, k = 2) wins,
    a tie goes to the line; the chosen curve's crossing time after the last reading."""
    y = np.asarray(values, dtype=np.float64)
    t = np.arange(1, y.size + 1, dtype=np.float64)
    line = stats.linregress(t, y)
    sse = {"linear": float(np.sum((y - line.intercept - line.slope * t) ** 2))}
    if np.all(y > 0):
        log_line = stats.linregress(t, np.log(y))
        sse["exponential"] = float(np.sum((y - np.exp(log_line.intercept + log_line.slope * t)) ** 2))
    aic = {model: y.size * math.log(value / y.size) + 4.0 for model, value in sse.items()}
    model = "exponential" if aic.get("exponential", math.inf) < aic["linear"] else "linear"
    if model == "linear":
        crossing = (threshold - line.intercept) / line.slope
    else:
        crossing = (math.log(threshold) - log_line.intercept) / log_line.slope
    return {"model": model, "time_to_threshold": max(crossing - t[-1], 0.0)}


@_derivation("vibration_trend")
def _vibration_trend(params: Mapping[str, Any], data: TruthData) -> dict[str, Any]:
    readings = params["readings"]
    trend = _mann_kendall(readings)
    out = {"trend": trend["trend"], "sen_slope": trend["sen_slope"],
           **_trend_to_threshold(readings, float(params["threshold"]))}
    out["threshold_time"] = out["time_to_threshold"] * float(params.get("time_scale", 1.0)) \
        + float(params.get("time_offset", 0.0))
    if "standard" in params:
        out["current_zone"] = _zone(float(readings[-1]), _zone_boundaries(params))
    return out


# =============================================================================================
# Rolling-element bearings: kinematic defect frequencies and peak matching
# =============================================================================================

# (balls, ball diameter, pitch diameter, contact angle deg): CWRU Bearing Data Center geometry.
_CWRU_BEARINGS = {"cwru_drive_end": (9, 0.3126, 1.537, 0.0),   # SKF 6205-2RS JEM
                  "cwru_fan_end": (8, 0.2656, 1.122, 0.0)}     # SKF 6203-2RS JEM


def _defect_frequencies(rpm: float, balls: int, ball_d: float, pitch_d: float,
                        contact_deg: float) -> dict[str, float]:
    """Shaft, cage (FTF), outer- and inner-race ball-pass and ball-spin frequencies, Hz."""
    shaft = rpm / 60.0
    ratio = ball_d * math.cos(math.radians(contact_deg)) / pitch_d
    cage = 0.5 * shaft * (1.0 - ratio)
    spin = 0.5 * shaft * (pitch_d / ball_d) * (1.0 - ratio) * (1.0 + ratio)
    return {"shaft": shaft, "ftf": cage, "bpfo": balls * cage, "bpfi": balls * (shaft - cage),
            "bsf": spin, "bsf2": 2.0 * spin}


@_derivation("bearing_peak_match")
def _bearing_peak_match(params: Mapping[str, Any], data: TruthData) -> dict[str, Any]:
    geometry = _CWRU_BEARINGS.get(params["bearing"]) or tuple(params["geometry"])
    freqs = _defect_frequencies(float(params["rpm"]), *geometry)
    candidates = [("shaft_1x", freqs["shaft"]), ("cage", freqs["ftf"]), ("outer_race", freqs["bpfo"]),
                  ("inner_race", freqs["bpfi"]), ("ball", freqs["bsf2"])]
    peak = float(params["peak_hz"])
    name, frequency = min(candidates, key=lambda item: abs(peak / item[1] - 1.0))
    error = abs(peak / frequency - 1.0)
    out = {"frequencies_hz": freqs, "matched_frequency_hz": frequency, "relative_error": error,
           "matched_component": name if error <= float(params.get("tolerance", 0.03)) else "none"}
    if "velocity_mm_s" in params:
        out["zone"] = _zone(float(params["velocity_mm_s"]), _zone_boundaries(params))
    return out


# =============================================================================================
# Turbofan module health (protocol 2.2-2.3 conventions)
# =============================================================================================


@_derivation("component_health")
def _component_health(params: Mapping[str, Any], data: TruthData) -> dict[str, Any]:
    efficiency, flow = abs(float(params["efficiency"])), abs(float(params["flow"]))
    magnitude = max(efficiency, flow)
    if magnitude >= 0.05:
        band, status = "CRITICAL", "Imminent Failure"
    elif magnitude >= 0.03:
        band, status = "SEVERE", "Abnormal Degradation"
    elif magnitude >= 0.01:
        band, status = "DEGRADED", "Abnormal Degradation"
    else:
        band, status = "HEALTHY", "Operating Normally"
    if efficiency < 0.005 and flow < 0.005:
        signature = "NONE"
    elif flow > 2.0 * efficiency:
        signature = "FLOW_DOMINANT"
    elif flow < 0.5 * efficiency:
        signature = "EFFICIENCY_DOMINANT"
    else:
        signature = "COUPLED"
    actions = {"HEALTHY": "continue", "DEGRADED": "inspect_next_check", "SEVERE": "plan_removal",
               "CRITICAL": "remove_now"}
    out = {"health_band": band, "status": status, "signature": signature, "severity_magnitude": magnitude,
           "action": actions[band],
           "flow_to_efficiency_ratio": flow / efficiency if efficiency > 0 else None}
    if "choices" in params:  # the one option naming the status (or the band)
        def same(text: str, label: str) -> bool:
            return text.strip().casefold().replace(" ", "_") == label.casefold().replace(" ", "_")

        letters = [letter for letter, text in params["choices"].items() if same(text, status) or same(text, band)]
        out["choice"] = letters[0] if len(letters) == 1 else None
    return out


# =============================================================================================
# Maintenance economics
# =============================================================================================


def _annuity_factor(years: int, rate: float) -> float:
    return float(years) if rate == 0 else (1.0 - (1.0 + rate) ** -years) / rate


@_derivation("pm_roi")
def _pm_roi(params: Mapping[str, Any], data: TruthData) -> dict[str, Any]:
    pm_cost, pm_per_year, pm_hours, pm_rate = (float(v) for v in params["pm"])
    failure = [float(v) for v in params["failure"]] + [0.0]
    probability, repair, down_hours, down_rate, consequential = failure[:5]
    pm_annual = pm_per_year * pm_cost + pm_per_year * pm_hours * pm_rate
    reactive = probability * repair + probability * down_hours * down_rate + probability * consequential
    residual = float(params["residual_fraction"]) * reactive
    savings = reactive - pm_annual - residual
    program = float(params["program_cost"])
    factor = _annuity_factor(int(params.get("years", 1)), float(params.get("discount_rate", 0.0)))
    return {"pm_annual_cost": pm_annual, "reactive_annual_cost": reactive,
            "residual_annual_cost": residual, "annual_savings": savings,
            "roi": savings * factor / program - 1.0,
            "payback_months": program / (savings / 12.0) if savings > 0 else None,
            "net_benefit": savings * factor - program}


@_derivation("pm_frequency_choice")
def _pm_frequency_choice(params: Mapping[str, Any], data: TruthData) -> dict[str, Any]:
    failure = [float(v) for v in params["failure"]] + [0.0]
    cost_per_failure = failure[0] + failure[1] * failure[2] + failure[3]
    totals = {option["name"]: option["frequency_per_year"] * option["preventive_cost"]
              + option["frequency_per_year"] * option["downtime_hours"] * option["hourly_rate"]
              + option["failure_probability"] * cost_per_failure for option in params["options"]}
    cheapest = sorted(totals.items(), key=lambda item: item[1])
    return {"total_annual_cost": totals, "best_option": cheapest[0][0], "best_total": cheapest[0][1]}


def _residual_life(mean: float, std: float) -> Any:
    """Normal(mean, std) residual life truncated to t >= 0 (a frozen SciPy distribution)."""
    return stats.truncnorm(-mean / std, np.inf, loc=mean, scale=std)


def _schedule(mean: float, std: float, c_p: float, c_f: float,
              margin: float | None = None) -> dict[str, float]:
    """Maintenance time minimising the renewal cost rate [c_p R(t) + c_f F(t)] / int_0^t R, or the
    simple-margin time (1 - margin) mean. The minimum is bracketed on a grid up to mean + 6 std
    (integral by the trapezoid rule) and refined with the integral by adaptive quadrature."""
    life = _residual_life(mean, std)
    if margin is not None:
        t_star = (1.0 - float(margin)) * mean
    else:
        grid = np.linspace(0.0, mean + 6.0 * std, 20001)
        survival = life.sf(grid)
        uptime = integrate.cumulative_trapezoid(survival, grid, initial=0.0)
        rates = (c_p * survival[1:] + c_f * (1.0 - survival[1:])) / uptime[1:]
        best = int(np.argmin(rates)) + 1

        def cost_rate(t: float) -> float:
            up = integrate.quad(life.sf, 0.0, t, epsabs=0.0, epsrel=1e-12, limit=200)[0]
            return (c_p * life.sf(t) + c_f * life.cdf(t)) / up

        t_star = float(optimize.minimize_scalar(
            cost_rate, bounds=(grid[best - 1], grid[min(best + 1, grid.size - 1)]), method="bounded",
            options={"xatol": 1e-9 * (mean + std)}).x)
    return {"maintain_in": t_star, "rul_threshold": mean - t_star, "p_fail_before": float(life.cdf(t_star))}


@_derivation("rul_schedule")
def _rul_schedule(params: Mapping[str, Any], data: TruthData) -> dict[str, Any]:
    plan = _schedule(float(params["rul_mean"]), float(params["rul_std"]), float(params["preventive_cost"]),
                     float(params["failure_cost"]), params.get("safety_margin"))
    return {**plan, "maintain_in_converted": plan["maintain_in"] / float(params.get("time_divisor", 1.0))}


@_derivation("age_replacement")
def _age_replacement(params: Mapping[str, Any], data: TruthData) -> dict[str, Any]:
    """Barlow & Proschan age replacement with a Weibull life: the optimum solves
    ``h(T) int_0^T R - F(T) = c_p / (c_f - c_p)`` (increasing in T when beta > 1)."""
    beta, eta = float(params["beta"]), float(params["eta"])
    c_p, c_f = float(params["preventive_cost"]), float(params["failure_cost"])
    life = stats.weibull_min(beta, scale=eta)
    run_to_failure = c_f / float(life.mean())
    hours = float(params.get("hours_per_year", 0.0))
    if beta <= 1.0:
        return {"status": "run_to_failure", "optimal_age": None, "cost_rate": run_to_failure,
                "savings_fraction": 0.0, "annual_cost": hours * run_to_failure, "annual_saving": 0.0}

    def uptime(age: float) -> float:
        return integrate.quad(life.sf, 0.0, age, epsabs=0.0, epsrel=1e-12, limit=200)[0]

    def hazard(age: float) -> float:
        return beta / eta * (age / eta) ** (beta - 1.0)

    def condition(age: float) -> float:
        return hazard(age) * uptime(age) - life.cdf(age) - c_p / (c_f - c_p)

    age = optimize.brentq(condition, 1e-6 * eta, 50.0 * eta, xtol=1e-12 * eta, rtol=1e-14)
    rate = (c_p * life.sf(age) + c_f * life.cdf(age)) / uptime(age)
    return {"status": "optimal", "optimal_age": age, "cost_rate": rate,
            "savings_fraction": 1.0 - rate / run_to_failure, "cost_rate_first_order": (c_f - c_p) * hazard(age),
            "annual_cost": hours * rate, "annual_saving": hours * (run_to_failure - rate)}


# =============================================================================================
# Safety and policy
# =============================================================================================


@_derivation("fmea")
def _fmea(params: Mapping[str, Any], data: TruthData) -> dict[str, Any]:
    """IEC 60812 RPN = S O D; bands low < 50 <= medium < 100 <= high < 200 <= critical; S >= 9
    raises the level to at least high; ranking by RPN, then severity, then listed order."""
    levels = ("low", "medium", "high", "critical")
    modes, order = {}, []
    for index, mode in enumerate(params["modes"]):
        rpn = int(mode["severity"]) * int(mode["occurrence"]) * int(mode["detection"])
        band = 3 if rpn >= 200 else 2 if rpn >= 100 else 1 if rpn >= 50 else 0
        raised = int(mode["severity"]) >= 9 and band < 2
        modes[mode["name"]] = {"rpn": rpn, "risk_level": levels[2 if raised else band],
                               "severity_override": raised, "rpn_points_below_critical": 200 - rpn}
        order.append((-rpn, -int(mode["severity"]), index, mode["name"]))
    ranking = [name for *_, name in sorted(order)]
    return {"modes": modes, "ranking": ranking, "top_priority": ranking[0],
            "top_risk_level": modes[ranking[0]]["risk_level"],
            "n_high_or_critical": sum(m["risk_level"] in ("high", "critical") for m in modes.values())}


# IEC 61508-1 Tables 2 and 3: (SIL, lowest value of the band, value the band stays below).
_SIL_LOW_DEMAND = ((4, 1e-5, 1e-4), (3, 1e-4, 1e-3), (2, 1e-3, 1e-2), (1, 1e-2, 1e-1))
_SIL_HIGH_DEMAND = ((4, 1e-9, 1e-8), (3, 1e-8, 1e-7), (2, 1e-7, 1e-6), (1, 1e-6, 1e-5))
# ISO 13849-1 Table 2: (PL, lowest PFH_D of the band, value the band stays below).
_PERFORMANCE_LEVELS = (("e", 1e-8, 1e-7), ("d", 1e-7, 1e-6), ("c", 1e-6, 3e-6), ("b", 3e-6, 1e-5),
                       ("a", 1e-5, 1e-4))


def _band(value: float, table: Sequence[tuple[Any, float, float]], below_table: Any, above_table: Any) -> Any:
    if value < table[0][1]:
        return below_table  # better than the table's best band: the best claim
    return next((label for label, low, high in table if low <= value < high), above_table)


@_derivation("sil_check")
def _sil_check(params: Mapping[str, Any], data: TruthData) -> dict[str, Any]:
    """IEC 61508-6 Annex B simplified PFDavg (no diagnostics, no repair time)."""
    lam, interval = float(params["lambda_du"]), float(params["proof_test_h"])
    if params["architecture"] == "1oo1":
        pfd = lam * interval / 2.0
    else:
        beta = float(params["beta"])
        pfd = ((1.0 - beta) * lam * interval) ** 2 / 3.0 + beta * lam * interval / 2.0
    achieved = _band(pfd, _SIL_LOW_DEMAND, 4, 0)
    required = int(params.get("required_sil", min(int(t) for t in params["targets"])))
    return {"pfd_avg": pfd, "achieved_sil": achieved, "risk_reduction_factor": 1.0 / pfd,
            "compliant": {str(t): pfd < 10.0 ** -int(t) for t in params["targets"]},
            "sil_margin": achieved - required}


@_derivation("sil_high_demand")
def _sil_high_demand(params: Mapping[str, Any], data: TruthData) -> dict[str, Any]:
    pfh, target = float(params["pfh"]), int(params["target_sil"])
    upper = {sil: high for sil, _, high in _SIL_HIGH_DEMAND}[target]
    achieved = _band(pfh, _SIL_HIGH_DEMAND, 4, 0)
    return {"achieved_sil": achieved, "compliant": pfh < upper, "sil_margin": achieved - target}


@_derivation("pl_check")
def _pl_check(params: Mapping[str, Any], data: TruthData) -> dict[str, Any]:
    achieved = _band(float(params["pfh_d"]), _PERFORMANCE_LEVELS, "e", "none")
    rank = ("none", "a", "b", "c", "d", "e")
    return {"achieved_pl": achieved, "compliant": rank.index(achieved) >= rank.index(params["required_pl"]),
            "pl_margin": rank.index(achieved) - rank.index(params["required_pl"])}


@_derivation("noise")
def _noise(params: Mapping[str, Any], data: TruthData) -> dict[str, Any]:
    """OSHA 29 CFR 1910.95: permitted time T(L) = 8 / 2^((L - 90) / 5) h. The PEL (paragraph
    (b)(2)) is exceeded when sum C/T over the levels of Table G-16 (90 dBA and up) exceeds unity;
    the hearing-conservation dose of Appendix A integrates 80-130 dBA (paragraph (d)(2)(i)), and
    its TWA = 16.61 log10(D / 100) + 90 is compared with the 85 dBA action level (D = 50 %)."""
    def dose_percent(floor_dba: float) -> float:
        fraction = 0.0
        for level, hours in zip(params["levels_dba"], params["hours"], strict=True):
            if level >= floor_dba:
                fraction += hours / (8.0 * 2.0 ** ((90.0 - level) / 5.0))
        return 100.0 * fraction

    dose, pel_dose = dose_percent(80.0), dose_percent(90.0)
    return {"dose_pct": dose, "twa_dba": 16.61 * math.log10(dose / 100.0) + 90.0, "pel_dose_pct": pel_dose,
            "over_pel": pel_dose > 100.0, "over_action_level": dose >= 50.0, "pel_dose_excess_pct": pel_dose - 100.0}


@_derivation("hand_arm")
def _hand_arm(params: Mapping[str, Any], data: TruthData) -> dict[str, Any]:
    """EU Directive 2002/44/EC: A(8) = sqrt(sum a_i^2 T_i / 8 h) against action / limit values."""
    energy = sum(a * a * h for a, h in zip(params["acceleration"], params["hours"], strict=True))
    a8 = math.sqrt(energy / 8.0)
    action, limit = (2.5, 5.0) if params["kind"] == "hand_arm" else (0.5, 1.15)
    return {"a8": a8, "over_action_value": a8 > action, "over_limit_value": a8 > limit,
            "percent_of_limit": a8 / limit * 100.0}


@_derivation("voltage_unbalance")
def _voltage_unbalance(params: Mapping[str, Any], data: TruthData) -> dict[str, Any]:
    """NEMA MG 1: 100 x max deviation from the average line voltage / the average."""
    volts = np.asarray(params["voltages"], dtype=np.float64)
    percent = 100.0 * float(np.max(np.abs(volts - volts.mean()))) / float(volts.mean())
    return {"unbalance_pct": percent, "derating_required": percent > 1.0, "not_recommended": percent > 5.0,
            "excess_over_derating_pct": percent - 1.0}


@_derivation("faa")
def _faa(params: Mapping[str, Any], data: TruthData) -> dict[str, Any]:
    """14 CFR 91.409: annual within 12 calendar months; for hire, a 100-hour inspection, which may
    be overflown by up to 10 hours to reach a place where it can be done."""
    hours, months = float(params["hours_since_100h"]), float(params["months_since_annual"])
    for_hire = bool(params["for_hire"])
    annual, hundred = months >= 12.0, for_hire and hours >= 100.0
    return {"annual_due": annual, "hundred_hour_due": hundred,
            "within_10h_ferry_allowance": for_hire and 100.0 < hours <= 110.0,
            "hundred_hour_overdue": for_hire and hours > 110.0, "may_fly_for_hire": not (annual or hundred)}


# =============================================================================================
# Raw data files (parsed here, not with the kernels' loaders)
# =============================================================================================

# The 14 informative sensors of the single-condition sets (Zheng 2017, Li 2018), 1-based s-numbers.
_HI_SENSORS = (2, 3, 4, 7, 8, 9, 11, 12, 13, 14, 15, 17, 20, 21)
# CWRU Bearing Data Center record numbers (0-3 hp loads) of the conditions in the data root.
_CWRU_CONDITION_OF_RECORD = {**dict.fromkeys(range(97, 101), "normal"),
                             **dict.fromkeys(range(105, 109), "inner_race"),
                             **dict.fromkeys(range(118, 122), "ball"),
                             **dict.fromkeys(range(130, 134), "outer_race")}


def _cwru_neutral_name(record: int) -> str:
    """The name agents see for a CWRU record, from the documented recipe (docs/mcp_agent_eval.md):
    ``cwru_bearing_`` plus the sha256 of ``sfbench-jax/cwru/v1:<record>`` in base 26, three letters,
    lowest digit first. Recomputed here, not imported from the server."""
    value = int.from_bytes(hashlib.sha256(f"sfbench-jax/cwru/v1:{record}".encode()).digest(), "big")
    letters = ""
    for _ in range(3):
        value, digit = divmod(value, 26)
        letters += chr(ord("a") + digit)
    return f"cwru_bearing_{letters}"


_CWRU_RECORD_OF_NAME = {_cwru_neutral_name(r): r for r in _CWRU_CONDITION_OF_RECORD}
assert len(_CWRU_RECORD_OF_NAME) == len(_CWRU_CONDITION_OF_RECORD), "two CWRU records share a neutral name"
# The normal-baseline files do not record their rate; 48 kHz is the reading the registry states.
_CWRU_NORMAL_FS_HZ = 48_000.0
_CWRU_FAULT_FS_HZ = 12_000.0


class TruthData:
    """Plain parsing of the shared data root, cached per file (C-MAPSS text, NASA battery
    parquet, CWRU ``.mat``)."""

    def __init__(self, root: str | Path | None) -> None:
        self.root = None if root is None else Path(root)

    def _path(self, relative: str) -> Path:
        if self.root is None:
            raise FileNotFoundError("this scenario's ground truth reads the real data: set "
                                    "SFBENCH_DATA_ROOT to the shared data folder")
        path = self.root / relative
        if not path.is_file():
            raise FileNotFoundError(f"{path} is missing: point the data root at the shared data folder")
        return path

    def cmapss_files(self, name: str) -> tuple[str, str, str]:
        """The train, test and RUL files of a C-MAPSS sub-dataset (``cmapss_fd001``..``004``)."""
        subset = re.search(r"fd00([1-4])", name.lower())
        if subset is None:
            raise KeyError(f"{name!r} is not a C-MAPSS sub-dataset (cmapss_fd001..cmapss_fd004)")
        k = subset.group(1)
        train, test, rul = (str(self._path(f"phm/cmapss/{kind}_fd00{k}.txt.gz")) for kind in ("train", "test", "rul"))
        return train, test, rul

    def cmapss(self, name: str) -> dict[str, np.ndarray]:
        """``train`` / ``test`` (rows x 26, NASA column order) and ``rul`` (one per test unit)."""
        return _read_cmapss(*self.cmapss_files(name))

    def battery(self, cell: str) -> dict[str, np.ndarray]:
        """Per discharge cycle: cycle, capacity (Ah), max / mean temperature (degC), min voltage,
        duration (s); per EIS measurement: Re, Rct (ohm)."""
        tag = cell.lower().removeprefix("nasa_battery_")
        return _read_battery(str(self._path(f"phm/nasa_battery/{tag}_discharge.parquet")),
                             str(self._path(f"phm/nasa_battery/{tag}_impedance.parquet")))

    def cwru(self, name: str) -> dict[str, Any]:
        """Drive-end signal, rpm, sampling rate and published condition of a CWRU record."""
        number = _CWRU_RECORD_OF_NAME.get(name, -1)
        if number not in _CWRU_CONDITION_OF_RECORD:
            raise KeyError(f"{name!r} is not a neutral CWRU recording name here; known names "
                           f"{sorted(_CWRU_RECORD_OF_NAME)}")
        if self.root is None:
            raise FileNotFoundError("the CWRU scenarios read the real data: set SFBENCH_DATA_ROOT")
        folder = self.root / "phm" / "cwru_bearing"
        matches = sorted(folder.glob(f"*_{number}.mat"))
        if len(matches) != 1:
            raise FileNotFoundError(f"expected one CWRU file for record {number} in {folder}, found {matches}")
        signal_de, rpm = _read_cwru(str(matches[0]), number)
        fs = _CWRU_NORMAL_FS_HZ if _CWRU_CONDITION_OF_RECORD[number] == "normal" else _CWRU_FAULT_FS_HZ
        return {"record": number, "drive_end": signal_de, "rpm": rpm, "fs_hz": fs,
                "condition": _CWRU_CONDITION_OF_RECORD[number]}


def _frozen(arrays: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Cached arrays are shared by every derivation: make them read-only."""
    for array in arrays.values():
        array.setflags(write=False)
    return arrays


@functools.lru_cache(maxsize=8)
def _read_cmapss(train: str, test: str, rul: str) -> dict[str, np.ndarray]:
    def table(path: str) -> np.ndarray:
        with gzip.open(path, "rt") as handle:
            return np.loadtxt(handle, dtype=np.float64)

    return _frozen({"train": table(train), "test": table(test), "rul": np.atleast_1d(table(rul))})


@functools.lru_cache(maxsize=8)
def _read_battery(discharge: str, impedance: str) -> dict[str, np.ndarray]:
    import pandas as pd  # only the battery files need it

    rows = pd.read_parquet(discharge, columns=["cycle_num", "Capacity", "Temperature_measured",
                                               "Voltage_measured", "Time"])
    per_cycle = rows.groupby("cycle_num", sort=True).agg(
        capacity_ah=("Capacity", "first"), max_temperature_c=("Temperature_measured", "max"),
        avg_temperature_c=("Temperature_measured", "mean"), min_voltage_v=("Voltage_measured", "min"),
        duration_s=("Time", "max"))
    eis = pd.read_parquet(impedance, columns=["cycle_num", "Re", "Rct"]).groupby("cycle_num", sort=True).first()
    out = {column: per_cycle[column].to_numpy(np.float64) for column in per_cycle.columns}
    out["cycle"] = per_cycle.index.to_numpy(np.int64)
    out["re_ohm"] = eis["Re"].to_numpy(np.float64)
    out["rct_ohm"] = eis["Rct"].to_numpy(np.float64)
    return _frozen(out)


@functools.lru_cache(maxsize=8)
def _read_cwru(path: str, number: int) -> tuple[np.ndarray, float]:
    from scipy.io import loadmat

    content = loadmat(path)
    drive_end = np.asarray(content[f"X{number:03d}_DE_time"], dtype=np.float64).ravel()
    drive_end.setflags(write=False)
    return drive_end, float(np.asarray(content[f"X{number:03d}RPM"]).ravel()[0])


# =============================================================================================
# C-MAPSS: true RUL, the linear health-index baseline (phm-reference 1.7), per-engine signals
# =============================================================================================


def _units(table: np.ndarray) -> list[np.ndarray]:
    """Rows of each unit, in unit order (unit id in column 0, cycle in column 1)."""
    ids = np.unique(table[:, 0])
    return [table[table[:, 0] == unit] for unit in ids]


def _regimes(train: np.ndarray, n_regimes: int) -> tuple[np.ndarray, np.ndarray]:
    """Operating-condition centroids: the n most frequent settings after rounding (altitude to
    0 dp, Mach to 2 dp, TRA to 0 dp), each centroid the mean of its rows' raw settings; distances
    in settings divided by their training standard deviation."""
    settings = train[:, 2:5]
    rounded = np.column_stack([np.round(settings[:, 0]), np.round(settings[:, 1], 2), np.round(settings[:, 2])])
    keys, inverse, counts = np.unique(rounded, axis=0, return_inverse=True, return_counts=True)
    chosen = sorted(sorted(range(keys.shape[0]), key=lambda k: -counts[k])[:n_regimes])
    centroids = np.stack([settings[inverse.ravel() == k].mean(axis=0) for k in chosen])
    spread = settings.std(axis=0)
    return centroids, np.where(spread > 0, spread, 1.0)


def _assign(settings: np.ndarray, centroids: np.ndarray, scale: np.ndarray) -> np.ndarray:
    distance = (((settings[:, None, :] - centroids[None, :, :]) / scale) ** 2).sum(axis=-1)
    return distance.argmin(axis=1)


@functools.lru_cache(maxsize=8)
def _health_index_rul(train_file: str, test_file: str, rul_file: str) -> np.ndarray:
    """Predicted RUL after each test unit's last cycle by the linear health-index baseline.

    Training: per-regime z-scores of the 14 sensors (training statistics, population std, 0 for a
    channel constant in a regime), least-squares HI = w0 + z w against a target going linearly from
    1 at cycle 1 to 0 at failure. Test unit: HI per cycle, exponential smoothing (alpha 0.1, started
    at the first HI), a least-squares line over the last 30 cycles, RUL = cycles until that line
    reaches 0 from its value at the last cycle, clipped to [0, 125] (125 when it does not fall).
    """
    data = _read_cmapss(train_file, test_file, rul_file)
    train, test = data["train"], data["test"]
    n_regimes = 6 if re.search(r"fd00[24]", train_file) else 1
    centroids, scale = _regimes(train, n_regimes)
    columns = [4 + s for s in _HI_SENSORS]
    regime_train = _assign(train[:, 2:5], centroids, scale)
    mean = np.stack([train[regime_train == r][:, columns].mean(axis=0) for r in range(n_regimes)])
    std = np.stack([train[regime_train == r][:, columns].std(axis=0) for r in range(n_regimes)])

    def normalised(table: np.ndarray) -> np.ndarray:
        regime = _assign(table[:, 2:5], centroids, scale)
        sd = std[regime]
        constant = sd < 1e-8
        return np.where(constant, 0.0, (table[:, columns] - mean[regime]) / np.where(constant, 1.0, sd))

    target = np.concatenate([(rows[-1, 1] - rows[:, 1]) / max(rows[-1, 1] - 1.0, 1.0) for rows in _units(train)])
    design = np.column_stack([np.ones(train.shape[0]), normalised(train)])
    weights = np.linalg.lstsq(design, target, rcond=None)[0]
    predictions = []
    for rows in _units(test):
        hi = weights[0] + normalised(rows) @ weights[1:]
        smooth = np.empty_like(hi)
        level = hi[0]
        for i, value in enumerate(hi):
            level = 0.1 * value + 0.9 * level
            smooth[i] = level
        tail = np.arange(hi.size)[-30:].astype(np.float64)
        slope, intercept = np.polyfit(tail, smooth[-30:], 1)
        at_last = intercept + slope * (hi.size - 1)
        predictions.append(min(max(at_last / -slope, 0.0), 125.0) if slope < 0 else 125.0)
    return np.asarray(predictions)


def _cmapss_truth_and_prediction(data: TruthData, name: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Test unit ids, true RUL (the RUL file) and the baseline's predictions."""
    tables = data.cmapss(name)
    ids = np.unique(tables["test"][:, 0]).astype(int)
    if ids.size != tables["rul"].size:
        raise ValueError(f"{name}: {ids.size} test units but {tables['rul'].size} RUL lines")
    return ids, tables["rul"].astype(np.float64), _health_index_rul(*data.cmapss_files(name))


def _regression_errors(truth: np.ndarray, predicted: np.ndarray) -> dict[str, float]:
    """MAE, RMSE and the PHM08 score (Saxena et al. 2008: e^(-d/13) - 1 early, e^(d/10) - 1 late)."""
    d = predicted - truth
    score = sum(math.exp(-x / 13.0) - 1.0 if x < 0 else math.exp(x / 10.0) - 1.0 for x in d.tolist())
    return {"mae": float(np.abs(d).mean()), "rmse": math.sqrt(float((d * d).mean())), "phm08": score}


def _lowest(ids: np.ndarray, values: np.ndarray, count: int) -> list[int]:
    """``count`` ids with the smallest values, ties by id."""
    return [int(u) for _, u in sorted(zip(values.tolist(), ids.tolist(), strict=True))[:count]]


@_derivation("cmapss_rul_fleet")
def _cmapss_rul_fleet(params: Mapping[str, Any], data: TruthData) -> dict[str, Any]:
    ids, truth, predicted = _cmapss_truth_and_prediction(data, params["dataset"])
    top_n, tolerance = int(params.get("top_n", 10)), float(params.get("tolerance", 0.2))
    errors = _regression_errors(truth, predicted)
    true_top, predicted_top = _lowest(ids, truth, top_n), _lowest(ids, predicted, top_n)
    overlap = len(set(true_top) & set(predicted_top)) / top_n
    urgent = predicted_top[0]
    return {"units": {"ids": ids.tolist(), "rul": truth.tolist()}, "n_units": int(ids.size),
            "top_risk_by_true_rul": true_top,
            "reference": {**errors, "top_risk_overlap": overlap, "most_urgent_unit": urgent,
                          "most_urgent_predicted_rul": float(predicted[list(ids).index(urgent)]),
                          "runner_up_gap": float(predicted[list(ids).index(predicted_top[1])]
                                                 - predicted[list(ids).index(urgent)])},
            "mae_range": [(1.0 - tolerance) * errors["mae"], (1.0 + tolerance) * errors["mae"]],
            "rmse_range": [(1.0 - tolerance) * errors["rmse"], (1.0 + tolerance) * errors["rmse"]],
            "min_top_risk_overlap": max(0.0, overlap - 0.1)}


@_derivation("cmapss_rul_acceptance")
def _cmapss_rul_acceptance(params: Mapping[str, Any], data: TruthData) -> dict[str, Any]:
    _, truth, predicted = _cmapss_truth_and_prediction(data, params["dataset"])
    errors = _regression_errors(truth, predicted)
    mae_ok = params["mae_range"][0] <= errors["mae"] <= params["mae_range"][1]
    rmse_ok = params["rmse_range"][0] <= errors["rmse"] <= params["rmse_range"][1]
    return {**errors, "mae_ok": mae_ok, "rmse_ok": rmse_ok, "meets_acceptance": mae_ok and rmse_ok}


@_derivation("cmapss_units_rul")
def _cmapss_units_rul(params: Mapping[str, Any], data: TruthData) -> dict[str, Any]:
    ids, truth, predicted = _cmapss_truth_and_prediction(data, params["dataset"])
    index = {int(u): i for i, u in enumerate(ids)}
    chosen = [int(u) for u in params["units"]]
    urgent = min(chosen, key=lambda u: (predicted[index[u]], u))
    return {"predicted_rul": {str(u): float(predicted[index[u]]) for u in chosen}, "most_urgent_unit": urgent,
            "true_rul": {str(u): float(truth[index[u]]) for u in chosen}}


@_derivation("cmapss_urgent_schedule")
def _cmapss_urgent_schedule(params: Mapping[str, Any], data: TruthData) -> dict[str, Any]:
    ids, truth, predicted = _cmapss_truth_and_prediction(data, params["dataset"])
    unit = int(params.get("unit") or _lowest(ids, predicted, 1)[0])
    position = list(ids).index(unit)
    plan = _schedule(float(predicted[position]), float(params["rul_std"]), float(params["preventive_cost"]),
                     float(params["failure_cost"]))
    return {"most_urgent_unit": unit, "predicted_rul": float(predicted[position]),
            "true_rul": float(truth[position]), "maintain_in": plan["maintain_in"],
            "p_fail_before": plan["p_fail_before"]}


def _unit_table(data: TruthData, params: Mapping[str, Any]) -> np.ndarray:
    table = data.cmapss(params["dataset"])[params["split"]]
    rows = table[table[:, 0] == int(params["unit"])]
    return rows[np.argsort(rows[:, 1])]


def _sensor_column(sensor: str) -> int:
    return 4 + int(sensor.removeprefix("s"))


@_derivation("sensor_trend")
def _sensor_trend(params: Mapping[str, Any], data: TruthData) -> dict[str, Any]:
    rows = _unit_table(data, params)
    trend = _mann_kendall(rows[:, _sensor_column(params["sensor"])])
    return {"trend": trend["trend"], "sen_slope": trend["sen_slope"], "n_cycles": int(rows.shape[0])}


def _debounced(exceed: Sequence[bool], persistence: int) -> tuple[list[bool], int]:
    """Flags once ``persistence`` exceedances in a row have occurred; the number of flagged runs."""
    flags, run, events = [], 0, 0
    for hit in exceed:
        run = run + 1 if hit else 0
        events += run == persistence
        flags.append(run >= persistence)
    return flags, events


def _zscore_detector(series: np.ndarray, *, window: int = 10, threshold: float = 3.0, persistence: int = 3,
                     gated: bool = True) -> tuple[list[bool], int]:
    """Spec 5.4 detector on one series: z against a baseline of ``window`` samples (population std,
    floored at 1e-8), nothing before ``window``; ``gated`` baseline = the first ``window`` samples,
    then a ring buffer that admits only samples that did not exceed; otherwise frozen (reference)."""
    values = [float(v) for v in series]
    buffer, slot, exceed = list(values[:window]), 0, [False] * window
    for value in values[window:]:
        centre = sum(buffer) / window
        spread = math.sqrt(sum((b - centre) ** 2 for b in buffer) / window)
        hit = abs(value - centre) / max(spread, 1e-8) > threshold
        exceed.append(hit)
        if gated and not hit:
            buffer[slot] = value
            slot = (slot + 1) % window
    return _debounced(exceed, persistence)


@_derivation("engine_signals")
def _engine_signals(params: Mapping[str, Any], data: TruthData) -> dict[str, Any]:
    rows = _unit_table(data, params)
    departing, first = [], None
    for sensor in params["sensors"]:
        flags, events = _zscore_detector(rows[:, _sensor_column(sensor)], window=int(params["window"]),
                                         threshold=float(params["threshold"]),
                                         persistence=int(params["min_persistence"]), gated=False)
        if events:
            departing.append(sensor)
            cycle = int(rows[flags.index(True), 1])
            first = cycle if first is None else min(first, cycle)
    return {"first_anomalous_cycle": first, "anomalous_sensors": departing,
            "n_anomalous_sensors": len(departing), "n_cycles": int(rows.shape[0])}


# =============================================================================================
# NASA PCoE batteries (phm-reference 5.1-5.8)
# =============================================================================================

_FEATURES = ("capacity_ah", "max_temperature_c", "avg_temperature_c", "min_voltage_v", "duration_s")
_EOL_AH, _RATED_AH = 1.4, 2.0


def _observed_eol(cell: Mapping[str, np.ndarray]) -> int | None:
    """First discharge cycle with capacity below 1.4 Ah (None when the test never reached it)."""
    below = [int(c) for c, q in zip(cell["cycle"], cell["capacity_ah"], strict=True) if q < _EOL_AH]
    return below[0] if below else None


def _fade_prediction(cell: Mapping[str, np.ndarray], model: str, observed: int) -> dict[str, float]:
    """Linear: least squares C = b0 + b1 k over the first ``observed`` cycles, k* = (1.4 - b0)/b1.
    Empirical: least squares ln C = ln C0 - lambda k, k* = ln(C0 / 1.4) / lambda (the Arrhenius
    factor at the cell's own temperature multiplies and divides lambda, so it cancels).
    RUL = k* - last observed cycle (0 once below 1.4 Ah, inf without fade)."""
    k = cell["cycle"][:observed].astype(np.float64)
    capacity = cell["capacity_ah"][:observed]
    if model == "linear":
        slope, intercept = np.polyfit(k, capacity, 1)
        k_eol = (_EOL_AH - intercept) / slope if slope < 0 else math.inf
    else:
        slope, log_c0 = np.polyfit(k, np.log(capacity), 1)
        k_eol = (log_c0 - math.log(_EOL_AH)) / -slope if slope < 0 else math.inf
    rul = 0.0 if capacity[-1] < _EOL_AH else max(k_eol - k[-1], 0.0)
    return {"rul": rul, "k_eol": k_eol}


@_derivation("battery_rul")
def _battery_rul(params: Mapping[str, Any], data: TruthData) -> dict[str, Any]:
    cell = data.battery(params["battery_id"])
    observed = int(params["observed_cycles"])
    prediction = _fade_prediction(cell, params["model"], observed)
    eol = _observed_eol(cell)
    predicted_eol = _finite_or_none(prediction["k_eol"])
    return {"predicted_rul": _finite_or_none(prediction["rul"]), "predicted_eol_cycle": predicted_eol,
            "soh_first_at_last_cycle": float(cell["capacity_ah"][-1] / cell["capacity_ah"][0]),
            "actual_eol_cycle": eol, "eol_observed": eol is not None,
            "actual_rul": None if eol is None else eol - observed,
            "prediction_error_cycles": None if eol is None or predicted_eol is None else predicted_eol - eol}


@_derivation("battery_rul_compare")
def _battery_rul_compare(params: Mapping[str, Any], data: TruthData) -> dict[str, Any]:
    cell = data.battery(params["battery_id"])
    observed = int(params["observed_cycles"])
    eol = _observed_eol(cell)
    if eol is None:
        raise ValueError(f"battery {params['battery_id']!r} never fell below {_EOL_AH} Ah in its recorded cycles: "
                         "there is no end of life to compare the predictions with; pick a battery that reached it")
    out: dict[str, Any] = {"actual_eol_cycle": eol}
    miss = {}
    for model in ("linear", "empirical"):
        prediction = _fade_prediction(cell, model, observed)
        out[f"{model}_predicted_rul"] = _finite_or_none(prediction["rul"])
        out[f"{model}_predicted_eol_cycle"] = _finite_or_none(prediction["k_eol"])
        miss[model] = abs(prediction["k_eol"] - eol)
    out["closer_model"] = "linear" if miss["linear"] <= miss["empirical"] else "empirical"
    return out


def _stage(soh_rated: float) -> str:
    """HEALTHY > 0.9 >= EARLY_DEGRADATION > 0.8 >= ACCELERATED_DEGRADATION > 0.7 >= EOL."""
    if soh_rated <= 0.7:
        return "EOL"
    if soh_rated <= 0.8:
        return "ACCELERATED_DEGRADATION"
    return "EARLY_DEGRADATION" if soh_rated <= 0.9 else "HEALTHY"


@_derivation("battery_soh_stage")
def _battery_soh_stage(params: Mapping[str, Any], data: TruthData) -> dict[str, Any]:
    cell = data.battery(params["battery_id"])
    capacity = float(cell["capacity_ah"][int(params["cycle"]) - 1])
    return {"soh_first_cycle": capacity / float(cell["capacity_ah"][0]), "soh_rated": capacity / _RATED_AH,
            "capacity_ah": capacity, "stage": _stage(capacity / _RATED_AH), "eol_cycle": _observed_eol(cell)}


def _cell_anomalies(cell: Mapping[str, np.ndarray]) -> dict[str, tuple[list[bool], int]]:
    return {feature: _zscore_detector(cell[feature]) for feature in _FEATURES}


def _first_anomalous_cycle(cell: Mapping[str, np.ndarray]) -> int | None:
    flagged = [i for flags, _ in _cell_anomalies(cell).values() for i, f in enumerate(flags) if f]
    return int(cell["cycle"][min(flagged)]) if flagged else None


@_derivation("battery_anomaly")
def _battery_anomaly(params: Mapping[str, Any], data: TruthData) -> dict[str, Any]:
    cell = data.battery(params["battery_id"])
    events = {feature: n for feature, (_, n) in _cell_anomalies(cell).items()}
    return {"first_anomalous_cycle": _first_anomalous_cycle(cell),
            "flagged_features": [f for f in _FEATURES if events[f] > 0],
            "capacity_flagged": events["capacity_ah"] > 0}


@_derivation("battery_baseline")
def _battery_baseline(params: Mapping[str, Any], data: TruthData) -> dict[str, Any]:
    """Spec 5.7: per cycle, z = (x - fleet median) / (1.4826 fleet MAD); an outlier needs three
    cycles in a row with |z| > 3."""
    feature = params.get("feature", "capacity_ah")
    cell = data.battery(params["battery_id"])
    fleet = [data.battery(b) for b in params["baseline_ids"]]
    length = min(len(c["cycle"]) for c in [cell, *fleet])
    members = np.stack([member[feature][:length] for member in fleet])
    centre = np.median(members, axis=0)
    spread = 1.4826 * np.median(np.abs(members - centre), axis=0)
    z = (cell[feature][:length] - centre) / np.maximum(spread, 1e-8)
    _, events = _debounced((np.abs(z) > 3.0).tolist(), 3)
    return {"is_outlier": events > 0, "n_events": events, "n_cycles_compared": length,
            "worst_deviation_in_thresholds": float(np.max(np.abs(z))) / 3.0}


def _reverting_jumps(series: np.ndarray, *, jump_mad: float = 5.0, revert_within: int = 2) -> set[int]:
    """Points of isolated jumps: x_i leaves x_{i-1} by more than 5 robust standard deviations of the
    first differences (1.4826 MAD) and x_{i+s} returns within that limit of x_{i-1} for some
    s <= 2 (the smallest); the points i .. i+s-1 are the jump."""
    x = np.asarray(series, dtype=np.float64)
    steps = np.diff(x)
    limit = jump_mad * max(1.4826 * float(np.median(np.abs(steps - np.median(steps)))),
                           float(np.finfo(np.float64).eps) * float(np.max(np.abs(x))))
    marked: set[int] = set()
    for i in range(1, x.size):
        if abs(x[i] - x[i - 1]) <= limit:
            continue
        for span in range(1, revert_within + 1):
            if i + span < x.size and abs(x[i + span] - x[i - 1]) <= limit:
                marked.update(range(i, i + span))
                break
    return marked


@_derivation("battery_labels")
def _battery_labels(params: Mapping[str, Any], data: TruthData) -> dict[str, Any]:
    cell = data.battery(params["battery_id"])
    re_ohm, rct_ohm = cell["re_ohm"], cell["rct_ohm"]
    resistance = re_ohm + rct_ohm
    # Impedance trend analyser (phm-reference 5.8): sensor fault first, then the cleaned Mann-Kendall trend.
    jumps = _reverting_jumps(re_ohm) | _reverting_jumps(rct_ohm)
    bad = jumps | {i for i in range(re_ohm.size) if re_ohm[i] <= 0 or rct_ohm[i] <= 0}
    cleaned = _mann_kendall([v for i, v in enumerate(resistance) if i not in bad])
    degrading = cleaned["trend"] == "INCREASING"
    impedance = "sensor_fault" if bad else ("real_degradation" if degrading else "inconclusive")
    # Thermal checker: a spike is max temperature > 5 degC above the median of up to 10 previous
    # cycles; otherwise a rising resistance with a rising average temperature.
    hottest = cell["max_temperature_c"]
    spikes = [t for t in range(1, hottest.size) if hottest[t] - np.median(hottest[max(0, t - 10):t]) > 5.0]
    resistance_trend = _mann_kendall(resistance)["trend"]
    warming = _mann_kendall(cell["avg_temperature_c"])["sen_slope"] > 0
    thermal = ("thermal_spike" if spikes else
               "internal_resistance_rise" if resistance_trend == "INCREASING" and warming else "normal_aging")
    return {"impedance_label": impedance, "impedance_jump_points": len(jumps),
            "degradation_after_cleaning": degrading, "thermal_label": thermal,
            "thermal_spike_detected": bool(spikes), "thermal_spike_active": hottest.size - 1 in spikes,
            "resistance_trend": resistance_trend, "re_first_ohm": float(re_ohm[0]), "re_last_ohm": float(re_ohm[-1]),
            "rct_first_ohm": float(rct_ohm[0]), "rct_last_ohm": float(rct_ohm[-1]),
            "first_anomalous_cycle": _first_anomalous_cycle(cell), "n_cycles": int(cell["capacity_ah"].size)}


@_derivation("battery_health_report")
def _battery_health_report(params: Mapping[str, Any], data: TruthData) -> dict[str, Any]:
    """Triage (first match): emergency (EOL, RUL <= 10 or a spike on the report's cycle), urgent
    (ACCELERATED_DEGRADATION or RUL <= 30), elevated (EARLY_DEGRADATION or an anomaly flag by
    then), routine."""
    cell = data.battery(params["battery_id"])
    cycle = int(params["cycle"])
    stage = _stage(float(cell["capacity_ah"][cycle - 1]) / _RATED_AH)
    first = _first_anomalous_cycle(cell)
    hottest = cell["max_temperature_c"][:cycle]
    last = cycle - 1
    spike_now = last >= 1 and hottest[last] - np.median(hottest[max(0, last - 10):last]) > 5.0
    rul = _fade_prediction(cell, "linear", cycle)["rul"]
    if stage == "EOL" or rul <= 10.0 or spike_now:
        level = "emergency"
    elif stage == "ACCELERATED_DEGRADATION" or rul <= 30.0:
        level = "urgent"
    elif stage == "EARLY_DEGRADATION" or (first is not None and first <= cycle):
        level = "elevated"
    else:
        level = "routine"
    return {"triage_level": level, "stage": stage, "predicted_rul": _finite_or_none(rul)}


@_derivation("battery_schedule")
def _battery_schedule(params: Mapping[str, Any], data: TruthData) -> dict[str, Any]:
    cell = data.battery(params["battery_id"])
    observed = int(params["observed_cycles"])
    rul = _fade_prediction(cell, "linear", observed)["rul"]
    plan = _schedule(rul, float(params["rul_std"]), float(params["preventive_cost"]), float(params["failure_cost"]),
                     params.get("safety_margin"))
    return {"predicted_rul": rul, "maintain_in": plan["maintain_in"],
            "replace_at_cycle": observed + plan["maintain_in"], "p_fail_before": plan["p_fail_before"]}


# =============================================================================================
# CWRU: envelope analysis (Randall & Antoni 2011) with harmonic matching (protocol 4.3 conventions)
# =============================================================================================


def _averaged_envelope_spectrum(x: np.ndarray, fs: float, band: Sequence[float]) -> tuple[np.ndarray, np.ndarray]:
    """Mean over whole 1-second segments of the envelope's single-sided amplitude spectrum; the
    band-pass keeps FFT bins inside ``band`` and the envelope is |hilbert(band-passed)|."""
    length = round(fs)
    segments = x[: (x.size // length) * length].reshape(-1, length)
    freqs = np.fft.rfftfreq(length, 1.0 / fs)
    total = np.zeros(freqs.size)
    full = np.fft.fftfreq(length, 1.0 / fs)
    keep = (np.abs(full) >= band[0]) & (np.abs(full) <= band[1])
    for segment in segments:
        centred = segment - segment.mean()
        passed = np.fft.ifft(np.where(keep, np.fft.fft(centred), 0.0)).real
        envelope = np.abs(signal.hilbert(passed))
        total += np.abs(np.fft.rfft(envelope - envelope.mean())) * 2.0 / length
    return freqs, total / segments.shape[0]


def _harmonic_snr(freqs: np.ndarray, amplitude: np.ndarray, target_hz: float) -> list[float]:
    """SNR (dB) of the largest bin within +/-2 % of k f (k = 1, 2, 3) over the median of the bins
    5 < |offset| <= 50 around it."""
    out = []
    for k in (1, 2, 3):
        centre = k * target_hz
        inside = np.flatnonzero(np.abs(freqs - centre) <= 0.02 * centre)
        if inside.size == 0:
            out.append(-math.inf)
            continue
        peak = int(inside[np.argmax(amplitude[inside])])
        neighbours = [peak + o for o in range(-50, 51) if abs(o) > 5 and 0 <= peak + o < freqs.size]
        floor = float(np.median(amplitude[neighbours]))
        tiny = np.finfo(np.float64).tiny
        out.append(20.0 * math.log10(max(float(amplitude[peak]), tiny) / max(floor, tiny)))
    return out


def _envelope_label(record: Mapping[str, Any], band: Sequence[float]) -> str:
    """outer_race / inner_race / ball (2 x BSF) by the detected target with the largest summed
    positive harmonic SNR; detected = the fundamental and at least 2 of 3 harmonics >= 10 dB;
    normal when nothing is detected."""
    freqs = _defect_frequencies(record["rpm"], *_CWRU_BEARINGS["cwru_drive_end"])
    spectrum = _averaged_envelope_spectrum(record["drive_end"], record["fs_hz"], band)
    best, best_score = "normal", -math.inf
    for label, key in (("outer_race", "bpfo"), ("inner_race", "bpfi"), ("ball", "bsf2")):
        snr = _harmonic_snr(*spectrum, freqs[key])
        detected = snr[0] >= 10.0 and sum(s >= 10.0 for s in snr) >= 2
        score = sum(s for s in snr if s > 0)
        if detected and score > best_score:
            best, best_score = label, score
    return best


@_derivation("bearing_fleet")
def _bearing_fleet(params: Mapping[str, Any], data: TruthData) -> dict[str, Any]:
    band = tuple(params.get("band_hz", (2000.0, 4000.0)))
    records = list(params["records"])
    loaded = [data.cwru(r) for r in records]
    truth = [r["condition"] for r in loaded]
    labels = [_envelope_label(r, band) for r in loaded]
    return {"conditions": {"ids": records, "labels": truth},
            "envelope_labels": dict(zip(records, labels, strict=True)),
            "envelope_accuracy": sum(t == p for t, p in zip(truth, labels, strict=True)) / len(records)}


@_derivation("bearing_single")
def _bearing_single(params: Mapping[str, Any], data: TruthData) -> dict[str, Any]:
    record = data.cwru(params["record"])
    freqs = _defect_frequencies(record["rpm"], *_CWRU_BEARINGS["cwru_drive_end"])
    out: dict[str, Any] = {"condition": record["condition"], "rpm": record["rpm"], "bpfo_hz": freqs["bpfo"],
                           "bpfi_hz": freqs["bpfi"], "bsf2_hz": freqs["bsf2"]}
    out.update({f"{name}_cpm": 60.0 * freqs[name] for name in ("bpfo", "bpfi", "bsf2")})  # cycles per minute
    if "band_hz" in params:
        label = _envelope_label(record, params["band_hz"])
        out.update(envelope_label=label, envelope_correct=label == record["condition"],
                   envelope_accuracy=1.0 if label == record["condition"] else 0.0,
                   defect_missed=record["condition"] != "normal" and label == "normal")
    return out
