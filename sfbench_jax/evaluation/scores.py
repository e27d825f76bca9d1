"""Reported quantities from per-window losses (protocol 6.2 step 5) and their bootstrap intervals (6.3).

Host-side NumPy in float64: the kernel returns per-window losses, means are taken here once.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from sfbench_jax.config import BOOTSTRAP_BATCH_BYTES, MIN_BOOTSTRAP_DRAWS
from sfbench_jax.data.seeds import bootstrap_seed

BOOTSTRAP_DRAWS = 1000
CONFIDENCE = 0.95


@dataclass(frozen=True)
class RobustnessScores:
    """The reported quantities of one evaluation.

    Attributes:
        mse_c: MSE_c, mean clean per-window MSE.
        mse_p: `(P,)` MSE_p per scenario.
        d_p: `(P,)` D_p = MSE_p / MSE_c.
        worst_index: w = argmax D_p (first maximum in canonical order).
        d_w: D_w.
        mse_w: MSE_w = MSE_p[w].
        d_mean: mean-case degradation D-bar.
        mpc: mean perturbed MSE (mPC).
    """

    mse_c: float
    mse_p: np.ndarray
    d_p: np.ndarray
    worst_index: int
    d_w: float
    mse_w: float
    d_mean: float
    mpc: float


def robustness_scores(clean: np.ndarray, faulted: np.ndarray) -> RobustnessScores:
    """Compute MSE_c, MSE_p, D_p, D_w (canonical-order tie-break), MSE_w, D-bar and mPC.

    Raises:
        ValueError: the clean MSE is not positive (D is undefined).
    """
    mse_c = float(np.mean(np.asarray(clean, np.float64)))
    if not mse_c > 0.0:
        raise ValueError(f"Clean MSE is {mse_c}; degradation ratios need a positive clean error.")
    mse_p = np.mean(np.asarray(faulted, np.float64), axis=1)
    d_p = mse_p / mse_c
    worst = int(np.argmax(d_p))
    return RobustnessScores(mse_c=mse_c, mse_p=mse_p, d_p=d_p,
                            worst_index=worst, d_w=float(d_p[worst]),
                            mse_w=float(mse_p[worst]), d_mean=float(d_p.mean()),
                            mpc=float(mse_p.mean()))


def bootstrap_means(losses: np.ndarray, seed: int, draws: int = BOOTSTRAP_DRAWS,
                    draws_per_batch: int | None = None) -> np.ndarray:
    """Mean of every loss row under each bootstrap resample of the windows -> `(draws, rows)` float64.

    The resamples are exactly the reference's: `rng = default_rng(seed)`, then `draws` successive calls
    `rng.integers(0, K, size=K)`. Each resample is turned into per-window counts and the means are one
    matrix product; batches of draws bound the memory to `draws_per_batch * K` counts (None: 64 draws, fewer
    where K is so large that a batch would outgrow `config.BOOTSTRAP_BATCH_BYTES`, about 32 bytes per count).
    """
    num_windows = losses.shape[1]
    if draws_per_batch is None:
        draws_per_batch = max(1, min(64, BOOTSTRAP_BATCH_BYTES // (32 * num_windows)))
    rng = np.random.default_rng(seed)
    means = np.empty((draws, losses.shape[0]))
    for first in range(0, draws, draws_per_batch):
        batch = min(draws_per_batch, draws - first)
        indices = np.stack([rng.integers(0, num_windows, size=num_windows) for _ in range(batch)])
        offsets = (np.arange(batch) * num_windows)[:, None]
        counts = np.bincount((indices + offsets).ravel(), minlength=batch * num_windows)
        means[first:first + batch] = counts.reshape(batch, num_windows) @ losses.T / num_windows
    return means


@dataclass(frozen=True)
class Interval:
    """A percentile interval."""

    low: float
    high: float


@dataclass(frozen=True)
class BootstrapIntervals:
    """95% percentile intervals of the reported quantities (shared-anchor window resampling)."""

    mse_c: Interval
    d_w: Interval
    mse_w: Interval
    d_mean: Interval
    mpc: Interval
    d_p: tuple[Interval, ...]
    mse_p: tuple[Interval, ...]


def _interval(values: np.ndarray, confidence: float) -> Interval:
    tail = (1.0 - confidence) / 2.0
    low, high = np.quantile(values, [tail, 1.0 - tail], method="linear")
    return Interval(float(low), float(high))


def _column_intervals(values: np.ndarray, confidence: float) -> tuple[Interval, ...]:
    return tuple(_interval(values[:, p], confidence) for p in range(values.shape[1]))


def bootstrap_intervals(clean: np.ndarray, faulted: np.ndarray, *, eval_seed: int,
                        draws: int = BOOTSTRAP_DRAWS, confidence: float = CONFIDENCE) -> BootstrapIntervals:
    """Percentile bootstrap intervals (protocol 6.3): each resample draws K test windows with replacement,
    shared by the clean mean and every scenario, and takes its own worst scenario.

    Raises:
        ValueError: fewer than `config.MIN_BOOTSTRAP_DRAWS` draws (a 2.5% tail would hold no draw).
    """
    if draws < MIN_BOOTSTRAP_DRAWS:
        raise ValueError(f"bootstrap_intervals needs at least {MIN_BOOTSTRAP_DRAWS} draws for a 95% percentile "
                         f"interval (one draw in each 2.5% tail), got {draws}.")
    losses = np.vstack([np.asarray(clean, np.float64)[None, :], np.asarray(faulted, np.float64)])
    means = bootstrap_means(losses, bootstrap_seed(eval_seed), draws)  # (draws, 1 + P)
    mse_c, mse_p = means[:, 0], means[:, 1:]
    d_p = mse_p / mse_c[:, None]
    worst = np.argmax(d_p, axis=1)
    rows = np.arange(draws)
    return BootstrapIntervals(
        mse_c=_interval(mse_c, confidence),
        d_w=_interval(d_p[rows, worst], confidence),
        mse_w=_interval(mse_p[rows, worst], confidence),
        d_mean=_interval(d_p.mean(axis=1), confidence),
        mpc=_interval(mse_p.mean(axis=1), confidence),
        d_p=_column_intervals(d_p, confidence),
        mse_p=_column_intervals(mse_p, confidence))
