"""Trend kernels: line fits, the Mann-Kendall test and the rolling z-score anomaly detector.

What lives here (spec sections 2.4-2.5 and 5.4): the weighted least-squares line and its R^2
(:func:`weighted_line_fit`, :func:`weighted_r2`, the one derivation every family's fits use),
:func:`trend_fit` (OLS line and log-linear exponential, model choice by AIC, optional time to a
threshold), :func:`mann_kendall` (tie-corrected variance, continuity-corrected Z, two-sided p,
Kendall's tau, Sen's slope) and the debounced rolling z-score detector
(:func:`rolling_zscore_anomaly`, :func:`rolling_zscore_anomaly_multi`, PHMForge's
``anomaly_detector``, used on battery features and C-MAPSS sensors alike) with its debounce
(:func:`debounce_exceedances`). The fits and the test accept an optional boolean ``mask`` so
padded series (units of different lengths) can be vmapped; masked-out points are ignored exactly.

What does not live here: component health bands (``turbofan.py``), battery-specific trend
compositions (``battery.py``). Mann-Kendall assumes serially independent data (no Hamed-Rao
autocorrelation correction); below n = 10 the result carries ``small_sample = True`` instead of
emitting a Python warning.
"""

# jaxtyping shape strings (e.g. "n", "batch time") are not forward references:
# ruff: noqa: F821, UP037

from __future__ import annotations

import functools
from typing import Literal, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy.special import erfc
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
from phm_kernels._ops import masked_median
from phm_kernels.errors import DomainError, InsufficientDataError, ShapeMismatchError

__all__ = [
    "ANOMALY_BASELINES",
    "TREND_LABELS",
    "TREND_MODELS",
    "AnomalyResult",
    "MannKendall",
    "MultiAnomalyResult",
    "TrendFit",
    "WeightedLine",
    "debounce_exceedances",
    "mann_kendall",
    "mann_kendall_core",
    "rolling_zscore_anomaly",
    "rolling_zscore_anomaly_core",
    "rolling_zscore_anomaly_multi",
    "rolling_zscore_anomaly_multi_core",
    "trend_fit",
    "trend_fit_core",
    "validate_mann_kendall",
    "validate_rolling_zscore_anomaly",
    "validate_trend_fit",
    "weighted_line_fit",
    "weighted_r2",
]

#: Mann-Kendall trend labels (``trend`` codes 0..2).
TrendLabel = Literal["NO_TREND", "INCREASING", "DECREASING"]
TREND_LABELS: tuple[TrendLabel, ...] = ("NO_TREND", "INCREASING", "DECREASING")
#: Trend-fit model labels (``model`` codes 0, 1).
TrendModel = Literal["linear", "exponential"]
TREND_MODELS: tuple[TrendModel, ...] = ("linear", "exponential")
#: Baseline buffers of :func:`rolling_zscore_anomaly`.
ANOMALY_BASELINES = ("gated", "trailing", "reference")

Scalar = Float[Array, "*batch"]


def _mask_or_ones(y, mask):
    return jnp.ones(y.shape, bool) if mask is None else jnp.asarray(mask, bool)


class WeightedLine(NamedTuple):
    """Weighted least-squares line ``y = intercept + slope x`` (result of :func:`weighted_line_fit`).

    Attributes:
        intercept: b0.
        slope: b1.
        x_mean: Weighted mean of x.
        y_mean: Weighted mean of y.
        s_xx: ``sum w (x - x_mean)^2`` (for the slope's standard error).
    """

    intercept: Scalar
    slope: Scalar
    x_mean: Scalar
    y_mean: Scalar
    s_xx: Scalar


