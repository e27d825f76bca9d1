"""The fast paths of the shared layers give the same numbers: inference in cache-sized slices
(`layers.map_in_slices`) the same forecasts as the whole batch at once, only in inference mode (a training-mode
forward runs over the whole batch: BatchNorm statistics, dropout draws); the unrolled Threefry dropout
(`layers.bernoulli`, `layers.Dropout`) the same masks as JAX's and Flax's, under `vmap` too."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx

from sfbench_jax.models import patchtst, tsmixer
from sfbench_jax.models.layers import Dropout, bernoulli, in_inference_mode, map_in_slices
from sfbench_jax.models.registry import build_model


@pytest.mark.parametrize("rows", [1, 7, 8, 23])
def test_map_in_slices_equals_one_call_with_padding(rows: int) -> None:
    x = jnp.asarray(np.random.default_rng(0).normal(size=(rows, 5, 3)).astype(np.float32))
    fn = lambda block: jnp.tanh(block) @ jnp.ones((3, 2)) + block.sum(axis=1, keepdims=True)[..., :2]
    np.testing.assert_allclose(map_in_slices(fn, x, 4), fn(x), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize(("module", "architecture", "hparams"), [
    (patchtst, "patchtst", {"dropout": 0.1}),
    (tsmixer, "tsmixer", {"norm_type": "B", "activation": "gelu", "dropout": 0.1}),
])
def test_sliced_inference_equals_whole_batch(monkeypatch: pytest.MonkeyPatch, module, architecture: str,
                                             hparams: dict) -> None:
    model = build_model(architecture, hparams, input_len=32, horizon=8, num_channels=5,
                        target_indices=[0, 3], seed=0)
    x = jnp.asarray(np.random.default_rng(1).normal(size=(37, 32, 5)).astype(np.float32))
    assert not in_inference_mode(model)
    model.eval()
    assert in_inference_mode(model)
    whole = np.asarray(model(x))
    monkeypatch.setattr(module, "SLICE_BYTES", 1)  # one window per slice
    assert model.slice_windows(5) == 1 if architecture == "patchtst" else model.slice_windows() == 1
    assert ("length=37" in _jaxpr(model, x)) == (jax.default_backend() == "cpu")  # 37 slices of one window, on CPU
    np.testing.assert_allclose(np.asarray(model(x)), whole, rtol=1e-5, atol=1e-5)
    model.train()  # batch statistics and dropout: one call over the whole batch, no slices
    assert "length=37" not in _jaxpr(model, x)


def _jaxpr(model: nnx.Module, x: jax.Array) -> str:
    graphdef, state = nnx.split(model)
    return str(jax.make_jaxpr(lambda s, batch: nnx.merge(graphdef, s)(batch))(state, x))


@pytest.mark.parametrize("shape", [(1,), (3, 5), (16, 7, 4, 12, 12), (2, 1, 9)])
def test_bernoulli_draws_jax_masks_bit_for_bit(shape: tuple[int, ...]) -> None:
    keys = jax.random.split(jax.random.key(3), 4)
    draws = lambda draw: jax.jit(jax.vmap(lambda k: [draw(k, p, shape) for p in (0.9, 0.5, 0.1)]))(keys)
    for ours, theirs in zip(draws(bernoulli), draws(jax.random.bernoulli), strict=True):
        np.testing.assert_array_equal(np.asarray(ours), np.asarray(theirs))


@pytest.mark.parametrize("broadcast_dims", [(), (1,), (-1,)])
def test_dropout_equals_flax_dropout(broadcast_dims: tuple[int, ...]) -> None:
    x = jnp.asarray(np.random.default_rng(2).normal(size=(6, 5, 4)).astype(np.float32))
    ours = Dropout(0.3, broadcast_dims=broadcast_dims, rngs=nnx.Rngs(dropout=7))
    theirs = nnx.Dropout(0.3, broadcast_dims=broadcast_dims, rngs=nnx.Rngs(dropout=7))
    for _ in range(3):  # the stream advances alike
        np.testing.assert_array_equal(np.asarray(ours(x)), np.asarray(theirs(x)))
    ours.eval()
    np.testing.assert_array_equal(np.asarray(ours(x)), np.asarray(x))
