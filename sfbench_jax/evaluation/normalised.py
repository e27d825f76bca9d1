"""Reference-normalised and cross-model scores (protocol 6.4-6.6), host-side NumPy in float64.

* mCE and relative mCE against an anchor model (the dataset's SeasonalNaive winner) from per-window losses
  and the drawn severities, binned into ten severity bins (6.5);
* rPC = MSE_c / mPC (6.2 step 5);
* the Taori-style effective-robustness fit `ln mPC = a + b ln MSE_c` over baseline winners and rho-bar
  (6.6);
* the method-baseline pair bootstrap with the reference's seeds (6.4).

Pure functions of arrays; what is paired with what, and the tables, live in `sfbench_jax.report`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from sfbench_jax.data.seeds import derive_seed

SEVERITY_BIN_COUNT = 10
SEVERITY_BIN_WIDTH = 0.1
_LAST_SEVERITY = 0.999999  # severities are clipped here before binning (s = 1 joins the last bin)
PAIR_BOOTSTRAP_DRAWS = 1000
#: The delta columns of the pair bootstrap, in the reference's order (each seeds its own generator).
PAIR_BOOTSTRAP_COLUMNS = ("delta_err_clean", "delta_D_w", "delta_D_mean", "delta_err_pert_ws",
                          "delta_err_pert_mean")


def severity_bins(severity: np.ndarray) -> np.ndarray:
    """Bin index `floor(min(s, 0.999999) / 0.1)` in 0..9 of every severity (any shape) -> int64."""
    clipped = np.minimum(np.asarray(severity, np.float64), _LAST_SEVERITY)
    return np.floor(clipped / SEVERITY_BIN_WIDTH).astype(np.int64)


def binned_errors(faulted: np.ndarray, severity: np.ndarray) -> np.ndarray:
    """`E_i`: per scenario, the sum over the non-empty severity bins of the bin's mean faulted MSE.

    Args:
        faulted: `(P, K)` per-window faulted MSE.
        severity: `(P, K)` the drawn severities.

    Returns:
        float64 `(P,)`.
    """
    faulted = np.asarray(faulted, np.float64)
    bins = severity_bins(severity)
    sums = np.zeros((faulted.shape[0], SEVERITY_BIN_COUNT))
    counts = np.zeros((faulted.shape[0], SEVERITY_BIN_COUNT))
    for scenario in range(faulted.shape[0]):
        sums[scenario] = np.bincount(bins[scenario], weights=faulted[scenario], minlength=SEVERITY_BIN_COUNT)
        counts[scenario] = np.bincount(bins[scenario], minlength=SEVERITY_BIN_COUNT)
    means = np.divide(sums, counts, out=np.zeros_like(sums), where=counts > 0)
    total: np.ndarray = means.sum(axis=1)
    return total


@dataclass(frozen=True)
class NormalisedScores:
    """Anchor-normalised scores of one model (protocol 6.5).

    Attributes:
        ce: `(P,)` corruption error `E_i / E_i^ref` per scenario.
        rel_ce: `(P,)` relative corruption error `(E_i - MSE_c) / (E_i^ref - MSE_c^ref)`.
        mce: mean of `ce` (NaN when an anchor denominator is <= 0: the family is unsupported).
        rel_mce: mean of `rel_ce` (NaN likewise).
    """

    ce: np.ndarray
    rel_ce: np.ndarray
    mce: float
    rel_mce: float


def check_same_faults(severity: np.ndarray, anchor_severity: np.ndarray) -> None:
    """Raise a ValueError unless the model and the anchor saw the same drawn severities (same windows and
    faults: same eval seed, RNG mode, K and channel fraction), without which the bins do not line up."""
    severity, anchor_severity = np.asarray(severity), np.asarray(anchor_severity)
    if severity.shape != anchor_severity.shape or not np.array_equal(severity, anchor_severity):
        raise ValueError("The anchor was evaluated on other faults than the model (the drawn severities differ); "
                         "evaluate both with the same eval.seed, eval.rng_mode, eval.k and eval.channel_fraction.")


def normalised_scores(clean: np.ndarray, faulted: np.ndarray, severity: np.ndarray, anchor_clean: np.ndarray,
                      anchor_faulted: np.ndarray, anchor_severity: np.ndarray) -> NormalisedScores:
    """mCE and relative mCE of a model against an anchor evaluated on the same windows and faults.

    Args:
        clean, faulted, severity: the model's `(K,)` clean and `(P, K)` faulted per-window MSE and the
            `(P, K)` drawn severities.
        anchor_clean, anchor_faulted, anchor_severity: the same for the anchor.

    Raises:
        ValueError: the severities differ (see `check_same_faults`).
    """
    check_same_faults(severity, anchor_severity)
    errors, anchor_errors = binned_errors(faulted, severity), binned_errors(anchor_faulted, anchor_severity)
    mse_c, anchor_mse_c = float(np.mean(np.asarray(clean, np.float64))), float(np.mean(np.asarray(anchor_clean,
                                                                                                   np.float64)))
    ce = _supported_ratio(errors, anchor_errors)
    rel_ce = _supported_ratio(errors - mse_c, anchor_errors - anchor_mse_c)
    return NormalisedScores(ce=ce, rel_ce=rel_ce, mce=float(np.mean(ce)), rel_mce=float(np.mean(rel_ce)))


def _supported_ratio(numerator: np.ndarray, denominator: np.ndarray) -> np.ndarray:
    """`numerator / denominator`, all NaN when any denominator is <= 0 (the family is unsupported)."""
    if np.any(denominator <= 0):
        return np.full(numerator.shape, np.nan)
    ratio: np.ndarray = numerator / denominator
    return ratio


def relative_performance(mse_c: float, mpc: float) -> float:
    """rPC = MSE_c / mPC (= 1 / D-bar)."""
    return float(mse_c) / float(mpc)


@dataclass(frozen=True)
class RhoFit:
    """The per-dataset log-log frontier `ln mPC = intercept + slope ln MSE_c` (protocol 6.6).

    Attributes:
        slope, intercept: the least-squares line (NaN when it cannot be fitted).
        r_squared: R^2 of the log fit.
        rmse: root mean squared residual of the log fit.
        rows_used: number of points fitted.
        status: "ok" or why there is no fit.
    """

    slope: float
    intercept: float
    r_squared: float
    rmse: float
    rows_used: int
    status: str


def rho_fit(mse_c: Sequence[float], mpc: Sequence[float]) -> RhoFit:
    """Fit `ln mPC = a + b ln MSE_c` by ordinary least squares (`np.polyfit(deg=1)`) on the points with
    positive errors; at least two points with distinct MSE_c are needed."""
    x, y = np.asarray(mse_c, np.float64), np.asarray(mpc, np.float64)
    usable = np.isfinite(x) & np.isfinite(y) & (x > 0) & (y > 0)
    x, y = np.log(x[usable]), np.log(y[usable])
    if len(x) < 2 or np.ptp(x) == 0:
        return RhoFit(np.nan, np.nan, np.nan, np.nan, len(x),
                      "needs at least two baseline winners with distinct positive MSE_c")
    slope, intercept = np.polyfit(x, y, deg=1)
    residual = y - (intercept + slope * x)
    total = float(np.sum((y - y.mean()) ** 2))
    r_squared = 1.0 - float(np.sum(residual**2)) / total if total > 0 else np.nan
    return RhoFit(float(slope), float(intercept), r_squared, float(np.sqrt(np.mean(residual**2))), len(x), "ok")


def effective_robustness(fit: RhoFit, mse_c: float, mpc: float) -> tuple[float, str]:
    """rho-bar = `exp(a + b ln MSE_c) - mPC` (positive: better than the frontier) and a status string."""
    if fit.status != "ok":
        return np.nan, f"no fit: {fit.status}"
    if not mse_c > 0:
        return np.nan, "non-positive clean error"
    frontier = float(np.exp(fit.intercept + fit.slope * np.log(mse_c)))
    if not frontier > 0 or not np.isfinite(frontier):
        return np.nan, "non-positive frontier value"
    return frontier - float(mpc), "ok"


def pair_group_seed(eval_seed: int, *, dataset_reference_key: str, signature: str, method: str) -> int:
    """The seed of one (dataset, method) group of the pair bootstrap (protocol 6.4)."""
    return derive_seed(int(eval_seed), f"bootstrap_ci:method_delta:MSE:{dataset_reference_key}:{signature}:{method}:"
                                       "method_delta_pair_percentile")


@dataclass(frozen=True)
class PairInterval:
    """Mean of the pair deltas and its 95% pair-bootstrap percentile interval."""

    mean: float
    low: float
    high: float


def pair_bootstrap(deltas: np.ndarray, *, group_seed: int, column: str, draws: int = PAIR_BOOTSTRAP_DRAWS,
                   confidence: float = 0.95) -> PairInterval:
    """Pair bootstrap of one delta column: `rng = default_rng(derive_seed(group_seed, column))`, `draws`
    resamples `rng.integers(0, n, n)` of the pairs (in their sorted order), mean of each, linear percentile.

    Args:
        deltas: `(n,)` per-pair deltas sorted by (architecture, variant id).
        group_seed: `pair_group_seed(...)`.
        column: the reference's column name (one of `PAIR_BOOTSTRAP_COLUMNS`), which keys the generator.
    """
    values = np.asarray(deltas, np.float64)
    count = len(values)
    if count == 0:
        return PairInterval(np.nan, np.nan, np.nan)
    rng = np.random.default_rng(derive_seed(group_seed, column))
    means = np.array([values[rng.integers(0, count, count)].mean() for _ in range(draws)])
    tail = (1.0 - confidence) / 2.0
    low, high = np.quantile(means, [tail, 1.0 - tail], method="linear")
    return PairInterval(float(values.mean()), float(low), float(high))
