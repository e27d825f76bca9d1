"""Li-ion battery kernels for the NASA PCoE cells (phm-reference 5).

What lives here: state of health against the first cycle and the rated capacity with the
1.4 Ah end-of-life rule (5.2), the four-stage degradation classifier with optional rate
escalation (5.3), linear capacity-fade RUL (5.5), the log-linear exponential fade fit with an
Arrhenius temperature factor (5.6), the robust fleet-baseline comparison (5.7) and the composite
battery tools (5.8): thermal anomaly checker, impedance trend analyser and health-report triage.
Line fits and their R^2 come from ``trends.weighted_line_fit`` / ``trends.weighted_r2``.

Conventions: a cycle is a discharge cycle; capacities in Ah (rated 2.0 Ah, EOL 1.4 Ah, i.e.
30 % fade); temperatures in kelvin inside kernels (only differences matter for the thermal
checker, so kelvin and Celsius give the same answer there). Every threshold is a keyword with
the spec's default, and results echo codes that index the module-level label tuples.

What does not live here: the debounced rolling z-score anomaly detector (5.4, PHMForge's
``anomaly_detector``), which serves battery features and turbofan sensors alike and so lives in
``trends.py`` (``rolling_zscore_anomaly_core`` stays importable from here for existing callers);
reading the parquet files and per-cycle feature extraction (``loaders.py``); the
double-exponential (He et al. 2011) fade model (needs an iterative fit).
"""

# jaxtyping shape strings (e.g. "n", "batch time") are not forward references:
# ruff: noqa: F821, UP037

from __future__ import annotations

import functools
from typing import Literal, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, ArrayLike, Bool, Float, Int, Real

from phm_kernels._checks import (
    as_float,
    option_index,
    require_finite,
    require_increasing,
    require_min_length,
    require_range,
    to_numpy,
)
from phm_kernels._ops import guard, masked_median
from phm_kernels.errors import DomainError, InsufficientDataError, ShapeMismatchError
from phm_kernels.trends import (
    MannKendall,
    debounce_exceedances,
    mann_kendall_core,
    rolling_zscore_anomaly_core,
    weighted_line_fit,
    weighted_r2,
)

__all__ = [
    "BATTERY_STAGES",
    "DEFAULT_ACTIVATION_ENERGY_J_MOL",
    "EOL_CAPACITY_AH",
    "FADE_STATUS",
    "GAS_CONSTANT_J_MOL_K",
    "IMPEDANCE_LABELS",
    "RATED_CAPACITY_AH",
    "SOH_REFERENCES",
    "THERMAL_LABELS",
    "TRIAGE_LEVELS",
    "T_REF_K",
    "BaselineComparison",
    "BatterySoh",
    "ExpFadeFit",
    "ExpFadeRul",
    "ImpedanceTrend",
    "LinearFadeRul",
    "StageEscalation",
    "ThermalCheck",
    "arrhenius_factor",
    "arrhenius_factor_core",
    "battery_soh",
    "battery_soh_core",
    "battery_stage",
    "battery_stage_core",
    "battery_stage_escalated",
    "battery_stage_escalated_core",
    "celsius_to_kelvin",
    "compare_to_baseline",
    "compare_to_baseline_core",
    "exp_fade_fit",
    "exp_fade_fit_core",
    "exp_fade_rul",
    "exp_fade_rul_core",
    "health_report_triage",
    "health_report_triage_core",
    "impedance_trend_analyzer",
    "impedance_trend_analyzer_core",
    "linear_fade_rul",
    "linear_fade_rul_core",
    # Re-exported: the detector moved to trends; existing callers (benchmarks) import it here.
    "rolling_zscore_anomaly_core",
    "thermal_anomaly_checker",
    "thermal_anomaly_checker_core",
    "validate_capacity",
]

#: NASA PCoE 18650 cells: rated capacity (Ah).
RATED_CAPACITY_AH = 2.0
#: End of life: 30 % fade of the rated capacity (Ah). B0038-B0040 used 1.6 Ah (20 %) instead.
EOL_CAPACITY_AH = 1.4
#: Molar gas constant R, J/(mol K).
GAS_CONSTANT_J_MOL_K = 8.314462618
#: Arrhenius reference temperature, K (25 degC).
T_REF_K = 298.15
#: Activation energy prior from Wang et al. 2011 (graphite/LiFePO4, not the NASA chemistry).
DEFAULT_ACTIVATION_ENERGY_J_MOL = 31_700.0
#: SOH references: first discharge cycle (PHMForge default) or the rated capacity.
SOH_REFERENCES = ("first", "rated")
#: Degradation stages (codes 0..3), cut-points 0.90 / 0.80 / 0.70 on SOH_rated.
BatteryStage = Literal["HEALTHY", "EARLY_DEGRADATION", "ACCELERATED_DEGRADATION", "EOL"]
BATTERY_STAGES: tuple[BatteryStage, ...] = ("HEALTHY", "EARLY_DEGRADATION", "ACCELERATED_DEGRADATION", "EOL")
#: Status codes of the fade RUL kernels.
FADE_STATUS = ("ok", "no_fade", "eol_reached")
#: Labels of :func:`thermal_anomaly_checker` (first match wins, in this order of checks:
#: thermal_spike, internal_resistance_rise, normal_aging).
ThermalLabel = Literal["normal_aging", "thermal_spike", "internal_resistance_rise"]
THERMAL_LABELS: tuple[ThermalLabel, ...] = ("normal_aging", "thermal_spike", "internal_resistance_rise")
#: Labels of :func:`impedance_trend_analyzer` (first match wins: sensor_fault,
#: real_degradation, inconclusive).
ImpedanceLabel = Literal["sensor_fault", "real_degradation", "inconclusive"]
IMPEDANCE_LABELS: tuple[ImpedanceLabel, ...] = ("sensor_fault", "real_degradation", "inconclusive")
#: Triage levels of :func:`health_report_triage`, least to most severe.
TriageLevel = Literal["routine", "elevated", "urgent", "emergency"]
TRIAGE_LEVELS: tuple[TriageLevel, ...] = ("routine", "elevated", "urgent", "emergency")

