"""Chronological splits, train-only standardisation and window sampling (protocol 1.3-1.5).

A window is its start row: `x = rows[s : s+n]`, `y = rows[s+n : s+n+H, targets]`. Windows never straddle a
split boundary. Start indices here are absolute row indices of the whole series.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from sfbench_jax.data.errors import ConstantChannelWarning, DataContractError

TRAIN_FRACTION = 0.6
VAL_FRACTION = 0.2
NUM_TRAIN_WINDOWS = 10_000
NUM_VAL_WINDOWS = 3_000
NUM_TEST_WINDOWS = 10_000


@dataclass(frozen=True)
class SplitBounds:
    """Row boundaries of the chronological 60/20/20 split: train `[0, train_end)`, validation
    `[train_end, val_end)`, test `[val_end, num_rows)`; `window_span = n + H`."""

    num_rows: int
    train_end: int
    val_end: int
    window_span: int

    def row_range(self, split: str) -> tuple[int, int]:
        """Half-open row range of `split` ("train", "val" or "test")."""
        ranges = {"train": (0, self.train_end), "val": (self.train_end, self.val_end),
                  "test": (self.val_end, self.num_rows)}
        if split not in ranges:
            raise ValueError(f"Unknown split {split!r}; use one of {sorted(ranges)}.")
        return ranges[split]

    def num_starts(self, split: str) -> int:
        """Number of window start positions in a split (`rows - span + 1`)."""
        first, last = self.row_range(split)
        return last - first - self.window_span + 1

    def absolute_starts(self, split: str, relative: np.ndarray) -> np.ndarray:
        """Convert split-relative start positions to absolute row indices (int32)."""
        first, _ = self.row_range(split)
        return (np.asarray(relative, dtype=np.int64) + first).astype(np.int32)


def split_bounds(num_rows: int, *, input_len: int, horizon: int, origin: str = "dataset") -> SplitBounds:
    """The reference's exact split arithmetic (Python float products, `int()` truncation).

    Raises:
        DataContractError: a split would hold no complete window.
    """
    span = input_len + horizon
    train_end = int(num_rows * TRAIN_FRACTION)
    val_end = int(num_rows * (TRAIN_FRACTION + VAL_FRACTION))
    train_end = min(max(train_end, span), num_rows - max(span, 1))
    val_end = min(max(val_end, train_end), num_rows - span)
    bounds = SplitBounds(num_rows=num_rows, train_end=train_end, val_end=val_end, window_span=span)
    if num_rows < 3 * span or min(bounds.num_starts(s) for s in ("train", "val", "test")) < 1:
        raise DataContractError(
            f"{origin}: {num_rows} rows are too few for windows of {input_len} input + {horizon} horizon "
            f"steps in a 60/20/20 split; every split needs at least {span} rows (about "
            f"{int(np.ceil(span / VAL_FRACTION))} rows in total).")
    return bounds


def standardisation_stats(values: np.ndarray, train_end: int, *, channels: Sequence[str] = (),
                          origin: str = "the dataset") -> tuple[np.ndarray, np.ndarray]:
    """Per-channel mean and sample std (ddof 1) over the train rows, as float32; zero std -> 1, with a
    `ConstantChannelWarning` naming the constant channels (`channels`: their names, by index)."""
    train = np.asarray(values[:train_end], dtype=np.float64)
    mean = train.mean(axis=0)
    std = train.std(axis=0, ddof=1)
    constant = np.nonzero(std == 0.0)[0]
    if constant.size:
        names = [channels[i] if i < len(channels) else f"#{i}" for i in constant.tolist()]
        shown = ", ".join(repr(name) for name in names[:10]) + (f" (and {len(names) - 10} more)"
                                                                if len(names) > 10 else "")
        warnings.warn(f"{origin}: {len(names)} channel(s) are constant over the {train_end} train rows (std 0): "
                      f"{shown}; they are standardised with std 1 instead, and carry no signal a model can learn "
                      "from. Drop them from the dataset's channels, or check the file.", ConstantChannelWarning,
                      stacklevel=2)
    std = np.where(std == 0.0, 1.0, std)
    return mean.astype(np.float32), std.astype(np.float32)


def standardise(values: np.ndarray, mean: np.ndarray, std: np.ndarray) -> np.ndarray:
    """`(x - mean) / std` in float32."""
    standardised: np.ndarray = ((np.asarray(values, np.float32) - mean) / std).astype(np.float32)
    return standardised


def sample_starts(num_starts: int, count: int, seed: int) -> np.ndarray:
    """`default_rng(seed).choice(num_starts, size=count, replace=True)`: the reference window draw."""
    return np.random.default_rng(seed).choice(num_starts, size=count, replace=True)
