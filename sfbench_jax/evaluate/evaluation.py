"""`evaluate_predictor`: per-window losses from the engine plus the reported scores and intervals."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from sfbench_jax.config import EvalConfig
from sfbench_jax.data.prepared import PreparedData
from sfbench_jax.evaluate.engine import EngineStats, WindowLosses, score_windows
from sfbench_jax.evaluate.scores import (
    BootstrapIntervals,
    RobustnessScores,
    bootstrap_intervals,
    robustness_scores,
)
from sfbench_jax.host_calls import reporting_host_failures
from sfbench_jax.predictors import Predictor


@dataclass(frozen=True)
class Evaluation:
    """Everything one evaluation produced."""

    losses: WindowLosses
    scores: RobustnessScores
    intervals: BootstrapIntervals
    engine: EngineStats
    bootstrap_seconds: float
    options: EvalConfig


def evaluate_predictor(predict: Predictor, state: Any, data: PreparedData, options: EvalConfig, *,
                       label: str = "evaluate") -> Evaluation:
    """Score a predictor on K test windows clean and under the eight scenarios, with 95% intervals
    (`options.bootstrap_draws` resamples). `Evaluation.options` holds the settings with the seed resolved.

    Raises:
        HostModelError: a model that runs on the host (an external predictor, Chronos-2) failed on a block.
    """
    options = options.for_dataset(data.spec)
    with reporting_host_failures():
        losses, stats = score_windows(predict, state, data, options, label=label)
    scores = robustness_scores(losses.clean, losses.faulted)
    started = time.perf_counter()
    intervals = bootstrap_intervals(losses.clean, losses.faulted, eval_seed=options.seed,
                                    draws=options.bootstrap_draws)
    return Evaluation(losses=losses, scores=scores, intervals=intervals, engine=stats,
                      bootstrap_seconds=time.perf_counter() - started, options=options)