def weighted_line_fit(x, y, weights) -> WeightedLine:
    """Weighted least-squares line through ``(x, y)``; zero weights drop points exactly.

    A building block for the jitted cores (trend fit, fade fits, health-index slope): it does not
    validate, so at least two distinct x with positive weight are the caller's contract.

    Args:
        x: Abscissae, shape (n,).
        y: Ordinates, shape (n,).
        weights: Non-negative weights (a 0/1 mask as floats), shape (n,).

    Returns:
        WeightedLine.
    """
    n = jnp.sum(weights)
    x_mean = jnp.sum(weights * x) / n
    y_mean = jnp.sum(weights * y) / n
    s_xx = jnp.sum(weights * (x - x_mean) ** 2)
    slope = jnp.sum(weights * (x - x_mean) * (y - y_mean)) / s_xx
    return WeightedLine(y_mean - slope * x_mean, slope, x_mean, y_mean, s_xx)


def weighted_r2(sse, y, weights) -> jax.Array:
    """Coefficient of determination ``1 - SSE / SST`` of a fit with residual sum ``sse``.

    For a constant series (SST = 0) an exact fit (SSE = 0) scores 1 and any other 0.

    Args:
        sse: Weighted residual sum of squares of the fit.
        y: The observations, shape (n,).
        weights: The weights the fit used, shape (n,).

    Returns:
        R^2.
    """
    n = jnp.sum(weights)
    y_mean = jnp.sum(weights * y) / n
    sst = jnp.sum(weights * (y - y_mean) ** 2)
    return jnp.where(sst > 0, 1.0 - sse / jnp.where(sst > 0, sst, 1.0),
                     jnp.where(sse == 0, 1.0, 0.0))


def _time_to(t_cross, slope, t_last):
    # A monotone fitted curve crossing at or before t_last is already past the threshold.
    return jnp.where(slope == 0, jnp.inf, jnp.maximum(t_cross - t_last, 0.0))


class TrendFit(NamedTuple):
    """Result of :func:`trend_fit`.

    Attributes:
        model: Chosen model, code into :data:`TREND_MODELS` (lower AIC; linear on ties).
        slope: Linear slope b1.
        intercept: Linear intercept b0.
        slope_se: Standard error of b1.
        r2_linear: R^2 of the line.
        sse_linear: Residual sum of squares of the line.
        exp_rate: Exponential rate a1 in ``y = exp(a0) exp(a1 t)`` (NaN if some y <= 0).
        exp_amplitude: ``exp(a0)``.
        r2_exp: R^2 of the exponential in the original space.
        sse_exp: Its residual sum of squares (+inf when not fitted).
        aic_linear: ``n ln(SSE / n) + 2 k`` with k = 2.
        aic_exp: Same for the exponential (+inf when not fitted).
        time_to_threshold: ``t* - t_last`` where the chosen curve reaches ``y_threshold``; 0 if
            it already has, +inf if it never does, NaN without a threshold.
    """

    model: Int[Array, "*batch"]
    slope: Scalar
    intercept: Scalar
    slope_se: Scalar
    r2_linear: Scalar
    sse_linear: Scalar
    exp_rate: Scalar
    exp_amplitude: Scalar
    r2_exp: Scalar
    sse_exp: Scalar
    aic_linear: Scalar
    aic_exp: Scalar
    time_to_threshold: Scalar


def validate_trend_fit(t, y, mask=None) -> None:
    """Checks equal 1-D (or batched) shapes, finiteness, increasing t and n >= 3."""
    t_arr = to_numpy("t", t, min_ndim=1)
    y_arr = to_numpy("y", y, min_ndim=1)
    if t_arr.shape != y_arr.shape:
        raise ShapeMismatchError(f"t and y must have the same shape; got {t_arr.shape} and "
                                 f"{y_arr.shape}.")
    require_finite("t", t_arr)
    require_finite("y", y_arr)
    if mask is None:
        require_min_length("y", y_arr, 3, why="A trend fit needs n >= 3 points.")
        require_increasing("t", t_arr)
        return
    m = np.asarray(mask, bool)
    if m.shape != y_arr.shape:
        raise ShapeMismatchError(f"mask must match y's shape {y_arr.shape}; got {m.shape}.")
    for row_t, row_m in zip(t_arr.reshape(-1, t_arr.shape[-1]), m.reshape(-1, m.shape[-1]),
                            strict=True):
        require_min_length("y (unmasked)", row_t[row_m], 3, why="A trend fit needs n >= 3.")
        require_increasing("t (unmasked)", row_t[row_m])


