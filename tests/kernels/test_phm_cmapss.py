"""Tests for phm_kernels.cmapss: RUL targets, sensor selection, regimes, HI baseline."""

from __future__ import annotations

import jax
import numpy as np
import pytest
from phm_kernels import cmapss, loaders, metrics
from phm_kernels.errors import DomainError, InsufficientDataError


def test_rul_targets_worked_example():
    cycles = np.arange(1, 201)
    rul = np.asarray(cmapss.cmapss_rul_targets(cycles, 200, cap=125.0))
    assert rul[[0, 74, 75, 76, 199]].tolist() == [125.0, 125.0, 124.0, 123.0, 0.0]
    direct = cmapss.cmapss_rul_targets([1, 75, 76, 77, 200], 200)
    assert np.asarray(direct).tolist() == [125.0, 125.0, 124.0, 123.0, 0.0]


def test_rul_targets_test_unit_uncapped():
    rul = np.asarray(cmapss.cmapss_rul_targets(np.arange(1, 32), 31, cap=None, rul_at_last=112))
    assert rul[-1] == 112.0 and rul[0] == 142.0


def test_rul_targets_padding_and_validation(vmap_check):
    mask = np.arange(8) < 5
    rul = np.asarray(cmapss.cmapss_rul_targets(np.arange(1, 9), 5, mask=mask))
    assert rul[:5].tolist() == [4.0, 3.0, 2.0, 1.0, 0.0] and np.all(np.isnan(rul[5:]))
    with pytest.raises(DomainError, match="last_cycle"):
        cmapss.cmapss_rul_targets([1, 2, 3], 2)
    with pytest.raises(DomainError, match="increasing"):
        cmapss.cmapss_rul_targets([1, 3, 2], 3)
    cycles = np.tile(np.arange(1.0, 11.0), (3, 1))
    vmap_check(cmapss.cmapss_rul_targets_core, (cycles, np.array([10.0, 12.0, 15.0]),
                                                np.array([0.0, 5.0, 20.0]), 8.0),
               in_axes=(0, 0, 0, None), use_cap=True)


def _fd001_like(rng: np.random.Generator, rows: int = 400) -> np.ndarray:
    """Synthetic FD001-like block: 7 constant channels (s1, s5, s6, s10, s16, s18, s19) and 14
    channels with a degradation drift plus noise."""
    x = np.empty((rows, 21))
    levels = rng.uniform(1.0, 2400.0, 21)
    drift = np.linspace(0.0, 1.0, rows)
    for j in range(21):
        if f"s{j + 1}" in cmapss.CONSTANT_FD001_SENSORS:
            x[:, j] = levels[j]
        else:
            x[:, j] = levels[j] * (1.0 + 0.004 * drift) + rng.normal(0, 0.002 * levels[j], rows)
    return x


def test_select_informative_synthetic_picks_standard_14():
    keep = np.asarray(cmapss.select_informative(_fd001_like(np.random.default_rng(0))))
    names = tuple(n for n, k in zip(loaders.CMAPSS_SENSOR_NAMES, keep, strict=True) if k)
    assert names == cmapss.DEFAULT_FD001_SENSORS


def test_select_informative_real_fd001(data_root):
    sensors = loaders.load_cmapss(data_root, "FD001").train.sensors
    absolute = np.asarray(cmapss.select_informative(sensors, rel=False, std_threshold=1e-2))
    assert tuple(np.flatnonzero(absolute)) == cmapss.DEFAULT_FD001_SENSOR_INDICES
    relative = np.asarray(cmapss.select_informative(sensors))  # spec default also drops s8, s13
    dropped = set(cmapss.DEFAULT_FD001_SENSORS) - {loaders.CMAPSS_SENSOR_NAMES[i]
                                                   for i in np.flatnonzero(relative)}
    assert dropped == {"s8", "s13"}


def test_condition_normalize_worked_example_and_constant_channel():
    z = cmapss.cmapss_condition_normalize([[643.0, 5.0]], [0], [[642.0, 5.0]], [[0.5, 0.0]])
    assert np.asarray(z).tolist() == [[2.0, 0.0]]


