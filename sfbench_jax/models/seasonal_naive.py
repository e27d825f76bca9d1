"""SeasonalNaive: repeat the last season of the input window (protocol 3.6). No parameters, no training.

What lives here: the `SeasonalNaiveConfig` hyperparameters and the `SeasonalNaive` NNX module. Its
season grid lives in its preset (`conf/model/seasonal_naive.yaml`), like every architecture's grid.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import jax.numpy as jnp
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
from sfbench_jax.models.hparams import HParams, require_int
from sfbench_jax.models.layers import validate_dataset_shape
from sfbench_jax.models.spec import ModelSpec


@dataclasses.dataclass(frozen=True)
class SeasonalNaiveConfig:
    """SeasonalNaive hyperparameters.

    Attributes:
        season_length: season in steps (>= 1); seasons longer than the window use the window.
    """

    season_length: int = 1

    def __post_init__(self) -> None:
        object.__setattr__(self, "season_length",
                           require_int("season_length", self.season_length))


def is_valid(hparams: HParams, *, input_len: int = 96) -> bool:
    """Every season length in the grid is valid."""
    del hparams, input_len
    return True


class SeasonalNaive(nnx.Module):
    """Forecast `y[h] = x[n - L + (h mod L)]` with `L = min(season_length, n)`, then select targets.

    Built like every architecture (`registry.build_model`); it has no parameters, so `num_channels` only
    serves the dataset-shape check and `rngs` is unused.

    Args:
        season_length: season in steps (>= 1).
        input_len: window length `n`.
        horizon: forecast length `H`.
        target_indices: channels to return, in order.
        num_channels: input channels `m` (None: not checked).
        rngs: unused (no parameters to initialise).
    """

    def __init__(self, *, season_length: int, input_len: int, horizon: int, target_indices: Sequence[int],
                 num_channels: int | None = None, rngs: nnx.Rngs | None = None) -> None:
        del rngs
        if num_channels is not None:
            validate_dataset_shape(input_len=input_len, horizon=horizon, num_channels=num_channels,
                                   target_indices=target_indices)
        if season_length < 1:
            raise ValueError(f"season_length must be >= 1, got {season_length}.")
        effective = min(season_length, input_len)
        self.source_steps = tuple(input_len - effective + (h % effective) for h in range(horizon))
        self.season_steps = effective
        self.horizon = horizon
        self.target_indices = tuple(int(i) for i in target_indices)

    def predict_all_channels(self, x: Inputs) -> AllChannelForecast:
        """Forecast every input channel: `(batch, n, m) -> (batch, H, m)`.

        The last season tiled forward: static slices and a concatenation, no gather (gathers fused
        into the evaluation kernel are slow on CPU).
        """
        season = x[:, x.shape[1] - self.season_steps:]
        repeats = -(-self.horizon // self.season_steps)
        return jnp.concatenate([season] * repeats, axis=1)[:, : self.horizon]

    def predict_channels(self, x: ChannelInputs, channel_ids: ChannelIds) -> ChannelForecast:
        """Forecast the given channels only (each channel's last season, whatever the channel)."""
        del channel_ids
        return self.predict_all_channels(x)

    def __call__(self, x: Inputs) -> Forecast:
        """Map `(batch, n, channels)` to `(batch, H, targets)` by copying input values."""
        return select_targets(self.predict_all_channels(x), self.target_indices)


#: The architecture's spec (the registry collects it). Its forecast is a copy: running it on fewer channels saves
#: nothing, the channel bookkeeping costs more (not channel-sparse).
SPEC = ModelSpec(name="seasonal_naive", config_cls=SeasonalNaiveConfig, is_valid=is_valid, module_cls=SeasonalNaive,
                 is_trainable=False, is_channel_independent=True, supports_revin=False, label="SeasonalNaive",
                 family="Statistical", forecasts_channels_cheaply=False, display_rank=0)