@jax.jit
def trend_fit_core(t, y, y_threshold=jnp.nan, mask=None) -> TrendFit:
    """Jitted core of :func:`trend_fit` for one series (vmap over series)."""
    t, y = as_float(t), as_float(y)
    valid = _mask_or_ones(y, mask)
    w = valid.astype(y.dtype)
    n = jnp.sum(w)
    t_last = jnp.max(jnp.where(valid, t, -jnp.inf))
    y_th = as_float(y_threshold)

    line = weighted_line_fit(t, y, w)
    b0, b1 = line.intercept, line.slope
    sse_lin = jnp.sum(w * (y - (b0 + b1 * t)) ** 2)
    slope_se = jnp.sqrt(sse_lin / jnp.maximum(n - 2.0, 1.0) / line.s_xx)

    exp_ok = jnp.all(jnp.where(valid, y > 0, True))
    log_y = jnp.log(jnp.where(valid & (y > 0), y, 1.0))
    log_line = weighted_line_fit(t, log_y, w)
    a0, a1 = log_line.intercept, log_line.slope
    sse_exp = jnp.where(exp_ok, jnp.sum(w * (y - jnp.exp(a0 + a1 * t)) ** 2), jnp.inf)

    def aic(sse):
        return n * jnp.log(sse / n) + 4.0

    aic_lin, aic_exp = aic(sse_lin), jnp.where(exp_ok, aic(sse_exp), jnp.inf)
    model = jnp.where(aic_exp < aic_lin, 1, 0).astype(jnp.int32)

    ttt_lin = _time_to((y_th - b0) / jnp.where(b1 == 0, 1.0, b1), b1, t_last)
    safe_th = jnp.where(y_th > 0, y_th, 1.0)
    ttt_exp = jnp.where(y_th > 0, _time_to((jnp.log(safe_th) - a0) / jnp.where(a1 == 0, 1.0, a1),
                                           a1, t_last), jnp.inf)
    ttt = jnp.where(jnp.isnan(y_th), jnp.nan, jnp.where(model == 1, ttt_exp, ttt_lin))
    return TrendFit(model, b1, b0, slope_se, weighted_r2(sse_lin, y, w), sse_lin,
                    jnp.where(exp_ok, a1, jnp.nan), jnp.where(exp_ok, jnp.exp(a0), jnp.nan),
                    jnp.where(exp_ok, weighted_r2(sse_exp, y, w), jnp.nan), sse_exp, aic_lin,
                    aic_exp, ttt)


def trend_fit(t: Real[ArrayLike, "n"], y: Real[ArrayLike, "n"], *,
              y_threshold: float | None = None,
              mask: Bool[ArrayLike, "n"] | None = None) -> TrendFit:
    """Fits linear and exponential trends and picks one by AIC.

    Linear: OLS ``y = b0 + b1 t``. Exponential (only if every y > 0): OLS on
    ``ln y = a0 + a1 t``, R^2 and SSE in the original space. AIC ``n ln(SSE/n) + 2k`` (k = 2);
    ties choose linear. With ``y_threshold``, the chosen curve's crossing time after the last
    observation is returned as ``time_to_threshold`` (``t* - t_last``).

    Args:
        t: Strictly increasing times, shape (n,), n >= 3.
        y: Observations, shape (n,).
        y_threshold: Optional threshold level.
        mask: Optional boolean mask of valid points (padding = False).

    Returns:
        TrendFit.

    Example:
        >>> import numpy as np
        >>> t = np.arange(1.0, 11.0)
        >>> round(float(trend_fit(t, 2.0 - 0.01 * t, y_threshold=1.4).time_to_threshold), 6)
        50.0
    """
    validate_trend_fit(t, y, mask)
    if y_threshold is not None:
        th = to_numpy("y_threshold", y_threshold, ndim=0)
        require_finite("y_threshold", th)
    return trend_fit_core(t, y, jnp.nan if y_threshold is None else y_threshold, mask)