Scalar = Float[Array, "*batch"]


def celsius_to_kelvin(temperature_c):
    """Converts degC to K (``+ 273.15``); for adapters, since kernels take kelvin."""
    return np.asarray(temperature_c, dtype=np.float64) + 273.15


def validate_capacity(capacity, *, rated_ah=RATED_CAPACITY_AH, name="capacity",
                      min_length=1) -> np.ndarray:
    """Checks capacities: finite, > 0 and <= 1.2 x rated (else it is probably mAh)."""
    arr = to_numpy(name, capacity, min_ndim=1)
    require_finite(name, arr)
    require_range(name, arr, lo=0.0, lo_open=True)
    rated = float(to_numpy("rated_ah", rated_ah, ndim=0))
    if rated <= 0:
        raise DomainError(f"rated_ah must be > 0; got {rated:g}.")
    if np.any(arr > 1.2 * rated):
        raise DomainError(f"{name} has values up to {arr.max():g}, above 1.2 x rated_ah "
                          f"({1.2 * rated:g} Ah): these look like mAh. Pass capacities in Ah.")
    require_min_length(name, arr, min_length)
    return arr


def _validate_cycles(cycles, capacity_arr):
    cyc = to_numpy("cycles", cycles, min_ndim=1)
    if cyc.shape != capacity_arr.shape:
        raise ShapeMismatchError(f"cycles and capacity must have the same shape; got "
                                 f"{cyc.shape} and {capacity_arr.shape}.")
    require_finite("cycles", cyc)
    require_increasing("cycles", cyc)
    return cyc


# ---------------------------------------------------------------------------------------------
# 5.2 SOH
# ---------------------------------------------------------------------------------------------


class BatterySoh(NamedTuple):
    """Result of :func:`battery_soh` for one cell (T cycles).

    Attributes:
        soh_first: ``C_k / C_1``.
        soh_rated: ``C_k / rated_ah``.
        fade_pct: ``100 (1 - SOH)`` of the primary reference.
        eol_reached: ``C_k < eol_ah`` per cycle.
        eol_index: First 0-based index with ``C_k < eol_ah``; -1 if never (censored).
    """

    soh_first: Float[Array, "*batch cycles"]
    soh_rated: Float[Array, "*batch cycles"]
    fade_pct: Float[Array, "*batch cycles"]
    eol_reached: Bool[Array, "*batch cycles"]
    eol_index: Int[Array, "*batch"]


@functools.partial(jax.jit, static_argnames=("reference",))
def battery_soh_core(capacity, rated_ah=RATED_CAPACITY_AH, eol_ah=EOL_CAPACITY_AH, mask=None, *,
                     reference: str = "first") -> BatterySoh:
    """Jitted core of :func:`battery_soh` for one cell; ``mask`` marks valid (unpadded) cycles."""
    cap = as_float(capacity)
    valid = jnp.ones(cap.shape, bool) if mask is None else jnp.asarray(mask, bool)
    soh_first = cap / cap[0]
    soh_rated = cap / as_float(rated_ah)
    primary = soh_first if reference == "first" else soh_rated
    below = (cap < as_float(eol_ah)) & valid
    first = jnp.argmax(below)
    eol_index = jnp.where(jnp.any(below), first, -1).astype(jnp.int32)
    positive = cap > 0
    return BatterySoh(guard(positive, soh_first), guard(positive, soh_rated),
                      guard(positive, 100.0 * (1.0 - primary)), below, eol_index)


def battery_soh(capacity: Real[ArrayLike, "cycles"], *, reference: str = "first",
                rated_ah: float = RATED_CAPACITY_AH,
                eol_ah: float = EOL_CAPACITY_AH) -> BatterySoh:
    """State of health per discharge cycle (PHMForge's capacity_soh_calculator).

    ``SOH_first = C_k / C_1`` (primary by default) and ``SOH_rated = C_k / 2.0 Ah``; EOL is the
    first cycle with ``C_k < 1.4 Ah`` (-1 when never reached: report it as censored, never
    extrapolate silently).

    Args:
        capacity: Discharge capacities in Ah, in cycle order, shape (T,).
        reference: "first" or "rated": which SOH ``fade_pct`` uses.
        rated_ah: Rated capacity, Ah.
        eol_ah: End-of-life capacity, Ah.

    Returns:
        BatterySoh.

    Raises:
        DomainError: Non-positive capacities or values > 1.2 x rated (mAh given as Ah).

    Example:
        >>> r = battery_soh([1.856, 1.62])
        >>> round(float(r.soh_first[-1]), 6), round(float(r.soh_rated[-1]), 6)
        (0.872845, 0.81)
    """
    reference = SOH_REFERENCES[option_index("reference", reference, SOH_REFERENCES)]
    arr = validate_capacity(capacity, rated_ah=rated_ah)
    if arr.ndim != 1:
        raise ShapeMismatchError(f"capacity must be 1-D (one cell); got shape {arr.shape}. vmap "
                                 "battery_soh_core over cells.")
    eol = to_numpy("eol_ah", eol_ah, ndim=0)
    require_range("eol_ah", eol, lo=0.0, hi=float(rated_ah), lo_open=True)
    return battery_soh_core(capacity, rated_ah, eol_ah, reference=reference)


# ---------------------------------------------------------------------------------------------
# 5.3 Stage
# ---------------------------------------------------------------------------------------------


def _validate_cut_points(cut_points):
    cuts = to_numpy("cut_points", cut_points, ndim=1)
    if cuts.shape != (3,) or np.any(np.diff(cuts) >= 0):
        raise DomainError(f"cut_points must be 3 decreasing SOH values (default 0.9, 0.8, 0.7); "
                          f"got {cuts.tolist()}.")
    return cuts


