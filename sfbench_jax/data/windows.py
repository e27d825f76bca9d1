"""Windows on the device: the static window geometry of a dataset and the batched gather of inputs and
targets by start index, shared by training and evaluation (both sit above this module).

A window is its start row `s`: `x = series[s : s+n]` (all channels), `y = series[s+n : s+n+H, targets]`.
Whole splits are never materialised; the gather runs inside the jitted programs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float, Int

from sfbench_jax.data.registry import DatasetSpec

#: Model inputs: a batch of windows, all channels (a host array is accepted too).
Inputs = Float[Array | np.ndarray, "batch time channel"]
#: A model's forecast of the target channels.
Forecast = Float[Array, "batch horizon target"]
#: A channel-independent model's forecast of every input channel (before target selection).
AllChannelForecast = Float[Array, "batch horizon channel"]
#: A channel-independent model's inputs restricted to some channels, their channel ids, and their forecast.
ChannelInputs = Float[Array | np.ndarray, "batch time selected"]
ChannelIds = Int[Array | np.ndarray, "batch selected"]
ChannelForecast = Float[Array, "batch horizon selected"]


#: How a program over many windows is laid out (`eval.layout`; docs/speed.md, "Layouts"): "cpu" walks windows in
#: cache-sized loops, "accelerator" computes every window of a chunk at once. Both give the same values.
Layout = Literal["cpu", "accelerator"]
LAYOUTS: tuple[Layout, ...] = ("cpu", "accelerator")


@dataclass(frozen=True)
class WindowShape:
    """Static window geometry: input length n, horizon H and the target channel positions."""

    input_len: int
    horizon: int
    target_indices: tuple[int, ...]


def window_shape(spec: DatasetSpec) -> WindowShape:
    """The window geometry of a dataset."""
    return WindowShape(input_len=spec.input_len, horizon=spec.horizon,
                       target_indices=tuple(int(i) for i in spec.target_indices))


def select_targets(y: Float[Array, "*batch channel"],
                   target_indices: tuple[int, ...]) -> Float[Array, "*batch target"]:
    """Take the target channels from the last axis (a slice when they are contiguous)."""
    first = target_indices[0]
    if target_indices == tuple(range(first, first + len(target_indices))):
        return y[..., first:first + len(target_indices)]
    return jnp.take(y, np.asarray(target_indices), axis=-1)


def gather_windows(series: Float[Array, "row channel"], starts: Int[Array, " window"], shape: WindowShape, *,
                   layout: Layout = "cpu") -> tuple[Float[Array, "window n channel"], Float[Array, "window h target"]]:
    """`x = series[s : s+n]` `(C, n, m)` and `y = series[s+n : s+n+H, targets]` `(C, H, t)`.

    Two layouts, the same values (a gather copies; nothing is rounded):
    - the "cpu" layout: one dynamic slice per window in a loop. The loop's output is a
      materialised block, so XLA cannot fuse the gather into every consumer (which would recompute it for each
      element of each scenario), and each slice is a contiguous, cache-friendly copy.
    - the "accelerator" layout: every window at once, one gather op (a vmap of the slice),
      no loop whose trip count grows with the number of windows.
    """
    span = shape.input_len + shape.horizon

    def window_at(start: jax.Array) -> jax.Array:
        return jax.lax.dynamic_slice_in_dim(series, start, span, axis=0)

    window = jax.vmap(window_at)(starts) if layout == "accelerator" else jax.lax.map(window_at, starts)
    return window[:, : shape.input_len], select_targets(window[:, shape.input_len:], shape.target_indices)
