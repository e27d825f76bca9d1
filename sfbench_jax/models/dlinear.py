"""DLinear (protocol 3.1): moving-average decomposition plus two linear maps over time.

What lives here: the `DLinearConfig` hyperparameters, the `DLinear` NNX module (the trained form:
decomposition, then two maps), and `DLinearMap`, its inference form: since the moving average is linear,
the whole forward is one affine map over time, folded once from the trained weights. Weight import from
PyTorch is in `parity.py`; registration in `registry.py`.
"""

from __future__ import annotations

import dataclasses
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
from sfbench_jax.models.hparams import HParams, require_bool, require_int
from sfbench_jax.models.layers import (
    check_input,
    torch_uniform_init,
    validate_dataset_shape,
)
from sfbench_jax.models.spec import ModelSpec


@dataclasses.dataclass(frozen=True)
class DLinearConfig:
    """DLinear hyperparameters.

    Attributes:
        moving_avg: odd width of the moving average that extracts the trend.
        individual: one pair of time maps per channel (true) or one pair shared by all (false).
        init_weights: set both weight matrices to the constant `1/input_len` (biases keep the
            default random init).
    """

    moving_avg: int = 25
    individual: bool = False
    init_weights: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "moving_avg", require_int("moving_avg", self.moving_avg, odd=True))
        object.__setattr__(self, "individual", require_bool("individual", self.individual))
        object.__setattr__(self, "init_weights", require_bool("init_weights", self.init_weights))



def is_valid(hparams: HParams, *, input_len: int = 96) -> bool:
    """Every DLinear grid combination is valid."""
    del hparams, input_len
    return True


def moving_average_counts(input_len: int, width: int) -> np.ndarray:
    """Integer matrix `C (n, n)` with `trend = C @ x / width` for the edge-replicated average.

    Row `t` counts how often each input step falls in the width-`width` window centred on `t`
    after `(width - 1)/2` copies of the first and last step are put in front and behind.
    """
    half = (width - 1) // 2
    counts = np.zeros((input_len, input_len), np.float32)
    for t in range(input_len):
        for j in range(t - half, t + half + 1):
            counts[t, min(max(j, 0), input_len - 1)] += 1.0
    return counts


class DLinear(nnx.Module):
    """Seasonal-trend decomposition with one linear map `n -> H` over time for each part.

    Channel-independent: each channel's forecast depends only on that channel.

    Args:
        moving_avg, individual, init_weights: see `DLinearConfig`.
        input_len: window length `n`.
        horizon: forecast length `H`.
        num_channels: input channels `m`.
        target_indices: channels returned, in order.
        rngs: parameter initialisation keys.

    Example:
        >>> model = DLinear(input_len=96, horizon=6, num_channels=12, target_indices=[0],
        ...                 rngs=nnx.Rngs(0))
        >>> model(jnp.zeros((2, 96, 12))).shape
        (2, 6, 1)
    """

    def __init__(self, *, moving_avg: int = 25, individual: bool = False,
                 init_weights: bool = False, input_len: int, horizon: int, num_channels: int,
                 target_indices: Sequence[int], rngs: nnx.Rngs) -> None:
        self.config = DLinearConfig(moving_avg=moving_avg, individual=individual,
                                    init_weights=init_weights)
        self.target_indices = validate_dataset_shape(
            input_len=input_len, horizon=horizon, num_channels=num_channels,
            target_indices=target_indices)
        self.input_len, self.horizon, self.num_channels = input_len, horizon, num_channels
        # Kernels are stored `(..., in=n, out=H)`; torch's `(H, n)` weight is their transpose.
        lead = (num_channels,) if self.config.individual else ()
        init = torch_uniform_init(input_len)

        def kernel() -> nnx.Param[jax.Array]:
            if self.config.init_weights:
                return nnx.Param(jnp.full(lead + (input_len, horizon), 1.0 / input_len,
                                          jnp.float32))
            return nnx.Param(init(rngs.params(), lead + (input_len, horizon)))

        self.seasonal_kernel = kernel()
        self.seasonal_bias = nnx.Param(init(rngs.params(), lead + (horizon,)))
        self.trend_kernel = kernel()
        self.trend_bias = nnx.Param(init(rngs.params(), lead + (horizon,)))

    def decompose(self, x: Inputs | ChannelInputs) -> tuple[jax.Array, jax.Array]:
        """Split `x (batch, n, m)` into `(seasonal, trend)`, both `(batch, n, m)`."""
        x = jnp.asarray(x)
        counts = jnp.asarray(moving_average_counts(self.input_len, self.config.moving_avg))
        trend = jnp.einsum("ts,bsm->btm", counts, x) / self.config.moving_avg
        return x - trend, trend

    def predict_all_channels(self, x: Inputs) -> AllChannelForecast:
        """Forecast every input channel: `(batch, n, m) -> (batch, H, m)`."""
        seasonal, trend = self.decompose(x)
        if self.config.individual:
            out = (jnp.einsum("bnm,mnh->bhm", seasonal, self.seasonal_kernel[...])
                   + self.seasonal_bias[...].T
                   + jnp.einsum("bnm,mnh->bhm", trend, self.trend_kernel[...])
                   + self.trend_bias[...].T)
        else:
            out = (jnp.einsum("bnm,nh->bhm", seasonal, self.seasonal_kernel[...])
                   + self.seasonal_bias[...][:, None]
                   + jnp.einsum("bnm,nh->bhm", trend, self.trend_kernel[...])
                   + self.trend_bias[...][:, None])
        return out

    def predict_channels(self, x: ChannelInputs, channel_ids: ChannelIds) -> ChannelForecast:
        """Forecast the given channels only (channel-independent): `x (batch, n, k)` holds input channels
        `channel_ids (batch, k)`; per-channel kernels (`individual`) are taken by channel id."""
        seasonal, trend = self.decompose(x)
        if not self.config.individual:
            return (jnp.einsum("bnk,nh->bhk", seasonal, self.seasonal_kernel[...])
                    + self.seasonal_bias[...][:, None]
                    + jnp.einsum("bnk,nh->bhk", trend, self.trend_kernel[...])
                    + self.trend_bias[...][:, None])
        return (jnp.einsum("bnk,bknh->bhk", seasonal, self.seasonal_kernel[...][channel_ids])
                + jnp.swapaxes(self.seasonal_bias[...][channel_ids], 1, 2)
                + jnp.einsum("bnk,bknh->bhk", trend, self.trend_kernel[...][channel_ids])
                + jnp.swapaxes(self.trend_bias[...][channel_ids], 1, 2))

    def __call__(self, x: Inputs) -> Forecast:
        """Forecast the targets: `(batch, n, m) -> (batch, H, len(target_indices))`."""
        check_input(x, input_len=self.input_len, num_channels=self.num_channels, model="DLinear")
        return select_targets(self.predict_all_channels(x), self.target_indices)

    def inference_form(self) -> DLinearMap:
        """The same forecast as one affine map over time (`DLinearMap`), for evaluation.

        With `trend = A x` (A: the moving average) and `seasonal = x - trend`, the forecast
        `Ks^T seasonal + Kt^T trend + bs + bt` is `K^T x + b` with `K = Ks + A^T (Kt - Ks)` and
        `b = bs + bt`: one matrix product per window instead of three, and no intermediates. Equal
        to `__call__` to float rounding (tests/models/test_dlinear_map.py).
        """
        average = jnp.asarray(moving_average_counts(self.input_len, self.config.moving_avg)
                              / self.config.moving_avg)
        seasonal, trend = self.seasonal_kernel[...], self.trend_kernel[...]
        kernel = seasonal + jnp.einsum("ts,...th->...sh", average, trend - seasonal,
                                       precision=jax.lax.Precision.HIGHEST)
        return DLinearMap(kernel, self.seasonal_bias[...] + self.trend_bias[...],
                          num_channels=self.num_channels, target_indices=self.target_indices)