@jax.jit
def battery_stage_core(soh_rated, cut_points=(0.9, 0.8, 0.7)) -> Int[Array, "*batch"]:
    """Jitted core of :func:`battery_stage` (elementwise): ``x <= cut`` is the worse stage."""
    soh = as_float(soh_rated)
    cuts = jnp.asarray(cut_points, soh.dtype)
    return guard(soh > 0, jnp.sum(soh[..., None] <= cuts, axis=-1).astype(jnp.int32))


def battery_stage(soh_rated: Real[ArrayLike, "*batch"], *,
                  cut_points: tuple[float, float, float] = (0.9, 0.8, 0.7)
                  ) -> Int[Array, "*batch"]:
    """Degradation stage from SOH against the rated capacity (PHMForge's stage classifier).

    HEALTHY > 0.90; EARLY_DEGRADATION (0.80, 0.90]; ACCELERATED_DEGRADATION (0.70, 0.80]
    (NASA's 1.6 Ah criterion); EOL <= 0.70 (1.4 Ah). A value on a cut-point gets the worse stage.

    Args:
        soh_rated: SOH relative to the rated capacity (fraction, > 0).
        cut_points: Three decreasing cut-points.

    Returns:
        Code into :data:`BATTERY_STAGES`.

    Example:
        >>> [BATTERY_STAGES[c] for c in battery_stage([0.81, 0.80, 0.70]).tolist()]
        ['EARLY_DEGRADATION', 'ACCELERATED_DEGRADATION', 'EOL']
    """
    arr = to_numpy("soh_rated", soh_rated)
    require_finite("soh_rated", arr)
    require_range("soh_rated", arr, lo=0.0, hi=1.2, lo_open=True,
                  hint="SOH is a fraction (0.81, not 81).")
    _validate_cut_points(cut_points)
    return battery_stage_core(soh_rated, cut_points)


class StageEscalation(NamedTuple):
    """Result of :func:`battery_stage_escalated`.

    Attributes:
        stage: Final stage code (after escalation).
        base_stage: Stage from the last cycle's SOH alone.
        escalated: True when the rate rule raised the stage.
        local_slope: Capacity slope over the last ``window`` cycles (Ah/cycle).
        baseline_slope: Slope over the first ``baseline_cycles`` cycles.
    """

    stage: Int[Array, "*batch"]
    base_stage: Int[Array, "*batch"]
    escalated: Bool[Array, "*batch"]
    local_slope: Scalar
    baseline_slope: Scalar


@functools.partial(jax.jit, static_argnames=("window", "baseline_cycles"))
def battery_stage_escalated_core(capacity, rated_ah=RATED_CAPACITY_AH, k_acc=2.0,
                                 cut_points=(0.9, 0.8, 0.7), *, window: int = 10,
                                 baseline_cycles: int = 30) -> StageEscalation:
    """Jitted core of :func:`battery_stage_escalated` for one cell."""
    cap = as_float(capacity)
    size = cap.shape[-1]
    k = jnp.arange(size, dtype=cap.dtype)
    base = battery_stage_core(cap[-1] / as_float(rated_ah), cut_points)
    local = weighted_line_fit(k, cap, (k >= size - window).astype(cap.dtype)).slope
    initial = weighted_line_fit(k, cap, (k < baseline_cycles).astype(cap.dtype)).slope
    steeper = (local < 0) & (local < as_float(k_acc) * initial)
    escalate = steeper & (base < 2)
    return StageEscalation(jnp.where(escalate, 2, base).astype(jnp.int32), base, escalate, local,
                           initial)


def battery_stage_escalated(capacity: Real[ArrayLike, "cycles"], *,
                            rated_ah: float = RATED_CAPACITY_AH, window: int = 10,
                            baseline_cycles: int = 30, k_acc: float = 2.0,
                            cut_points: tuple[float, float, float] = (0.9, 0.8, 0.7)
                            ) -> StageEscalation:
    """Stage of the last cycle with the optional rate escalation rule (off in battery_stage).

    If the capacity slope over the last ``window`` cycles is steeper (more negative) than
    ``k_acc`` x the slope over the first ``baseline_cycles``, a HEALTHY or EARLY label is raised
    to ACCELERATED_DEGRADATION.

    Args:
        capacity: Capacities in Ah, shape (T,), T >= max(window, baseline_cycles).
        rated_ah: Rated capacity, Ah.
        window: Recent window, cycles (static).
        baseline_cycles: Initial window, cycles (static).
        k_acc: Steepness factor.
        cut_points: Stage cut-points on SOH_rated.

    Returns:
        StageEscalation.
    """
    arr = validate_capacity(capacity, rated_ah=rated_ah)
    if arr.ndim != 1:
        raise ShapeMismatchError(f"capacity must be 1-D; got shape {arr.shape}.")
    if window < 2 or baseline_cycles < 2:
        raise DomainError("window and baseline_cycles must be >= 2.")
    require_min_length("capacity", arr, max(window, baseline_cycles),
                       why="The rate rule compares the last `window` with the first "
                           "`baseline_cycles` cycles.")
    _validate_cut_points(cut_points)
    if not k_acc > 0:
        raise DomainError(f"k_acc must be > 0; got {k_acc}.")
    return battery_stage_escalated_core(capacity, rated_ah, k_acc, cut_points, window=window,
                                        baseline_cycles=baseline_cycles)


# ---------------------------------------------------------------------------------------------
# 5.5 Linear fade RUL
# ---------------------------------------------------------------------------------------------


class LinearFadeRul(NamedTuple):
    """Result of :func:`linear_fade_rul`.

    Attributes:
        rul: ``k_eol - k_last`` cycles (0 if EOL reached, +inf if no fade).
        k_eol: Predicted EOL cycle ``(eol_ah - b0) / b1``.
        slope: b1, Ah per cycle.
        intercept: b0, Ah.
        r2: R^2 of the fit on the observed cycles.
        status: Code into :data:`FADE_STATUS`.
    """

    rul: Scalar
    k_eol: Scalar
    slope: Scalar
    intercept: Scalar
    r2: Scalar
    status: Int[Array, "*batch"]