class MannKendall(NamedTuple):
    """Result of :func:`mann_kendall`.

    Attributes:
        s: Mann-Kendall S = sum_{i<j} sign(y_j - y_i).
        var_s: Tie-corrected variance of S.
        z: Continuity-corrected statistic.
        p_value: Two-sided p = 2 (1 - Phi(|Z|)).
        tau: Kendall's tau = S / (n (n - 1) / 2).
        sen_slope: Median of (y_j - y_i) / (j - i) over i < j (per index step).
        trend: Code into :data:`TREND_LABELS`.
        n: Number of (unmasked) points.
        small_sample: n < 10 (the normal approximation is rough; treat p with care).
    """

    s: Scalar
    var_s: Scalar
    z: Scalar
    p_value: Scalar
    tau: Scalar
    sen_slope: Scalar
    trend: Int[Array, "*batch"]
    n: Int[Array, "*batch"]
    small_sample: Bool[Array, "*batch"]


def validate_mann_kendall(y, *, alpha=0.05, mask=None) -> None:
    """Checks finite y with n >= 3 (unmasked) and 0 < alpha < 1."""
    arr = to_numpy("y", y, min_ndim=1)
    require_finite("y", arr)
    a = to_numpy("alpha", alpha)
    require_range("alpha", a, lo=0.0, hi=1.0, lo_open=True, hi_open=True)
    if mask is None:
        require_min_length("y", arr, 3, why="Mann-Kendall needs n >= 3 (10+ recommended).")
        return
    m = np.asarray(mask, bool)
    if m.shape != arr.shape:
        raise ShapeMismatchError(f"mask must match y's shape {arr.shape}; got {m.shape}.")
    fewest = int(m.reshape(-1, m.shape[-1]).sum(axis=-1).min())
    if fewest < 3:
        raise InsufficientDataError(f"a masked series has only {fewest} valid points; "
                                    "Mann-Kendall needs n >= 3 (10+ recommended).")


@jax.jit
def mann_kendall_core(y, alpha=0.05, mask=None) -> MannKendall:
    """Jitted core of :func:`mann_kendall` for one series (vmap over series).

    Memory is O(n^2) (pairwise matrices): fine up to a few thousand points.
    """
    y = as_float(y)
    valid = _mask_or_ones(y, mask)
    size = y.shape[-1]
    upper = np.triu(np.ones((size, size), bool), k=1)  # static: pairs i < j
    both = valid[:, None] & valid[None, :]
    pairs = upper & both
    diff = y[None, :] - y[:, None]  # diff[i, j] = y_j - y_i
    s = jnp.sum(jnp.where(pairs, jnp.sign(diff), 0.0))
    n = jnp.sum(valid).astype(y.dtype)
    tie_count = jnp.sum((diff == 0) & both, axis=1).astype(y.dtype)  # group size of each point
    tie_term = jnp.sum(jnp.where(valid, (tie_count - 1.0) * (2.0 * tie_count + 5.0), 0.0))
    var_s = (n * (n - 1.0) * (2.0 * n + 5.0) - tie_term) / 18.0
    sd = jnp.sqrt(jnp.where(var_s > 0, var_s, 1.0))
    z = jnp.where(s > 0, (s - 1.0) / sd, jnp.where(s < 0, (s + 1.0) / sd, 0.0))
    z = jnp.where(var_s > 0, z, 0.0)
    p_value = erfc(jnp.abs(z) / jnp.sqrt(2.0))
    lag = (np.arange(size)[None, :] - np.arange(size)[:, None]).astype(np.float64)
    slopes = diff / jnp.where(upper, lag, 1.0)
    sen = masked_median(slopes.reshape(-1), pairs.reshape(-1))
    significant = p_value < as_float(alpha)
    trend = jnp.where(significant & (s > 0), 1, jnp.where(significant & (s < 0), 2, 0))
    return MannKendall(s, var_s, z, p_value, s / (n * (n - 1.0) / 2.0), sen,
                       trend.astype(jnp.int32), n.astype(jnp.int32), n < 10)


