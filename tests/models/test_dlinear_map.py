"""DLinear's inference form (`DLinear.inference_form`, one affine map over time) forecasts what the trained form
forecasts: checked against DLinear written out in NumPy (float64: edge-replicated moving average, then the two
maps), shared and per channel, for contiguous and scattered targets and for any channel subset."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx

from sfbench_jax.evaluation import predict_fn
from sfbench_jax.models.dlinear import DLinear, DLinearMap
from sfbench_jax.predictors.protocol import ChannelIndependentPredictor

LENGTH, HORIZON, CHANNELS, WIDTH = 48, 12, 5, 9


def numpy_dlinear(model: DLinear, x: np.ndarray) -> np.ndarray:
    """Every channel's forecast `(batch, H, m)` from the trained weights, in float64."""
    half = (WIDTH - 1) // 2
    padded = np.concatenate([np.repeat(x[:, :1], half, 1), x, np.repeat(x[:, -1:], half, 1)], 1)
    trend = np.stack([padded[:, t:t + WIDTH].mean(axis=1) for t in range(LENGTH)], axis=1)
    seasonal = x - trend
    ks, kt = (np.asarray(k[...], np.float64) for k in (model.seasonal_kernel, model.trend_kernel))
    bs, bt = (np.asarray(b[...], np.float64) for b in (model.seasonal_bias, model.trend_bias))
    if model.config.individual:
        return (np.einsum("bnm,mnh->bhm", seasonal, ks) + np.einsum("bnm,mnh->bhm", trend, kt)
                + (bs + bt).T[None])
    return np.einsum("bnm,nh->bhm", seasonal, ks) + np.einsum("bnm,nh->bhm", trend, kt) + (bs + bt)[None, :, None]


@pytest.mark.parametrize("individual", [False, True])
@pytest.mark.parametrize("targets", [(0, 1, 2, 3, 4), (4,), (3, 1)])
def test_inference_form_forecasts_like_the_trained_form(individual: bool, targets: tuple[int, ...]) -> None:
    model = DLinear(moving_avg=WIDTH, individual=individual, input_len=LENGTH, horizon=HORIZON,
                    num_channels=CHANNELS, target_indices=targets, rngs=nnx.Rngs(7))
    x = np.random.default_rng(1).normal(size=(3, LENGTH, CHANNELS))
    expected = numpy_dlinear(model, x)
    folded = model.inference_form()
    assert isinstance(folded, DLinearMap)
    x32 = jnp.asarray(x, jnp.float32)
    np.testing.assert_allclose(folded(x32), expected[..., list(targets)], rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(model(x32), expected[..., list(targets)], rtol=1e-5, atol=1e-5)
    ids = np.array([[2, 0], [4, 4], [1, 3]], np.int32)  # any channels, per row
    subset = jnp.asarray(np.take_along_axis(x, ids[:, None, :], axis=2), jnp.float32)
    np.testing.assert_allclose(folded.predict_channels(subset, jnp.asarray(ids)),
                               np.take_along_axis(expected, ids[:, None, :], axis=2), rtol=1e-5, atol=1e-5)


def test_the_engine_evaluates_dlinear_in_its_inference_form_on_the_full_path() -> None:
    model = DLinear(input_len=LENGTH, horizon=HORIZON, num_channels=CHANNELS, target_indices=(0,),
                    rngs=nnx.Rngs(0))
    predict, state = predict_fn(model)
    assert not isinstance(predict, ChannelIndependentPredictor)
    assert sorted(state) == ["bias", "kernel"]  # the folded map's weights, not the trained form's four
