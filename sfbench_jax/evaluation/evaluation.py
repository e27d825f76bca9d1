"""`evaluate_predictor`: per-window losses from the engine plus the reported scores and intervals.

The paper's eight scenarios are scored exactly as always; extra (plug-in) scenarios that `eval.scenarios` names
are scored by a second run of the same engine over the same windows (their keys fold ids >= 2**16 into the same
base key), so the eight's program, batch shapes and block size, and therefore their draws and per-window losses,
are bit-for-bit those of a run without extras. The extras' scores are relative to the eight's clean MSE and never
enter D_w, MSE_w, D-bar or mPC.
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass

import numpy as np

from sfbench_jax.config import EvalConfig
from sfbench_jax.data.prepared import PreparedData
from sfbench_jax.evaluation.engine import EngineStats, WindowLosses, resolved_eval_seed, score_resolved_windows
from sfbench_jax.evaluation.scores import (
    BootstrapIntervals,
    RobustnessScores,
    bootstrap_intervals,
    robustness_scores,
)
from sfbench_jax.faults.registry import SCENARIOS, scored_scenarios
from sfbench_jax.predictors.host import reporting_host_failures
from sfbench_jax.predictors.protocol import ModelState, Predictor


@dataclass(frozen=True)
class ExtraScenarios:
    """The extra scenarios' results: per-window losses `(E, K)` (clean: the eight's), their D_p / MSE_p in
    `scores.d_p` / `scores.mse_p` and their intervals in `intervals.d_p` / `intervals.mse_p` (the same bootstrap
    resamples as the eight's; the worst-case fields of `scores` and `intervals` are not reported)."""

    losses: WindowLosses
    scores: RobustnessScores
    intervals: BootstrapIntervals
    engine: EngineStats


@dataclass(frozen=True)
class Evaluation:
    """Everything one evaluation produced (`extra`: the extra scenarios', when `eval.scenarios` names any)."""

    losses: WindowLosses
    scores: RobustnessScores
    intervals: BootstrapIntervals
    engine: EngineStats
    bootstrap_seconds: float
    options: EvalConfig
    extra: ExtraScenarios | None = None

    @property
    def scenario_keys(self) -> tuple[str, ...]:
        """Every scored scenario: the paper's eight, then the extras."""
        return self.losses.scenario_keys + (() if self.extra is None else self.extra.losses.scenario_keys)


def evaluate_predictor(predict: Predictor, state: ModelState, data: PreparedData, options: EvalConfig, *,
                       label: str = "evaluate") -> Evaluation:
    """Score a predictor on K test windows clean and under the eight scenarios (and the extras `options.scenarios`
    names), with 95% intervals (`options.bootstrap_draws` resamples). `Evaluation.options` holds the settings with
    the seed resolved.

    Raises:
        HostModelError: a model that runs on the host (an external predictor, Chronos-2) failed on a block.
    """
    options = options.for_dataset(data.spec)  # the one resolution of this evaluation's seed
    with reporting_host_failures():
        losses, stats = score_resolved_windows(predict, state, data, options, label=label)
    scores = robustness_scores(losses.clean, losses.faulted)
    started = time.perf_counter()
    intervals = bootstrap_intervals(losses.clean, losses.faulted, eval_seed=resolved_eval_seed(options),
                                    draws=options.bootstrap_draws)
    bootstrap_seconds = time.perf_counter() - started
    extra = None
    if options.extra_scenarios:
        with reporting_host_failures():
            extra = score_extra_scenarios(predict, state, data, options, clean=losses.clean, label=label)
    return Evaluation(losses=losses, scores=scores, intervals=intervals, engine=stats,
                      bootstrap_seconds=bootstrap_seconds, options=options, extra=extra)


def score_extra_scenarios(predict: Predictor, state: ModelState, data: PreparedData, options: EvalConfig, *,
                          clean: np.ndarray, label: str) -> ExtraScenarios:
    """Score `options.extra_scenarios` on the same windows, relative to the eight's clean losses `clean`."""
    faults = scored_scenarios(options.extra_scenarios)[len(SCENARIOS):]
    losses, stats = score_resolved_windows(predict, state, data, options, scenarios=faults,
                                           label=f"{label} (extra scenarios)")
    losses = dataclasses.replace(losses, clean=clean)
    return ExtraScenarios(losses=losses, scores=robustness_scores(clean, losses.faulted),
                          intervals=bootstrap_intervals(clean, losses.faulted, eval_seed=resolved_eval_seed(options),
                                                        draws=options.bootstrap_draws), engine=stats)
