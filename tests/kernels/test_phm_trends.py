"""Tests for phm_kernels.trends: Mann-Kendall, trend-fit and rolling z-score worked examples,
masks, validation, jit/vmap."""

from __future__ import annotations

import jax
import numpy as np
import pytest
from phm_kernels import trends
from phm_kernels.errors import DomainError, InsufficientDataError, NonFiniteInputError
from scipy import stats

STEP_SERIES = [10, 10.2, 9.8, 10.1, 9.9, 10.0, 13.0, 13.5, 14.0, 14.2, 10.0, 10.1]


def test_mann_kendall_monotone():
    r = trends.mann_kendall([1, 2, 3, 4, 5])
    assert float(r.s) == 10 and float(r.var_s) == pytest.approx(16.6667, abs=1e-4)
    assert float(r.z) == pytest.approx(2.204541, abs=1e-6)
    assert float(r.p_value) == pytest.approx(0.027486, abs=1e-6)
    assert float(r.tau) == 1.0 and float(r.sen_slope) == 1.0


def test_mann_kendall_pinned_vector():
    r = trends.mann_kendall([1.0, 1.2, 1.1, 1.5, 1.7, 1.6, 2.0, 2.2])
    assert float(r.s) == 24
    assert float(r.var_s) == pytest.approx(65.3333, abs=1e-4)
    assert float(r.z) == pytest.approx(2.845512, abs=1e-6)
    assert float(r.p_value) == pytest.approx(0.004434, abs=1e-6)
    assert float(r.tau) == pytest.approx(0.857143, abs=1e-6)
    assert float(r.sen_slope) == pytest.approx(0.166667, abs=1e-6)
    assert trends.TREND_LABELS[int(r.trend)] == "INCREASING"
    assert bool(r.small_sample)


def test_mann_kendall_ties():
    r = trends.mann_kendall([1, 1, 2, 2, 3])
    assert float(r.s) == 8 and float(r.var_s) == pytest.approx(14.6667, abs=1e-4)
    assert float(r.z) == pytest.approx(1.827815, abs=1e-6)
    assert float(r.p_value) == pytest.approx(0.067577, abs=1e-6)
    assert trends.TREND_LABELS[int(r.trend)] == "NO_TREND"


def test_mann_kendall_against_scipy_kendall_tau_and_theilsen():
    rng = np.random.default_rng(4)
    y = np.cumsum(rng.normal(-0.1, 1.0, 40))
    r = trends.mann_kendall(y)
    assert float(r.tau) == pytest.approx(stats.kendalltau(np.arange(40), y).statistic, rel=1e-12)
    assert float(r.sen_slope) == pytest.approx(stats.theilslopes(y).slope, rel=1e-12)
    assert not bool(r.small_sample)


def test_mann_kendall_mask_equals_dropping_points():
    y = np.array([3.0, 1.0, 4.0, 1.0, 5.0, 9.0, 2.0, 6.0, 5.0, 3.0, 5.0])
    mask = np.array([True, True, False, True, True, True, True, False, True, True, True])
    masked = trends.mann_kendall(y, mask=mask)
    dropped = trends.mann_kendall(y[mask])
    for field in ("s", "var_s", "z", "p_value", "tau"):
        assert float(getattr(masked, field)) == pytest.approx(float(getattr(dropped, field)))


def test_trend_fit_linear_example():
    t = np.arange(1.0, 11.0)
    r = trends.trend_fit(t, 2.0 - 0.01 * t, y_threshold=1.4)
    assert float(r.slope) == pytest.approx(-0.01, abs=1e-12)
    assert float(r.intercept) == pytest.approx(2.0, abs=1e-12)
    assert trends.TREND_MODELS[int(r.model)] == "linear"
    assert float(r.time_to_threshold) == pytest.approx(50.0, abs=1e-9)


def test_trend_fit_exponential_chosen_and_threshold():
    t = np.arange(1.0, 21.0)
    y = 3.0 * np.exp(-0.05 * t)
    r = trends.trend_fit(t, y, y_threshold=1.0)
    assert trends.TREND_MODELS[int(r.model)] == "exponential"
    assert float(r.exp_rate) == pytest.approx(-0.05, rel=1e-10)
    assert float(r.exp_amplitude) == pytest.approx(3.0, rel=1e-10)
    assert float(r.time_to_threshold) == pytest.approx(np.log(3.0) / 0.05 - 20.0, rel=1e-9)


def test_trend_fit_matches_scipy_linregress_and_edge_cases():
    rng = np.random.default_rng(5)
    t = np.arange(30.0)
    y = 5.0 + 0.3 * t + rng.normal(0, 1, 30)
    r = trends.trend_fit(t, y)
    ref = stats.linregress(t, y)
    assert float(r.slope) == pytest.approx(ref.slope, rel=1e-10)
    assert float(r.slope_se) == pytest.approx(ref.stderr, rel=1e-10)
    assert float(r.r2_linear) == pytest.approx(ref.rvalue**2, rel=1e-10)
    assert np.isnan(float(r.time_to_threshold))
    negative = trends.trend_fit(t, y - 20.0)  # some y <= 0: no exponential fit
    assert np.isinf(float(negative.aic_exp)) and int(negative.model) == 0
    flat = trends.trend_fit(t, np.ones(30), y_threshold=0.5)
    assert np.isinf(float(flat.time_to_threshold))
    passed = trends.trend_fit(t, 10.0 - t, y_threshold=15.0)  # already beyond (past crossing)
    assert float(passed.time_to_threshold) == 0.0


