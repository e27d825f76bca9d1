"""Scoring kernels: RUL regression metrics, the PHM08 score and classification metrics.

What lives here: RMSE / MAE / bias (phm-reference 1.5), the asymmetric PHM08 / NASA scoring function
(Saxena et al. 2008), the ground-truth verification behind PHMForge's ``verify_ground_truth``
(metrics plus range checks), and confusion-matrix based classification metrics (phm-reference 8:
accuracy, per-class precision / recall / F1, macro and weighted F1, 0/0 defined as 0).

Error convention: ``d = y_pred - y_true``; positive d is a *late* prediction (life overestimated),
which PHM08 penalises harder (divisor 10 < 13).

What does not live here: RUL labels and protocols (``rul.py``) and any I/O.
"""

# jaxtyping shape strings (e.g. "n", "batch time") are not forward references:
# ruff: noqa: F821, UP037

from __future__ import annotations

import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, ArrayLike, Bool, Float, Int, Real

from phm_kernels._checks import (
    as_float,
    require_finite,
    require_integer_valued,
    require_range,
    require_static_choice,
    to_numpy,
)
from phm_kernels.errors import DomainError, ShapeMismatchError

__all__ = [
    "SCORE_REDUCTIONS",
    "ClassificationMetrics",
    "RegressionMetrics",
    "RulVerification",
    "classification_metrics",
    "classification_metrics_core",
    "phm08_score",
    "phm08_score_core",
    "regression_metrics",
    "regression_metrics_core",
    "validate_classification_inputs",
    "validate_regression_inputs",
    "verify_rul_predictions",
    "verify_rul_predictions_core",
]

#: Reductions accepted by :func:`phm08_score`.
SCORE_REDUCTIONS = ("sum", "mean")


class RegressionMetrics(NamedTuple):
    """RMSE, MAE and mean bias of predictions (bias > 0 means late on average)."""

    rmse: Float[Array, "*batch"]
    mae: Float[Array, "*batch"]
    bias: Float[Array, "*batch"]


def validate_regression_inputs(y_true, y_pred) -> None:
    """Checks equal shapes (last axis = items, N >= 1) and finite values."""
    t = to_numpy("y_true", y_true, min_ndim=1)
    p = to_numpy("y_pred", y_pred, min_ndim=1)
    if t.shape != p.shape:
        raise ShapeMismatchError(f"y_true and y_pred must have the same shape; got {t.shape} and "
                                 f"{p.shape}. Pass one prediction per ground-truth value.")
    require_finite("y_true", t)
    require_finite("y_pred", p)


@jax.jit
def regression_metrics_core(y_true, y_pred) -> RegressionMetrics:
    """Jitted core of :func:`regression_metrics` (reduces the last axis)."""
    d = as_float(y_pred) - as_float(y_true)
    return RegressionMetrics(jnp.sqrt(jnp.mean(d**2, axis=-1)), jnp.mean(jnp.abs(d), axis=-1),
                             jnp.mean(d, axis=-1))


def regression_metrics(y_true: Real[ArrayLike, "n"], y_pred: Real[ArrayLike, "n"]
                       ) -> RegressionMetrics:
    """RMSE, MAE and bias of RUL (or any) predictions.

    Args:
        y_true: Ground truth, shape (N,), N >= 1.
        y_pred: Predictions, same shape.

    Returns:
        RegressionMetrics (rmse, mae, bias) with ``d = y_pred - y_true``.

    Example:
        >>> m = regression_metrics([112, 98, 69, 82], [100, 105, 69, 90])
        >>> round(float(m.rmse), 6), float(m.mae)
        (8.01561, 6.75)
    """
    validate_regression_inputs(y_true, y_pred)
    return regression_metrics_core(y_true, y_pred)


@functools.partial(jax.jit, static_argnames=("reduction",))
def phm08_score_core(y_true, y_pred, a_early=13.0, a_late=10.0, *, reduction: str = "sum"
                     ) -> Float[Array, "*batch"]:
    """Jitted core of :func:`phm08_score` (reduces the last axis)."""
    d = as_float(y_pred) - as_float(y_true)
    per_item = jnp.where(d < 0, jnp.expm1(-d / as_float(a_early)), jnp.expm1(d / as_float(a_late)))
    return jnp.sum(per_item, axis=-1) if reduction == "sum" else jnp.mean(per_item, axis=-1)


