"""Behaviour of every architecture: shapes, target selection, train/eval modes, gradients,
channel (in)dependence and compile discipline, in tree mode as the engine runs them.

Small hyperparameters keep the compiles cheap; parity with the reference lives in test_parity.py.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from flax import nnx

from sfbench_jax.models.registry import build_model
from sfbench_jax.models.revin import RevINConfig

# case -> (registry name, hyperparameters, RevIN options, train-mode effects)
# train-mode effects: "dropout" (fresh masks every call), "batchnorm" (batch statistics).
CASES = {
    "dlinear": ("dlinear", {"moving_avg": 9}, None, set()),
    "dlinear_individual": ("dlinear", {"moving_avg": 9, "individual": True}, None, set()),
    "gru_direct": ("gru", {"d_hidden": 16, "n_layers": 2, "dropout": 0.3}, None, {"dropout"}),
    "gru_ar": ("gru", {"d_hidden": 16, "n_layers": 2, "dropout": 0.3, "autoregressive": True},
               None, {"dropout"}),
    "moderntcn": ("moderntcn", {"d_model": 8, "large_size": 11, "ffn_ratio": 2, "dropout": 0.1,
                                "head_dropout": 0.1}, None, {"dropout", "batchnorm"}),
    "patchtst": ("patchtst", {"d_model": 16, "n_heads": 4, "d_ff": 32, "dropout": 0.1}, None,
                 {"dropout", "batchnorm"}),
    "tsmixer_L": ("tsmixer", {"ff_dim": 16, "norm_type": "L", "activation": "gelu",
                              "dropout": 0.1}, None, {"dropout"}),
    "tsmixer_B": ("tsmixer", {"ff_dim": 16, "norm_type": "B", "activation": "relu",
                              "dropout": 0.0}, None, {"batchnorm"}),
    "seasonal_naive": ("seasonal_naive", {"season_length": 24}, None, set()),
    "revin_dlinear": ("dlinear", {"moving_avg": 9}, RevINConfig(affine=True), set()),
    "revin_gru_ar": ("gru", {"d_hidden": 16, "n_layers": 1, "autoregressive": True},
                     RevINConfig(affine=False), set()),
    "revin_moderntcn": ("moderntcn", {"d_model": 8, "large_size": 11, "dropout": 0.1},
                        RevINConfig(affine=True), {"dropout", "batchnorm"}),
    "revin_tsmixer_B": ("tsmixer", {"ff_dim": 16, "norm_type": "B", "dropout": 0.1},
                        RevINConfig(affine=True), {"dropout", "batchnorm"}),
}
CHANNEL_INDEPENDENT = ["dlinear", "dlinear_individual", "patchtst", "seasonal_naive",
                       "revin_dlinear"]
SHARED_WEIGHTS = ["dlinear", "patchtst", "seasonal_naive", "revin_dlinear"]
CHANNEL_MIXING = ["gru_direct", "gru_ar", "moderntcn", "tsmixer_L", "tsmixer_B",
                  "revin_gru_ar", "revin_moderntcn", "revin_tsmixer_B"]
# (horizon, channels, targets): Beijing-like and ETTh1-like shapes.
SHAPES = {"h6_m12": (6, 12, (0,)), "h96_m7": (96, 7, tuple(range(7)))}


def _build(case: str, *, horizon: int = 6, num_channels: int = 7,
           target_indices=tuple(range(7)), seed: int = 0, **overrides) -> nnx.Module:
    name, hparams, revin, _ = CASES[case]
    return build_model(name, {**hparams, **overrides}, input_len=96, horizon=horizon,
                       num_channels=num_channels, target_indices=target_indices, seed=seed,
                       revin=revin)


def _batch(seed: int, num_channels: int, batch: int = 4) -> jax.Array:
    return 2.0 * jax.random.normal(jax.random.key(seed), (batch, 96, num_channels))


@nnx.jit
def _apply(model: nnx.Module, x: jax.Array) -> jax.Array:
    """Graph-mode jitted call (state updates such as batch statistics propagate back)."""
    return model(x)


def _jitted(model: nnx.Module, method: str = "__call__"):
    """Engine-style forward: split once, plain jax.jit, merge inside. Returns (fn, trace log)."""
    graphdef, state = nnx.split(model)
    traces: list[tuple[int, ...]] = []

    @jax.jit
    def forward(state, x):
        traces.append(x.shape)
        return getattr(nnx.merge(graphdef, state), method)(x)

    return (lambda x: forward(state, x)), traces


@functools.cache
def _eval_forward(case: str, shape: str):
    """An eval-mode model per (case, shape) with its jitted forward, shared across tests."""
    horizon, channels, targets = SHAPES[shape]
    model = _build(case, horizon=horizon, num_channels=channels, target_indices=targets)
    model.eval()
    forward, traces = _jitted(model)
    return model, forward, traces


@pytest.mark.parametrize("shape", sorted(SHAPES))
@pytest.mark.parametrize("case", sorted(CASES))
def test_forward_shape_and_one_compile_per_shape(case: str, shape: str) -> None:
    horizon, channels, targets = SHAPES[shape]
    _, forward, traces = _eval_forward(case, shape)
    outputs = [forward(_batch(seed, channels)) for seed in range(3)]
    for out in outputs:
        assert out.shape == (4, horizon, len(targets)) and out.dtype == jnp.float32
        assert bool(jnp.all(jnp.isfinite(out)))
    assert not np.allclose(outputs[0], outputs[1])
    if shape == "h6_m12":  # a new batch size is a new shape: exactly one more trace
        forward(_batch(9, channels, batch=2))
        forward(_batch(10, channels, batch=2))
        assert sorted(traces) == [(2, 96, channels), (4, 96, channels)]
    else:
        assert traces == [(4, 96, channels)], "repeated calls of one shape must not retrace"


@pytest.mark.parametrize("case", sorted(c for c in CASES if "gru_ar" not in c))
def test_targets_are_selected_from_all_channel_forecasts(case: str) -> None:
    model = _build(case, target_indices=(5, 0, 3))
    model.eval()
    graphdef, state = nnx.split(model)

    @jax.jit
    def both(state, x):
        module = nnx.merge(graphdef, state)
        return module(x), module.predict_all_channels(x)

    chosen, everything = both(state, _batch(1, 7))
    assert everything.shape == (4, 6, 7)
    # The two paths are different programs (e.g. ModernTCN's head runs only on the channels asked for,
    # RevIN denormalises only them), so XLA may order sums differently: float32 rounding, not
    # bit-identity (a wrong channel would differ by O(1)). Seen on a CPU without AVX-512: 2.5e-7.
    np.testing.assert_allclose(chosen, everything[..., [5, 0, 3]], rtol=1e-5, atol=1e-6)


def _numpy_gru_ar(model: nnx.Module, x: np.ndarray, targets: list[int]) -> tuple[np.ndarray, ...]:
    """Reference autoregressive GRU in NumPy (protocol 3.2 equations), from the module's weights."""
    def sigmoid(v):
        return 1.0 / (1.0 + np.exp(-v))

    layers = [(np.asarray(layer.input_kernel[...], np.float64),
               np.asarray(layer.hidden_kernel[...], np.float64),
               np.asarray(layer.input_bias[...], np.float64),
               np.asarray(layer.hidden_bias[...], np.float64)) for layer in model.layers]
    kernel = np.asarray(model.head.kernel[...], np.float64)
    bias = np.asarray(model.head.bias[...], np.float64)
    d = layers[0][1].shape[0]

    def cell(h, inp, wi, wh, bi, bh):
        gi, gh = inp @ wi + bi, h @ wh + bh
        r = sigmoid(gi[:, :d] + gh[:, :d])
        z = sigmoid(gi[:, d:2 * d] + gh[:, d:2 * d])
        n = np.tanh(gi[:, 2 * d:] + r * gh[:, 2 * d:])
        return (1 - z) * n + z * h

    x = x.astype(np.float64)
    h = [np.zeros((x.shape[0], d)) for _ in layers]
    for t in range(x.shape[1]):
        inp = x[:, t]
        for i, weights in enumerate(layers):
            h[i] = cell(h[i], inp, *weights)
            inp = h[i]
    predictions, fed = [], []
    row = x[:, -1].copy()
    for step in range(model.horizon):
        if step > 0:
            fed.append(row.copy())
            inp = row
            for i, weights in enumerate(layers):
                h[i] = cell(h[i], inp, *weights)
                inp = h[i]
        prediction = (h[-1] @ kernel + bias)[:, targets]
        predictions.append(prediction)
        row[:, targets] = prediction
    return np.stack(predictions, 1), np.stack(fed, 1)


