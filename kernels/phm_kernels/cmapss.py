"""C-MAPSS RUL kernels: labels, sensor selection, regime normalisation, health-index baseline.

What lives here (spec sections 1.2-1.4 and 1.7): piecewise-linear RUL targets for train and test
units, the data-driven informative-sensor selection plus the standard 14-sensor set, operating
regime identification (nearest of the training centroids), per-regime z-score normalisation
fitted on training data only, unit padding helpers for vmap, and the deterministic linear
health-index RUL baseline (OLS health index, EWMA smoothing, ``trends.weighted_line_fit`` over
the last cycles).

What does not live here: file parsing (``loaders.py``), RUL metrics (``metrics.py``) and the
learned RUL models (``rul_model.py``).
"""

# jaxtyping shape strings (e.g. "n", "batch time") are not forward references:
# ruff: noqa: F821, UP037

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, ArrayLike, Bool, Float, Int, Real

from phm_kernels._checks import (
    as_float,
    require_finite,
    require_increasing,
    require_range,
    to_numpy,
)
from phm_kernels.errors import DomainError, InsufficientDataError, ShapeMismatchError
from phm_kernels.loaders import CMAPSS_SENSOR_NAMES, CmapssData, CmapssSplit
from phm_kernels.trends import weighted_line_fit

__all__ = [
    "CONSTANT_FD001_SENSORS",
    "DEFAULT_FD001_SENSORS",
    "DEFAULT_FD001_SENSOR_INDICES",
    "DEFAULT_RUL_CAP",
    "SETTING_ROUNDING",
    "HealthIndexRul",
    "LinearHealthIndexModel",
    "PaddedUnits",
    "RegimeModel",
    "RegimeStats",
    "assign_regime",
    "assign_regime_core",
    "cmapss_condition_normalize",
    "cmapss_condition_normalize_core",
    "cmapss_rul_targets",
    "cmapss_rul_targets_core",
    "fit_health_index",
    "fit_health_index_core",
    "fit_linear_health_index_baseline",
    "fit_regime_centroids",
    "fit_regime_stats",
    "fit_regime_stats_core",
    "health_index_targets",
    "linear_health_index_rul",
    "linear_health_index_rul_core",
    "normalize_cmapss",
    "pad_units",
    "predict_linear_health_index_baseline",
    "select_informative",
    "select_informative_core",
]

#: Default piecewise-linear cap R_max (Li, Ding & Sun 2018); record it with every result.
DEFAULT_RUL_CAP = 125.0
#: The de-facto standard 14 informative sensors for FD001/FD003 (Zheng 2017, Li 2018).
DEFAULT_FD001_SENSORS = ("s2", "s3", "s4", "s7", "s8", "s9", "s11", "s12", "s13", "s14", "s15",
                         "s17", "s20", "s21")
#: Their 0-based column indices in the 21-sensor block.
DEFAULT_FD001_SENSOR_INDICES = tuple(CMAPSS_SENSOR_NAMES.index(s) for s in DEFAULT_FD001_SENSORS)
#: The seven (near-)constant sensors of the single-condition sets.
CONSTANT_FD001_SENSORS = ("s1", "s5", "s6", "s10", "s16", "s18", "s19")
#: Decimals used to round (setting1, setting2, setting3) when identifying regimes.
SETTING_ROUNDING = (0, 2, 0)


# ---------------------------------------------------------------------------------------------
# 1.2 RUL targets
# ---------------------------------------------------------------------------------------------


@functools.partial(jax.jit, static_argnames=("use_cap",))
def cmapss_rul_targets_core(cycles, last_cycle, rul_at_last=0.0, cap=DEFAULT_RUL_CAP, mask=None,
                            *, use_cap: bool = True) -> Float[Array, "*batch time"]:
    """Jitted core of :func:`cmapss_rul_targets`; NaN where ``mask`` is False."""
    cycles = as_float(cycles)
    rul = as_float(rul_at_last) + (as_float(last_cycle) - cycles)
    if use_cap:
        rul = jnp.minimum(rul, as_float(cap))
    return rul if mask is None else jnp.where(jnp.asarray(mask, bool), rul, jnp.nan)