def phm08_score(y_true: Real[ArrayLike, "n"], y_pred: Real[ArrayLike, "n"], *,
                a_early: float = 13.0, a_late: float = 10.0,
                reduction: str = "sum") -> Float[Array, ""]:
    """PHM08 / NASA asymmetric scoring function (Saxena et al. 2008).

    ``s_i = exp(-d_i / a_early) - 1`` if ``d_i < 0`` (early), ``exp(d_i / a_late) - 1``
    otherwise (late), ``d = y_pred - y_true``; the score is the sum (published tables) or mean.

    Args:
        y_true: Ground-truth RUL, shape (N,).
        y_pred: Predicted RUL, same shape.
        a_early: Divisor for early predictions (13).
        a_late: Divisor for late predictions (10).
        reduction: "sum" (default) or "mean".

    Returns:
        The score (lower is better).

    Example:
        >>> round(float(phm08_score([0.0, 0.0, 0.0], [-10.0, 0.0, 10.0])), 6)
        2.876387
    """
    validate_regression_inputs(y_true, y_pred)
    reduction = require_static_choice("reduction", reduction, SCORE_REDUCTIONS)
    for name, value in (("a_early", a_early), ("a_late", a_late)):
        arr = to_numpy(name, value, ndim=0)
        require_finite(name, arr)
        require_range(name, arr, lo=0.0, lo_open=True)
    return phm08_score_core(y_true, y_pred, a_early, a_late, reduction=reduction)


class RulVerification(NamedTuple):
    """Result of :func:`verify_rul_predictions`.

    Attributes:
        rmse: Root mean squared error.
        mae: Mean absolute error.
        bias: Mean of ``y_pred - y_true``.
        score: PHM08 score (sum).
        mae_ok: ``mae_range[0] <= mae <= mae_range[1]``.
        rmse_ok: ``rmse_range[0] <= rmse <= rmse_range[1]``.
        n_negative_predictions: Count of predictions below 0 (an "invalid range" warning).
    """

    rmse: Float[Array, "*batch"]
    mae: Float[Array, "*batch"]
    bias: Float[Array, "*batch"]
    score: Float[Array, "*batch"]
    mae_ok: Bool[Array, "*batch"]
    rmse_ok: Bool[Array, "*batch"]
    n_negative_predictions: Int[Array, "*batch"]


@jax.jit
def verify_rul_predictions_core(y_true, y_pred, mae_range, rmse_range) -> RulVerification:
    """Jitted core of :func:`verify_rul_predictions` (ranges are length-2 arrays)."""
    metrics = regression_metrics_core(y_true, y_pred)
    mae_range, rmse_range = as_float(mae_range), as_float(rmse_range)
    return RulVerification(
        metrics.rmse, metrics.mae, metrics.bias, phm08_score_core(y_true, y_pred),
        (metrics.mae >= mae_range[..., 0]) & (metrics.mae <= mae_range[..., 1]),
        (metrics.rmse >= rmse_range[..., 0]) & (metrics.rmse <= rmse_range[..., 1]),
        jnp.sum(as_float(y_pred) < 0, axis=-1).astype(jnp.int32))


def verify_rul_predictions(y_true: Real[ArrayLike, "n"], y_pred: Real[ArrayLike, "n"], *,
                           mae_range: tuple[float | int, float | int],
                           rmse_range: tuple[float | int, float | int]) -> RulVerification:
    """Ground-truth verification: metrics plus whether they fall inside accepted ranges.

    Args:
        y_true: Ground-truth RUL, shape (N,).
        y_pred: Predicted RUL, same shape.
        mae_range: Inclusive (low, high) accepted MAE, e.g. (7, 18) for FD001 (Zheng 2017).
        rmse_range: Inclusive (low, high) accepted RMSE, e.g. (11, 26).

    Returns:
        RulVerification (rmse, mae, bias, score, mae_ok, rmse_ok, n_negative_predictions).
    """
    validate_regression_inputs(y_true, y_pred)
    for name, rng in (("mae_range", mae_range), ("rmse_range", rmse_range)):
        arr = to_numpy(name, rng, ndim=1)
        if arr.shape != (2,) or not np.all(np.isfinite(arr)) or arr[0] > arr[1] or arr[0] < 0:
            raise DomainError(f"{name} must be (low, high) with 0 <= low <= high; got {rng!r}.")
    return verify_rul_predictions_core(y_true, y_pred, np.asarray(mae_range, float),
                                       np.asarray(rmse_range, float))