def test_autoregressive_gru_feeds_back_only_target_channels() -> None:
    targets = [4, 1]
    model = build_model("gru", {"d_hidden": 8, "n_layers": 2, "autoregressive": True},
                        input_len=96, horizon=5, num_channels=6, target_indices=targets, seed=2)
    model.eval()
    x = _batch(4, 6, batch=3)
    predictions, fed = nnx.jit(lambda m, x: m.rollout(x))(model, x)
    ref_predictions, ref_fed = _numpy_gru_ar(model, np.asarray(x), targets)
    np.testing.assert_allclose(predictions, ref_predictions, rtol=0, atol=2e-5)
    np.testing.assert_allclose(fed, ref_fed, rtol=0, atol=2e-5)
    others = [c for c in range(6) if c not in targets]
    np.testing.assert_array_equal(np.asarray(fed)[:, :, others],
                                  np.broadcast_to(np.asarray(x)[:, None, -1, others],
                                                  (3, 4, len(others))))
    np.testing.assert_array_equal(_apply(model, x), predictions)


MODE_CASES = ["dlinear", "gru_direct", "gru_ar", "moderntcn", "patchtst", "tsmixer_L",
              "tsmixer_B", "seasonal_naive", "revin_tsmixer_B"]


@pytest.mark.parametrize("case", MODE_CASES)
def test_train_and_eval_modes(case: str) -> None:
    model = _build(case)
    x = _batch(5, 7)
    effects = CASES[case][3]
    model.eval()
    stats_before = jax.tree.map(np.asarray, nnx.state(model, nnx.BatchStat))
    first, second = _apply(model, x), _apply(model, x)
    np.testing.assert_array_equal(first, second)  # eval mode is deterministic
    jax.tree.map(np.testing.assert_array_equal, nnx.state(model, nnx.BatchStat), stats_before)

    model.train()
    train_a, train_b = _apply(model, x), _apply(model, x)
    if "dropout" in effects:  # a new mask every call
        assert np.max(np.abs(np.asarray(train_a) - np.asarray(train_b))) > 1e-4
    if "batchnorm" in effects:  # batch statistics instead of running statistics
        assert np.max(np.abs(np.asarray(train_a) - np.asarray(first))) > 1e-4
        if "dropout" not in effects:
            np.testing.assert_array_equal(train_a, train_b)
        changed = jax.tree.map(lambda a, b: not np.allclose(a, b), stats_before,
                               nnx.state(model, nnx.BatchStat))
        assert any(jax.tree.leaves(changed)), "running statistics must move in train mode"
    if not effects:
        np.testing.assert_array_equal(train_a, first)
        np.testing.assert_array_equal(train_b, first)
    model.eval()
    np.testing.assert_array_equal(_apply(model, x), _apply(model, x))