def cmapss_rul_targets(cycles: Real[ArrayLike, "time"], last_cycle: Real[ArrayLike, ""], *,
                       cap: float | None = DEFAULT_RUL_CAP,
                       rul_at_last: Real[ArrayLike, ""] = 0.0,
                       mask: Bool[ArrayLike, "time"] | None = None) -> Float[Array, "time"]:
    """Piecewise-linear RUL labels ``min(G + L - t, R_max)`` for one unit.

    Training units: ``L = T_u`` (failure cycle) and ``G = 0`` so RUL is 0 at the last row. Test
    units: ``L`` is the last observed cycle and ``G`` the RUL file value. ``cap=None`` gives the
    uncapped linear RUL (the official test truth is uncapped).

    Args:
        cycles: Cycle numbers of the unit (1-D, strictly increasing, >= 1).
        last_cycle: Last observed cycle L (>= max(cycles) over valid rows).
        cap: R_max (> 0), default 125; None for no cap.
        rul_at_last: RUL G after the last observed cycle (0 for run-to-failure units).
        mask: Optional validity mask for padded units (NaN is returned where False).

    Returns:
        RUL per cycle.

    Example:
        >>> cmapss_rul_targets([1, 75, 76, 77, 200], 200).tolist()
        [125.0, 125.0, 124.0, 123.0, 0.0]
    """
    cyc = to_numpy("cycles", cycles, ndim=1)
    require_finite("cycles", cyc)
    valid = cyc if mask is None else cyc[np.asarray(mask, bool)]
    require_range("cycles", valid, lo=1.0, hint="C-MAPSS cycles are 1-based.")
    require_increasing("cycles", valid)
    last = to_numpy("last_cycle", last_cycle, ndim=0)
    require_finite("last_cycle", last)
    if valid.size and float(last) < valid.max():
        raise DomainError(f"last_cycle={float(last):g} is before the unit's largest cycle "
                          f"{valid.max():g}; pass the last observed cycle.")
    g = to_numpy("rul_at_last", rul_at_last, ndim=0)
    require_finite("rul_at_last", g)
    require_range("rul_at_last", g, lo=0.0)
    if cap is not None:
        require_range("cap", to_numpy("cap", cap, ndim=0), lo=0.0, lo_open=True)
    if mask is not None and np.shape(mask) != cyc.shape:
        raise ShapeMismatchError(f"mask must match cycles' shape {cyc.shape}.")
    return cmapss_rul_targets_core(cycles, last_cycle, rul_at_last,
                                   DEFAULT_RUL_CAP if cap is None else cap, mask,
                                   use_cap=cap is not None)


# ---------------------------------------------------------------------------------------------
# 1.3 Informative sensors
# ---------------------------------------------------------------------------------------------


@functools.partial(jax.jit, static_argnames=("rel",))
def select_informative_core(sensors, std_threshold=1e-4, *, rel: bool = True
                            ) -> Bool[Array, "channels"]:
    """Jitted core of :func:`select_informative`."""
    x = as_float(sensors)
    spread = jnp.std(x, axis=0)
    if rel:
        spread = spread / jnp.maximum(jnp.abs(jnp.mean(x, axis=0)), jnp.finfo(x.dtype).tiny)
    return spread >= as_float(std_threshold)


def select_informative(sensors: Real[ArrayLike, "rows channels"], *, std_threshold: float = 1e-4,
                       rel: bool = True) -> Bool[Array, "channels"]:
    """Data-driven sensor selection: keep channels whose training spread is not negligible.

    A channel is kept when its standard deviation (divided by |mean| if ``rel``) is at least
    ``std_threshold``. On real FD001 the spec default (1e-4, relative) also drops s8 and s13
    (relative spread about 3e-5) and keeps 12 sensors; ``rel=False, std_threshold=1e-2`` keeps
    exactly the standard 14 (:data:`DEFAULT_FD001_SENSORS`), as the tests pin.

    Args:
        sensors: Training sensor matrix, shape (rows, channels), rows >= 2.
        std_threshold: Spread threshold.
        rel: Use the coefficient of variation instead of the raw standard deviation.

    Returns:
        Boolean keep-mask per channel.
    """
    arr = to_numpy("sensors", sensors, ndim=2)
    require_finite("sensors", arr)
    if arr.shape[0] < 2:
        raise InsufficientDataError("sensors needs at least 2 rows to measure spread.")
    require_range("std_threshold", to_numpy("std_threshold", std_threshold, ndim=0), lo=0.0,
                  lo_open=True)
    return select_informative_core(sensors, std_threshold, rel=bool(rel))


