"""Channel-sparse scoring: a channel-independent model run only on the target channels a fault touched gives
the per-window losses of the full computation, to float rounding (largest relative difference measured so far: 3.0e-6;
asserted 1e-5), in both RNG modes, and the same losses for two chunk sizes (on the default case); a touched row
whose forecast is unchanged changes the loss by exactly zero; a model that does not declare itself
channel-independent takes the full path."""

from __future__ import annotations

import numpy as np
import pytest

from sfbench_jax.config import EvalConfig
from sfbench_jax.data import load, prepare
from sfbench_jax.evaluation import predict_fn, score_windows
from sfbench_jax.evaluation.predict import channels_with, predict_with
from sfbench_jax.models.registry import MODELS, build_model
from sfbench_jax.predictors.protocol import ChannelIndependentPredictor

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
    options = EvalConfig(seed=4, k=K, chunk_size=chunk, block_size=100, rng_mode=rng, channel_sparse=sparse,
                         progress=False)
    losses, _ = score_windows(predict, state, data, options)
    return np.vstack([losses.clean[None], losses.faulted])


CASES = [("patchtst", {"d_model": 16, "n_heads": 4, "d_ff": 128, "n_layers_enc": 2}),
         ("dlinear", {"individual": False}), ("dlinear", {"individual": True}),
         ("seasonal_naive", {"season_length": 1})]


#: The case of the default suite, in JAX's RNG mode (three programs, ~12 s on 2 cores); the same case in the reference
#: mode and the other seven cases in both modes (two programs per mode, 25-60 s each) run with `-m slow`, as in CI.
DEFAULT_CASE = ("etth1", "dlinear", {"individual": False})
PARAMS = [pytest.param(dataset, architecture, hparams, rngs, id=f"{dataset}-{architecture}-hparams{index}{suffix}",
                       marks=() if (dataset, architecture, hparams, rngs) == (*DEFAULT_CASE, ("jax",))
                       else pytest.mark.slow)
          for dataset in ("etth1", "beijing_air_tiantan") for index, (architecture, hparams) in enumerate(CASES)
          for rngs, suffix in ((((("jax",), ""), (("reference",), "-reference")))
                               if (dataset, architecture, hparams) == DEFAULT_CASE else ((("jax", "reference"), ""),))]


@pytest.mark.parametrize(("dataset", "architecture", "hparams", "rngs"), PARAMS)
def test_sparse_and_full_losses_agree(datasets, dataset: str, architecture: str, hparams: dict,
                                      rngs: tuple[str, ...]) -> None:
    data = datasets[dataset]
    spec = data.spec
    model = build_model(architecture, hparams, input_len=spec.input_len, horizon=spec.horizon,
                        num_channels=spec.num_channels, target_indices=spec.target_indices, seed=2)
    predict, state = _channel_independent(model)
    for rng in rngs:
        full = _losses(predict, state, data, sparse=False, chunk=K, rng=rng)
        sparse = _losses(predict, state, data, sparse=True, chunk=200, rng=rng)
        if (dataset, architecture, hparams) == DEFAULT_CASE:  # chunk-invariant (a property of the engine's chunks,
            # not of the model: checked on one case, a compiled program less for each of the others)
            np.testing.assert_array_equal(sparse, _losses(predict, state, data, sparse=True, chunk=K, rng=rng))
        np.testing.assert_allclose(sparse, full, rtol=RELATIVE_BOUND, atol=1e-9)
        unchanged = full[1:] == full[0]  # windows a fault left alone keep bit-for-bit the clean loss
        assert np.all(sparse[1:][unchanged] == sparse[0][np.nonzero(unchanged)[1]])


def test_only_declared_models_take_the_sparse_path(datasets) -> None:
    spec = datasets["etth1"].spec
    kwargs = {"input_len": spec.input_len, "horizon": spec.horizon, "num_channels": spec.num_channels,
              "target_indices": spec.target_indices, "seed": 0}

    def predictor(name: str, hparams: dict) -> object:  # as the selection builds it: the spec decides
        return predict_fn(build_model(name, hparams, **kwargs), channel_sparse=MODELS[name].channel_sparse)[0]

    assert isinstance(predictor("patchtst", {}), ChannelIndependentPredictor)
    for name in ("tsmixer", "gru", "moderntcn"):  # channel-mixing
        assert not isinstance(predictor(name, {}), ChannelIndependentPredictor)
    # channel-independent, but a channel's forecast costs no more than the sparse path's bookkeeping for it
    for name, hparams in (("seasonal_naive", {}), ("dlinear", {}), ("dlinear", {"individual": True})):
        assert MODELS[name].is_channel_independent
        assert not isinstance(predictor(name, hparams), ChannelIndependentPredictor)


def test_a_touched_row_with_an_unchanged_forecast_is_reported_unchanged() -> None:
    import jax.numpy as jnp

    from sfbench_jax.evaluation.kernel import TouchedRows, touched_row_errors

    rng = np.random.default_rng(0)
    # SeasonalNaive's forecast is a copy, so "unchanged" is exact (a model with matrix products may differ in
    # the last bit between batch sizes; such a row counts as changed and its error is recomputed)
    model = build_model("seasonal_naive", {"season_length": 1}, input_len=96, horizon=24, num_channels=3,
                        target_indices=(0, 1, 2), seed=0)
    predict, state = _channel_independent(model)
    x = jnp.asarray(rng.normal(size=(4, 96, 3)), jnp.float32)
    y = jnp.asarray(rng.normal(size=(4, 24, 3)), jnp.float32)
    ids = jnp.broadcast_to(jnp.arange(3, dtype=jnp.int32), (4, 3))
    clean = predict.channels(state, x, ids)
    valid = rng.random(12) < 0.5
    shifted = x.at[:, :, 1].add(1.0)  # channel 1 changed, the others not
    rows = TouchedRows(series=jnp.swapaxes(shifted, 1, 2).reshape(-1, 96), channel=ids.reshape(-1),
                       window=jnp.repeat(jnp.arange(4, dtype=jnp.int32), 3), slot=ids.reshape(-1),
                       valid=jnp.asarray(valid))
    errors, changed = touched_row_errors(predict, state, [rows, rows], clean, y, sub_batches=4)
    expected = np.tile(valid & (np.arange(12) % 3 == 1), 2)
    np.testing.assert_array_equal(changed, expected)
    squared = np.sum((np.asarray(clean) - np.asarray(y)) ** 2, axis=1).reshape(-1)  # clean errors, row order
    unchanged_valid = np.tile(valid & (np.arange(12) % 3 != 1), 2)
    np.testing.assert_allclose(np.asarray(errors)[unchanged_valid], np.tile(squared, 2)[unchanged_valid], rtol=1e-6)
    shifted_errors = np.sum((np.asarray(predict.channels(state, shifted, ids)) - np.asarray(y)) ** 2, axis=1)
    changed_rows = np.tile(valid & (np.arange(12) % 3 == 1), 2)
    np.testing.assert_allclose(np.asarray(errors)[changed_rows],
                               np.tile(shifted_errors.reshape(-1), 2)[changed_rows], rtol=1e-6)
