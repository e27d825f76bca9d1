"""`evaluate_predictor`: per-window losses from the engine plus the reported scores and intervals."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from sfbench_jax.data.prepared import PreparedData
from sfbench_jax.evaluate.engine import EngineStats, EvalOptions, WindowLosses, score_windows
from sfbench_jax.evaluate.kernel import PredictFn
from sfbench_jax.evaluate.scores import (
    BootstrapIntervals,
    RobustnessScores,
    bootstrap_intervals,
    robustness_scores,
)


@dataclass(frozen=True)
class Evaluation:
    """Everything one evaluation produced."""

    losses: WindowLosses
    scores: RobustnessScores
    intervals: BootstrapIntervals
    engine: EngineStats
    bootstrap_seconds: float
    options: EvalOptions


def evaluate_predictor(predict: PredictFn, state: Any, data: PreparedData, options: EvalOptions, *,
                       bootstrap_draws: int = 1000, label: str = "evaluate") -> Evaluation:
    """Score a predictor on K test windows clean and under the eight scenarios, with 95% intervals."""
    losses, stats = score_windows(predict, state, data, options, label=label)
    scores = robustness_scores(losses.clean, losses.faulted)
    started = time.perf_counter()
    intervals = bootstrap_intervals(losses.clean, losses.faulted, eval_data_seed=options.eval_data_seed,
                                    draws=bootstrap_draws)
    return Evaluation(losses=losses, scores=scores, intervals=intervals, engine=stats,
                      bootstrap_seconds=time.perf_counter() - started, options=options)
