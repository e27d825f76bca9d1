"""SeasonalNaive: repeat the last season of the input window (spec 3.6). No parameters, no training."""

from __future__ import annotations

from collections.abc import Sequence

import jax
import jax.numpy as jnp
from flax import nnx

SEASON_GRID: tuple[int, ...] = (1, 2, 3, 6, 12, 16, 24, 36, 48, 90)


class SeasonalNaive(nnx.Module):
    """Forecast `y[h] = x[n - L + (h mod L)]` with `L = min(season_length, n)`, then select targets.

    Args:
        season_length: season in steps (>= 1).
        input_len: window length `n`.
        horizon: forecast length `H`.
        target_indices: channels to return, in order.
    """

    def __init__(self, *, season_length: int, input_len: int, horizon: int,
                 target_indices: Sequence[int]) -> None:
        if season_length < 1:
            raise ValueError(f"season_length must be >= 1, got {season_length}.")
        effective = min(season_length, input_len)
        self.source_steps = tuple(input_len - effective + (h % effective) for h in range(horizon))
        self.target_indices = tuple(int(i) for i in target_indices)

    def __call__(self, x: jax.Array) -> jax.Array:
        """Map `(batch, n, channels)` to `(batch, H, targets)` by copying input values."""
        steps = jnp.asarray(self.source_steps)
        targets = jnp.asarray(self.target_indices)
        return x[:, steps][:, :, targets]
