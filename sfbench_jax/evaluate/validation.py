"""Clean validation MSE, as the reference's drop-last validation loader computes it (spec 1.5, 5.2)."""

from __future__ import annotations

from functools import partial
from typing import Any

import jax
import numpy as np

from sfbench_jax.data.prepared import PreparedData
from sfbench_jax.evaluate.engine import window_shape
from sfbench_jax.evaluate.kernel import PredictFn, clean_mse


def validation_mse(predict: PredictFn, state: Any, data: PreparedData) -> float:
    """Mean clean MSE over the validation windows a drop-last loader of the dataset's batch size visits.

    All batches have the same size, so the mean of batch means equals the mean over those windows.
    """
    starts = data.val_starts_drop_last(data.spec.batch_size)
    series = jax.device_put(data.standardised)
    kernel = jax.jit(partial(clean_mse, predict, shape=window_shape(data)))
    per_window = jax.device_get(kernel(jax.device_put(state), series, jax.device_put(starts)))
    return float(np.mean(np.asarray(per_window, np.float64)))