# ---------------------------------------------------------------------------------------------
# 1.4 Operating regimes and normalisation
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RegimeModel:
    """Operating-regime centroids estimated from training settings.

    Attributes:
        centroids: (n_regimes, 3) mean settings per regime, sorted lexicographically.
        scale: (3,) per-setting standard deviation used to standardise distances (1 where 0).
    """

    centroids: np.ndarray
    scale: np.ndarray

    @property
    def n_regimes(self) -> int:
        """Number of regimes."""
        return int(self.centroids.shape[0])


def fit_regime_centroids(settings: Real[ArrayLike, "rows 3"], *, n_regimes: int = 6
                         ) -> RegimeModel:
    """Estimates regime centroids from training settings (eager, deterministic).

    Settings are rounded (setting1 to 0 dp, setting2 to 2 dp, setting3 to 0 dp); the
    ``n_regimes`` most frequent rounded combinations define the regimes, and each centroid is the
    mean of the raw settings of its rows. FD002/FD004 give six tight clusters (altitude
    0-42 kft, Mach 0-0.84, TRA 60/100); FD001/FD003 give one.

    Args:
        settings: (rows, 3) operational settings of the training set.
        n_regimes: Number of regimes to keep (6 for FD002/FD004, 1 for FD001/FD003).

    Returns:
        RegimeModel.

    Raises:
        InsufficientDataError: Fewer distinct rounded settings than ``n_regimes``.
    """
    arr = to_numpy("settings", settings, ndim=2)
    if arr.shape[1] != 3:
        raise ShapeMismatchError(f"settings must have 3 columns; got {arr.shape[1]}.")
    require_finite("settings", arr)
    if not isinstance(n_regimes, (int, np.integer)) or n_regimes < 1:
        raise DomainError(f"n_regimes must be a positive int; got {n_regimes!r}.")
    rounded = np.stack([np.round(arr[:, j], d) for j, d in enumerate(SETTING_ROUNDING)], axis=1)
    keys, inverse, counts = np.unique(rounded, axis=0, return_inverse=True, return_counts=True)
    if keys.shape[0] < n_regimes:
        raise InsufficientDataError(f"only {keys.shape[0]} distinct operating conditions found "
                                    f"after rounding; cannot form {n_regimes} regimes.")
    top = np.sort(np.argsort(-counts, kind="stable")[:n_regimes])
    centroids = np.stack([arr[inverse.ravel() == k].mean(axis=0) for k in top])
    scale = arr.std(axis=0)
    return RegimeModel(centroids, np.where(scale > 0, scale, 1.0))


@jax.jit
def assign_regime_core(settings, centroids, scale) -> Int[Array, "rows"]:
    """Jitted core of :func:`assign_regime`: nearest centroid in standardised settings."""
    x = as_float(settings) / as_float(scale)
    c = as_float(centroids) / as_float(scale)
    distance = jnp.sum((x[:, None, :] - c[None, :, :]) ** 2, axis=-1)
    return jnp.argmin(distance, axis=-1).astype(jnp.int32)


def assign_regime(settings: Real[ArrayLike, "rows 3"], model: RegimeModel) -> Int[Array, "rows"]:
    """Assigns each row to the nearest regime centroid (standardised Euclidean distance).

    Args:
        settings: (rows, 3) operational settings (train or test).
        model: Centroids fitted on the training set.

    Returns:
        Regime code per row in [0, n_regimes).
    """
    arr = to_numpy("settings", settings, ndim=2)
    if arr.shape[1] != 3:
        raise ShapeMismatchError(f"settings must have 3 columns; got {arr.shape[1]}.")
    require_finite("settings", arr)
    return assign_regime_core(settings, model.centroids, model.scale)


