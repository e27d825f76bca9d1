"""TSMixer (protocol 3.5): residual time-mixing and feature-mixing blocks, then a time projection.

What lives here: the `TSMixerConfig` hyperparameters, the `TSMixer` NNX module
and its `MixerBlock`. All dense layers use Glorot-uniform weights and zero biases (Keras
defaults, as the reference); norms are the joint `(n, m)` LayerNorm (`"L"`) or a BatchNorm over the
flattened `n·m` cells (`"B"`, eps 1e-3, PyTorch momentum 0.01).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import jax
import jax.numpy as jnp
from flax import nnx

from sfbench_jax.data.windows import AllChannelForecast, Forecast, Inputs, select_targets
from sfbench_jax.models.hparams import HParams, require_choice, require_int, require_rate
from sfbench_jax.models.layers import (
    ACTIVATIONS,
    Dropout,
    SlabLayerNorm,
    TorchBatchNorm,
    check_input,
    glorot_uniform_init,
    in_inference_mode,
    map_in_slices,
    validate_dataset_shape,
)
from sfbench_jax.models.spec import ModelSpec

NORM_EPS = 1e-3
BATCH_NORM_MOMENTUM = 0.01
#: Bytes of the largest intermediate of one inference slice (`TSMixer.slice_windows`): the forward of an
#: evaluation block (thousands of windows) runs a slice at a time so its intermediates stay in cache.
SLICE_BYTES = 2**20


@dataclasses.dataclass(frozen=True)
class TSMixerConfig:
    """TSMixer hyperparameters.

    Attributes:
        n_block: mixer blocks.
        ff_dim: hidden width of the feature-mixing MLP.
        norm_type: `"L"` (LayerNorm over the (n, m) slab) or `"B"` (BatchNorm over n·m cells).
        activation: `"relu"` or `"gelu"` (exact), used in both branches.
        dropout: dropout after each activation and after the feature MLP.
    """

    n_block: int = 2
    ff_dim: int = 64
    norm_type: str = "L"
    activation: str = "relu"
    dropout: float = 0.0

    def __post_init__(self) -> None:
        def set_(name: str, value: object) -> None:
            object.__setattr__(self, name, value)

        set_("n_block", require_int("n_block", self.n_block))
        set_("ff_dim", require_int("ff_dim", self.ff_dim))
        set_("norm_type", require_choice("norm_type", self.norm_type, ("L", "B")))
        set_("activation", require_choice("activation", self.activation, ("relu", "gelu")))
        set_("dropout", require_rate("dropout", self.dropout))



def is_valid(hparams: HParams, *, input_len: int = 96) -> bool:
    """Every TSMixer grid combination is valid."""
    del hparams, input_len
    return True


def _keras_dense(in_features: int, out_features: int, *, rngs: nnx.Rngs) -> nnx.Linear:
    return nnx.Linear(in_features, out_features, kernel_init=glorot_uniform_init(),
                      bias_init=nnx.initializers.zeros_init(), rngs=rngs)


def _norm(config: TSMixerConfig, input_len: int, num_channels: int) -> SlabLayerNorm | TorchBatchNorm:
    if config.norm_type == "L":
        return SlabLayerNorm((input_len, num_channels), epsilon=NORM_EPS)
    # Every (time, channel) cell has its own statistics: features are the last two axes.
    return TorchBatchNorm((input_len, num_channels), feature_axes=(1, 2), epsilon=NORM_EPS,
                          momentum=BATCH_NORM_MOMENTUM)


class MixerBlock(nnx.Module):
    """`r = x + drop(act(TimeLinear(norm(x))))`; `out = r + drop(fc2(drop(act(fc1(norm(r))))))`."""

    def __init__(self, config: TSMixerConfig, *, input_len: int, num_channels: int,
                 rngs: nnx.Rngs) -> None:
        self.activation = config.activation
        self.temporal_norm = _norm(config, input_len, num_channels)
        self.temporal = _keras_dense(input_len, input_len, rngs=rngs)
        self.temporal_dropout = Dropout(config.dropout, rngs=rngs)
        self.feature_norm = _norm(config, input_len, num_channels)
        self.feature_in = _keras_dense(num_channels, config.ff_dim, rngs=rngs)
        self.feature_dropout_in = Dropout(config.dropout, rngs=rngs)
        self.feature_out = _keras_dense(config.ff_dim, num_channels, rngs=rngs)
        self.feature_dropout_out = Dropout(config.dropout, rngs=rngs)

    def __call__(self, x: jax.Array) -> jax.Array:
        """`(batch, n, m) -> (batch, n, m)`."""
        act = ACTIVATIONS[self.activation]
        # The time-mixing Dense acts along time: move time last and back.
        t = jnp.swapaxes(self.temporal(jnp.swapaxes(self.temporal_norm(x), 1, 2)), 1, 2)
        r = x + self.temporal_dropout(act(t))
        f = self.feature_dropout_in(act(self.feature_in(self.feature_norm(r))))
        return r + self.feature_dropout_out(self.feature_out(f))


class TSMixer(nnx.Module):
    """TSMixer forecaster (channel-mixing through the feature MLP).

    Args:
        n_block, ff_dim, norm_type, activation, dropout: see `TSMixerConfig`.
        input_len: window length `n`.
        horizon: forecast length `H`.
        num_channels: input channels `m`.
        target_indices: channels returned, in order.
        rngs: initialisation and dropout keys.
    """

    def __init__(self, *, n_block: int = 2, ff_dim: int = 64, norm_type: str = "L",
                 activation: str = "relu", dropout: float = 0.0, input_len: int, horizon: int,
                 num_channels: int, target_indices: Sequence[int], rngs: nnx.Rngs) -> None:
        cfg = TSMixerConfig(n_block=n_block, ff_dim=ff_dim, norm_type=norm_type,
                            activation=activation, dropout=dropout)
        self.config = cfg
        self.target_indices = validate_dataset_shape(
            input_len=input_len, horizon=horizon, num_channels=num_channels,
            target_indices=target_indices)
        self.input_len, self.horizon, self.num_channels = input_len, horizon, num_channels
        self.blocks = nnx.List([MixerBlock(cfg, input_len=input_len, num_channels=num_channels,
                                           rngs=rngs) for _ in range(cfg.n_block)])
        self.projection = _keras_dense(input_len, horizon, rngs=rngs)

    def slice_windows(self) -> int:
        """Windows whose largest intermediate (the feature MLP's hidden layer, or a time-mixing slab) fills
        about `SLICE_BYTES`: an inference forward over more runs a slice at a time."""
        widest = max(self.config.ff_dim, self.num_channels) * max(self.input_len, self.horizon)
        return max(1, SLICE_BYTES // (widest * 4))

    def predict_all_channels(self, x: Inputs) -> AllChannelForecast:
        """Forecast every input channel: `(batch, n, m) -> (batch, H, m)`. In inference mode a large batch
        runs in cache-sized slices of windows (the same numbers, the intermediates stay in cache)."""
        if in_inference_mode(self):
            return map_in_slices(self.forecast, jnp.asarray(x), self.slice_windows())
        return self.forecast(x)

    def forecast(self, x: Inputs) -> AllChannelForecast:
        """The forward of `predict_all_channels` on one batch."""
        y = jnp.asarray(x)
        for block in self.blocks:
            y = block(y)
        return jnp.swapaxes(self.projection(jnp.swapaxes(y, 1, 2)), 1, 2)

    def __call__(self, x: Inputs) -> Forecast:
        """Forecast the targets: `(batch, n, m) -> (batch, H, len(target_indices))`."""
        check_input(x, input_len=self.input_len, num_channels=self.num_channels, model="TSMixer")
        return select_targets(self.predict_all_channels(x), self.target_indices)


#: The architecture's spec (the registry collects it).
SPEC = ModelSpec(name="tsmixer", config_cls=TSMixerConfig, is_valid=is_valid, module_cls=TSMixer,
                 is_trainable=True, is_channel_independent=False, supports_revin=True,
                 label="TSMixer", family="Fully Connected", display_rank=4)
