"""Severity-response curves: D_p(s) of one model at a fixed grid of severities, every scenario, in one compiled
program (a window program run by `engine.run_window_program`).

The evaluation draws one severity per (scenario, window); here the severity is an input instead. Stage one
keeps each (scenario, window) pair's random stream (the key folded from the eval seed, the scenario id and the
window id, exactly as the evaluation's), and stage two maps over the severity grid inside the compiled block:
at each severity it samples every scenario's parameters from the pair's stream with that severity, applies the
faults, and runs the model on the clean block and the faulted blocks as one batch. So all severities share the
channels, positions and noise of a pair (common random numbers: the curves are smooth in s, and at the drawn
severity a window's fault is the evaluation's), the clean losses come from the same batches (D_p(0) is exactly
1), and results never depend on the chunk size or the device count. The grid travels with the model state, so
another grid of the same length reuses the compiled program.

Only the JAX RNG mode: the reference streams draw the severity first and size later draws by it.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Sequence
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd

from sfbench_jax.config import EvalConfig
from sfbench_jax.data.prepared import PreparedData
from sfbench_jax.data.seeds import bootstrap_seed
from sfbench_jax.data.windows import Layout, WindowShape, gather_windows, window_shape
from sfbench_jax.evaluation.engine import EngineStats, fault_context, resolved_eval_seed, run_window_program
from sfbench_jax.evaluation.kernel import model_inputs_block, window_mse
from sfbench_jax.evaluation.scores import CONFIDENCE, bootstrap_means
from sfbench_jax.faults.context import FaultContext
from sfbench_jax.faults.registry import SCENARIOS, Fault
from sfbench_jax.faults.severity import severity_to_units
from sfbench_jax.faults.spec import FaultParams
from sfbench_jax.predictors.protocol import ModelState, Predictor, run_predictor

#: The default grid: s = 0, 0.05, ..., 1.
DEFAULT_SEVERITIES: tuple[float, ...] = tuple(round(0.05 * i, 2) for i in range(21))


def _stream_words(words: jax.Array, ctx: FaultContext, units: jax.Array | None) -> jax.Array:
    """Stage one of the curves: keep the pair's stream words (parameters are sampled per severity later)."""
    del ctx, units
    return words


def _unchanged(params: FaultParams, ctx: FaultContext) -> FaultParams:
    del ctx
    return params


def stream_keeping(fault: Fault) -> Fault:
    """`fault` whose stage-one sampler returns the (scenario, window) stream words instead of parameters."""
    return dataclasses.replace(fault, sample=_stream_words, prepare=_unchanged)


@dataclass(frozen=True)
class CurveProgram:
    """Stage two of the severity curves: per block, the clean MSE and the faulted MSE at every severity of the
    grid (the grid is the second element of the state, so it is data, not part of the program).

    Hashable (the predictor by identity): it keys the kernel cache. A row-aware predictor sees the same
    (context, window id) rows as in the evaluation at every severity.
    """

    predict: Predictor
    scenarios: tuple[Fault, ...]
    faults: tuple[Fault, ...]
    ctx: FaultContext
    shape: WindowShape
    layout: Layout = "cpu"

    #: Stage two receives the windows' sample ids (a row-aware predictor keys its randomness by them).
    uses_window_ids = True

    def with_layout(self, layout: Layout) -> CurveProgram:
        """This program in `layout`."""
        return dataclasses.replace(self, layout=layout)

    def block(self, state: ModelState, series: jax.Array, starts: jax.Array, window_ids: jax.Array,
              prepared: tuple[FaultParams, ...]) -> tuple[jax.Array, jax.Array]:
        """`(clean (c,), faulted (c, G, P))` of one block of windows; `prepared` holds the stream words."""
        model_state, units = state
        x, y = gather_windows(series, starts, self.shape, layout=self.layout)

        def at_severity(unit: jax.Array) -> jax.Array:
            params = tuple(jax.vmap(lambda w, fault=fault: fault.prepare(fault.sample(w, self.ctx, unit), self.ctx))(
                words) for fault, words in zip(self.faults, prepared, strict=True))
            inputs = model_inputs_block(x, params, scenarios=self.faults, ctx=self.ctx, layout=self.layout)
            branches, count = inputs.shape[:2]
            contexts = jnp.repeat(jnp.arange(branches, dtype=jnp.int32), count)  # clean, then 1 + scenario
            prediction = run_predictor(self.predict, model_state, inputs.reshape(branches * count, *x.shape[1:]),
                                       contexts, jnp.tile(window_ids, branches))
            targets = jnp.broadcast_to(y[None], (branches, *y.shape)).reshape(-1, *y.shape[1:])
            return window_mse(prediction, targets).reshape(branches, count)

        losses = jax.lax.map(at_severity, units)  # (G, 1 + P, c)
        return losses[0, 0], jnp.transpose(losses[:, 1:], (2, 0, 1))


