"""Channel-sparse scoring: a channel-independent model run only on the target channels a fault touched gives
the per-window losses of the full computation, to float rounding (largest relative difference measured so far: 3.0e-6;
asserted 1e-5), for two chunk sizes and both RNG modes; a model that does not declare itself channel-independent takes
the full path."""

from __future__ import annotations

import numpy as np
import pytest

from sfbench_jax.config import EvalConfig
from sfbench_jax.data import load, prepare
from sfbench_jax.evaluate import predict_fn, score_windows
from sfbench_jax.evaluate.predict import channels_with, predict_with
from sfbench_jax.models.registry import build_model
from sfbench_jax.predictors import ChannelIndependentPredictor

K = 400
RELATIVE_BOUND = 1e-5


@pytest.fixture(scope="module")
def datasets(data_root):
    return {key: prepare(load(key, data_root=data_root)) for key in ("etth1", "beijing_air_tiantan")}


def _channel_independent(model) -> ChannelIndependentPredictor:
    """The model as a channel-independent predictor, whether or not it asks for the sparse path itself."""
    from flax import nnx

    model.eval()
    graphdef, state = nnx.split(model)
    return ChannelIndependentPredictor(full=predict_with(graphdef), channels=channels_with(graphdef)), state


def _losses(predict, state, data, *, sparse: bool, chunk: int, rng: str) -> np.ndarray:
    options = EvalConfig(seed=4, k=K, chunk_size=chunk, block_size=100, rng=rng, channel_sparse=sparse,
                         progress=False)
    losses, _ = score_windows(predict, state, data, options)
    return np.vstack([losses.clean[None], losses.faulted])


CASES = [("patchtst", {"d_model": 16, "n_heads": 4, "d_ff": 128, "n_layers_enc": 2}),
         ("dlinear", {"individual": False}), ("dlinear", {"individual": True}),
         ("seasonal_naive", {"season_length": 1})]


@pytest.mark.parametrize(("architecture", "hparams"), CASES)
@pytest.mark.parametrize("dataset", ["etth1", "beijing_air_tiantan"])
def test_sparse_and_full_losses_agree(datasets, dataset: str, architecture: str, hparams: dict) -> None:
    data = datasets[dataset]
    spec = data.spec
    model = build_model(architecture, hparams, input_len=spec.input_len, horizon=spec.horizon,
                        num_channels=spec.num_channels, target_indices=spec.target_indices, seed=2)
    predict, state = _channel_independent(model)
    for rng in ("jax", "reference"):
        full = _losses(predict, state, data, sparse=False, chunk=K, rng=rng)
        runs = [_losses(predict, state, data, sparse=True, chunk=chunk, rng=rng) for chunk in (200, K)]
        np.testing.assert_array_equal(runs[0], runs[1])  # chunk-invariant
        np.testing.assert_allclose(runs[0], full, rtol=RELATIVE_BOUND, atol=1e-9)
        unchanged = full[1:] == full[0]  # windows a fault left alone keep bit-for-bit the clean loss
        assert np.all(runs[0][1:][unchanged] == runs[0][0][np.nonzero(unchanged)[1]])


def test_only_declared_models_take_the_sparse_path(datasets) -> None:
    spec = datasets["etth1"].spec
    kwargs = {"input_len": spec.input_len, "horizon": spec.horizon, "num_channels": spec.num_channels,
              "target_indices": spec.target_indices, "seed": 0}
    assert isinstance(predict_fn(build_model("patchtst", {}, **kwargs))[0], ChannelIndependentPredictor)
    assert isinstance(predict_fn(build_model("dlinear", {}, **kwargs))[0], ChannelIndependentPredictor)
    for name in ("tsmixer", "gru", "moderntcn", "seasonal_naive"):  # channel-mixing, or nothing to save
        assert not isinstance(predict_fn(build_model(name, {}, **kwargs))[0], ChannelIndependentPredictor)
    assert not isinstance(predict_fn(build_model("dlinear", {"individual": True}, **kwargs))[0],
                          ChannelIndependentPredictor)
