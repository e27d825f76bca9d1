"""ModernTCN, compact variant (protocol 3.3): patch stem, large-kernel depthwise blocks, flat head.

What lives here: the `ModernTCNConfig` hyperparameters, its grid validity rule,
the `ModernTCN` NNX module and its `ModernTCNBlock`. Activations keep PyTorch's
`(batch, channel, d_model, patch)` layout, so the depthwise convolutions take PyTorch's
`(out, in/groups, k)` weights unchanged (computed as fused shifted sums, see `depthwise_conv`);
grouped 1×1 convolutions are einsums over per-group kernels stored
`(groups, in_per_group, out_per_group)`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx

from sfbench_jax.data.windows import AllChannelForecast, Forecast, Inputs, select_targets
from sfbench_jax.models.hparams import HParams, require_bool, require_int, require_rate
from sfbench_jax.models.layers import (
    Dropout,
    TorchBatchNorm,
    check_input,
    gelu,
    slices_batches,
    torch_uniform_init,
    validate_dataset_shape,
)
from sfbench_jax.models.spec import ModelSpec


@dataclasses.dataclass(frozen=True)
class ModernTCNConfig:
    """ModernTCN hyperparameters.

    Attributes:
        d_model: feature width per channel and patch.
        num_blocks: residual blocks.
        large_size: odd kernel of the large depthwise branch.
        small_size: odd kernel of the small depthwise branch (<= large_size).
        ffn_ratio: expansion of both 1×1 feed-forward networks.
        patch_size: stem convolution kernel.
        patch_stride: stem convolution stride (<= patch_size).
        dropout: dropout inside both feed-forward networks.
        head_dropout: dropout after the forecast head.
        individual: per-channel heads; only `False` (the benchmark's value) is implemented.
    """

    d_model: int = 64
    num_blocks: int = 1
    large_size: int = 31
    small_size: int = 5
    ffn_ratio: int = 1
    patch_size: int = 8
    patch_stride: int = 4
    dropout: float = 0.1
    head_dropout: float = 0.0
    individual: bool = False

    def __post_init__(self) -> None:
        def set_(name: str, value: object) -> None:
            object.__setattr__(self, name, value)

        set_("d_model", require_int("d_model", self.d_model))
        set_("num_blocks", require_int("num_blocks", self.num_blocks))
        set_("large_size", require_int("large_size", self.large_size, odd=True))
        set_("small_size", require_int("small_size", self.small_size, odd=True))
        set_("ffn_ratio", require_int("ffn_ratio", self.ffn_ratio))
        set_("patch_size", require_int("patch_size", self.patch_size))
        set_("patch_stride", require_int("patch_stride", self.patch_stride))
        set_("dropout", require_rate("dropout", self.dropout))
        set_("head_dropout", require_rate("head_dropout", self.head_dropout))
        set_("individual", require_bool("individual", self.individual, choices=(False,)))
        if self.small_size > self.large_size:
            raise ValueError(f"ModernTCN small_size={self.small_size} > large_size="
                             f"{self.large_size} is an invalid combination; need small <= large.")
        if self.patch_stride > self.patch_size:
            raise ValueError(f"ModernTCN patch_stride={self.patch_stride} > patch_size="
                             f"{self.patch_size} is an invalid combination; need stride <= size.")



def is_valid(hparams: HParams, *, input_len: int = 96) -> bool:
    """Invalid: `small_size > large_size` or `patch_stride > patch_size` (or patch > window)."""
    return bool(hparams.get("small_size", 5) <= hparams.get("large_size", 31)
                and hparams.get("patch_stride", 4) <= hparams.get("patch_size", 8)
                and hparams.get("patch_size", 8) <= input_len)


def depthwise_conv(x: jax.Array, weight: jax.Array) -> jax.Array:
    """Zero-padded 'same' depthwise cross-correlation: `x (N, C, L)`, `weight (C, 1, k)` (odd k).

    `y[n, c, l] = Σ_j weight[c, 0, j] · x[n, c, l + j − k//2]` (zeros outside), as PyTorch's
    `Conv1d(C, C, k, padding=k//2, groups=C, bias=False)`. Written as a sum of shifted copies
    over the taps that can touch the signal (at most `2L − 1`): XLA fuses it into one loop,
    which on CPU is two orders of magnitude faster than its grouped convolution.
    """
    k, length = weight.shape[-1], x.shape[-1]
    half = k // 2
    padded = jnp.pad(x, ((0, 0), (0, 0), (half, half)))
    terms = [padded[..., j:j + length] * weight[None, :, 0, j, None] for j in range(k) if abs(j - half) < length]
    return sum(terms[1:], start=terms[0])  # the centre tap always touches the signal, so `terms` is not empty


#: Windows per slice of the inference path: its activations (~43 kB a window at d = 64, 7 channels)
#: stay in cache; larger batches are run slice by slice (same numbers for every batch size).
INFERENCE_CHUNK = 128


def batch_norm_affine(norm: TorchBatchNorm) -> tuple[jax.Array, jax.Array]:
    """Eval-mode BatchNorm as `x · scale + shift` (per feature, the norm's feature shape)."""
    scale = jax.lax.rsqrt(norm.var[...] + norm.epsilon) * norm.scale[...]
    return scale, norm.bias[...] - norm.mean[...] * scale


def shifted_sum_conv(z: jax.Array, weight: jax.Array, bias: jax.Array) -> jax.Array:
    """'Same' zero-padded depthwise cross-correlation along axis 2 of channel-last `z (m, b, P, d)`
    with `weight (m, d, k)` (odd k) plus `bias (m, d)`: shifted rows times per-channel taps, one fused
    loop vectorised over `d`."""
    k, length = weight.shape[-1], z.shape[2]
    half = k // 2
    padded = jnp.pad(z, ((0, 0), (0, 0), (half, half), (0, 0)))
    taps = [j for j in range(k) if abs(j - half) < length]
    out = sum(padded[:, :, j:j + length] * weight[:, None, None, :, j] for j in taps)
    return out + bias[:, None, None, :]


class _GroupedPointwise(nnx.Module):
    """A grouped 1×1 convolution: `groups` independent Dense maps `in_per_group -> out`.

    Kernel `(groups, in_per_group, out_per_group)`, bias `(groups, out_per_group)`; PyTorch's
    `(groups·out, in, 1)` weight is `kernel.transpose(0, 2, 1).reshape(-1, in, 1)`.
    """

    def __init__(self, groups: int, in_per_group: int, out_per_group: int, *,
                 rngs: nnx.Rngs) -> None:
        init = torch_uniform_init(in_per_group)
        self.kernel = nnx.Param(init(rngs.params(), (groups, in_per_group, out_per_group)))
        self.bias = nnx.Param(init(rngs.params(), (groups, out_per_group)))


class ModernTCNBlock(nnx.Module):
    """One residual block on `(batch, m, d, P)`.

    Depthwise large+small temporal convolutions (each followed by BatchNorm over the `m·d`
    channels), BatchNorm over `d` shared by all variables, a per-variable FFN (groups = m) and a
    cross-variable FFN (groups = d), each `1×1 conv, dropout, GELU, 1×1 conv, dropout`.
    """

    def __init__(self, *, num_channels: int, config: ModernTCNConfig, rngs: nnx.Rngs) -> None:
        m, d, r = num_channels, config.d_model, config.ffn_ratio
        self.large_kernel = nnx.Param(torch_uniform_init(config.large_size)(
            rngs.params(), (m * d, 1, config.large_size)))
        self.large_norm = TorchBatchNorm((m, d), feature_axes=(1, 2))
        self.small_kernel = nnx.Param(torch_uniform_init(config.small_size)(
            rngs.params(), (m * d, 1, config.small_size)))
        self.small_norm = TorchBatchNorm((m, d), feature_axes=(1, 2))
        self.temporal_norm = TorchBatchNorm((d,), feature_axes=(2,))
        self.features_in = _GroupedPointwise(m, d, d * r, rngs=rngs)
        self.features_out = _GroupedPointwise(m, d * r, d, rngs=rngs)
        self.variables_in = _GroupedPointwise(d, m, m * r, rngs=rngs)
        self.variables_out = _GroupedPointwise(d, m * r, m, rngs=rngs)
        self.dropouts = nnx.List([Dropout(config.dropout, rngs=rngs) for _ in range(4)])

    def __call__(self, x: jax.Array) -> jax.Array:
        """`(batch, m, d, P) -> (batch, m, d, P)`."""
        b, m, d, p = x.shape
        flat = x.reshape(b, m * d, p)  # channel index c·d + j, as in the reference
        large = depthwise_conv(flat, self.large_kernel[...]).reshape(b, m, d, p)
        small = depthwise_conv(flat, self.small_kernel[...]).reshape(b, m, d, p)
        y = self.large_norm(large) + self.small_norm(small)
        y = self.temporal_norm(y)
        # Per-variable FFN: variable c maps its d features to d·r and back.
        y = jnp.einsum("bmdp,mdf->bmfp", y, self.features_in.kernel[...])
        y = self.dropouts[0](y + self.features_in.bias[...][None, :, :, None])
        y = gelu(y)
        y = jnp.einsum("bmfp,mfd->bmdp", y, self.features_out.kernel[...])
        y = self.dropouts[1](y + self.features_out.bias[...][None, :, :, None])
        # Cross-variable FFN: feature j maps its m variables to m·r and back.
        y = jnp.einsum("bmdp,dmg->bdgp", y, self.variables_in.kernel[...])
        y = self.dropouts[2](y + self.variables_in.bias[...][None, :, :, None])
        y = gelu(y)
        y = jnp.einsum("bdgp,dgm->bmdp", y, self.variables_out.kernel[...])
        y = self.dropouts[3](y + self.variables_out.bias[...].T[None, :, :, None])
        return x + y

    def merged_temporal(self) -> tuple[jax.Array, jax.Array]:
        """Eval mode: both depthwise branches, their BatchNorms and the temporal BatchNorm as one
        depthwise kernel `(m, d, large)` and bias `(m, d)` (structural re-parameterisation: the small
        kernel zero-padded into the large one; equal up to float rounding)."""
        (s1, t1), (s2, t2) = batch_norm_affine(self.large_norm), batch_norm_affine(self.small_norm)
        s3, t3 = batch_norm_affine(self.temporal_norm)
        m, d = s1.shape
        large = self.large_kernel[...].reshape(m, d, -1) * s1[..., None]
        small = self.small_kernel[...].reshape(m, d, -1) * s2[..., None]
        offset = (large.shape[-1] - small.shape[-1]) // 2
        merged = large.at[..., offset:offset + small.shape[-1]].add(small) * s3[None, :, None]
        return merged, (t1 + t2) * s3 + t3

    def infer(self, z: jax.Array) -> jax.Array:
        """Eval-mode block on channel-last `(m, b, P, d)` activations (dropout is the identity):
        one merged depthwise convolution, then both FFNs as batched products."""
        y = shifted_sum_conv(z, *self.merged_temporal())
        y = jnp.einsum("mbpd,mdf->mbpf", y, self.features_in.kernel[...])
        y = gelu(y + self.features_in.bias[...][:, None, None, :])
        y = jnp.einsum("mbpf,mfd->mbpd", y, self.features_out.kernel[...])
        y = y + self.features_out.bias[...][:, None, None, :]
        y = jnp.einsum("mbpd,dmg->gbpd", y, self.variables_in.kernel[...])
        y = gelu(y + self.variables_in.bias[...].T[:, None, None, :])
        y = jnp.einsum("gbpd,dgm->mbpd", y, self.variables_out.kernel[...])
        return z + (y + self.variables_out.bias[...].T[:, None, None, :])


class ModernTCN(nnx.Module):
    """ModernTCN forecaster (channel-mixing through the cross-variable FFN).

    Args:
        d_model, num_blocks, large_size, small_size, ffn_ratio, patch_size, patch_stride,
            dropout, head_dropout, individual: see `ModernTCNConfig`.
        input_len: window length `n`; must be divisible by `patch_stride`.
        horizon: forecast length `H`.
        num_channels: input channels `m`.
        target_indices: channels returned, in order.
        rngs: initialisation and dropout keys.

    Raises:
        ValueError: invalid hyperparameters, `input_len % patch_stride != 0`, or
            `patch_size > input_len`.
    """

    def __init__(self, *, d_model: int = 64, num_blocks: int = 1, large_size: int = 31,
                 small_size: int = 5, ffn_ratio: int = 1, patch_size: int = 8,
                 patch_stride: int = 4, dropout: float = 0.1, head_dropout: float = 0.0,
                 individual: bool = False, input_len: int, horizon: int, num_channels: int,
                 target_indices: Sequence[int], rngs: nnx.Rngs) -> None:
        cfg = ModernTCNConfig(d_model=d_model, num_blocks=num_blocks, large_size=large_size,
                              small_size=small_size, ffn_ratio=ffn_ratio, patch_size=patch_size,
                              patch_stride=patch_stride, dropout=dropout,
                              head_dropout=head_dropout, individual=individual)
        self.config = cfg
        self.target_indices = validate_dataset_shape(
            input_len=input_len, horizon=horizon, num_channels=num_channels,
            target_indices=target_indices)
        if cfg.patch_size > input_len:
            raise ValueError(f"ModernTCN patch_size={cfg.patch_size} exceeds "
                             f"input_len={input_len}.")
        if input_len % cfg.patch_stride != 0:
            raise ValueError(f"ModernTCN needs input_len divisible by patch_stride; got "
                             f"input_len={input_len}, patch_stride={cfg.patch_stride}.")
        self.input_len, self.horizon, self.num_channels = input_len, horizon, num_channels
        self.patch_count = input_len // cfg.patch_stride
        d = cfg.d_model
        stem_init = torch_uniform_init(cfg.patch_size)
        # Stem Conv1d(1 -> d, k=patch_size) as a Dense over each patch: kernel (patch_size, d).
        self.stem_kernel = nnx.Param(stem_init(rngs.params(), (cfg.patch_size, d)))
        self.stem_bias = nnx.Param(stem_init(rngs.params(), (d,)))
        self.stem_norm = TorchBatchNorm((d,), feature_axes=(2,))
        self.blocks = nnx.List([ModernTCNBlock(num_channels=num_channels, config=cfg, rngs=rngs)
                                for _ in range(cfg.num_blocks)])
        # Head Linear(d·P -> H) with the d_model-major flatten kept as kernel (d, P, H).
        head_init = torch_uniform_init(d * self.patch_count)
        self.head_kernel = nnx.Param(head_init(rngs.params(), (d, self.patch_count, horizon)))
        self.head_bias = nnx.Param(head_init(rngs.params(), (horizon,)))
        self.head_dropout = Dropout(cfg.head_dropout, rngs=rngs)

    def stem(self, x: jax.Array) -> jax.Array:
        """Patch embedding per channel: `(batch, n, m) -> (batch, m, d, P)`."""
        cfg = self.config
        series = jnp.swapaxes(x, 1, 2)  # (batch, m, n)
        pad = cfg.patch_size - cfg.patch_stride
        series = jnp.concatenate(
            [series, jnp.repeat(series[..., -1:], pad, axis=-1)], axis=-1)  # replicate right
        starts = jnp.arange(self.patch_count) * cfg.patch_stride
        patches = series[..., starts[:, None] + jnp.arange(cfg.patch_size)]  # (b, m, P, k)
        y = jnp.einsum("bmpk,kd->bmdp", patches, self.stem_kernel[...])
        y = y + self.stem_bias[...][None, None, :, None]
        return self.stem_norm(y)

    def head(self, features: jax.Array) -> jax.Array:
        """Flatten `(d, P)` per channel and project: `(batch, m, d, P) -> (batch, m, H)`."""
        y = jnp.einsum("bmdp,dph->bmh", features, self.head_kernel[...]) + self.head_bias[...]
        return self.head_dropout(y)

    def inference_mode(self) -> bool:
        """Whether the forward is deterministic (BatchNorm on running statistics, no dropout)."""
        dropouts = [self.head_dropout] + [d for block in self.blocks for d in block.dropouts]
        return bool(self.stem_norm.use_running_average) and all(
            d.deterministic or d.rate == 0 for d in dropouts)

    def infer(self, x: jax.Array, channels: Sequence[int]) -> jax.Array:
        """Eval-mode forecast of `channels`: `(batch, n, m) -> (batch, H, len(channels))`.

        The trained modules' numbers to float rounding, computed on channel-last `(m, batch, P, d)`
        activations: the stem's BatchNorm folded into its kernel, each block's branches merged
        (`ModernTCNBlock.merged_temporal`), the pointwise convolutions as batched products over
        `d` without transposes, and the head only on the channels asked for.
        """
        cfg = self.config
        series = jnp.transpose(x, (2, 0, 1))  # (m, batch, n)
        pad = cfg.patch_size - cfg.patch_stride
        series = jnp.concatenate([series, jnp.repeat(series[..., -1:], pad, axis=-1)], axis=-1)
        starts = np.arange(self.patch_count) * cfg.patch_stride
        patches = series[..., starts[:, None] + np.arange(cfg.patch_size)]  # (m, b, P, k)
        scale, shift = batch_norm_affine(self.stem_norm)
        z = patches @ (self.stem_kernel[...] * scale) + (self.stem_bias[...] * scale + shift)
        for block in self.blocks:
            z = block.infer(z)
        chosen = z[np.asarray(channels)]
        k, b, p, d = chosen.shape
        head = jnp.transpose(self.head_kernel[...], (1, 0, 2)).reshape(p * d, -1)
        y = chosen.reshape(k, b, p * d) @ head + self.head_bias[...]
        return jnp.transpose(y, (1, 2, 0))

    def infer_in_slices(self, x: jax.Array, channels: Sequence[int]) -> jax.Array:
        """`infer` over slices of `INFERENCE_CHUNK` windows (the last one zero-padded), so a large
        evaluation block's activations stay in cache; every slice is the same program. An accelerator takes the
        whole batch at once (`layers.slices_batches`)."""
        b, chunk = x.shape[0], INFERENCE_CHUNK
        if b <= chunk or not slices_batches():
            return self.infer(x, channels)
        padded = -(-b // chunk) * chunk
        x = jnp.pad(x, ((0, padded - b), (0, 0), (0, 0)))
        # `lax.map` returns its pytree untyped (Any); here it is one array
        out: jax.Array = jax.lax.map(lambda part: self.infer(part, channels),
                          x.reshape(padded // chunk, chunk, *x.shape[1:]))
        return out.reshape(padded, *out.shape[2:])[:b]

    def predict_all_channels(self, x: Inputs) -> AllChannelForecast:
        """Forecast every input channel: `(batch, n, m) -> (batch, H, m)`."""
        x = jnp.asarray(x)
        if self.inference_mode():
            return self.infer_in_slices(x, range(self.num_channels))
        features = self.stem(x)
        for block in self.blocks:
            features = block(features)
        return jnp.swapaxes(self.head(features), 1, 2)

    def __call__(self, x: Inputs) -> Forecast:
        """Forecast the targets: `(batch, n, m) -> (batch, H, len(target_indices))`."""
        check_input(x, input_len=self.input_len, num_channels=self.num_channels,
                    model="ModernTCN")
        if self.inference_mode():
            return self.infer_in_slices(jnp.asarray(x), self.target_indices)
        return select_targets(self.predict_all_channels(x), self.target_indices)


#: The architecture's spec (the registry collects it).
SPEC = ModelSpec(name="moderntcn", config_cls=ModernTCNConfig, is_valid=is_valid, module_cls=ModernTCN,
                 is_trainable=True, is_channel_independent=False, supports_revin=True,
                 label="ModernTCN", family="Convolution", display_rank=3)