def _observed_weights(size, n_observed, dtype):
    return (jnp.arange(size) < n_observed).astype(dtype)


def _last_observed(values, n_observed):
    return jnp.take(values, jnp.asarray(n_observed, jnp.int32) - 1, axis=-1)


@jax.jit
def linear_fade_rul_core(cycles, capacity, eol_ah=EOL_CAPACITY_AH, n_observed=None
                         ) -> LinearFadeRul:
    """Jitted core of :func:`linear_fade_rul`; fits the first ``n_observed`` points."""
    k, cap = as_float(cycles), as_float(capacity)
    size = cap.shape[-1]
    n_obs = size if n_observed is None else n_observed
    w = _observed_weights(size, n_obs, cap.dtype)
    intercept, slope, *_ = weighted_line_fit(k, cap, w)
    r2 = weighted_r2(jnp.sum(w * (cap - intercept - slope * k) ** 2), cap, w)
    k_last, c_last = _last_observed(k, n_obs), _last_observed(cap, n_obs)
    eol = as_float(eol_ah)
    no_fade = slope >= 0
    reached = c_last < eol
    k_eol = jnp.where(no_fade, jnp.inf, (eol - intercept) / jnp.where(no_fade, -1.0, slope))
    rul = jnp.where(reached, 0.0, jnp.where(no_fade, jnp.inf, jnp.maximum(k_eol - k_last, 0.0)))
    status = jnp.where(reached, 2, jnp.where(no_fade, 1, 0)).astype(jnp.int32)
    return LinearFadeRul(rul, k_eol, slope, intercept, r2, status)


def _validate_fade_inputs(cycles, capacity, eol_ah, observed_cycles, rated_ah):
    cap = validate_capacity(capacity, rated_ah=rated_ah, min_length=3)
    if cap.ndim != 1:
        raise ShapeMismatchError(f"capacity must be 1-D (one cell); got shape {cap.shape}.")
    _validate_cycles(cycles, cap)
    eol = to_numpy("eol_ah", eol_ah, ndim=0)
    require_finite("eol_ah", eol)
    require_range("eol_ah", eol, lo=0.0, lo_open=True)
    if observed_cycles is None:
        return cap.shape[0]
    if not isinstance(observed_cycles, (int, np.integer)) or not 3 <= observed_cycles <= \
            cap.shape[0]:
        raise InsufficientDataError(f"observed_cycles must be an int in [3, {cap.shape[0]}]; got "
                                    f"{observed_cycles!r}.")
    return int(observed_cycles)


def linear_fade_rul(cycles: Real[ArrayLike, "cycles"], capacity: Real[ArrayLike, "cycles"], *,
                    eol_ah: float = EOL_CAPACITY_AH, observed_cycles: int | None = None,
                    rated_ah: float = RATED_CAPACITY_AH) -> LinearFadeRul:
    """Linear capacity-fade RUL (PHMForge's rul_predictor_linear, an error-floor baseline).

    OLS of capacity on cycle over the first ``observed_cycles`` points; EOL cycle
    ``k* = (eol_ah - b0) / b1`` and ``RUL = k* - k_last``. No fade (b1 >= 0) gives +inf with
    status no_fade; a last observed capacity already below ``eol_ah`` gives 0 (eol_reached).

    Args:
        cycles: Cycle numbers, strictly increasing, shape (T,).
        capacity: Capacities in Ah, shape (T,).
        eol_ah: EOL capacity.
        observed_cycles: Number of leading points used (None: all).
        rated_ah: Rated capacity (for the mAh sanity check).

    Returns:
        LinearFadeRul.

    Example:
        >>> import numpy as np
        >>> k = np.arange(1.0, 11.0)
        >>> r = linear_fade_rul(k, 2.0 - 0.01 * k)
        >>> round(float(r.k_eol), 6), round(float(r.rul), 6)
        (60.0, 50.0)
    """
    n_obs = _validate_fade_inputs(cycles, capacity, eol_ah, observed_cycles, rated_ah)
    return linear_fade_rul_core(cycles, capacity, eol_ah, n_obs)


# ---------------------------------------------------------------------------------------------
# 5.6 Exponential fade with Arrhenius factor
# ---------------------------------------------------------------------------------------------


@jax.jit
def arrhenius_factor_core(temperature_k, activation_energy_j_mol=DEFAULT_ACTIVATION_ENERGY_J_MOL,
                          t_ref_k=T_REF_K) -> Scalar:
    """Jitted core of :func:`arrhenius_factor` (elementwise)."""
    temperature_k, t_ref_k = as_float(temperature_k), as_float(t_ref_k)
    factor = jnp.exp(as_float(activation_energy_j_mol) / GAS_CONSTANT_J_MOL_K
                     * (1.0 / t_ref_k - 1.0 / temperature_k))
    return guard((temperature_k > 0) & (t_ref_k > 0), factor)


def _validate_temperature(name, value):
    arr = to_numpy(name, value)
    require_finite(name, arr)
    require_range(name, arr, lo=0.0, lo_open=True,
                  hint="Temperatures are in kelvin inside kernels (degC + 273.15).")
    return arr


def arrhenius_factor(temperature_k: Real[ArrayLike, "*batch"], *,
                     activation_energy_j_mol: float = DEFAULT_ACTIVATION_ENERGY_J_MOL,
                     t_ref_k: float = T_REF_K) -> Scalar:
    """Arrhenius acceleration ``A(T) = exp[(Ea / R)(1 / T_ref - 1 / T)]``.

    With Ea = 31.7 kJ/mol, 45 degC vs 25 degC gives 2.234; 24 degC (NASA ambient) gives 0.958,
    so at room temperature the term is almost inert.

    Args:
        temperature_k: Cell temperature, K (> 0).
        activation_energy_j_mol: Ea, J/mol (>= 0); default Wang et al. 2011 (a prior).
        t_ref_k: Reference temperature, K.

    Returns:
        The factor A(T).

    Example:
        >>> round(float(arrhenius_factor(318.15)), 6)
        2.234181
    """
    _validate_temperature("temperature_k", temperature_k)
    _validate_temperature("t_ref_k", t_ref_k)
    ea = to_numpy("activation_energy_j_mol", activation_energy_j_mol)
    require_finite("activation_energy_j_mol", ea)
    require_range("activation_energy_j_mol", ea, lo=0.0, hint="Ea is in J/mol (31700).")
    return arrhenius_factor_core(temperature_k, activation_energy_j_mol, t_ref_k)


