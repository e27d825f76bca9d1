"""Tests for phm_kernels.metrics: phm-reference 1.5 and 8 worked examples, validation, jit/vmap."""

from __future__ import annotations

import jax
import numpy as np
import pytest
from phm_kernels import metrics
from phm_kernels.errors import DomainError, NonFiniteInputError, ShapeMismatchError

Y_TRUE = [112.0, 98.0, 69.0, 82.0]
Y_PRED = [100.0, 105.0, 69.0, 90.0]


def test_phm08_score_vector_sum():
    # d = [-10, 0, 10] -> exp(10/13)-1 + 0 + e-1
    score = metrics.phm08_score([0.0, 0.0, 0.0], [-10.0, 0.0, 10.0])
    assert float(score) == pytest.approx(2.876387, abs=1e-6)
    assert float(score) == pytest.approx(np.expm1(10 / 13) + np.expm1(1.0), rel=1e-12)


def test_phm08_late_is_penalised_more_than_early():
    late = metrics.phm08_score([50.0], [60.0])
    early = metrics.phm08_score([50.0], [40.0])
    assert float(late) > float(early)


def test_phm08_mean_reduction():
    total = metrics.phm08_score(Y_TRUE, Y_PRED)
    mean = metrics.phm08_score(Y_TRUE, Y_PRED, reduction="mean")
    assert float(mean) == pytest.approx(float(total) / 4, rel=1e-12)


def test_regression_metrics_vector():
    m = metrics.regression_metrics(Y_TRUE, Y_PRED)
    assert float(m.rmse) == pytest.approx(8.015610, abs=1e-6)
    assert float(m.mae) == pytest.approx(6.75, abs=1e-12)
    assert float(m.bias) == pytest.approx(0.75, abs=1e-12)
    assert float(metrics.phm08_score(Y_TRUE, Y_PRED)) == pytest.approx(3.756317, abs=1e-6)


def test_regression_metrics_float32_tolerance():
    with jax.enable_x64(False):
        m = metrics.regression_metrics(Y_TRUE, Y_PRED)
        score = metrics.phm08_score(Y_TRUE, Y_PRED)
    assert m.rmse.dtype == np.float32
    np.testing.assert_allclose(float(m.rmse), 8.015610, rtol=1e-5)
    np.testing.assert_allclose(float(score), 3.756317, rtol=1e-4)


def test_verify_rul_predictions_ranges():
    v = metrics.verify_rul_predictions(Y_TRUE, Y_PRED, mae_range=(5, 7), rmse_range=(11, 26))
    assert bool(v.mae_ok) and not bool(v.rmse_ok)
    assert int(v.n_negative_predictions) == 0
    v = metrics.verify_rul_predictions([10.0, 20.0], [-1.0, 20.0], mae_range=(0, 10),
                                       rmse_range=(0, 10))
    assert int(v.n_negative_predictions) == 1


def test_classification_metrics_worked_example():
    m = metrics.classification_metrics([0, 0, 1, 1, 2, 2], [0, 1, 1, 1, 2, 0], n_classes=3)
    assert float(m.accuracy) == pytest.approx(0.666667, abs=1e-6)
    np.testing.assert_allclose(m.f1, [0.5, 0.8, 0.666667], atol=1e-6)
    assert float(m.macro_f1) == pytest.approx(0.655556, abs=1e-6)
    np.testing.assert_array_equal(m.confusion, [[1, 1, 0], [0, 2, 0], [1, 0, 1]])


def test_classification_zero_division_is_zero():
    # class 2 never predicted and never true: precision, recall and F1 are 0, not NaN.
    m = metrics.classification_metrics([0, 1], [0, 1], n_classes=3)
    np.testing.assert_array_equal(m.f1, [1.0, 1.0, 0.0])
    assert float(m.macro_f1) == pytest.approx(2 / 3)
    assert float(m.weighted_f1) == pytest.approx(1.0)


@pytest.mark.parametrize("call, error", [
    (lambda: metrics.regression_metrics([1.0, 2.0], [1.0]), ShapeMismatchError),
    (lambda: metrics.regression_metrics([], []), ShapeMismatchError),
    (lambda: metrics.regression_metrics([1.0, np.nan], [1.0, 2.0]), NonFiniteInputError),
    (lambda: metrics.phm08_score([1.0], [1.0], reduction="median"), Exception),
    (lambda: metrics.classification_metrics([0, 3], [0, 1], n_classes=3), DomainError),
    (lambda: metrics.classification_metrics([0, 0.5], [0, 1], n_classes=3), DomainError),
    (lambda: metrics.verify_rul_predictions([1.0], [1.0], mae_range=(5, 1), rmse_range=(0, 1)),
     DomainError),
])
def test_bad_input_raises_named_error(call, error):
    with pytest.raises(error):
        call()


def test_unknown_reduction_message_names_options():
    with pytest.raises(ValueError, match="sum"):
        metrics.phm08_score([1.0], [1.0], reduction="median")


def test_jit_vmap_agreement(vmap_check):
    rng = np.random.default_rng(0)
    y_true = rng.uniform(0, 150, (5, 20))
    y_pred = y_true + rng.normal(0, 15, (5, 20))
    vmap_check(metrics.regression_metrics_core, (y_true, y_pred))
    vmap_check(metrics.phm08_score_core, (y_true, y_pred), reduction="sum")
    labels_true = rng.integers(0, 4, (6, 30))
    labels_pred = rng.integers(0, 4, (6, 30))
    vmap_check(metrics.classification_metrics_core, (labels_true, labels_pred), n_classes=4)
    ranges = np.tile([[0.0, 20.0]], (5, 1))
    vmap_check(metrics.verify_rul_predictions_core, (y_true, y_pred, ranges, ranges))