class RegimeStats(NamedTuple):
    """Per-regime training statistics.

    Attributes:
        mean: (n_regimes, channels) means.
        std: (n_regimes, channels) population standard deviations.
        count: (n_regimes,) rows per regime.
    """

    mean: Float[Array, "regimes channels"]
    std: Float[Array, "regimes channels"]
    count: Float[Array, "regimes"]  # type: ignore[assignment]  # shadows tuple.count; the field name is public API


@functools.partial(jax.jit, static_argnames=("n_regimes",))
def fit_regime_stats_core(x, regime, *, n_regimes: int) -> RegimeStats:
    """Jitted core of :func:`fit_regime_stats` (segment sums over regimes)."""
    x = as_float(x)
    regime = jnp.asarray(regime, jnp.int32)
    count = jax.ops.segment_sum(jnp.ones(x.shape[0], x.dtype), regime, num_segments=n_regimes)

    def segment_mean(values):
        return jax.ops.segment_sum(values, regime, num_segments=n_regimes) / count[:, None]

    # Two passes: C-MAPSS channels such as s8 (~2388 rpm, sd 0.07) lose their spread to rounding
    # when raw values are accumulated in float32, so the first-pass mean is refined by the mean
    # of the (small) residuals.
    rough = segment_mean(x)
    mean = rough + segment_mean(x - rough[regime])
    sq = jax.ops.segment_sum((x - mean[regime]) ** 2, regime, num_segments=n_regimes)
    return RegimeStats(mean, jnp.sqrt(sq / count[:, None]), count)


def fit_regime_stats(x: Real[ArrayLike, "rows channels"], regime: Int[ArrayLike, "rows"], *,
                     n_regimes: int = 6) -> RegimeStats:
    """Per-regime mean and standard deviation of every channel, from training rows only.

    Args:
        x: (rows, channels) training sensors.
        regime: Regime code per row.
        n_regimes: Number of regimes (static).

    Returns:
        RegimeStats.

    Raises:
        InsufficientDataError: A regime has fewer than 2 training rows.
    """
    arr = to_numpy("x", x, ndim=2)
    require_finite("x", arr)
    codes = np.asarray(regime)
    _validate_regime(codes, arr.shape[0], n_regimes)
    counts = np.bincount(codes.astype(np.int64), minlength=n_regimes)
    if np.any(counts < 2):
        raise InsufficientDataError(f"regime(s) {np.flatnonzero(counts < 2).tolist()} have fewer "
                                    "than 2 training rows; every regime must be seen in training.")
    return fit_regime_stats_core(x, codes, n_regimes=int(n_regimes))


def _validate_regime(codes, rows, n_regimes):
    if codes.shape != (rows,):
        raise ShapeMismatchError(f"regime must have shape ({rows},); got {codes.shape}.")
    if codes.dtype.kind not in "iu" or np.any(codes < 0) or np.any(codes >= n_regimes):
        raise DomainError(f"regime codes must be integers in [0, {n_regimes}).")


@jax.jit
def cmapss_condition_normalize_core(x, regime, mean, std, eps=1e-8) -> Float[Array, "rows channels"]:
    """Jitted core of :func:`cmapss_condition_normalize`."""
    x = as_float(x)
    regime = jnp.asarray(regime, jnp.int32)
    mu, sd = as_float(mean)[regime], as_float(std)[regime]
    constant = sd < as_float(eps)
    return jnp.where(constant, 0.0, (x - mu) / jnp.where(constant, 1.0, sd))