class ExpFadeFit(NamedTuple):
    """Log-linear fit ``ln C = ln C0 - lambda k`` on the observed cycles."""

    c0: Scalar
    decay_rate: Scalar
    r2: Scalar


@jax.jit
def exp_fade_fit_core(cycles, capacity, n_observed=None) -> ExpFadeFit:
    """Jitted core of :func:`exp_fade_fit`."""
    k, cap = as_float(cycles), as_float(capacity)
    size = cap.shape[-1]
    w = _observed_weights(size, size if n_observed is None else n_observed, cap.dtype)
    log_intercept, slope, *_ = weighted_line_fit(k, jnp.log(cap), w)
    c0 = jnp.exp(log_intercept)
    return ExpFadeFit(c0, -slope, weighted_r2(jnp.sum(w * (cap - c0 * jnp.exp(slope * k)) ** 2),
                                              cap, w))


def exp_fade_fit(cycles: Real[ArrayLike, "cycles"], capacity: Real[ArrayLike, "cycles"], *,
                 observed_cycles: int | None = None,
                 rated_ah: float = RATED_CAPACITY_AH) -> ExpFadeFit:
    """Closed-form log-linear OLS of ``C(k) = C0 exp(-lambda k)`` (deterministic, jittable).

    Args:
        cycles: Cycle numbers, strictly increasing.
        capacity: Capacities in Ah (> 0).
        observed_cycles: Leading points used (None: all, >= 3).
        rated_ah: Rated capacity (mAh sanity check).

    Returns:
        ExpFadeFit (c0, decay_rate lambda, r2 in the original space).
    """
    n_obs = _validate_fade_inputs(cycles, capacity, EOL_CAPACITY_AH, observed_cycles, rated_ah)
    return exp_fade_fit_core(cycles, capacity, n_obs)


class ExpFadeRul(NamedTuple):
    """Result of :func:`exp_fade_rul`.

    Attributes:
        rul: ``k* - k_last`` (0 when EOL is reached or C_eol >= C0; +inf with no fade).
        k_eol: ``k* = ln(C0 / C_eol) / lambda``.
        first_cycle_below: ``floor(k*) + 1``, the first integer cycle below C_eol.
        c0: Fitted initial capacity.
        decay_rate_eff: Fitted lambda at the cell temperature.
        decay_rate_ref: ``lambda_eff / A(T_cell)``, the rate at T_ref.
        decay_rate_used: ``lambda_ref A(T_target)`` used for the prediction.
        status: Code into :data:`FADE_STATUS`.
    """

    rul: Scalar
    k_eol: Scalar
    first_cycle_below: Scalar
    c0: Scalar
    decay_rate_eff: Scalar
    decay_rate_ref: Scalar
    decay_rate_used: Scalar
    status: Int[Array, "*batch"]


@jax.jit
def exp_fade_rul_core(cycles, capacity, eol_ah=EOL_CAPACITY_AH, n_observed=None,
                      temperature_k=T_REF_K, target_temperature_k=jnp.nan,
                      activation_energy_j_mol=DEFAULT_ACTIVATION_ENERGY_J_MOL,
                      t_ref_k=T_REF_K) -> ExpFadeRul:
    """Jitted core of :func:`exp_fade_rul`; NaN ``target_temperature_k`` means the cell's own."""
    k, cap = as_float(cycles), as_float(capacity)
    size = cap.shape[-1]
    n_obs = size if n_observed is None else n_observed
    fit = exp_fade_fit_core(k, cap, n_obs)
    t_cell = as_float(temperature_k)
    t_target = jnp.where(jnp.isnan(as_float(target_temperature_k)), t_cell,
                         as_float(target_temperature_k))
    a_cell = arrhenius_factor_core(t_cell, activation_energy_j_mol, t_ref_k)
    lam_ref = fit.decay_rate / a_cell
    lam = lam_ref * arrhenius_factor_core(t_target, activation_energy_j_mol, t_ref_k)
    eol = as_float(eol_ah)
    no_fade = lam <= 0
    k_star = jnp.where(no_fade, jnp.inf, jnp.log(fit.c0 / eol) / jnp.where(no_fade, 1.0, lam))
    k_last, c_last = _last_observed(k, n_obs), _last_observed(cap, n_obs)
    reached = (c_last < eol) | (eol >= fit.c0)
    rul = jnp.where(reached, 0.0, jnp.where(no_fade, jnp.inf, jnp.maximum(k_star - k_last, 0.0)))
    status = jnp.where(reached, 2, jnp.where(no_fade, 1, 0)).astype(jnp.int32)
    return ExpFadeRul(rul, k_star, jnp.floor(k_star) + 1.0, fit.c0, fit.decay_rate, lam_ref, lam,
                      status)


