"""The engine's view of a model (`predictors.protocol`): a row-aware predictor is handed each row's (context,
window id) pair, a plain one only the windows; a channel-independent predictor called like a plain one gives its
full forecast, and forecasting a subset of channels gives those channels of it."""

from __future__ import annotations

from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np

from sfbench_jax.models.registry import build_model
from sfbench_jax.predictors.protocol import ChannelIndependentPredictor, RowAwarePredictor, run_predictor


@dataclass(frozen=True)
class _RowEcho(RowAwarePredictor):
    """Forecasts each row's context and window id (as the two channels of one step)."""

    def apply(self, state, x: jax.Array, rows: jax.Array) -> jax.Array:
        return rows[:, None, :].astype(x.dtype) + 0.0 * x[:, :1, :2]


def test_a_row_aware_predictor_gets_each_row_s_context_and_window_id() -> None:
    x = jnp.ones((3, 4, 2), jnp.float32)
    out = run_predictor(_RowEcho(), None, x, jnp.asarray([0, 1, 1000]), jnp.asarray([7, 8, 9]))
    np.testing.assert_array_equal(np.asarray(out)[:, 0], [[0, 7], [1, 8], [1000, 9]])
    plain = run_predictor(lambda state, windows: windows[:, :1] * state, 2.0, x, jnp.zeros(3), jnp.zeros(3))
    np.testing.assert_array_equal(np.asarray(plain), np.full((3, 1, 2), 2.0))


def test_a_channel_independent_predictor_forecasts_any_channels_as_the_full_forecast_does() -> None:
    # the shared kernel (individual=False): the same weights for every channel, picked by no channel id
    model = build_model("dlinear", {"moving_avg": 5, "individual": False}, input_len=24, horizon=6, num_channels=5,
                        target_indices=range(5), seed=0)
    x = jnp.asarray(np.random.default_rng(0).normal(size=(4, 24, 5)).astype(np.float32))
    full = np.asarray(model.predict_all_channels(x))
    predictor = ChannelIndependentPredictor(full=lambda state, windows: model.predict_all_channels(windows),
                                            channels=lambda state, windows, ids: model.predict_channels(windows, ids))
    np.testing.assert_array_equal(np.asarray(predictor(None, x)), full)
    ids = jnp.asarray([[4, 1], [0, 2], [3, 3], [1, 0]])
    subset = jnp.take_along_axis(x, ids[:, None, :], axis=2)
    np.testing.assert_allclose(np.asarray(predictor.channels(None, subset, ids)),
                               np.take_along_axis(full, np.asarray(ids)[:, None, :], axis=2), rtol=1e-6, atol=1e-6)