def _no_dropout(case: str) -> dict:
    hparams = CASES[case][1]
    return {k: 0.0 for k in ("dropout", "head_dropout") if k in hparams}


ADAM_CASES = ["dlinear", "gru_direct", "gru_ar", "moderntcn", "patchtst", "tsmixer_L",
              "tsmixer_B", "revin_dlinear"]


@pytest.mark.parametrize("case", ADAM_CASES)
def test_adam_step_lowers_loss_in_tree_mode(case: str) -> None:
    model = _build(case, horizon=6, num_channels=7, target_indices=(0, 3), **_no_dropout(case))
    model.train()
    x, y = _batch(7, 7, batch=8), jax.random.normal(jax.random.key(8), (8, 6, 2))
    graphdef, params, rest = nnx.split(model, nnx.Param, ...)
    optimizer = optax.adam(1e-3)
    opt_state = optimizer.init(params)

    @jax.jit
    def step(params, rest, opt_state):
        def loss_fn(params):
            # copy=True: the variables must belong to this (grad) trace for BatchNorm updates.
            module = nnx.merge(graphdef, params, rest, copy=True)
            loss = jnp.mean(jnp.square(module(x) - y))
            return loss, nnx.split(module, nnx.Param, ...)[2]

        (loss, rest), grads = jax.value_and_grad(loss_fn, has_aux=True)(params)
        updates, opt_state = optimizer.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), rest, opt_state, loss, grads

    losses = []
    for _ in range(6):
        params, rest, opt_state, loss, grads = step(params, rest, opt_state)
        losses.append(float(loss))
    assert all(np.isfinite(losses))
    assert losses[1] < losses[0] and losses[-1] < losses[0]
    if CASES[case][2] is not None and CASES[case][2].affine:
        assert float(jnp.max(jnp.abs(grads["affine_weight"][...]))) > 0


