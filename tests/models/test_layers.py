"""Numerics of the shared blocks against NumPy, and PyTorch-default initialisation laws."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx

from sfbench_jax.data.windows import select_targets
from sfbench_jax.models.dlinear import DLinear
from sfbench_jax.models.layers import SlabLayerNorm, TorchBatchNorm, gelu, uniform
from sfbench_jax.models.moderntcn import depthwise_conv
from sfbench_jax.models.registry import build_model
from sfbench_jax.models.revin import RevINConfig


def test_batch_norm_train_and_eval_follow_pytorch() -> None:
    rng = np.random.default_rng(0)
    x = rng.normal(2.0, 3.0, (5, 3, 4)).astype(np.float32)  # features on axis 1
    scale, bias = rng.normal(1, 0.2, 3).astype(np.float32), rng.normal(0, 0.1, 3).astype(np.float32)
    norm = TorchBatchNorm((3,), feature_axes=(1,), epsilon=1e-3, momentum=0.1)
    norm.scale[...], norm.bias[...] = jnp.asarray(scale), jnp.asarray(bias)
    out = np.asarray(norm(x))
    mean = x.mean(axis=(0, 2))
    var = x.var(axis=(0, 2))
    expected = ((x - mean[None, :, None]) / np.sqrt(var[None, :, None] + 1e-3)
                * scale[None, :, None] + bias[None, :, None])
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(norm.mean[...], 0.1 * mean, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(norm.var[...], 0.9 + 0.1 * x.var(axis=(0, 2), ddof=1), rtol=1e-5)
    norm.use_running_average = True
    running_mean, running_var = np.asarray(norm.mean[...]), np.asarray(norm.var[...])
    expected_eval = ((x - running_mean[None, :, None]) / np.sqrt(running_var[None, :, None] + 1e-3)
                     * scale[None, :, None] + bias[None, :, None])
    np.testing.assert_allclose(norm(x), expected_eval, rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(norm.mean[...], running_mean)  # eval leaves stats alone


def test_batch_norm_train_mode_needs_two_values_per_feature() -> None:
    norm = TorchBatchNorm((6,), feature_axes=(1,))
    with pytest.raises(ValueError, match="more than one value per feature"):
        norm(jnp.ones((1, 6)))


def test_slab_layer_norm_over_time_and_channels() -> None:
    rng = np.random.default_rng(1)
    x = rng.normal(0.5, 2.0, (3, 8, 5)).astype(np.float32)
    norm = SlabLayerNorm((8, 5), epsilon=1e-3)
    scale = rng.normal(1, 0.2, (8, 5)).astype(np.float32)
    norm.scale[...] = jnp.asarray(scale)
    mean = x.mean(axis=(1, 2), keepdims=True)
    var = x.var(axis=(1, 2), keepdims=True)
    np.testing.assert_allclose(norm(x), (x - mean) / np.sqrt(var + 1e-3) * scale,
                               rtol=1e-5, atol=1e-5)


def test_gelu_is_exact_erf_form() -> None:
    xs = np.linspace(-5, 5, 101)
    expected = np.array([0.5 * v * (1 + math.erf(v / math.sqrt(2))) for v in xs])
    np.testing.assert_allclose(gelu(jnp.asarray(xs, jnp.float32)), expected, rtol=0, atol=2e-6)
    # The tanh approximation is measurably different at this tolerance.
    tanh_form = jax.nn.gelu(jnp.asarray(xs, jnp.float32), approximate=True)
    assert np.max(np.abs(np.asarray(tanh_form) - expected)) > 1e-4


@pytest.mark.parametrize("width", [9, 25, 33])
def test_dlinear_trend_is_edge_replicated_moving_average(width: int) -> None:
    model = DLinear(moving_avg=width, input_len=40, horizon=4, num_channels=3,
                    target_indices=[0], rngs=nnx.Rngs(0))
    x = np.random.default_rng(2).normal(size=(2, 40, 3)).astype(np.float32)
    half = (width - 1) // 2
    padded = np.concatenate([np.repeat(x[:, :1], half, 1), x, np.repeat(x[:, -1:], half, 1)], 1)
    trend = np.stack([padded[:, t:t + width].mean(axis=1) for t in range(40)], axis=1)
    seasonal, got_trend = model.decompose(jnp.asarray(x))
    np.testing.assert_allclose(got_trend, trend, rtol=0, atol=1e-6)
    np.testing.assert_allclose(seasonal, x - trend, rtol=0, atol=1e-6)


@pytest.mark.parametrize("kernel,length", [(5, 24), (51, 24), (31, 6), (3, 1)])
def test_depthwise_conv_matches_zero_padded_cross_correlation(kernel: int, length: int) -> None:
    rng = np.random.default_rng(kernel)
    x = rng.normal(size=(2, 6, length)).astype(np.float32)
    w = rng.normal(size=(6, 1, kernel)).astype(np.float32)
    half = kernel // 2
    padded = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (half, half)))
    expected = np.stack([np.einsum("ncj,cj->nc", padded[..., t:t + kernel], w[:, 0])
                         for t in range(length)], axis=-1)
    np.testing.assert_allclose(depthwise_conv(jnp.asarray(x), jnp.asarray(w)), expected,
                               rtol=0, atol=1e-5)


def test_select_targets_keeps_requested_order() -> None:
    y = jnp.arange(2 * 3 * 5, dtype=jnp.float32).reshape(2, 3, 5)
    np.testing.assert_array_equal(select_targets(y, (1, 2, 3)), np.asarray(y)[..., 1:4])
    np.testing.assert_array_equal(select_targets(y, (4, 0)), np.asarray(y)[..., [4, 0]])


def test_uniform_is_deterministic_and_shape_specific() -> None:
    key = jax.random.key(3)
    a, b = uniform(key, (7, 9), -1.0, 1.0), uniform(key, (7, 9), -1.0, 1.0)
    np.testing.assert_array_equal(a, b)
    assert a.shape == (7, 9) and a.dtype == jnp.float32
    assert float(jnp.min(a)) >= -1.0 and float(jnp.max(a)) < 1.0
    assert not np.array_equal(np.asarray(uniform(jax.random.key(4), (7, 9), -1.0, 1.0)), a)


def _check_uniform_law(values, bound: float, *, name: str) -> None:
    values = np.asarray(values).ravel()
    assert np.max(np.abs(values)) <= bound * (1 + 1e-6), f"{name} exceeds ±{bound}"
    if values.size >= 2000:  # enough samples to pin the spread of U(-b, b)
        assert np.max(np.abs(values)) > 0.97 * bound, f"{name} narrower than ±{bound}"
        assert abs(values.std() / (bound / math.sqrt(3)) - 1) < 0.05, f"{name} std"
        assert abs(values.mean()) < 0.05 * bound, f"{name} mean"


def test_pytorch_default_initialisation() -> None:
    dl = build_model("dlinear", {}, input_len=96, horizon=96, num_channels=7,
                     target_indices=range(7), seed=0)
    for v in (dl.seasonal_kernel, dl.trend_kernel, dl.seasonal_bias, dl.trend_bias):
        _check_uniform_law(v[...], 1 / math.sqrt(96), name="dlinear")
    constant = build_model("dlinear", {"init_weights": True, "individual": True}, input_len=96,
                           horizon=6, num_channels=3, target_indices=[0], seed=0)
    np.testing.assert_array_equal(constant.seasonal_kernel[...], np.float32(1 / 96))
    np.testing.assert_array_equal(constant.trend_kernel[...], np.float32(1 / 96))
    assert np.ptp(np.asarray(constant.trend_bias[...])) > 0  # biases keep the random init

    gru = build_model("gru", {"d_hidden": 64, "n_layers": 2, "dropout": 0.1}, input_len=96,
                      horizon=96, num_channels=7, target_indices=range(7), seed=0)
    for layer in gru.layers:
        for v in (layer.input_kernel, layer.hidden_kernel, layer.input_bias, layer.hidden_bias):
            _check_uniform_law(v[...], 1 / 8, name="gru")
    _check_uniform_law(gru.head.kernel[...], 1 / 8, name="gru fc")

    tcn = build_model("moderntcn", {"d_model": 64, "large_size": 31}, input_len=96, horizon=96,
                      num_channels=7, target_indices=range(7), seed=0)
    block = tcn.blocks[0]
    _check_uniform_law(tcn.stem_kernel[...], 1 / math.sqrt(8), name="stem")
    _check_uniform_law(block.large_kernel[...], 1 / math.sqrt(31), name="large")
    _check_uniform_law(block.small_kernel[...], 1 / math.sqrt(5), name="small")
    _check_uniform_law(block.features_in.kernel[...], 1 / 8, name="ffn features")
    _check_uniform_law(block.variables_in.kernel[...], 1 / math.sqrt(7), name="ffn variables")
    _check_uniform_law(tcn.head_kernel[...], 1 / math.sqrt(64 * 24), name="head")
    for norm in (tcn.stem_norm, block.large_norm, block.temporal_norm):
        np.testing.assert_array_equal(norm.scale[...], 1.0)
        np.testing.assert_array_equal(norm.bias[...], 0.0)
        np.testing.assert_array_equal(norm.mean[...], 0.0)
        np.testing.assert_array_equal(norm.var[...], 1.0)

    ptst = build_model("patchtst", {"d_model": 128, "patch_len": 16, "stride": 8}, input_len=96,
                       horizon=96, num_channels=7, target_indices=range(7), seed=0)
    _check_uniform_law(ptst.position[...], 0.02, name="W_pos")
    _check_uniform_law(ptst.embedding.kernel[...], 1 / 4, name="value embedding")
    _check_uniform_law(ptst.layers[0].ff_in.kernel[...], 1 / math.sqrt(128), name="conv1")

    mixer = build_model("tsmixer", {"norm_type": "L", "ff_dim": 64}, input_len=96, horizon=96,
                        num_channels=7, target_indices=range(7), seed=0)
    mix = mixer.blocks[0]
    _check_uniform_law(mix.temporal.kernel[...], math.sqrt(6 / 192), name="glorot time")
    _check_uniform_law(mixer.projection.kernel[...], math.sqrt(6 / 192), name="glorot proj")
    _check_uniform_law(mix.feature_in.kernel[...], math.sqrt(6 / 71), name="glorot fc1")
    for layer in (mix.temporal, mix.feature_in, mix.feature_out, mixer.projection):
        np.testing.assert_array_equal(layer.bias[...], 0.0)
    np.testing.assert_array_equal(mix.temporal_norm.scale[...], 1.0)
    np.testing.assert_array_equal(mix.temporal_norm.bias[...], 0.0)

    wrapped = build_model("dlinear", {}, input_len=96, horizon=6, num_channels=7,
                          target_indices=[0], seed=0, revin=RevINConfig(affine=True))
    np.testing.assert_array_equal(wrapped.affine_weight[...], 1.0)
    np.testing.assert_array_equal(wrapped.affine_bias[...], 0.0)


def test_seed_determines_parameters() -> None:
    def params(seed: int):
        model = build_model("tsmixer", {"ff_dim": 8}, input_len=96, horizon=6, num_channels=3,
                            target_indices=[0], seed=seed)
        return jax.tree.leaves(nnx.state(model, nnx.Param))

    first, again, other = params(0), params(0), params(1)
    for a, b in zip(first, again, strict=True):
        np.testing.assert_array_equal(a, b)
    assert any(not np.array_equal(a, c) for a, c in zip(first, other, strict=True))