def exp_fade_rul(cycles: Real[ArrayLike, "cycles"], capacity: Real[ArrayLike, "cycles"], *,
                 eol_ah: float = EOL_CAPACITY_AH, observed_cycles: int | None = None,
                 temperature_k: float = T_REF_K, target_temperature_k: float | None = None,
                 activation_energy_j_mol: float = DEFAULT_ACTIVATION_ENERGY_J_MOL,
                 t_ref_k: float = T_REF_K,
                 rated_ah: float = RATED_CAPACITY_AH) -> ExpFadeRul:
    """Empirical exponential fade RUL with an Arrhenius temperature factor.

    ``C(k) = C0 exp(-lambda(T) k)``, ``lambda(T) = lambda_ref A(T)``. The fit gives C0 and
    ``lambda_eff`` at the mean cell temperature; ``lambda_ref = lambda_eff / A(T_cell)``. The
    prediction uses ``lambda_ref A(T_target)`` (T_target defaults to T_cell, i.e.
    ``lambda_eff``). ``k* = ln(C0 / C_eol) / lambda``, ``RUL = k* - k_last``.

    Args:
        cycles: Cycle numbers, strictly increasing.
        capacity: Capacities in Ah.
        eol_ah: EOL capacity.
        observed_cycles: Leading points used for the fit (None: all, >= 3).
        temperature_k: Mean cell temperature during the observed cycles, K.
        target_temperature_k: Temperature to predict at, K (None: the cell's own).
        activation_energy_j_mol: Ea, J/mol.
        t_ref_k: Arrhenius reference temperature, K.
        rated_ah: Rated capacity (mAh sanity check).

    Returns:
        ExpFadeRul.

    Example:
        >>> import numpy as np
        >>> k = np.arange(1.0, 61.0)
        >>> r = exp_fade_rul(k, 1.86 * np.exp(-0.0025 * k))
        >>> round(float(r.k_eol), 4), int(r.first_cycle_below), round(float(r.rul), 4)
        (113.6417, 114, 53.6417)
    """
    n_obs = _validate_fade_inputs(cycles, capacity, eol_ah, observed_cycles, rated_ah)
    _validate_temperature("temperature_k", temperature_k)
    _validate_temperature("t_ref_k", t_ref_k)
    if target_temperature_k is not None:
        _validate_temperature("target_temperature_k", target_temperature_k)
    ea = to_numpy("activation_energy_j_mol", activation_energy_j_mol, ndim=0)
    require_range("activation_energy_j_mol", ea, lo=0.0)
    return exp_fade_rul_core(cycles, capacity, eol_ah, n_obs, temperature_k,
                             jnp.nan if target_temperature_k is None else target_temperature_k,
                             activation_energy_j_mol, t_ref_k)


# ---------------------------------------------------------------------------------------------
# 5.7 Fleet baseline comparison
# ---------------------------------------------------------------------------------------------


class BaselineComparison(NamedTuple):
    """Result of :func:`compare_to_baseline` for one feature (T cycles).

    Attributes:
        z: Robust z ``(x - median) / (1.4826 MAD)`` against the fleet, per cycle.
        exceedance: ``|z| > threshold``.
        flags: Debounced: ``min_persistence`` consecutive exceedances.
        is_outlier: Any flag raised.
        n_events: Number of flagged runs.
    """

    z: Float[Array, "*batch time"]
    exceedance: Bool[Array, "*batch time"]
    flags: Bool[Array, "*batch time"]
    is_outlier: Bool[Array, "*batch"]
    n_events: Int[Array, "*batch"]


@functools.partial(jax.jit, static_argnames=("min_persistence",))
def compare_to_baseline_core(target, fleet, threshold=3.0, eps=1e-8, *, min_persistence: int = 3
                             ) -> BaselineComparison:
    """Jitted core of :func:`compare_to_baseline`: target (T,), fleet (M, T)."""
    target, fleet = as_float(target), as_float(fleet)
    median = jnp.median(fleet, axis=0)
    mad = jnp.median(jnp.abs(fleet - median[None, :]), axis=0)
    z = (target - median) / jnp.maximum(1.4826 * mad, as_float(eps))
    raw = jnp.abs(z) > as_float(threshold)
    _, flags, _, n_events = debounce_exceedances(raw, min_persistence)
    return BaselineComparison(z, raw, flags, jnp.any(flags), n_events)


def compare_to_baseline(target: Real[ArrayLike, "time"], fleet: Real[ArrayLike, "members time"],
                        *, threshold: float = 3.0, min_persistence: int = 3,
                        eps: float = 1e-8) -> BaselineComparison:
    """Robust per-cycle comparison of one cell's feature against a fleet (phm-reference 5.7).

    ``z = (x - median_fleet) / (1.4826 MAD_fleet)`` per cycle; an outlier is at least
    ``min_persistence`` consecutive cycles with ``|z| > threshold`` (the 5.4 debounce,
    ``trends.debounce_exceedances``). vmap the core over features (axis -1 of target and fleet).

    Args:
        target: The cell's feature per cycle, shape (T,).
        fleet: The same feature for M >= 2 reference cells on the same cycles, shape (M, T).
        threshold: |z| threshold.
        min_persistence: Consecutive exceedances for a flag (static).
        eps: Floor on the scaled MAD.

    Returns:
        BaselineComparison.
    """
    tgt = to_numpy("target", target, ndim=1)
    flt = to_numpy("fleet", fleet, ndim=2)
    require_finite("target", tgt)
    require_finite("fleet", flt)
    if flt.shape[1] != tgt.shape[0]:
        raise ShapeMismatchError(f"fleet must be (members, {tgt.shape[0]}) to align with target; "
                                 f"got {flt.shape}. Truncate all cells to common cycles first.")
    if flt.shape[0] < 2:
        raise InsufficientDataError("fleet needs at least 2 members for a median/MAD baseline.")
    if not threshold > 0 or min_persistence < 1:
        raise DomainError("threshold must be > 0 and min_persistence >= 1.")
    return compare_to_baseline_core(target, fleet, threshold, eps,
                                    min_persistence=int(min_persistence))


# ---------------------------------------------------------------------------------------------
# 5.8 Composite tools
# ---------------------------------------------------------------------------------------------


class ThermalCheck(NamedTuple):
    """Result of :func:`thermal_anomaly_checker`.

    Attributes:
        label: Code into :data:`THERMAL_LABELS`.
        spike: Per cycle, max temperature above the rolling median of the previous
            ``median_window`` cycles by more than ``spike_delta``.
        spike_active: Spike on the last cycle.
        n_spikes: Number of spike cycles.
        resistance_trend: Mann-Kendall result on Re + Rct.
        temperature_sen_slope: Sen slope of the average temperature per cycle.
        spike_delta: Echo of the threshold used (K or degC difference).
    """

    label: Int[Array, "*batch"]
    spike: Bool[Array, "*batch time"]
    spike_active: Bool[Array, "*batch"]
    n_spikes: Int[Array, "*batch"]
    resistance_trend: MannKendall
    temperature_sen_slope: Scalar
    spike_delta: Scalar


