"""`PreparedData`: a standardised series plus its fixed train/validation windows (protocol 1.3-1.5)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from sfbench_jax.data.loaders import Series
from sfbench_jax.data.registry import DatasetSpec
from sfbench_jax.data.splits import (
    NUM_TRAIN_WINDOWS,
    NUM_VAL_WINDOWS,
    SplitBounds,
    sample_starts,
    split_bounds,
    standardisation_stats,
    standardise,
)


@dataclass(frozen=True)
class PreparedData:
    """Everything a model needs from a dataset, in standardised space.

    Attributes:
        series: the loaded raw series.
        bounds: the chronological split.
        mean: float32 `(channels,)` train mean.
        std: float32 `(channels,)` train sample std (zeros replaced by 1).
        standardised: float32 `(rows, channels)` of the whole series (windows are gathered from it).
        train_starts: int32 `(10000,)` absolute starts of the fixed training windows.
        val_starts: int32 `(3000,)` absolute starts of the fixed validation windows.
    """

    series: Series
    bounds: SplitBounds
    mean: np.ndarray
    std: np.ndarray
    standardised: np.ndarray
    train_starts: np.ndarray
    val_starts: np.ndarray

    @property
    def spec(self) -> DatasetSpec:
        """The dataset's registry entry."""
        return self.series.spec

    def test_starts(self, eval_seed: int, count: int) -> np.ndarray:
        """Absolute starts of the `count` evaluation windows drawn with `eval_seed` (protocol 6.2)."""
        relative = sample_starts(self.bounds.num_starts("test"), count, eval_seed)
        return self.bounds.absolute_starts("test", relative)

    def val_starts_drop_last(self, batch_size: int) -> np.ndarray:
        """The validation windows a drop-last loader of `batch_size` visits (protocol 1.5)."""
        usable = (len(self.val_starts) // batch_size) * batch_size
        return self.val_starts[:usable]


def prepare(series: Series) -> PreparedData:
    """Split, standardise with train statistics, and draw the fixed train/validation windows."""
    spec = series.spec
    bounds = split_bounds(series.num_rows, input_len=spec.input_len, horizon=spec.horizon,
                          origin=series.source_path)
    mean, std = standardisation_stats(series.values, bounds.train_end, channels=spec.channels,
                                      origin=series.source_path)
    data_seed = spec.seeds.data_seed
    train = bounds.absolute_starts("train", sample_starts(bounds.num_starts("train"),
                                                          NUM_TRAIN_WINDOWS, data_seed))
    val = bounds.absolute_starts("val", sample_starts(bounds.num_starts("val"), NUM_VAL_WINDOWS,
                                                      data_seed + 1))
    return PreparedData(series=series, bounds=bounds, mean=mean, std=std,
                        standardised=standardise(series.values, mean, std), train_starts=train,
                        val_starts=val)