def test_rolling_zscore_gated_worked_example():
    r = trends.rolling_zscore_anomaly(STEP_SERIES, window=5, threshold=3.0, min_persistence=3)
    np.testing.assert_allclose(r.z[5:], [0, 21.213, 24.749, 28.284, 29.698, 0, 1.373], atol=1e-3)
    assert np.flatnonzero(r.exceedance).tolist() == [6, 7, 8, 9]
    assert np.flatnonzero(r.flags).tolist() == [8, 9]
    assert np.flatnonzero(r.event_onset).tolist() == [6]
    assert int(r.n_events) == 1


def test_rolling_zscore_trailing_absorbs_level_shift():
    r = trends.rolling_zscore_anomaly(STEP_SERIES, window=5, baseline="trailing")
    np.testing.assert_allclose(r.z[6:9], [21.213, 2.40, 1.69], atol=5e-3)
    assert not np.any(r.flags)


def test_rolling_zscore_reference_and_drift():
    drift = 1.0 + 0.01 * np.arange(200)
    assert int(trends.rolling_zscore_anomaly(drift).n_events) == 0
    ref = trends.rolling_zscore_anomaly(STEP_SERIES, window=5, baseline="reference",
                                         reference_mean=10.0, reference_std=1.0)
    np.testing.assert_allclose(ref.z[6:10], [3.0, 3.5, 4.0, 4.2])
    # |z| > threshold is strict: z = 3.0 at index 6 is not an exceedance.
    assert np.flatnonzero(ref.exceedance).tolist() == [7, 8, 9]
    assert np.flatnonzero(ref.flags).tolist() == [9]


def test_rolling_zscore_multi_feature():
    x = np.stack([STEP_SERIES, np.linspace(10, 10.11, 12)], axis=1)
    r = trends.rolling_zscore_anomaly_multi(x, window=5)
    assert r.flags.shape == (12, 2)
    assert np.flatnonzero(r.any_flag).tolist() == [8, 9]
    assert r.n_events.tolist() == [1, 0]


@pytest.mark.parametrize("call, error", [
    (lambda: trends.mann_kendall([1.0, 2.0]), InsufficientDataError),
    (lambda: trends.mann_kendall([1.0, np.nan, 2.0, 3.0]), NonFiniteInputError),
    (lambda: trends.mann_kendall([1.0, 2.0, 3.0], alpha=1.5), ValueError),
    (lambda: trends.trend_fit([1.0, 2.0], [1.0, 2.0]), InsufficientDataError),
    (lambda: trends.trend_fit([1.0, 3.0, 2.0], [1.0, 2.0, 3.0]), ValueError),
    (lambda: trends.mann_kendall([1.0, 2.0, 3.0, 4.0], mask=[True, True, False, False]),
     InsufficientDataError),
    (lambda: trends.rolling_zscore_anomaly([1.0] * 5, window=5), InsufficientDataError),
    (lambda: trends.rolling_zscore_anomaly([1.0] * 8, window=1), DomainError),
    (lambda: trends.rolling_zscore_anomaly([1.0] * 8, window=3, baseline="median"), ValueError),
])
def test_bad_input_raises(call, error):
    with pytest.raises(error):
        call()


def test_jit_vmap_agreement_with_padding(vmap_check):
    rng = np.random.default_rng(6)
    y = np.cumsum(rng.normal(0.1, 1.0, (4, 25)), axis=1) + 50.0
    t = np.tile(np.arange(25.0), (4, 1))
    mask = np.arange(25)[None, :] < np.array([[25], [20], [12], [7]])
    vmap_check(trends.mann_kendall_core, (y, np.full(4, 0.05), mask), rtol=1e-12)
    vmap_check(trends.trend_fit_core, (t, y, np.full(4, 60.0), mask), rtol=1e-9)


def test_rolling_zscore_jit_vmap_agreement(vmap_check):
    rng = np.random.default_rng(8)
    vmap_check(trends.rolling_zscore_anomaly_core, (rng.normal(0, 1, (4, 30)), 3.0),
               in_axes=(0, None), window=5, min_persistence=2, baseline="gated")


def test_float32():
    with jax.enable_x64(False):
        r = trends.mann_kendall([1.0, 1.2, 1.1, 1.5, 1.7, 1.6, 2.0, 2.2])
        t = np.arange(1.0, 11.0, dtype=np.float32)
        f = trends.trend_fit(t, 2.0 - 0.01 * t, y_threshold=1.4)
    np.testing.assert_allclose(float(r.p_value), 0.004434, rtol=1e-4)
    np.testing.assert_allclose(float(f.time_to_threshold), 50.0, rtol=1e-4)