def _previous_window_median(x, window):
    size = x.shape[-1]
    idx = jnp.arange(size)[:, None] - jnp.arange(1, window + 1)[None, :]
    return masked_median(x[jnp.clip(idx, 0, size - 1)], idx >= 0)  # NaN at t = 0 (no history)


@functools.partial(jax.jit, static_argnames=("median_window",))
def thermal_anomaly_checker_core(max_temperature, avg_temperature, resistance, spike_delta=5.0,
                                 alpha=0.05, *, median_window: int = 10) -> ThermalCheck:
    """Jitted core of :func:`thermal_anomaly_checker` for one cell."""
    t_max, t_avg = as_float(max_temperature), as_float(avg_temperature)
    delta = as_float(spike_delta)
    reference = _previous_window_median(t_max, median_window)
    spike = jnp.where(jnp.isnan(reference), False, t_max - reference > delta)
    trend = mann_kendall_core(resistance, alpha)
    temp_slope = mann_kendall_core(t_avg, alpha).sen_slope
    ir_rise = (trend.trend == 1) & (temp_slope > 0)
    label = jnp.where(jnp.any(spike), 1, jnp.where(ir_rise, 2, 0)).astype(jnp.int32)
    return ThermalCheck(label, spike, spike[-1], jnp.sum(spike).astype(jnp.int32), trend,
                        temp_slope, delta)


def thermal_anomaly_checker(max_temperature: Real[ArrayLike, "cycles"],
                            avg_temperature: Real[ArrayLike, "cycles"],
                            re_ohm: Real[ArrayLike, "eis"], rct_ohm: Real[ArrayLike, "eis"], *,
                            spike_delta: float = 5.0, median_window: int = 10,
                            alpha: float = 0.05) -> ThermalCheck:
    """Thermal anomaly checker (composite of the kernels above; thresholds are conventions).

    thermal_spike if any cycle's max temperature exceeds the median of the previous
    ``median_window`` cycles by more than ``spike_delta``; internal_resistance_rise if Re + Rct
    has an INCREASING Mann-Kendall trend and the average temperature rises (Sen slope > 0);
    normal_aging otherwise.

    Args:
        max_temperature: Max cell temperature per discharge cycle (K or degC), shape (T,).
        avg_temperature: Average temperature per discharge cycle, shape (T,).
        re_ohm: Electrolyte resistance per impedance measurement, shape (E,), E >= 3.
        rct_ohm: Charge-transfer resistance per impedance measurement, shape (E,).
        spike_delta: Spike threshold (temperature difference).
        median_window: Rolling-median history, cycles.
        alpha: Mann-Kendall significance level.

    Returns:
        ThermalCheck.
    """
    t_max = to_numpy("max_temperature", max_temperature, ndim=1)
    t_avg = to_numpy("avg_temperature", avg_temperature, ndim=1)
    if t_max.shape != t_avg.shape:
        raise ShapeMismatchError("max_temperature and avg_temperature must have the same length.")
    re_a = to_numpy("re_ohm", re_ohm, ndim=1)
    rct_a = to_numpy("rct_ohm", rct_ohm, ndim=1)
    if re_a.shape != rct_a.shape:
        raise ShapeMismatchError("re_ohm and rct_ohm must have the same length.")
    for name, arr in (("max_temperature", t_max), ("avg_temperature", t_avg), ("re_ohm", re_a),
                      ("rct_ohm", rct_a)):
        require_finite(name, arr)
        require_min_length(name, arr, 3)
    if median_window < 1 or not spike_delta > 0:
        raise DomainError("median_window must be >= 1 and spike_delta > 0.")
    require_range("alpha", to_numpy("alpha", alpha), lo=0.0, hi=1.0, lo_open=True, hi_open=True)
    return thermal_anomaly_checker_core(max_temperature, avg_temperature, re_a + rct_a,
                                        spike_delta, alpha, median_window=int(median_window))


class ImpedanceTrend(NamedTuple):
    """Result of :func:`impedance_trend_analyzer`.

    Attributes:
        label: Code into :data:`IMPEDANCE_LABELS` (first match: sensor_fault, real_degradation).
        non_physical: Points with Re <= 0 or Rct <= 0.
        jump: Points inside isolated jumps (> ``jump_mad`` x MAD of the first differences) that
            revert within ``revert_points`` points.
        trend_after_cleaning: Mann-Kendall on Re + Rct with the flagged points removed.
        degradation_after_cleaning: That trend is INCREASING at p < alpha.
    """

    label: Int[Array, "*batch"]
    non_physical: Bool[Array, "*batch time"]
    jump: Bool[Array, "*batch time"]
    trend_after_cleaning: MannKendall
    degradation_after_cleaning: Bool[Array, "*batch"]


def _isolated_jumps(x, jump_mad, revert_points):
    size = x.shape[-1]
    diffs = jnp.diff(x)
    mad = 1.4826 * jnp.median(jnp.abs(diffs - jnp.median(diffs)))
    limit = jump_mad * jnp.maximum(mad, jnp.finfo(x.dtype).eps * jnp.max(jnp.abs(x)))
    idx = jnp.arange(size)
    before = x[jnp.clip(idx - 1, 0, size - 1)]
    jumps_here = (idx >= 1) & (jnp.abs(x - before) > limit)
    marked = jnp.zeros((size,), bool)
    reverted_earlier = jnp.zeros((size,), bool)
    for span in range(1, revert_points + 1):  # static unroll
        after = x[jnp.clip(idx + span, 0, size - 1)]
        reverts = jumps_here & (idx + span < size) & (jnp.abs(after - before) <= limit) & \
            ~reverted_earlier
        for offset in range(span):
            marked = marked | jnp.roll(reverts, offset) & (idx >= offset)
        reverted_earlier = reverted_earlier | reverts
    return marked