def mann_kendall(y: Real[ArrayLike, "n"], *, alpha: float = 0.05,
                 mask: Bool[ArrayLike, "n"] | None = None) -> MannKendall:
    """Mann-Kendall monotonic trend test with Sen's slope (Mann 1945; Kendall 1975; Sen 1968).

    ``Var(S) = [n(n-1)(2n+5) - sum_g t_g(t_g-1)(2t_g+5)] / 18`` over tie groups; Z is
    continuity-corrected; p is two-sided. INCREASING if p < alpha and S > 0, DECREASING if
    p < alpha and S < 0, else NO_TREND. Assumes serially independent data.

    Args:
        y: Series, shape (n,), n >= 3 (10+ recommended).
        alpha: Significance level in (0, 1).
        mask: Optional boolean mask of valid points.

    Returns:
        MannKendall.

    Example:
        >>> r = mann_kendall([1.0, 1.2, 1.1, 1.5, 1.7, 1.6, 2.0, 2.2])
        >>> int(r.s), round(float(r.p_value), 6), TREND_LABELS[int(r.trend)]
        (24, 0.004434, 'INCREASING')
    """
    validate_mann_kendall(y, alpha=alpha, mask=mask)
    return mann_kendall_core(y, alpha, mask)


# ---------------------------------------------------------------------------------------------
# Debounced rolling z-score anomaly detection (phm-reference 5.4)
# ---------------------------------------------------------------------------------------------


class AnomalyResult(NamedTuple):
    """Result of :func:`rolling_zscore_anomaly` for one feature (T samples).

    Attributes:
        z: z-score per sample (0 before ``window``).
        exceedance: ``|z| > threshold`` (strict).
        run_length: Consecutive exceedances ending at each sample.
        flags: ``run_length >= min_persistence`` (causal: first set on the m-th exceedance).
        event_onset: True at the first index of each flagged run.
        n_events: Number of flagged runs.
    """

    z: Float[Array, "*batch time"]
    exceedance: Bool[Array, "*batch time"]
    run_length: Int[Array, "*batch time"]
    flags: Bool[Array, "*batch time"]
    event_onset: Bool[Array, "*batch time"]
    n_events: Int[Array, "*batch"]


def validate_rolling_zscore_anomaly(x, *, window=10, threshold=3.0, min_persistence=3,
                                    baseline="gated") -> np.ndarray:
    """Checks T > window >= 2, threshold > 0, min_persistence >= 1, finite x, known baseline."""
    option_index("baseline", baseline, ANOMALY_BASELINES)
    arr = to_numpy("x", x, min_ndim=1)
    require_finite("x", arr)
    if not isinstance(window, (int, np.integer)) or window < 2:
        raise DomainError(f"window must be an int >= 2; got {window!r}.")
    if not isinstance(min_persistence, (int, np.integer)) or min_persistence < 1:
        raise DomainError(f"min_persistence must be an int >= 1; got {min_persistence!r}.")
    if not threshold > 0:
        raise DomainError(f"threshold must be > 0; got {threshold!r}.")
    axis = 0 if arr.ndim > 1 else -1
    if arr.shape[axis] <= window:
        raise InsufficientDataError(f"x has {arr.shape[axis]} samples along time; it needs more "
                                    f"than window={window}. Use a shorter window.")
    return arr


