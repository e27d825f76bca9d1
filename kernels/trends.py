"""Degradation-trend kernels: linear vs exponential trend fit and the Mann-Kendall test.

What lives here (spec sections 2.4-2.5): :func:`trend_fit` (OLS line and log-linear
exponential, model choice by AIC, optional time to a threshold) and :func:`mann_kendall`
(tie-corrected variance, continuity-corrected Z, two-sided p, Kendall's tau, Sen's slope).
Both accept an optional boolean ``mask`` so padded series (units of different lengths) can be
vmapped; masked-out points are ignored exactly.

What does not live here: component health bands (``turbofan.py``), battery-specific trend
compositions (``battery.py``). Mann-Kendall assumes serially independent data (no Hamed-Rao
autocorrelation correction); below n = 10 the result carries ``small_sample = True`` instead of
emitting a Python warning.
"""

# jaxtyping shape strings (e.g. "n", "batch time") are not forward references:
# ruff: noqa: F821, UP037

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy.special import erfc
from jaxtyping import Array, ArrayLike, Bool, Float, Int, Real
from phm_kernels._checks import (
    as_float,
    require_finite,
    require_increasing,
    require_min_length,
    require_range,
    to_numpy,
)
from phm_kernels._ops import masked_median
from phm_kernels.errors import InsufficientDataError, ShapeMismatchError

__all__ = [
    "TREND_LABELS",
    "TREND_MODELS",
    "MannKendall",
    "TrendFit",
    "mann_kendall",
    "mann_kendall_core",
    "trend_fit",
    "trend_fit_core",
    "validate_mann_kendall",
    "validate_trend_fit",
]

#: Mann-Kendall trend labels (``trend`` codes 0..2).
TREND_LABELS = ("NO_TREND", "INCREASING", "DECREASING")
#: Trend-fit model labels (``model`` codes 0, 1).
TREND_MODELS = ("linear", "exponential")

Scalar = Float[Array, "*batch"]


def _mask_or_ones(y, mask):
    return jnp.ones(y.shape, bool) if mask is None else jnp.asarray(mask, bool)


def _weighted_ols(t, y, w):
    n = jnp.sum(w)
    t_mean = jnp.sum(w * t) / n
    y_mean = jnp.sum(w * y) / n
    s_tt = jnp.sum(w * (t - t_mean) ** 2)
    slope = jnp.sum(w * (t - t_mean) * (y - y_mean)) / s_tt
    return y_mean - slope * t_mean, slope, s_tt


def _r2(sse, y, w):
    n = jnp.sum(w)
    y_mean = jnp.sum(w * y) / n
    sst = jnp.sum(w * (y - y_mean) ** 2)
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
    for row_t, row_m in zip(t_arr.reshape(-1, t_arr.shape[-1]), m.reshape(-1, m.shape[-1])):
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

    b0, b1, s_tt = _weighted_ols(t, y, w)
    sse_lin = jnp.sum(w * (y - (b0 + b1 * t)) ** 2)
    slope_se = jnp.sqrt(sse_lin / jnp.maximum(n - 2.0, 1.0) / s_tt)

    exp_ok = jnp.all(jnp.where(valid, y > 0, True))
    log_y = jnp.log(jnp.where(valid & (y > 0), y, 1.0))
    a0, a1, _ = _weighted_ols(t, log_y, w)
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
    return TrendFit(model, b1, b0, slope_se, _r2(sse_lin, y, w), sse_lin,
                    jnp.where(exp_ok, a1, jnp.nan), jnp.where(exp_ok, jnp.exp(a0), jnp.nan),
                    jnp.where(exp_ok, _r2(sse_exp, y, w), jnp.nan), sse_exp, aic_lin, aic_exp,
                    ttt)


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