def cmapss_condition_normalize(x: Real[ArrayLike, "rows channels"],
                               regime: Int[ArrayLike, "rows"],
                               mean: Real[ArrayLike, "regimes channels"],
                               std: Real[ArrayLike, "regimes channels"], *,
                               eps: float = 1e-8) -> Float[Array, "rows channels"]:
    """Per-regime z-score ``(x - mu_c) / sd_c``; channels constant within a regime become 0.

    Args:
        x: (rows, channels) sensors (train or test).
        regime: Regime code per row.
        mean: (regimes, channels) training means.
        std: (regimes, channels) training standard deviations.
        eps: Standard deviation below which a channel counts as constant.

    Returns:
        Normalised sensors.

    Example:
        >>> float(cmapss_condition_normalize([[643.0]], [0], [[642.0]], [[0.5]])[0, 0])
        2.0
    """
    arr = to_numpy("x", x, ndim=2)
    require_finite("x", arr)
    mu = to_numpy("mean", mean, ndim=2)
    sd = to_numpy("std", std, ndim=2)
    if mu.shape != sd.shape or mu.shape[1] != arr.shape[1]:
        raise ShapeMismatchError(f"mean/std must be (regimes, {arr.shape[1]}); got {mu.shape} "
                                 f"and {sd.shape}.")
    require_range("std", sd, lo=0.0)
    _validate_regime(np.asarray(regime), arr.shape[0], mu.shape[0])
    return cmapss_condition_normalize_core(x, regime, mean, std, eps)


# ---------------------------------------------------------------------------------------------
# Padding (units have different lengths)
# ---------------------------------------------------------------------------------------------


class PaddedUnits(NamedTuple):
    """Units padded to a common length for vmap.

    Attributes:
        values: (units, max_len, channels), zero after each unit's end.
        cycles: (units, max_len) cycle numbers (continuing past the end for padding).
        mask: (units, max_len) True on real rows.
        lengths: (units,) cycles per unit.
    """

    values: np.ndarray
    cycles: np.ndarray
    mask: np.ndarray
    lengths: np.ndarray


def pad_units(split: CmapssSplit, values: np.ndarray) -> PaddedUnits:
    """Pads per-row values of a C-MAPSS split into a (units, max_len, channels) array.

    Args:
        split: The split the rows belong to (rows sorted by unit then cycle).
        values: (rows, channels) per-row values (e.g. normalised sensors).

    Returns:
        PaddedUnits.
    """
    values = np.asarray(values)
    if values.shape[0] != split.unit.shape[0]:
        raise ShapeMismatchError(f"values has {values.shape[0]} rows, the split has "
                                 f"{split.unit.shape[0]}.")
    lengths = split.lengths
    max_len = int(lengths.max())
    unit_index = np.searchsorted(split.unit_ids, split.unit)
    out = np.zeros((lengths.size, max_len) + values.shape[1:], values.dtype)
    out[unit_index, split.cycle - 1] = values
    mask = np.arange(max_len)[None, :] < lengths[:, None]
    cycles = np.tile(np.arange(1, max_len + 1, dtype=np.float64), (lengths.size, 1))
    return PaddedUnits(out, cycles, mask, lengths)


# ---------------------------------------------------------------------------------------------
# 1.7 Linear health-index baseline
# ---------------------------------------------------------------------------------------------


def health_index_targets(split: CmapssSplit) -> np.ndarray:
    """Saxena-style health-index target per training row: 1 at cycle 1, 0 at failure."""
    last = split.last_cycle
    return (last - split.cycle) / np.maximum(last - 1.0, 1.0)


@jax.jit
def fit_health_index_core(x, hi_target) -> Float[Array, "channels_plus_1"]:
    """Jitted core of :func:`fit_health_index`: OLS weights ``[bias, w_1..w_F]``."""
    x = as_float(x)
    design = jnp.concatenate([jnp.ones((x.shape[0], 1), x.dtype), x], axis=1)
    weights, *_ = jnp.linalg.lstsq(design, as_float(hi_target))
    return weights


def fit_health_index(x: Real[ArrayLike, "rows channels"], hi_target: Real[ArrayLike, "rows"]
                     ) -> Float[Array, "channels_plus_1"]:
    """Least-squares health-index weights: ``HI ~ w_0 + x @ w`` on normalised training sensors.

    Args:
        x: (rows, channels) normalised training sensors.
        hi_target: Target HI per row (1 at start of life, 0 at failure).

    Returns:
        Weights, bias first.
    """
    arr = to_numpy("x", x, ndim=2)
    target = to_numpy("hi_target", hi_target, ndim=1)
    require_finite("x", arr)
    require_finite("hi_target", target)
    if target.shape[0] != arr.shape[0]:
        raise ShapeMismatchError("hi_target must have one value per row of x.")
    if arr.shape[0] <= arr.shape[1] + 1:
        raise InsufficientDataError("fit_health_index needs more rows than channels + 1.")
    return fit_health_index_core(x, hi_target)