def debounce_exceedances(raw, min_persistence):
    """Debounces a 1-D exceedance series: a flag needs ``min_persistence`` exceedances in a row.

    Jittable (``min_persistence`` static); shared by the rolling z-score detector and the battery
    fleet comparison.

    Args:
        raw: Boolean exceedances, shape (T,).
        min_persistence: Consecutive exceedances needed for a flag.

    Returns:
        ``(run_length, flags, event_onset, n_events)``.
    """

    def step(count, exceed):
        count = (count + 1) * exceed
        return count, count

    _, run = jax.lax.scan(step, jnp.zeros((), jnp.int32), raw.astype(jnp.int32))
    flags = run >= min_persistence
    size = raw.shape[-1]
    starts = run == min_persistence
    onset_idx = jnp.where(starts, jnp.arange(size) - min_persistence + 1, size)
    onset = jnp.zeros((size,), bool).at[onset_idx].set(True, mode="drop")
    return run, flags, onset, jnp.sum(starts).astype(jnp.int32)


@functools.partial(jax.jit, static_argnames=("window", "min_persistence", "baseline"))
def rolling_zscore_anomaly_core(x, threshold=3.0, reference_mean=jnp.nan,
                                reference_std=jnp.nan, eps=1e-8, *, window: int = 10,
                                min_persistence: int = 3, baseline: str = "gated"
                                ) -> AnomalyResult:
    """Jitted core of :func:`rolling_zscore_anomaly` for one 1-D feature (vmap over features)."""
    x = as_float(x)
    threshold, eps = as_float(threshold), as_float(eps)
    ref_mean, ref_std = as_float(reference_mean), as_float(reference_std)
    seed = x[:window]

    def step(carry, value):
        buffer, position = carry
        mean = jnp.mean(buffer)
        std = jnp.std(buffer)  # population (ddof = 0)
        if baseline == "reference":
            mean = jnp.where(jnp.isnan(ref_mean), mean, ref_mean)
            std = jnp.where(jnp.isnan(ref_std), std, ref_std)
        z = (value - mean) / jnp.maximum(std, eps)
        exceed = jnp.abs(z) > threshold
        if baseline == "trailing":
            admit = jnp.ones((), bool)
        elif baseline == "gated":
            admit = ~exceed
        else:
            admit = jnp.zeros((), bool)
        buffer = jnp.where(admit, buffer.at[position].set(value), buffer)
        position = jnp.where(admit, (position + 1) % window, position)
        return (buffer, position), (z, exceed)

    _, (z_tail, raw_tail) = jax.lax.scan(step, (seed, jnp.zeros((), jnp.int32)), x[window:])
    z = jnp.concatenate([jnp.zeros((window,), x.dtype), z_tail])
    raw = jnp.concatenate([jnp.zeros((window,), bool), raw_tail])
    run, flags, onset, n_events = debounce_exceedances(raw, min_persistence)
    return AnomalyResult(z, raw, run, flags, onset, n_events)


def rolling_zscore_anomaly(x: Real[ArrayLike, "time"], *, window: int = 10,
                           threshold: float = 3.0, min_persistence: int = 3,
                           baseline: str = "gated", reference_mean: float | None = None,
                           reference_std: float | None = None,
                           eps: float = 1e-8) -> AnomalyResult:
    """Debounced rolling z-score anomaly detector (PHMForge's anomaly_detector).

    For t >= window, ``z_t = (x_t - mean) / max(std, eps)`` over the baseline buffer
    (population std); an exceedance is ``|z_t| > threshold`` and a flag is raised once
    ``min_persistence`` exceedances in a row have occurred. Baselines: "gated" (default; seeded
    with the first ``window`` samples, later samples enter only if they did not exceed, so a
    sustained fault stays flagged while slow sub-threshold drift is tracked), "trailing" (the
    previous ``window`` samples; absorbs level shifts) and "reference" (the first ``window``
    samples frozen, or a fleet mean/std passed in).

    Args:
        x: Feature series, shape (T,), T > window; drop NaN rows first.
        window: Baseline length (static, >= 2).
        threshold: z threshold (> 0).
        min_persistence: Consecutive exceedances needed for a flag (static, >= 1).
        baseline: "gated", "trailing" or "reference".
        reference_mean: Fleet baseline mean for "reference" (None: first window).
        reference_std: Fleet baseline std for "reference" (None: first window).
        eps: Floor on the standard deviation.

    Returns:
        AnomalyResult (z, exceedance, run_length, flags, event_onset, n_events).

    Example:
        >>> x = [10, 10.2, 9.8, 10.1, 9.9, 10.0, 13.0, 13.5, 14.0, 14.2, 10.0, 10.1]
        >>> r = rolling_zscore_anomaly(x, window=5)
        >>> [i for i, f in enumerate(r.flags.tolist()) if f]
        [8, 9]
    """
    baseline = ANOMALY_BASELINES[option_index("baseline", baseline, ANOMALY_BASELINES)]
    arr = validate_rolling_zscore_anomaly(x, window=window, threshold=threshold,
                                          min_persistence=min_persistence, baseline=baseline)
    if arr.ndim != 1:
        raise ShapeMismatchError(f"x must be 1-D; got shape {arr.shape}. Use "
                                 "rolling_zscore_anomaly_multi for (time, feature) arrays.")
    if reference_std is not None and not reference_std > 0:
        raise DomainError(f"reference_std must be > 0; got {reference_std!r}.")
    return rolling_zscore_anomaly_core(
        x, threshold, jnp.nan if reference_mean is None else reference_mean,
        jnp.nan if reference_std is None else reference_std, eps, window=window,
        min_persistence=min_persistence, baseline=baseline)


