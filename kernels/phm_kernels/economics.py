"""Maintenance economics kernels (spec phm_kernels.md section 6).

What lives here: annual preventive cost (6.1), expected failure cost (6.2), maintenance ROI
(6.3), Weibull age replacement with its optimum (6.4, Barlow & Proschan 1965) and the
RUL-conditioned maintenance schedule (6.5). Every kernel is split into an eager ``validate_*``
function, a jitted ``*_core`` function (pure, vmappable, no raising) and the public function that
calls both. Inputs are unit-free currency, hours or cycles; probabilities are in [0, 1].

What does not live here: asset-class cost tables or scenario bounds (scenario data), and any I/O.
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy.special import gammainc, gammaln, ndtr
from jaxtyping import Array, ArrayLike, Float, Int, Real

from phm_kernels._checks import (
    as_float,
    finite_arrays,
    require_broadcastable,
    require_finite,
    require_integer_valued,
    require_range,
    require_static_choice,
    to_numpy,
)
from phm_kernels._ops import guard
from phm_kernels.errors import DomainError

__all__ = [
    "AGE_REPLACEMENT_STATUS",
    "RESIDUAL_LIFE_DISTRIBUTIONS",
    "AgeReplacementOptimum",
    "AnnualPreventiveCost",
    "ExpectedFailureCost",
    "MaintenanceRoi",
    "RulSchedule",
    "age_replacement_cost_rate",
    "age_replacement_cost_rate_core",
    "annual_preventive_cost",
    "annual_preventive_cost_core",
    "expected_failure_cost",
    "expected_failure_cost_core",
    "maintenance_roi",
    "maintenance_roi_core",
    "optimal_age_replacement",
    "optimal_age_replacement_core",
    "rul_margin_schedule_core",
    "rul_threshold_schedule",
    "rul_threshold_schedule_core",
    "validate_age_replacement",
    "validate_annual_preventive_cost",
    "validate_expected_failure_cost",
    "validate_maintenance_roi",
    "validate_rul_threshold_schedule",
]

#: Status codes of :func:`optimal_age_replacement` (``status`` field indexes this tuple).
AGE_REPLACEMENT_STATUS = ("optimal", "run_to_failure", "optimum_beyond_grid")
#: Residual-life distributions accepted by :func:`rul_threshold_schedule`.
RESIDUAL_LIFE_DISTRIBUTIONS = ("normal", "lognormal")

Scalar = Float[Array, "*batch"]


# ---------------------------------------------------------------------------------------------
# 6.1 Annual preventive cost
# ---------------------------------------------------------------------------------------------


class AnnualPreventiveCost(NamedTuple):
    """Result of :func:`annual_preventive_cost`.

    Attributes:
        annual_cost: ``f * (c_p + h_d * r)`` per year.
        cost_per_event: ``c_p + h_d * r``, the cost of one preventive action.
    """

    annual_cost: Scalar
    cost_per_event: Scalar


def validate_annual_preventive_cost(preventive_cost, frequency_per_year, downtime_hours,
                                    hourly_rate, *, allow_fractional_frequency=False) -> None:
    """Checks the inputs of :func:`annual_preventive_cost` (finite, >= 0, integer frequency)."""
    arrays = finite_arrays({"preventive_cost": preventive_cost,
                            "frequency_per_year": frequency_per_year,
                            "downtime_hours": downtime_hours, "hourly_rate": hourly_rate}, lo=0.0)
    if not allow_fractional_frequency:
        require_integer_valued("frequency_per_year", arrays["frequency_per_year"])
    require_broadcastable(**arrays)


@jax.jit
def annual_preventive_cost_core(preventive_cost, frequency_per_year, downtime_hours,
                                hourly_rate) -> AnnualPreventiveCost:
    """Jitted core of :func:`annual_preventive_cost` (no validation; broadcasts)."""
    per_event = as_float(preventive_cost) + as_float(downtime_hours) * as_float(hourly_rate)
    return AnnualPreventiveCost(as_float(frequency_per_year) * per_event, per_event)


def annual_preventive_cost(preventive_cost: Real[ArrayLike, "*batch"],
                           frequency_per_year: Real[ArrayLike, "*batch"],
                           downtime_hours: Real[ArrayLike, "*batch"],
                           hourly_rate: Real[ArrayLike, "*batch"], *,
                           allow_fractional_frequency: bool = False) -> AnnualPreventiveCost:
    """Annual cost of a preventive maintenance programme, ``C_PM = f (c_p + h_d r)``.

    Args:
        preventive_cost: Parts and labour cost of one preventive action (>= 0).
        frequency_per_year: Preventive actions per year (whole number >= 0 unless
            ``allow_fractional_frequency``).
        downtime_hours: Downtime per action in hours (>= 0).
        hourly_rate: Cost of one hour of downtime (>= 0).
        allow_fractional_frequency: Accept a non-integer frequency (an average rate).

    Returns:
        AnnualPreventiveCost with ``annual_cost`` and ``cost_per_event``.

    Raises:
        DomainError: Negative inputs or a fractional frequency.
        NonFiniteInputError: NaN/inf inputs.

    Example:
        >>> float(annual_preventive_cost(5000, 4, 8, 1000).annual_cost)
        52000.0
    """
    validate_annual_preventive_cost(preventive_cost, frequency_per_year, downtime_hours,
                                    hourly_rate,
                                    allow_fractional_frequency=allow_fractional_frequency)
    return annual_preventive_cost_core(preventive_cost, frequency_per_year, downtime_hours,
                                       hourly_rate)


# ---------------------------------------------------------------------------------------------
# 6.2 Expected failure cost
# ---------------------------------------------------------------------------------------------


class ExpectedFailureCost(NamedTuple):
    """Result of :func:`expected_failure_cost`.

    Attributes:
        expected_cost: ``p (c_r + h_d r + c_q)`` per year.
        cost_per_failure: ``c_r + h_d r + c_q``.
    """

    expected_cost: Scalar
    cost_per_failure: Scalar


def validate_expected_failure_cost(p, repair_cost, downtime_hours, hourly_rate,
                                   consequential_cost, *, p_is_rate=False) -> None:
    """Checks the inputs of :func:`expected_failure_cost`."""
    arrays = finite_arrays({"p": p, "repair_cost": repair_cost, "downtime_hours": downtime_hours,
                            "hourly_rate": hourly_rate, "consequential_cost": consequential_cost},
                           lo=0.0)
    if not p_is_rate:
        require_range("p", arrays["p"], lo=0.0, hi=1.0,
                      hint="p is an annual probability; pass p_is_rate=True for an expected "
                           "number of failures per year.")
    require_broadcastable(**arrays)


@jax.jit
def expected_failure_cost_core(p, repair_cost, downtime_hours, hourly_rate,
                               consequential_cost) -> ExpectedFailureCost:
    """Jitted core of :func:`expected_failure_cost` (no validation; broadcasts)."""
    per_failure = (as_float(repair_cost) + as_float(downtime_hours) * as_float(hourly_rate)
                   + as_float(consequential_cost))
    return ExpectedFailureCost(as_float(p) * per_failure, per_failure)


def expected_failure_cost(p: Real[ArrayLike, "*batch"], repair_cost: Real[ArrayLike, "*batch"],
                          downtime_hours: Real[ArrayLike, "*batch"],
                          hourly_rate: Real[ArrayLike, "*batch"],
                          consequential_cost: Real[ArrayLike, "*batch"] = 0.0, *,
                          p_is_rate: bool = False) -> ExpectedFailureCost:
    """Expected annual cost of failures, ``E[C_F] = p (c_r + h_d r + c_q)``.

    Args:
        p: Annual failure probability in [0, 1], or failures per year (>= 0) if ``p_is_rate``.
        repair_cost: Corrective repair cost per failure.
        downtime_hours: Unplanned downtime per failure, hours.
        hourly_rate: Cost of one hour of downtime.
        consequential_cost: Secondary damage, penalties, etc. per failure.
        p_is_rate: Interpret ``p`` as an expected count per year instead of a probability.

    Returns:
        ExpectedFailureCost with ``expected_cost`` and ``cost_per_failure``.

    Raises:
        DomainError: Negative inputs, or ``p > 1`` when it is a probability.

    Example:
        >>> float(expected_failure_cost(0.3, 50000, 48, 1000, 20000).expected_cost)
        35400.0
    """
    validate_expected_failure_cost(p, repair_cost, downtime_hours, hourly_rate,
                                   consequential_cost, p_is_rate=p_is_rate)
    return expected_failure_cost_core(p, repair_cost, downtime_hours, hourly_rate,
                                      consequential_cost)


# ---------------------------------------------------------------------------------------------
# 6.3 Maintenance ROI
# ---------------------------------------------------------------------------------------------


class MaintenanceRoi(NamedTuple):
    """Result of :func:`maintenance_roi`.

    Attributes:
        savings: Annual savings ``reactive - (pm + residual)``.
        roi: ``(savings * Y_eff - program_cost) / program_cost`` (0.5025 means 50.25 %).
        payback_years: ``program_cost / savings``; +inf when savings <= 0.
        annuity_factor: ``Y_eff = sum_{y=1..Y} (1 + i)^-y`` (equals Y when i = 0).
    """

    roi: Scalar
    savings: Scalar
    payback_years: Scalar
    annuity_factor: Scalar


def validate_maintenance_roi(reactive_annual, pm_annual, residual_failure_annual, program_cost,
                             *, years=1, discount_rate=0.0) -> None:
    """Checks the inputs of :func:`maintenance_roi`."""
    arrays = finite_arrays({"reactive_annual": reactive_annual, "pm_annual": pm_annual,
                            "residual_failure_annual": residual_failure_annual,
                            "program_cost": program_cost, "years": years,
                            "discount_rate": discount_rate}, lo=0.0)
    require_range("program_cost", arrays["program_cost"], lo=0.0, lo_open=True,
                  hint="ROI is undefined for a free programme.")
    require_range("years", arrays["years"], lo=1.0)
    require_integer_valued("years", arrays["years"])
    require_range("discount_rate", arrays["discount_rate"], lo=0.0, hi=1.0,
                  hint="Pass the rate as a fraction (0.05 for 5 %).")
    require_broadcastable(**arrays)


@jax.jit
def maintenance_roi_core(reactive_annual, pm_annual, residual_failure_annual, program_cost,
                         years=1, discount_rate=0.0) -> MaintenanceRoi:
    """Jitted core of :func:`maintenance_roi` (no validation; broadcasts)."""
    years = as_float(years)
    rate = as_float(discount_rate)
    savings = as_float(reactive_annual) - (as_float(pm_annual) + as_float(residual_failure_annual))
    safe_rate = jnp.where(rate > 0, rate, 1.0)
    annuity = jnp.where(rate > 0, (1.0 - (1.0 + safe_rate) ** (-years)) / safe_rate, years)
    program_cost = as_float(program_cost)
    roi = (savings * annuity - program_cost) / program_cost
    payback = jnp.where(savings > 0, program_cost / jnp.where(savings > 0, savings, 1.0),
                        jnp.inf)
    return MaintenanceRoi(roi, savings, payback, annuity)


def maintenance_roi(reactive_annual: Real[ArrayLike, "*batch"],
                    pm_annual: Real[ArrayLike, "*batch"],
                    residual_failure_annual: Real[ArrayLike, "*batch"],
                    program_cost: Real[ArrayLike, "*batch"], *,
                    years: Real[ArrayLike, "*batch"] = 1,
                    discount_rate: Real[ArrayLike, "*batch"] = 0.0) -> MaintenanceRoi:
    """Return on investment of a maintenance programme.

    ``savings = reactive - (pm + residual)``, ``ROI = (savings * Y_eff - program) / program``
    and ``payback = program / savings`` (years; +inf if savings <= 0).

    Args:
        reactive_annual: Annual cost of the reactive (run-to-failure) strategy.
        pm_annual: Annual cost of the preventive programme.
        residual_failure_annual: Annual cost of failures that still happen under the programme.
        program_cost: One-off programme cost (> 0).
        years: Horizon Y in whole years (>= 1).
        discount_rate: Annual discount rate i as a fraction in [0, 1].

    Returns:
        MaintenanceRoi (roi as a fraction, savings, payback_years, annuity_factor).

    Example:
        >>> r = maintenance_roi(118000, 52000, 5900, 40000)
        >>> round(float(r.roi), 4), round(float(r.payback_years) * 12, 2)
        (0.5025, 7.99)
    """
    validate_maintenance_roi(reactive_annual, pm_annual, residual_failure_annual, program_cost,
                             years=years, discount_rate=discount_rate)
    return maintenance_roi_core(reactive_annual, pm_annual, residual_failure_annual,
                                program_cost, years, discount_rate)


# ---------------------------------------------------------------------------------------------
# 6.4 Age replacement (Weibull life)
# ---------------------------------------------------------------------------------------------


def validate_age_replacement(beta, eta, preventive_cost, failure_cost, age=None) -> None:
    """Checks Weibull parameters and costs (beta, eta, c_p > 0 and c_f > c_p)."""
    values = {"beta": beta, "eta": eta, "preventive_cost": preventive_cost,
              "failure_cost": failure_cost}
    if age is not None:
        values["age"] = age
    arrays = finite_arrays(values, lo=0.0, lo_open=True)
    c_p, c_f = np.broadcast_arrays(arrays["preventive_cost"], arrays["failure_cost"])
    if np.any(c_f <= c_p):
        raise DomainError(
            f"failure_cost must exceed preventive_cost (got c_f={c_f[c_f <= c_p].ravel()[0]:g}, "
            f"c_p={c_p[c_f <= c_p].ravel()[0]:g}); with c_f <= c_p preventive replacement never "
            "pays off.")
    require_broadcastable(**arrays)


def _weibull_mean_life(beta, eta):
    return eta * jnp.exp(gammaln(1.0 + 1.0 / beta))


def _age_cost_rate(age, beta, eta, c_p, c_f):
    scaled = (age / eta) ** beta
    reliability = jnp.exp(-scaled)
    integral = _weibull_mean_life(beta, eta) * gammainc(1.0 / beta, scaled)
    return (c_p * reliability + c_f * (1.0 - reliability)) / integral


@jax.jit
def age_replacement_cost_rate_core(age, beta, eta, preventive_cost, failure_cost) -> Scalar:
    """Jitted core of :func:`age_replacement_cost_rate` (no validation; broadcasts)."""
    return _age_cost_rate(as_float(age), as_float(beta), as_float(eta), as_float(preventive_cost),
                          as_float(failure_cost))


def age_replacement_cost_rate(age: Real[ArrayLike, "*batch"], *, beta: Real[ArrayLike, "*batch"],
                              eta: Real[ArrayLike, "*batch"],
                              preventive_cost: Real[ArrayLike, "*batch"],
                              failure_cost: Real[ArrayLike, "*batch"]) -> Scalar:
    """Long-run cost per unit time of replacing at age T or at failure (Weibull life).

    ``g(T) = [c_p R(T) + c_f (1 - R(T))] / int_0^T R(t) dt`` with ``R(t) = exp(-(t/eta)^beta)``;
    the integral is ``eta Gamma(1 + 1/beta) P(1/beta, (T/eta)^beta)`` (P: regularised lower
    incomplete gamma).

    Args:
        age: Replacement age T (> 0), same time unit as ``eta``.
        beta: Weibull shape (> 0).
        eta: Weibull scale (> 0).
        preventive_cost: Cost c_p of a planned replacement (> 0).
        failure_cost: Cost c_f of a failure replacement (> c_p).

    Returns:
        Cost rate g(T) per unit time.
    """
    validate_age_replacement(beta, eta, preventive_cost, failure_cost, age=age)
    return age_replacement_cost_rate_core(age, beta, eta, preventive_cost, failure_cost)


class AgeReplacementOptimum(NamedTuple):
    """Result of :func:`optimal_age_replacement`.

    Attributes:
        optimal_age: T* (+inf when ``status`` is run_to_failure).
        cost_rate: g(T*) (the run-to-failure rate when there is no finite optimum).
        run_to_failure_rate: ``c_f / (eta Gamma(1 + 1/beta))``.
        savings_fraction: ``1 - g(T*) / run_to_failure_rate``.
        status: Code into :data:`AGE_REPLACEMENT_STATUS`.
    """

    optimal_age: Scalar
    cost_rate: Scalar
    run_to_failure_rate: Scalar
    savings_fraction: Scalar
    status: Int[Array, "*batch"]


def _golden_section(fun, lo, hi, iterations):
    ratio = (np.sqrt(5.0) - 1.0) / 2.0

    def body(_, bounds):
        a, b = bounds
        c = b - ratio * (b - a)
        d = a + ratio * (b - a)
        left_better = fun(c) < fun(d)
        return jnp.where(left_better, a, c), jnp.where(left_better, d, b)

    a, b = jax.lax.fori_loop(0, iterations, body, (lo, hi))
    return 0.5 * (a + b)


@functools.partial(jax.jit, static_argnames=("grid_size", "refine_iterations"))
def optimal_age_replacement_core(beta, eta, preventive_cost, failure_cost, *,
                                 grid_size: int = 20_001,
                                 refine_iterations: int = 60) -> AgeReplacementOptimum:
    """Jitted core of :func:`optimal_age_replacement` for one parameter set (vmap to batch)."""
    beta, eta = as_float(beta), as_float(eta)
    c_p, c_f = as_float(preventive_cost), as_float(failure_cost)
    grid = jnp.linspace(1e-3, 5.0, grid_size) * eta
    rates = _age_cost_rate(grid, beta, eta, c_p, c_f)
    best = jnp.argmin(rates)
    lo = grid[jnp.maximum(best - 1, 0)]
    hi = grid[jnp.minimum(best + 1, grid_size - 1)]
    t_opt = _golden_section(lambda t: _age_cost_rate(t, beta, eta, c_p, c_f), lo, hi,
                            refine_iterations)
    g_opt = _age_cost_rate(t_opt, beta, eta, c_p, c_f)
    rtf = c_f / _weibull_mean_life(beta, eta)
    no_optimum = beta <= 1.0
    at_edge = best == grid_size - 1
    status = jnp.where(no_optimum, 1, jnp.where(at_edge, 2, 0)).astype(jnp.int32)
    t_opt = jnp.where(no_optimum, jnp.inf, t_opt)
    g_opt = jnp.where(no_optimum, rtf, g_opt)
    valid = (beta > 0) & (eta > 0) & (c_p > 0) & (c_f > c_p)
    return AgeReplacementOptimum(guard(valid, t_opt), guard(valid, g_opt), guard(valid, rtf),
                                 guard(valid, 1.0 - g_opt / rtf), guard(valid, status))


def optimal_age_replacement(beta: Real[ArrayLike, ""], eta: Real[ArrayLike, ""],
                            preventive_cost: Real[ArrayLike, ""],
                            failure_cost: Real[ArrayLike, ""], *, grid_size: int = 20_001,
                            refine_iterations: int = 60) -> AgeReplacementOptimum:
    """Optimal age-replacement interval for a Weibull life (Barlow & Proschan 1965).

    Grid search of g(T) over T in [1e-3 eta, 5 eta] (``grid_size`` points), then golden-section
    refinement between the neighbours of the best grid point. For beta <= 1 (non-increasing
    hazard) there is no finite optimum: T* = +inf, ``status`` = run_to_failure and the cost rate
    is the run-to-failure rate. An optimum at the grid's upper end is flagged
    ``optimum_beyond_grid``.

    Args:
        beta: Weibull shape (> 0).
        eta: Weibull scale (> 0).
        preventive_cost: Planned replacement cost c_p (> 0).
        failure_cost: Failure replacement cost c_f (> c_p).
        grid_size: Static number of grid points.
        refine_iterations: Static number of golden-section iterations.

    Returns:
        AgeReplacementOptimum (optimal_age, cost_rate, run_to_failure_rate, savings_fraction,
        status code into AGE_REPLACEMENT_STATUS).

    Raises:
        DomainError: Non-positive parameters or ``failure_cost <= preventive_cost``.

    Example:
        >>> r = optimal_age_replacement(2.0, 1000.0, 1.0, 10.0)
        >>> round(float(r.optimal_age), 1)
        336.5
    """
    validate_age_replacement(beta, eta, preventive_cost, failure_cost)
    for name, value in (("beta", beta), ("eta", eta), ("preventive_cost", preventive_cost),
                        ("failure_cost", failure_cost)):
        to_numpy(name, value, ndim=0)
    if grid_size < 3:
        raise DomainError(f"grid_size must be >= 3; got {grid_size}.")
    return optimal_age_replacement_core(beta, eta, preventive_cost, failure_cost,
                                        grid_size=grid_size,
                                        refine_iterations=refine_iterations)


# ---------------------------------------------------------------------------------------------
# 6.5 RUL-conditioned schedule
# ---------------------------------------------------------------------------------------------


class RulSchedule(NamedTuple):
    """Result of :func:`rul_threshold_schedule`.

    Attributes:
        maintain_in: Time t* from now at which to maintain (cycles or hours, as the RUL).
        rul_threshold: ``rul_mean - t*``: act when the predicted RUL falls to this value.
        p_fail_before: F(t*), the probability of failing before maintenance.
        cost_rate: Renewal cost rate g(t*) per unit time.
        expected_cost: ``c_p (1 - F(t*)) + c_f F(t*)`` per renewal.
    """

    maintain_in: Scalar
    rul_threshold: Scalar
    p_fail_before: Scalar
    cost_rate: Scalar
    expected_cost: Scalar


def _residual_cdf(t, mean, std, distribution):
    if distribution == "normal":
        at_zero = ndtr(-mean / std)
        cdf = (ndtr((t - mean) / std) - at_zero) / (1.0 - at_zero)
    else:
        sigma2 = jnp.log1p((std / mean) ** 2)
        mu = jnp.log(mean) - 0.5 * sigma2
        safe_t = jnp.where(t > 0, t, 1.0)
        cdf = jnp.where(t > 0, ndtr((jnp.log(safe_t) - mu) / jnp.sqrt(sigma2)), 0.0)
    return jnp.clip(cdf, 0.0, 1.0)


def _cumulative_trapezoid(values, grid):
    steps = 0.5 * (values[1:] + values[:-1]) * jnp.diff(grid)
    return jnp.concatenate([jnp.zeros((1,), values.dtype), jnp.cumsum(steps)])


def validate_rul_threshold_schedule(rul_mean, rul_std, preventive_cost, failure_cost, *,
                                    lead_time=0.0, safety_margin=None,
                                    distribution="normal") -> None:
    """Checks the inputs of :func:`rul_threshold_schedule`."""
    require_static_choice("distribution", distribution, RESIDUAL_LIFE_DISTRIBUTIONS)
    arrays = finite_arrays({"rul_mean": rul_mean, "rul_std": rul_std,
                            "preventive_cost": preventive_cost, "failure_cost": failure_cost,
                            "lead_time": lead_time})
    require_range("rul_mean", arrays["rul_mean"], lo=0.0, lo_open=True)
    require_range("rul_std", arrays["rul_std"], lo=0.0, lo_open=True)
    require_range("preventive_cost", arrays["preventive_cost"], lo=0.0)
    require_range("lead_time", arrays["lead_time"], lo=0.0)
    c_p, c_f = np.broadcast_arrays(arrays["preventive_cost"], arrays["failure_cost"])
    if np.any(c_f <= c_p):
        raise DomainError("failure_cost must exceed preventive_cost (c_f > c_p >= 0); got "
                          f"c_f={c_f[c_f <= c_p].ravel()[0]:g}, c_p={c_p[c_f <= c_p].ravel()[0]:g}.")
    if safety_margin is not None:
        margin = to_numpy("safety_margin", safety_margin)
        require_finite("safety_margin", margin)
        require_range("safety_margin", margin, lo=0.0, hi=1.0, hi_open=True,
                      hint="The margin is a fraction of the mean RUL, e.g. 0.2.")
        arrays["safety_margin"] = margin
    require_broadcastable(**arrays)


@functools.partial(jax.jit, static_argnames=("distribution", "grid_size"))
def rul_threshold_schedule_core(rul_mean, rul_std, preventive_cost, failure_cost, lead_time=0.0,
                                *, distribution: str = "normal",
                                grid_size: int = 4001) -> RulSchedule:
    """Jitted core of the cost-optimal mode of :func:`rul_threshold_schedule` (one item)."""
    mean, std = as_float(rul_mean), as_float(rul_std)
    c_p, c_f, lead = as_float(preventive_cost), as_float(failure_cost), as_float(lead_time)
    upper = jnp.maximum(mean + 6.0 * std, lead)
    grid = jnp.linspace(0.0, 1.0, grid_size) * upper
    cdf = _residual_cdf(grid, mean, std, distribution)
    integral = _cumulative_trapezoid(1.0 - cdf, grid)
    expected = c_p * (1.0 - cdf) + c_f * cdf
    rate = jnp.where(integral > 0, expected / jnp.where(integral > 0, integral, 1.0), jnp.inf)
    rate = jnp.where(grid >= lead, rate, jnp.inf)
    best = jnp.argmin(rate)
    t_opt = grid[best]
    valid = (mean > 0) & (std > 0) & (c_f > c_p) & (c_p >= 0) & (lead >= 0)
    return RulSchedule(*(guard(valid, v) for v in (t_opt, mean - t_opt, cdf[best], rate[best],
                                                    expected[best])))


@functools.partial(jax.jit, static_argnames=("distribution", "grid_size"))
def rul_margin_schedule_core(rul_mean, rul_std, preventive_cost, failure_cost, safety_margin,
                             lead_time=0.0, *, distribution: str = "normal",
                             grid_size: int = 4001) -> RulSchedule:
    """Jitted core of the simple-margin mode: ``maintain_in = max(lead, (1 - s) mean)``."""
    mean, std = as_float(rul_mean), as_float(rul_std)
    c_p, c_f, lead = as_float(preventive_cost), as_float(failure_cost), as_float(lead_time)
    t_act = jnp.maximum(lead, (1.0 - as_float(safety_margin)) * mean)
    grid = jnp.linspace(0.0, 1.0, grid_size) * t_act
    survival_integral = _cumulative_trapezoid(1.0 - _residual_cdf(grid, mean, std, distribution),
                                              grid)[-1]
    cdf = _residual_cdf(t_act, mean, std, distribution)
    expected = c_p * (1.0 - cdf) + c_f * cdf
    rate = jnp.where(survival_integral > 0,
                     expected / jnp.where(survival_integral > 0, survival_integral, 1.0), jnp.inf)
    return RulSchedule(t_act, mean - t_act, cdf, rate, expected)


def rul_threshold_schedule(rul_mean: Real[ArrayLike, ""], rul_std: Real[ArrayLike, ""],
                           preventive_cost: Real[ArrayLike, ""],
                           failure_cost: Real[ArrayLike, ""], *,
                           lead_time: Real[ArrayLike, ""] = 0.0,
                           safety_margin: Real[ArrayLike, ""] | None = None,
                           distribution: str = "normal", grid_size: int = 4001) -> RulSchedule:
    """When to maintain given an uncertain RUL (backs PHMForge's optimize_maintenance_schedule).

    The residual life is Normal(rul_mean, rul_std) truncated at 0 (or a lognormal with that mean
    and standard deviation). Cost-optimal mode picks t >= lead_time minimising the renewal cost
    rate ``g(t) = [c_p (1 - F(t)) + c_f F(t)] / int_0^t (1 - F(u)) du`` on a static grid up to
    ``mean + 6 std`` (trapezoid rule; grid resolution ``(mean + 6 std) / (grid_size - 1)``).
    Simple-margin mode (``safety_margin`` given) acts at ``max(lead_time, (1 - s) mean)``.

    Args:
        rul_mean: Mean predicted RUL (> 0).
        rul_std: Standard deviation of the RUL (> 0).
        preventive_cost: Planned maintenance cost c_p (>= 0).
        failure_cost: Failure cost c_f (> c_p).
        lead_time: Earliest possible maintenance time from now (>= 0).
        safety_margin: Fraction s in [0, 1) for simple-margin mode; None for cost-optimal mode.
        distribution: "normal" (truncated at 0) or "lognormal".
        grid_size: Static grid size.

    Returns:
        RulSchedule (maintain_in, rul_threshold, p_fail_before, cost_rate, expected_cost).

    Example:
        >>> r = rul_threshold_schedule(100.0, 20.0, 1.0, 10.0)
        >>> round(float(r.maintain_in))
        58
    """
    validate_rul_threshold_schedule(rul_mean, rul_std, preventive_cost, failure_cost,
                                    lead_time=lead_time, safety_margin=safety_margin,
                                    distribution=distribution)
    distribution = require_static_choice("distribution", distribution,
                                         RESIDUAL_LIFE_DISTRIBUTIONS)
    if safety_margin is None:
        return rul_threshold_schedule_core(rul_mean, rul_std, preventive_cost, failure_cost,
                                           lead_time, distribution=distribution,
                                           grid_size=grid_size)
    return rul_margin_schedule_core(rul_mean, rul_std, preventive_cost, failure_cost,
                                    safety_margin, lead_time, distribution=distribution,
                                    grid_size=grid_size)