class HealthIndexRul(NamedTuple):
    """Result of :func:`linear_health_index_rul` for one unit.

    Attributes:
        rul: Cycles until the fitted HI line reaches 0, clipped to [0, cap] (cap if not falling).
        health_index: Raw HI per cycle (0 on padding).
        smoothed: EWMA-smoothed HI per cycle.
        slope: HI slope per cycle over the last ``window`` valid cycles.
    """

    rul: Float[Array, "*batch"]
    health_index: Float[Array, "*batch time"]
    smoothed: Float[Array, "*batch time"]
    slope: Float[Array, "*batch"]


@functools.partial(jax.jit, static_argnames=("window",))
def linear_health_index_rul_core(x, weights, mask=None, alpha=0.1, cap=DEFAULT_RUL_CAP, *,
                                 window: int = 30) -> HealthIndexRul:
    """Jitted core of :func:`linear_health_index_rul` for one (padded) unit."""
    x = as_float(x)
    weights = as_float(weights)
    size = x.shape[0]
    valid = jnp.ones((size,), bool) if mask is None else jnp.asarray(mask, bool)
    hi = jnp.where(valid, weights[0] + x @ weights[1:], 0.0)
    alpha = as_float(alpha)

    def ewma(previous, value):
        current = alpha * value + (1.0 - alpha) * previous
        return current, current

    _, smoothed = jax.lax.scan(ewma, hi[0], hi)
    length = jnp.sum(valid)
    t = jnp.arange(size, dtype=x.dtype)
    line = weighted_line_fit(t, smoothed, (valid & (t >= length - window)).astype(x.dtype))
    slope = line.slope
    level = line.y_mean + slope * ((length - 1.0) - line.x_mean)  # fitted HI at the last cycle
    falling = slope < 0
    rul = jnp.where(falling, level / -jnp.where(falling, slope, -1.0), as_float(cap))
    return HealthIndexRul(jnp.clip(rul, 0.0, as_float(cap)), hi, smoothed, slope)


def linear_health_index_rul(x: Real[ArrayLike, "time channels"],
                            weights: Real[ArrayLike, "channels_plus_1"], *,
                            mask: Bool[ArrayLike, "time"] | None = None, alpha: float = 0.1,
                            window: int = 30, cap: float = DEFAULT_RUL_CAP) -> HealthIndexRul:
    """Deterministic health-index RUL baseline for one unit (phm-reference 1.7; not tuned).

    ``HI_t = w_0 + x_t @ w``; EWMA smoothing (``alpha``); OLS line over the last ``window``
    valid cycles; RUL = cycles until the line reaches HI = 0, clipped to [0, cap] (cap when the
    line does not fall).

    Args:
        x: (time, channels) normalised sensors of one unit (padded rows allowed with ``mask``).
        weights: Health-index weights from :func:`fit_health_index`.
        mask: Validity mask for padded units.
        alpha: EWMA smoothing factor in (0, 1].
        window: Cycles in the final line fit (static, >= 2).
        cap: Upper clip R_max.

    Returns:
        HealthIndexRul.
    """
    arr = to_numpy("x", x, ndim=2)
    w = to_numpy("weights", weights, ndim=1)
    if w.shape[0] != arr.shape[1] + 1:
        raise ShapeMismatchError(f"weights must have {arr.shape[1] + 1} entries (bias first); "
                                 f"got {w.shape[0]}.")
    valid = arr if mask is None else arr[np.asarray(mask, bool)]
    require_finite("x", valid)
    if valid.shape[0] < 2:
        raise InsufficientDataError("a unit needs at least 2 valid cycles.")
    if not 0 < alpha <= 1 or window < 2 or not cap > 0:
        raise DomainError("need 0 < alpha <= 1, window >= 2 and cap > 0.")
    return linear_health_index_rul_core(x, weights, mask, alpha, cap, window=int(window))