def test_regimes_fd002(data_root):
    data = loaders.load_cmapss(data_root, "FD002")
    model = cmapss.fit_regime_centroids(data.train.settings, n_regimes=6)
    np.testing.assert_allclose(model.centroids[:, 0], [0, 10, 20, 25, 35, 42], atol=0.01)
    np.testing.assert_allclose(model.centroids[:, 1], [0, 0.25, 0.70, 0.62, 0.84, 0.84],
                               atol=0.01)
    np.testing.assert_allclose(model.centroids[:, 2], [100, 100, 100, 60, 100, 100], atol=0.01)
    regime = np.asarray(cmapss.assign_regime(data.train.settings, model))
    stats = cmapss.fit_regime_stats(data.train.sensors, regime, n_regimes=6)
    for c in range(6):  # segment sums agree with NumPy per-regime statistics
        rows = data.train.sensors[regime == c]
        np.testing.assert_allclose(stats.mean[c], rows.mean(axis=0), rtol=1e-10)
        np.testing.assert_allclose(stats.std[c], rows.std(axis=0), rtol=1e-8, atol=1e-10)
    z = np.asarray(cmapss.cmapss_condition_normalize(data.train.sensors, regime, stats.mean,
                                                     stats.std))
    assert abs(z[:, 1].mean()) < 1e-8 and z[:, 1].std() == pytest.approx(1.0, rel=1e-8)


def test_regime_errors():
    with pytest.raises(InsufficientDataError, match="regime"):
        cmapss.fit_regime_stats(np.ones((5, 2)), np.array([0, 0, 0, 0, 1]), n_regimes=2)
    with pytest.raises(DomainError, match="regime codes"):
        cmapss.cmapss_condition_normalize(np.ones((2, 1)), np.array([0, 3]), np.zeros((2, 1)),
                                          np.ones((2, 1)))
    with pytest.raises(InsufficientDataError, match="distinct operating conditions"):
        cmapss.fit_regime_centroids(np.zeros((10, 3)), n_regimes=6)


def test_pad_units_roundtrip(data_root):
    split = loaders.load_cmapss(data_root, "FD001").test
    padded = cmapss.pad_units(split, split.sensors)
    assert padded.values.shape == (100, split.lengths.max(), 21)
    np.testing.assert_array_equal(padded.values[padded.mask], split.sensors)


def test_health_index_rul_recovers_linear_decline(vmap_check):
    # HI falling 0.01 per cycle from 0.9 with alpha = 1 (no smoothing): 40 cycles left.
    t = np.arange(50.0)
    x = (0.9 - 0.01 * t)[:, None]
    r = cmapss.linear_health_index_rul(x, np.array([0.0, 1.0]), alpha=1.0, window=10)
    assert float(r.rul) == pytest.approx(0.9 / 0.01 - 49.0, rel=1e-9)
    flat = cmapss.linear_health_index_rul(np.ones((20, 1)), np.array([0.0, 1.0]), alpha=1.0)
    assert float(flat.rul) == 125.0
    values = np.stack([x, 2 * x, x + 0.1])
    mask = np.arange(50)[None, :] < np.array([[50], [40], [30]])
    vmap_check(cmapss.linear_health_index_rul_core, (values, np.array([0.0, 1.0]), mask),
               in_axes=(0, None, 0), window=10)


def test_linear_health_index_baseline_fd001(data_root):
    data = loaders.load_cmapss(data_root, "FD001")
    model = cmapss.fit_linear_health_index_baseline(data)
    pred = cmapss.predict_linear_health_index_baseline(model, data.test)
    assert pred.shape == (100,) and np.all((pred >= 0) & (pred <= 125))
    rmse = float(metrics.regression_metrics(data.test_rul, pred).rmse)
    # Deterministic, untuned baseline: better than the best constant predictor (whose RMSE is
    # the standard deviation of the truth), worse than learned models.
    assert 20.0 < rmse < float(np.std(data.test_rul))
    again = cmapss.predict_linear_health_index_baseline(
        cmapss.fit_linear_health_index_baseline(data), data.test)
    np.testing.assert_array_equal(pred, again)


def test_float32_normalize():
    with jax.enable_x64(False):
        z = cmapss.cmapss_condition_normalize([[643.0]], [0], [[642.0]], [[0.5]])
    np.testing.assert_allclose(float(z[0, 0]), 2.0, rtol=1e-5)


def test_float32_regime_stats_keep_small_spread_channels(data_root):
    # s8 (~2388 rpm, sd 0.07): a one-pass float32 sum loses the mean by more than one sd.
    data = loaders.load_cmapss(data_root, "FD001")
    x = data.train.sensors
    with jax.enable_x64(False):
        stats = cmapss.fit_regime_stats(x, np.zeros(x.shape[0], np.int32), n_regimes=1)
    np.testing.assert_allclose(np.asarray(stats.mean[0], np.float64), x.mean(axis=0), rtol=0,
                               atol=1e-3)
    s8 = loaders.CMAPSS_SENSOR_NAMES.index("s8")
    assert float(stats.std[0, s8]) == pytest.approx(x[:, s8].std(), rel=1e-3)
