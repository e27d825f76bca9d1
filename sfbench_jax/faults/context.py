"""Static facts a fault needs about the dataset: window length, channels, the continuous pool and the
channel-count rule (hashable, so it can be a static argument of jitted code), and the shape types of the
fault functions' arguments."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from jaxtyping import Array, Float, UInt32

from sfbench_jax.faults.severity import DEFAULT_CHANNEL_FRACTION, largest_channel_count

#: One window `(n, m)` as the fault functions see it (time first, then channels).
Window = Float[Array | np.ndarray, "time channel"]
#: A faulted window: what an apply function returns (always computed by JAX).
FaultedWindow = Float[Array, "time channel"]
#: The two uint32 words of a (scenario, window) key that every JAX-mode draw is expanded from.
StreamWords = UInt32[Array, "2"]


@dataclass(frozen=True)
class FaultContext:
    """Everything static about how faults act on windows of one dataset.

    Attributes:
        input_len: window length n.
        num_channels: number of input channels m.
        pool: positions of the continuous channels (the pool P), in input order.
        max_channel_fraction: gamma of the severity channel-count rule (k_max = ceil(gamma M)).
        channel_fraction: q of the fixed-fraction variant (k = ceil(q M) for s > 0), or None.
    """

    input_len: int
    num_channels: int
    pool: tuple[int, ...]
    max_channel_fraction: float = DEFAULT_CHANNEL_FRACTION
    channel_fraction: float | None = None

    def __post_init__(self) -> None:
        if self.input_len < 2:
            raise ValueError(f"input_len must be >= 2 for windowed faults, got {self.input_len}.")
        if any(not 0 <= p < self.num_channels for p in self.pool) or len(set(self.pool)) != len(self.pool):
            raise ValueError(f"pool {self.pool} must hold distinct channel positions in "
                             f"[0, {self.num_channels}).")
        if not 0.0 < self.max_channel_fraction <= 1.0:
            raise ValueError(f"max_channel_fraction must lie in (0, 1], got {self.max_channel_fraction}.")
        if self.channel_fraction is not None and not 0.0 < self.channel_fraction <= self.max_channel_fraction:
            raise ValueError(f"channel_fraction must lie in (0, max_channel_fraction={self.max_channel_fraction}], "
                             f"got {self.channel_fraction}.")

    @property
    def pool_size(self) -> int:
        """M = |P|."""
        return len(self.pool)

    @property
    def max_count(self) -> int:
        """Largest number of channels a fault can touch (sizes fixed-shape buffers)."""
        return largest_channel_count(self.pool_size, max_fraction=self.max_channel_fraction,
                                     channel_fraction=self.channel_fraction)

    @property
    def pool_is_all_channels(self) -> bool:
        """True when every input channel is continuous."""
        return self.pool == tuple(range(self.num_channels))