@dataclass(frozen=True)
class SeverityCurves:
    """D_p(s) of one model on a severity grid.

    Attributes:
        severities: `(G,)` the grid.
        scenario_keys: the P scenarios.
        mse_c: clean MSE (the same windows as the evaluation with these settings).
        mse: `(G, P)` mean faulted MSE.
        d: `(G, P)` D_p(s) = mse / mse_c.
        d_ci_lo, d_ci_hi: `(G, P)` 95% window-bootstrap interval of D_p(s) (the evaluation's resamples).
        engine: engine statistics.
        bootstrap_seconds: time of the bootstrap.
        options: evaluation settings (seed resolved).
    """

    severities: np.ndarray
    scenario_keys: tuple[str, ...]
    mse_c: float
    mse: np.ndarray
    d: np.ndarray
    d_ci_lo: np.ndarray
    d_ci_hi: np.ndarray
    engine: EngineStats
    bootstrap_seconds: float
    options: EvalConfig

    def severity_average(self) -> np.ndarray:
        """`(P,)` the curve averaged over the grid's severity range (trapezoid rule); with a grid covering [0, 1]
        it estimates the evaluation's D_p, whose severities are uniform on [0, 1)."""
        span = float(self.severities[-1] - self.severities[0])
        if span <= 0:
            first: np.ndarray = self.d[0].copy()
            return first
        average: np.ndarray = np.trapezoid(self.d, self.severities, axis=0) / span
        return average

    def to_frame(self) -> pd.DataFrame:
        """Long table: one row per (scenario, severity) with `mse`, `d`, `d_ci_lo`, `d_ci_hi`."""
        grid, scenarios = np.meshgrid(self.severities, np.arange(len(self.scenario_keys)), indexing="ij")
        return pd.DataFrame({"scenario": np.asarray(self.scenario_keys)[scenarios.ravel()],
                             "severity": grid.ravel(), "mse": self.mse.ravel(), "d": self.d.ravel(),
                             "d_ci_lo": self.d_ci_lo.ravel(), "d_ci_hi": self.d_ci_hi.ravel(),
                             "mse_c": self.mse_c})


def severity_units_grid(severities: Sequence[float]) -> np.ndarray:
    """The grid as int32 severity units.

    Raises:
        ValueError: an empty grid, or a severity outside [0, 1] (naming it).
    """
    values = np.asarray(list(severities), np.float64)
    if values.ndim != 1 or values.size == 0:
        raise ValueError("The severity grid is empty; give at least one severity in [0, 1], e.g. 0, 0.05, ..., 1.")
    return np.asarray(severity_to_units(values), np.int32)


def severity_curves(predict: Predictor, state: ModelState, data: PreparedData, options: EvalConfig, *,
                    severities: Sequence[float] = DEFAULT_SEVERITIES, scenarios: Sequence[Fault] = SCENARIOS,
                    label: str = "severity curves") -> SeverityCurves:
    """D_p(s) per scenario at every severity of the grid, with 95% window-bootstrap bands.

    Args:
        predict, state: the model (`predict(state, x) -> y_hat`, pure, eval mode).
        data: the prepared dataset.
        options: evaluation settings (seed, K, channel fraction, chunking); `rng_mode` must be "jax".
        severities: the grid, each in [0, 1].
        scenarios: the scenarios (default: the eight).
        label: progress label.

    Raises:
        ValueError: reference RNG mode, or a bad grid (before any work).
    """
    if options.rng_mode != "jax":
        raise ValueError("Severity curves need eval.rng_mode=jax: the reference streams draw the severity first and "
                         "size their later draws by it, so a fixed severity has no reference stream.")
    units = severity_units_grid(severities)
    options = options.for_dataset(data.spec)  # the one resolution of this evaluation's seed
    faults = tuple(scenarios)
    program = CurveProgram(predict=predict, scenarios=tuple(stream_keeping(f) for f in faults), faults=faults,
                           ctx=fault_context(data, options.channel_fraction), shape=window_shape(data.spec))
    outputs, _, stats = run_window_program(program, (state, units), data, options, label=label, test_starts=None)
    clean = np.concatenate([out[0] for out in outputs]).astype(np.float64)
    faulted = np.concatenate([out[1] for out in outputs]).astype(np.float64)  # (K, G, P)
    # one contiguous row per quantity, each reduced the same way: a window whose faulted loss equals its clean
    # loss (s = 0) gives exactly D = 1
    rows = np.ascontiguousarray(np.vstack([clean[None], faulted.reshape(len(clean), -1).T]))  # (1 + G P, K)
    means = rows.mean(axis=1)
    shape = (len(units), len(faults))
    started = time.perf_counter()
    low, high = _ratio_intervals(rows, bootstrap_seed(resolved_eval_seed(options)), options.bootstrap_draws)
    return SeverityCurves(severities=np.asarray(list(severities), np.float64),
                          scenario_keys=tuple(f.key for f in faults), mse_c=float(means[0]),
                          mse=means[1:].reshape(shape), d=(means[1:] / means[0]).reshape(shape),
                          d_ci_lo=low.reshape(shape), d_ci_hi=high.reshape(shape), engine=stats,
                          bootstrap_seconds=time.perf_counter() - started, options=options)


def _ratio_intervals(rows: np.ndarray, seed: int, draws: int) -> tuple[np.ndarray, np.ndarray]:
    """Percentile intervals of `mean(row) / mean(rows[0])` for every row after the first, under the evaluation's
    window resamples (`scores.bootstrap_means`)."""
    means = bootstrap_means(rows, seed, draws)
    tail = (1.0 - CONFIDENCE) / 2.0
    low, high = np.quantile(means[:, 1:] / means[:, :1], [tail, 1.0 - tail], axis=0, method="linear")
    return low, high