class ClassificationMetrics(NamedTuple):
    """Result of :func:`classification_metrics` for K classes.

    Attributes:
        accuracy: trace(M) / N.
        precision: Per class M_cc / column sum (0 when the column is empty).
        recall: Per class M_cc / row sum (0 when the row is empty).
        f1: Per class harmonic mean of precision and recall (0 when both are 0).
        support: Per class count of true labels.
        macro_f1: Unweighted mean of ``f1``.
        weighted_f1: Support-weighted mean of ``f1``.
        confusion: M[i, j] = count of true class i predicted as j.
    """

    accuracy: Float[Array, "*batch"]
    precision: Float[Array, "*batch classes"]
    recall: Float[Array, "*batch classes"]
    f1: Float[Array, "*batch classes"]
    support: Float[Array, "*batch classes"]
    macro_f1: Float[Array, "*batch"]
    weighted_f1: Float[Array, "*batch"]
    confusion: Float[Array, "*batch classes classes"]


def validate_classification_inputs(y_true, y_pred, n_classes) -> None:
    """Checks integer labels in [0, n_classes), equal 1-D shapes and N >= 1."""
    if not isinstance(n_classes, (int, np.integer)) or n_classes < 1:
        raise DomainError(f"n_classes must be a positive int; got {n_classes!r}.")
    t = to_numpy("y_true", y_true, ndim=1)
    p = to_numpy("y_pred", y_pred, ndim=1)
    if t.shape != p.shape:
        raise ShapeMismatchError(f"y_true and y_pred must have the same length; got "
                                 f"{t.shape[0]} and {p.shape[0]}.")
    for name, arr in (("y_true", t), ("y_pred", p)):
        require_finite(name, arr)
        require_integer_valued(name, arr)
        require_range(name, arr, lo=0, hi=n_classes - 1,
                      hint=f"Labels are int codes 0..{n_classes - 1}; map label strings first.")


def _safe_ratio(num, den):
    return jnp.where(den > 0, num / jnp.where(den > 0, den, 1.0), 0.0)


@functools.partial(jax.jit, static_argnames=("n_classes",))
def classification_metrics_core(y_true, y_pred, *, n_classes: int) -> ClassificationMetrics:
    """Jitted core of :func:`classification_metrics` for one label vector pair."""
    y_true = jnp.asarray(y_true).astype(jnp.int32)
    y_pred = jnp.asarray(y_pred).astype(jnp.int32)
    dtype = jnp.result_type(float)
    confusion = jnp.zeros((n_classes, n_classes), dtype).at[y_true, y_pred].add(1.0)
    hits = jnp.diag(confusion)
    support = confusion.sum(axis=1)
    precision = _safe_ratio(hits, confusion.sum(axis=0))
    recall = _safe_ratio(hits, support)
    f1 = _safe_ratio(2.0 * precision * recall, precision + recall)
    total = confusion.sum()
    return ClassificationMetrics(hits.sum() / total, precision, recall, f1, support,
                                 jnp.mean(f1), jnp.sum(f1 * support) / total, confusion)


def classification_metrics(y_true: Int[ArrayLike, "n"] | Real[ArrayLike, "n"],
                           y_pred: Int[ArrayLike, "n"] | Real[ArrayLike, "n"], *,
                           n_classes: int) -> ClassificationMetrics:
    """Accuracy, per-class precision / recall / F1 and macro / weighted F1.

    0/0 ratios are defined as 0 (sklearn's ``zero_division=0``).

    Args:
        y_true: True int labels in [0, n_classes), shape (N,), N >= 1.
        y_pred: Predicted int labels, same shape.
        n_classes: Number of classes K (static).

    Returns:
        ClassificationMetrics.

    Example:
        >>> m = classification_metrics([0, 0, 1, 1, 2, 2], [0, 1, 1, 1, 2, 0], n_classes=3)
        >>> round(float(m.macro_f1), 6)
        0.655556
    """
    validate_classification_inputs(y_true, y_pred, n_classes)
    return classification_metrics_core(y_true, y_pred, n_classes=int(n_classes))