@pytest.mark.parametrize("case", CHANNEL_INDEPENDENT)
def test_changing_one_channel_changes_only_that_output(case: str) -> None:
    _, forward, _ = _eval_forward(case, "h96_m7")
    x = _batch(10, 7)
    base = np.asarray(forward(x))
    for j in (0, 4):
        changed = np.asarray(forward(x.at[..., j].multiply(-1.5).at[..., j].add(1.0)))
        others = [i for i in range(7) if i != j]
        np.testing.assert_array_equal(changed[..., others], base[..., others])
        assert np.max(np.abs(changed[..., j] - base[..., j])) > 1e-3


@pytest.mark.parametrize("case", SHARED_WEIGHTS)
def test_permuting_channels_permutes_outputs(case: str) -> None:
    _, forward, _ = _eval_forward(case, "h96_m7")
    x = _batch(11, 7)
    perm = [3, 0, 6, 1, 5, 2, 4]
    reference = np.asarray(forward(x))
    np.testing.assert_allclose(forward(x[..., perm]), reference[..., perm], rtol=0,
                               atol=1e-6 * np.max(np.abs(reference)))


@pytest.mark.parametrize("case", CHANNEL_MIXING)
def test_channel_mixing_architectures_mix(case: str) -> None:
    _, forward, _ = _eval_forward(case, "h96_m7")
    x = _batch(12, 7)
    base = np.asarray(forward(x))
    changed = np.asarray(forward(x.at[..., 2].multiply(-1.5).at[..., 2].add(1.0)))
    others = [i for i in range(7) if i != 2]
    # Every other channel's forecast moves when channel 2 changes.
    assert np.min(np.max(np.abs(changed[..., others] - base[..., others]), axis=(0, 1))) > 1e-5


def test_revin_is_scale_and_shift_equivariant_per_channel() -> None:
    # Without affine parameters, RevIN(model)(a·x + c) = a·RevIN(model)(x) + c per target channel.
    model = build_model("tsmixer", {"ff_dim": 16, "norm_type": "B"}, input_len=96, horizon=6,
                        num_channels=7, target_indices=(6, 1), seed=0,
                        revin=RevINConfig(affine=False))
    model.eval()
    forward, _ = _jitted(model)
    x = _batch(13, 7)
    a = jnp.array([0.5, 3.0, 1.0, 2.0, 0.7, 1.5, 4.0])
    c = jnp.array([1.0, -2.0, 0.0, 5.0, 3.0, -1.0, 10.0])
    out = np.asarray(forward(x))
    transformed = np.asarray(forward(x * a + c))
    expected = out * np.asarray(a)[[6, 1]] + np.asarray(c)[[6, 1]]
    np.testing.assert_allclose(transformed, expected, rtol=0, atol=1e-3 * np.abs(expected).max())


def test_seasonal_naive_has_no_parameters() -> None:
    assert not jax.tree.leaves(nnx.state(_build("seasonal_naive"), nnx.Param))


def test_dropout_masks_follow_explicit_keys() -> None:
    model = _build("tsmixer_L")
    model.train()
    x = _batch(14, 7)
    nnx.reseed(model, dropout=jax.random.key(5))
    first = _apply(model, x)
    nnx.reseed(model, dropout=jax.random.key(5))
    np.testing.assert_array_equal(_apply(model, x), first)
    nnx.reseed(model, dropout=jax.random.key(6))
    assert not np.allclose(_apply(model, x), first)


def test_moderntcn_forecasts_a_large_batch_in_slices_like_whole() -> None:
    """Above `INFERENCE_CHUNK` windows the eval-mode forward runs in equal slices (the last zero-padded): the same
    forecasts, to float rounding, as the whole batch in one piece."""
    from sfbench_jax.models.moderntcn import INFERENCE_CHUNK

    model = _build("moderntcn")
    model.eval()
    x = _batch(3, 7, batch=INFERENCE_CHUNK + 5)
    sliced = np.asarray(_apply(model, x))
    whole = np.asarray(nnx.jit(lambda module, x: module.infer(x, range(7)))(model, x))
    assert sliced.shape == whole.shape == (INFERENCE_CHUNK + 5, 6, 7)
    np.testing.assert_allclose(sliced, whole, rtol=1e-5, atol=1e-6)
