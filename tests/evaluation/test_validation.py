"""Clean validation MSE: one pass for several predictors, the same numbers in one batch or in blocks."""

from __future__ import annotations

import numpy as np
import pytest

import sfbench_jax.evaluation.validation as validation
from sfbench_jax.data import load, prepare
from sfbench_jax.evaluation import predict_fn
from sfbench_jax.models.registry import build_model
from sfbench_jax.models.seasonal_naive import SeasonalNaive


@pytest.fixture(scope="module")
def etth1():
    return prepare(load("etth1"))


def _models(data):
    spec = data.spec
    seasons = [predict_fn(SeasonalNaive(season_length=length, input_len=spec.input_len, horizon=spec.horizon,
                                        target_indices=spec.target_indices)) for length in (1, 24)]
    dlinear = predict_fn(build_model("dlinear", {}, input_len=spec.input_len, horizon=spec.horizon,
                                     num_channels=spec.num_channels, target_indices=spec.target_indices, seed=0))
    return [*seasons, dlinear]


def test_blocks_give_the_numbers_of_one_batch(etth1, monkeypatch: pytest.MonkeyPatch) -> None:
    models = _models(etth1)
    whole = validation.validation_mses(models, etth1)  # ETTh1's validation set runs as one batch
    window_bytes = (etth1.spec.input_len + etth1.spec.horizon) * etth1.spec.num_channels * 4
    monkeypatch.setattr(validation, "VALIDATION_ONE_BLOCK_BYTES", 0)  # as a set too large for one batch
    monkeypatch.setattr(validation, "VALIDATION_BLOCK_BYTES", 300 * window_bytes)  # 300 windows, last padded
    blocked = validation.validation_mses(models, etth1)
    np.testing.assert_allclose(blocked, whole, rtol=1e-6)
    assert blocked[:2] == whole[:2]  # SeasonalNaive copies values: bit for bit


def test_seasonal_naive_validation_equals_numpy(etth1) -> None:
    spec = etth1.spec
    starts = etth1.val_starts_drop_last(spec.batch_size)
    series, n = np.asarray(etth1.standardised, np.float64), spec.input_len
    x = np.stack([series[s: s + n] for s in starts])
    y = np.stack([series[s + n: s + n + spec.horizon] for s in starts])[..., list(spec.target_indices)]
    season = x[:, -24:][:, np.arange(spec.horizon) % 24][..., list(spec.target_indices)]
    expected = np.mean((season - y) ** 2)
    (mse,) = validation.validation_mses(_models(etth1)[1:2], etth1)
    assert mse == pytest.approx(expected, rel=1e-6)