@functools.partial(jax.jit, static_argnames=("revert_points",))
def impedance_trend_analyzer_core(re_ohm, rct_ohm, jump_mad=5.0, alpha=0.05, *,
                                  revert_points: int = 2) -> ImpedanceTrend:
    """Jitted core of :func:`impedance_trend_analyzer` for one cell."""
    re_a, rct_a = as_float(re_ohm), as_float(rct_ohm)
    non_physical = (re_a <= 0) | (rct_a <= 0)
    jump = _isolated_jumps(re_a, jump_mad, revert_points) | _isolated_jumps(rct_a, jump_mad,
                                                                            revert_points)
    bad = non_physical | jump
    trend = mann_kendall_core(re_a + rct_a, alpha, ~bad)
    degrading = trend.trend == 1
    label = jnp.where(jnp.any(bad), 0, jnp.where(degrading, 1, 2)).astype(jnp.int32)
    return ImpedanceTrend(label, non_physical, jump, trend, degrading)


def impedance_trend_analyzer(re_ohm: Real[ArrayLike, "eis"], rct_ohm: Real[ArrayLike, "eis"], *,
                             jump_mad: float = 5.0, revert_points: int = 2,
                             alpha: float = 0.05) -> ImpedanceTrend:
    """Impedance trend analyser: sensor fault vs real degradation (composite; conventions).

    sensor_fault if Re or Rct has non-physical values (<= 0) or isolated jumps larger than
    ``jump_mad`` x MAD (of the first differences, scaled by 1.4826) that revert to the pre-jump
    level within ``revert_points`` points; real_degradation if Mann-Kendall on Re + Rct, with
    those points removed, is INCREASING at p < alpha; inconclusive otherwise. The cleaned trend
    is always reported, so a caller can see degradation underneath sensor faults.

    Args:
        re_ohm: Electrolyte resistance per EIS measurement, shape (E,).
        rct_ohm: Charge-transfer resistance, shape (E,).
        jump_mad: Jump size threshold in robust standard deviations of the differences.
        revert_points: Maximum jump duration, points (static).
        alpha: Mann-Kendall significance level.

    Returns:
        ImpedanceTrend.
    """
    re_a = to_numpy("re_ohm", re_ohm, ndim=1)
    rct_a = to_numpy("rct_ohm", rct_ohm, ndim=1)
    if re_a.shape != rct_a.shape:
        raise ShapeMismatchError(f"re_ohm and rct_ohm must have the same length; got "
                                 f"{re_a.shape[0]} and {rct_a.shape[0]}.")
    require_finite("re_ohm", re_a)
    require_finite("rct_ohm", rct_a)
    require_min_length("re_ohm", re_a, 5, why="The jump test needs a few points on each side.")
    if revert_points < 1 or not jump_mad > 0:
        raise DomainError("revert_points must be >= 1 and jump_mad > 0.")
    require_range("alpha", to_numpy("alpha", alpha), lo=0.0, hi=1.0, lo_open=True, hi_open=True)
    return impedance_trend_analyzer_core(re_ohm, rct_ohm, jump_mad, alpha,
                                         revert_points=int(revert_points))


@jax.jit
def health_report_triage_core(stage, predicted_rul, thermal_spike, any_anomaly,
                              emergency_rul=10.0, urgent_rul=30.0) -> Int[Array, "*batch"]:
    """Jitted core of :func:`health_report_triage` (elementwise)."""
    stage = jnp.asarray(stage, jnp.int32)
    rul = as_float(predicted_rul)
    spike = jnp.asarray(thermal_spike, bool)
    anomaly = jnp.asarray(any_anomaly, bool)
    emergency = (stage == 3) | (rul <= as_float(emergency_rul)) | spike
    urgent = (stage == 2) | (rul <= as_float(urgent_rul))
    elevated = (stage == 1) | anomaly
    return jnp.where(emergency, 3, jnp.where(urgent, 2, jnp.where(elevated, 1, 0))).astype(
        jnp.int32)


def health_report_triage(stage: BatteryStage | int | Int[ArrayLike, "*batch"],
                         predicted_rul: Real[ArrayLike, "*batch"],
                         thermal_spike: bool | Bool[ArrayLike, "*batch"],
                         any_anomaly: bool | Bool[ArrayLike, "*batch"], *,
                         emergency_rul: float = 10.0, urgent_rul: float = 30.0
                         ) -> Int[Array, "*batch"]:
    """Triage level of PHMForge's generate_health_report (first match wins).

    emergency: stage EOL, RUL <= 10 cycles or an active thermal spike; urgent:
    ACCELERATED_DEGRADATION or RUL <= 30; elevated: EARLY_DEGRADATION or any anomaly flag;
    routine otherwise.

    Args:
        stage: Stage code (or label) from :data:`BATTERY_STAGES`.
        predicted_rul: Predicted RUL, cycles (+inf allowed for no fade).
        thermal_spike: Thermal spike active.
        any_anomaly: Any anomaly flag raised.
        emergency_rul: RUL at or below which the level is emergency.
        urgent_rul: RUL at or below which the level is at least urgent.

    Returns:
        Code into :data:`TRIAGE_LEVELS`.
    """
    codes = stage if not isinstance(stage, str) else option_index("stage", stage, BATTERY_STAGES)
    codes_arr = to_numpy("stage", codes)
    require_range("stage", codes_arr, lo=0, hi=3)
    rul = to_numpy("predicted_rul", predicted_rul)
    if np.any(np.isnan(rul)):
        raise DomainError("predicted_rul must not be NaN (+inf is allowed for no fade).")
    if not 0 <= emergency_rul <= urgent_rul:
        raise DomainError("need 0 <= emergency_rul <= urgent_rul.")
    return health_report_triage_core(codes, predicted_rul, thermal_spike, any_anomaly,
                                     emergency_rul, urgent_rul)