def apply_time_map(x: ChannelInputs, kernel: jax.Array, bias: jax.Array) -> ChannelForecast:
    """`x (batch, n, k)` through an affine map over time -> `(batch, H, k)`. The kernel is shared `(n, H)`,
    per channel `(k, n, H)`, or per row and channel `(batch, k, n, H)`; the bias has the kernel's shape
    without `n`."""
    if kernel.ndim == 2:
        return jnp.einsum("bnk,nh->bhk", x, kernel) + bias[:, None]
    if kernel.ndim == 3:
        return jnp.einsum("bnk,knh->bhk", x, kernel) + bias.T
    return jnp.einsum("bnk,bknh->bhk", x, kernel) + jnp.swapaxes(bias, 1, 2)


class DLinearMap(nnx.Module):
    """DLinear's inference form: one affine map `n -> H` over time, shared or per channel
    (`DLinear.inference_form`). Channel-independent like DLinear; the targets are forecast from their own
    channels only.

    Args:
        kernel: `(n, H)` shared or `(m, n, H)` per channel.
        bias: `(H,)` or `(m, H)`.
        num_channels: input channels `m`.
        target_indices: channels returned, in order.
    """

    def __init__(self, kernel: jax.Array, bias: jax.Array, *, num_channels: int,
                 target_indices: Sequence[int]) -> None:
        self.kernel = nnx.Param(kernel)
        self.bias = nnx.Param(bias)
        self.input_len, self.horizon = kernel.shape[-2:]
        self.num_channels = num_channels
        self.target_indices = tuple(target_indices)
        self.individual = kernel.ndim == 3

    def predict_channels(self, x: ChannelInputs, channel_ids: ChannelIds) -> ChannelForecast:
        """Forecast the given channels only: `x (batch, n, k)` holds input channels `channel_ids (batch, k)`."""
        if not self.individual:
            return apply_time_map(x, self.kernel[...], self.bias[...])
        return apply_time_map(x, self.kernel[...][channel_ids], self.bias[...][channel_ids])

    def __call__(self, x: Inputs) -> Forecast:
        """Forecast the targets: `(batch, n, m) -> (batch, H, len(target_indices))`."""
        check_input(x, input_len=self.input_len, num_channels=self.num_channels, model="DLinear")
        kernel, bias = self.kernel[...], self.bias[...]
        if self.individual:  # the targets' own kernels (a slice when the targets are contiguous)
            kernel = jnp.moveaxis(select_targets(jnp.moveaxis(kernel, 0, -1), self.target_indices), -1, 0)
            bias = select_targets(bias.T, self.target_indices).T
        return apply_time_map(select_targets(jnp.asarray(x), self.target_indices), kernel, bias)


#: The architecture's spec (the registry collects it). Evaluated in its inference form, a channel's forecast is one
#: small matrix product, about what the channel-sparse path spends sorting and gathering that channel's row
#: (docs/speed.md: the full path is faster on Traffic-shaped data and about even on 7-12 channels), so it is not
#: channel-sparse.
SPEC = ModelSpec(name="dlinear", config_cls=DLinearConfig, is_valid=is_valid, module_cls=DLinear,
                 is_trainable=True, is_channel_independent=True, supports_revin=True, label="DLinear",
                 family="Fully Connected", forecasts_channels_cheaply=False, display_rank=1)
