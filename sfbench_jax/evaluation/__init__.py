"""Evaluation: the fused Monte Carlo kernel, chunking and device sharding, scores (D_p, D_w, MSE_c,
MSE_w, mean-case), bootstrap intervals and validation passes. No training."""

from sfbench_jax.evaluation.engine import EngineStats, WindowLosses, score_windows
from sfbench_jax.evaluation.evaluation import Evaluation, evaluate_predictor
from sfbench_jax.evaluation.predict import predict_fn
from sfbench_jax.evaluation.scores import (
    BootstrapIntervals,
    RobustnessScores,
    bootstrap_intervals,
    robustness_scores,
)
from sfbench_jax.evaluation.validation import validation_mse, validation_mses
from sfbench_jax.predictors.protocol import CLEAN_CONTEXT, VALIDATION_CONTEXT, PredictFn, Predictor, RowAwarePredictor

__all__ = [
    "CLEAN_CONTEXT",
    "VALIDATION_CONTEXT",
    "BootstrapIntervals",
    "EngineStats",
    "Evaluation",
    "PredictFn",
    "Predictor",
    "RobustnessScores",
    "RowAwarePredictor",
    "WindowLosses",
    "bootstrap_intervals",
    "evaluate_predictor",
    "predict_fn",
    "robustness_scores",
    "score_windows",
    "validation_mse", "validation_mses",
]
