"""PatchTST (protocol 3.4): channel-independent patch Transformer with residual attention.

What lives here: the `PatchTSTConfig` hyperparameters, its grid validity rule,
the `PatchTST` NNX module and its post-norm `PatchTSTEncoderLayer`. Tokens are kept as
`(batch, channel, patch, d_model)`; the attention is written by hand because every layer adds the
previous layer's raw (unscaled) scores before the softmax, which Flax's attention cannot express.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx

from sfbench_jax.data.windows import (
    AllChannelForecast,
    ChannelForecast,
    ChannelIds,
    ChannelInputs,
    Forecast,
    Inputs,
    select_targets,
)
from sfbench_jax.models.hparams import HParams, require_choice, require_int, require_rate
from sfbench_jax.models.layers import (
    ACTIVATIONS,
    Dropout,
    TorchBatchNorm,
    check_input,
    in_inference_mode,
    map_in_slices,
    torch_linear,
    torch_uniform_init,
    uniform_init,
    validate_dataset_shape,
)
from sfbench_jax.models.spec import ModelSpec

INSTANCE_NORM_EPS = 1e-5
#: Bytes of the largest intermediate of one inference slice (`PatchTST.slice_windows`): the forward of an
#: evaluation block (thousands of windows) runs a slice at a time so its intermediates stay in cache.
SLICE_BYTES = 2 * 2**20


@dataclasses.dataclass(frozen=True)
class PatchTSTConfig:
    """PatchTST hyperparameters.

    Attributes:
        d_model: token width (divisible by n_heads).
        d_ff: feed-forward width.
        n_layers_enc: encoder layers.
        n_heads: attention heads.
        patch_len: patch length (<= input_len, checked when the model is built).
        stride: patch step; the series is right-padded by `stride` copies of its last value.
        dropout: embedding, attention, residual, feed-forward and head dropout.
        factor: unused by full attention; kept because the grid carries it.
        activation: feed-forward activation, `gelu` (exact) or `relu`.
    """

    d_model: int = 16
    d_ff: int = 128
    n_layers_enc: int = 2
    n_heads: int = 4
    patch_len: int = 16
    stride: int = 8
    dropout: float = 0.1
    factor: int = 1
    activation: str = "gelu"

    def __post_init__(self) -> None:
        def set_(name: str, value: object) -> None:
            object.__setattr__(self, name, value)

        for name in ("d_model", "d_ff", "n_layers_enc", "n_heads", "patch_len", "stride",
                     "factor"):
            set_(name, require_int(name, getattr(self, name)))
        set_("dropout", require_rate("dropout", self.dropout))
        set_("activation", require_choice("activation", self.activation, ("gelu", "relu")))
        if self.d_model % self.n_heads != 0:
            raise ValueError(f"PatchTST d_model={self.d_model} is not divisible by n_heads="
                             f"{self.n_heads}: invalid combination.")



def patch_count(*, input_len: int, patch_len: int, stride: int) -> int:
    """Number of patches after right-padding by `stride`: `(n + stride − patch_len)//stride + 1`."""
    return (input_len + stride - patch_len) // stride + 1


def is_valid(hparams: HParams, *, input_len: int = 96) -> bool:
    """Invalid: `d_model % n_heads != 0` or `patch_len > input_len`."""
    return bool(hparams.get("d_model", 16) % hparams.get("n_heads", 4) == 0
                and hparams.get("patch_len", 16) <= input_len)


class PatchTSTEncoderLayer(nnx.Module):
    """Post-norm encoder layer with residual attention and BatchNorm over `d_model`.

    `S = Q Kᵀ + S_prev` (unscaled, per head), `A = softmax(S / sqrt(d_k))`;
    `x = BN(x + dropout(attn))`, `x = BN(x + dropout(W2 dropout(act(W1 x))))`.
    """

    def __init__(self, config: PatchTSTConfig, *, rngs: nnx.Rngs) -> None:
        d, ff = config.d_model, config.d_ff
        self.n_heads = config.n_heads
        self.activation = config.activation
        self.query = torch_linear(d, d, rngs=rngs)
        self.key = torch_linear(d, d, rngs=rngs)
        self.value = torch_linear(d, d, rngs=rngs)
        self.out = torch_linear(d, d, rngs=rngs)
        self.attention_dropout = Dropout(config.dropout, rngs=rngs)
        self.dropout = Dropout(config.dropout, rngs=rngs)
        self.norm_attention = TorchBatchNorm((d,), feature_axes=(-1,))
        self.ff_in = torch_linear(d, ff, rngs=rngs)
        self.ff_out = torch_linear(ff, d, rngs=rngs)
        self.norm_ff = TorchBatchNorm((d,), feature_axes=(-1,))

    def __call__(self, x: jax.Array,
                 previous_scores: jax.Array | None) -> tuple[jax.Array, jax.Array]:
        """Tokens `(batch, m, Np, d)` -> `(tokens, raw scores (batch, m, heads, Np, Np))`."""
        *lead, tokens, d = x.shape
        heads, d_k = self.n_heads, d // self.n_heads

        def split(t: jax.Array) -> jax.Array:
            return t.reshape(*lead, tokens, heads, d_k)

        q, k, v = split(self.query(x)), split(self.key(x)), split(self.value(x))
        scores = jnp.einsum("...lhe,...she->...hls", q, k)
        if previous_scores is not None:
            scores = scores + previous_scores
        weights = self.attention_dropout(jax.nn.softmax(scores * (1.0 / math.sqrt(d_k)), axis=-1))
        context = jnp.einsum("...hls,...shd->...lhd", weights, v).reshape(*lead, tokens, d)
        x = self.norm_attention(x + self.dropout(self.out(context)))
        y = self.dropout(ACTIVATIONS[self.activation](self.ff_in(x)))
        y = self.dropout(self.ff_out(y))
        return self.norm_ff(x + y), scores


class PatchTST(nnx.Module):
    """PatchTST forecaster: instance norm, patching, Transformer encoder, flatten head.

    Channel-independent: every channel is a separate sequence of patch tokens through the same
    weights. The per-window, per-channel mean and std are constants for gradients.

    Args:
        d_model, d_ff, n_layers_enc, n_heads, patch_len, stride, dropout, factor, activation:
            see `PatchTSTConfig`.
        input_len: window length `n` (>= patch_len).
        horizon: forecast length `H`.
        num_channels: input channels `m`.
        target_indices: channels returned, in order.
        rngs: initialisation and dropout keys.

    Raises:
        ValueError: invalid hyperparameters, `patch_len > input_len`, or fewer than 1 patch.
    """

    def __init__(self, *, d_model: int = 16, d_ff: int = 128, n_layers_enc: int = 2,
                 n_heads: int = 4, patch_len: int = 16, stride: int = 8, dropout: float = 0.1,
                 factor: int = 1, activation: str = "gelu", input_len: int, horizon: int,
                 num_channels: int, target_indices: Sequence[int], rngs: nnx.Rngs) -> None:
        cfg = PatchTSTConfig(d_model=d_model, d_ff=d_ff, n_layers_enc=n_layers_enc,
                             n_heads=n_heads, patch_len=patch_len, stride=stride,
                             dropout=dropout, factor=factor, activation=activation)
        self.config = cfg
        self.target_indices = validate_dataset_shape(
            input_len=input_len, horizon=horizon, num_channels=num_channels,
            target_indices=target_indices)
        self.patch_count = patch_count(input_len=input_len, patch_len=cfg.patch_len,
                                       stride=cfg.stride)
        if self.patch_count < 1:
            raise ValueError(f"PatchTST gets {self.patch_count} patches from input_len="
                             f"{input_len}, patch_len={cfg.patch_len}, stride={cfg.stride}; "
                             "need at least 1.")
        if cfg.patch_len > input_len:
            raise ValueError(f"PatchTST patch_len={cfg.patch_len} > input_len={input_len} is "
                             "an invalid combination; need patch_len <= input_len.")
        self.input_len, self.horizon, self.num_channels = input_len, horizon, num_channels
        self.embedding = torch_linear(cfg.patch_len, cfg.d_model, rngs=rngs)
        self.position = nnx.Param(uniform_init(-0.02, 0.02)(
            rngs.params(), (self.patch_count, cfg.d_model)))
        self.embedding_dropout = Dropout(cfg.dropout, rngs=rngs)
        self.layers = nnx.List([PatchTSTEncoderLayer(cfg, rngs=rngs)
                                for _ in range(cfg.n_layers_enc)])
        # Head Linear(d·Np -> H) with the d_model-major flatten kept as kernel (d, Np, H).
        head_init = torch_uniform_init(cfg.d_model * self.patch_count)
        self.head_kernel = nnx.Param(head_init(rngs.params(),
                                               (cfg.d_model, self.patch_count, horizon)))
        self.head_bias = nnx.Param(head_init(rngs.params(), (horizon,)))
        self.head_dropout = Dropout(cfg.dropout, rngs=rngs)

    def normalize(self, x: jax.Array) -> tuple[jax.Array, jax.Array, jax.Array]:
        """Instance-normalise `x (batch, n, m)` per window and channel.

        Returns:
            `(normalised (batch, n, m), mean (batch, 1, m), std (batch, 1, m))`, the statistics
            with gradients stopped.
        """
        mean = jax.lax.stop_gradient(jnp.mean(x, axis=1, keepdims=True))
        centered = x - mean
        std = jax.lax.stop_gradient(jnp.sqrt(
            jnp.mean(jnp.square(centered), axis=1, keepdims=True) + INSTANCE_NORM_EPS))
        return centered / std, mean, std

    def embed_patches(self, x_norm: jax.Array) -> jax.Array:
        """Patch tokens from the normalised window: `(batch, n, m) -> (batch, m, Np, d)`."""
        cfg = self.config
        series = jnp.swapaxes(x_norm, 1, 2)  # (batch, m, n)
        series = jnp.concatenate(
            [series, jnp.repeat(series[..., -1:], cfg.stride, axis=-1)], axis=-1)
        index = (np.arange(self.patch_count)[:, None] * cfg.stride
                 + np.arange(cfg.patch_len)[None, :])
        patches = series[..., index]  # (batch, m, Np, patch_len)
        return self.embedding_dropout(self.embedding(patches) + self.position[...])

    def encode(self, tokens: jax.Array) -> jax.Array:
        """Run the encoder layers over `(batch, m, Np, d)` tokens."""
        scores = None
        for layer in self.layers:
            tokens, scores = layer(tokens, scores)
        return tokens

    def head(self, tokens: jax.Array) -> jax.Array:
        """Flatten `(d, Np)` per channel and project: `(batch, m, Np, d) -> (batch, m, H)`."""
        y = jnp.einsum("bmpd,dph->bmh", tokens, self.head_kernel[...]) + self.head_bias[...]
        return self.head_dropout(y)

    def slice_windows(self, channels: int) -> int:
        """Windows of `channels` channels whose largest intermediate (a feed-forward, projection or score
        tensor) fills about `SLICE_BYTES`: an inference forward over more runs a slice at a time."""
        cfg = self.config
        widest = max(cfg.d_ff, 3 * cfg.d_model, cfg.n_heads * self.patch_count, cfg.patch_len)
        return max(1, SLICE_BYTES // (channels * self.patch_count * widest * 4))

    def predict_all_channels(self, x: Inputs) -> AllChannelForecast:
        """Forecast every input channel: `(batch, n, m) -> (batch, H, m)`. In inference mode a large batch
        runs in cache-sized slices of windows (the same numbers, the intermediates stay in cache)."""
        if in_inference_mode(self):
            return map_in_slices(self.forecast, jnp.asarray(x), self.slice_windows(x.shape[2]))
        return self.forecast(x)

    def forecast(self, x: Inputs) -> AllChannelForecast:
        """The forward of `predict_all_channels` on one batch."""
        x_norm, mean, std = self.normalize(jnp.asarray(x))
        tokens = self.encode(self.embed_patches(x_norm))
        return jnp.swapaxes(self.head(tokens), 1, 2) * std + mean

    def predict_channels(self, x: ChannelInputs, channel_ids: ChannelIds) -> ChannelForecast:
        """Forecast the given channels only: every channel goes through the same (shared) network on its own,
        so `x (batch, n, k)` with any k gives those channels' forecasts (`channel_ids` is not needed)."""
        del channel_ids
        return self.predict_all_channels(x)

    def __call__(self, x: Inputs) -> Forecast:
        """Forecast the targets: `(batch, n, m) -> (batch, H, len(target_indices))`."""
        check_input(x, input_len=self.input_len, num_channels=self.num_channels,
                    model="PatchTST")
        return select_targets(self.predict_all_channels(x), self.target_indices)


#: The architecture's spec (the registry collects it).
SPEC = ModelSpec(name="patchtst", config_cls=PatchTSTConfig, is_valid=is_valid, module_cls=PatchTST,
                 is_trainable=True, is_channel_independent=True, supports_revin=False,
                 label="PatchTST", family="Attention", display_rank=5)