class MultiAnomalyResult(NamedTuple):
    """Per-feature anomaly results for a (time, feature) array, plus ``any_flag`` over features."""

    z: Float[Array, "time features"]
    flags: Bool[Array, "time features"]
    event_onset: Bool[Array, "time features"]
    n_events: Int[Array, "features"]
    any_flag: Bool[Array, "time"]


@functools.partial(jax.jit, static_argnames=("window", "min_persistence", "baseline"))
def rolling_zscore_anomaly_multi_core(x, threshold=3.0, eps=1e-8, *, window: int = 10,
                                      min_persistence: int = 3, baseline: str = "gated"
                                      ) -> MultiAnomalyResult:
    """Jitted core of :func:`rolling_zscore_anomaly_multi` (vmap over the feature axis 1)."""
    per_feature = jax.vmap(
        lambda column: rolling_zscore_anomaly_core(column, threshold, jnp.nan, jnp.nan, eps,
                                                   window=window, min_persistence=min_persistence,
                                                   baseline=baseline),
        in_axes=1, out_axes=-1)(as_float(x))
    return MultiAnomalyResult(per_feature.z, per_feature.flags, per_feature.event_onset,
                              per_feature.n_events, jnp.any(per_feature.flags, axis=-1))


def rolling_zscore_anomaly_multi(x: Real[ArrayLike, "time features"], *, window: int = 10,
                                 threshold: float = 3.0, min_persistence: int = 3,
                                 baseline: str = "gated", eps: float = 1e-8
                                 ) -> MultiAnomalyResult:
    """:func:`rolling_zscore_anomaly` on every column of a (time, feature) array.

    Args:
        x: Features per cycle, e.g. PHMForge's 5 standard features, shape (T, F).
        window: Baseline length.
        threshold: z threshold.
        min_persistence: Consecutive exceedances for a flag.
        baseline: "gated", "trailing" or "reference" (first window).
        eps: Floor on the standard deviation.

    Returns:
        MultiAnomalyResult (z, flags, event_onset per feature; n_events; any_flag).
    """
    baseline = ANOMALY_BASELINES[option_index("baseline", baseline, ANOMALY_BASELINES)]
    arr = validate_rolling_zscore_anomaly(x, window=window, threshold=threshold,
                                          min_persistence=min_persistence, baseline=baseline)
    if arr.ndim != 2:
        raise ShapeMismatchError(f"x must be 2-D (time, feature); got shape {arr.shape}.")
    return rolling_zscore_anomaly_multi_core(x, threshold, eps, window=window,
                                             min_persistence=min_persistence, baseline=baseline)