# ---------------------------------------------------------------------------------------------
# Dataset-level helpers (eager shell around the kernels)
# ---------------------------------------------------------------------------------------------


def normalize_cmapss(data: CmapssData, *, n_regimes: int | None = None,
                     sensor_indices: tuple[int, ...] = DEFAULT_FD001_SENSOR_INDICES,
                     eps: float = 1e-8) -> tuple[np.ndarray, np.ndarray, RegimeModel, RegimeStats]:
    """Regime-normalises train and test sensors with training statistics only.

    Args:
        data: A loaded sub-dataset.
        n_regimes: Regimes to use; None picks 6 for FD002/FD004 and 1 otherwise.
        sensor_indices: Sensor columns to keep (default: the standard 14).
        eps: Constant-channel threshold.

    Returns:
        (train_z, test_z, regime_model, regime_stats) with z arrays of shape (rows, sensors).
    """
    if n_regimes is None:
        n_regimes = 6 if data.subset in ("FD002", "FD004") else 1
    cols = list(sensor_indices)
    model = fit_regime_centroids(data.train.settings, n_regimes=n_regimes)
    train_regime = np.asarray(assign_regime(data.train.settings, model))
    test_regime = np.asarray(assign_regime(data.test.settings, model))
    stats = fit_regime_stats(data.train.sensors[:, cols], train_regime, n_regimes=n_regimes)
    train_z = np.asarray(cmapss_condition_normalize(data.train.sensors[:, cols], train_regime,
                                                    stats.mean, stats.std, eps=eps))
    test_z = np.asarray(cmapss_condition_normalize(data.test.sensors[:, cols], test_regime,
                                                   stats.mean, stats.std, eps=eps))
    return train_z, test_z, model, stats


@dataclass(frozen=True)
class LinearHealthIndexModel:
    """A fitted linear health-index baseline (normalisation + weights + settings)."""

    subset: str
    weights: np.ndarray
    regime_model: RegimeModel
    regime_stats: RegimeStats
    sensor_indices: tuple[int, ...]
    alpha: float
    window: int
    cap: float


def fit_linear_health_index_baseline(data: CmapssData, *, alpha: float = 0.1, window: int = 30,
                                     cap: float = DEFAULT_RUL_CAP,
                                     sensor_indices: tuple[int, ...] = DEFAULT_FD001_SENSOR_INDICES
                                     ) -> LinearHealthIndexModel:
    """Fits the phm-reference 1.7 baseline on a sub-dataset's training units.

    Args:
        data: Loaded sub-dataset.
        alpha: EWMA factor used at prediction time.
        window: Line-fit window used at prediction time.
        cap: R_max clip.
        sensor_indices: Sensor columns.

    Returns:
        LinearHealthIndexModel.
    """
    train_z, _, regime_model, stats = normalize_cmapss(data, sensor_indices=sensor_indices)
    weights = np.asarray(fit_health_index(train_z, health_index_targets(data.train)))
    return LinearHealthIndexModel(data.subset, weights, regime_model, stats, sensor_indices,
                                  alpha, window, cap)


def predict_linear_health_index_baseline(model: LinearHealthIndexModel, split: CmapssSplit
                                         ) -> np.ndarray:
    """Last-cycle RUL prediction per unit of a split (vmapped over padded units).

    Args:
        model: Fitted baseline.
        split: Usually the test split.

    Returns:
        (units,) predicted RUL after each unit's last observed cycle.
    """
    cols = list(model.sensor_indices)
    regime = np.asarray(assign_regime(split.settings, model.regime_model))
    z = np.asarray(cmapss_condition_normalize(split.sensors[:, cols], regime,
                                              model.regime_stats.mean, model.regime_stats.std))
    padded = pad_units(split, z)
    result = jax.vmap(lambda v, m: linear_health_index_rul_core(
        v, model.weights, m, model.alpha, model.cap, window=model.window))(padded.values,
                                                                          padded.mask)
    return np.asarray(result.rul)
