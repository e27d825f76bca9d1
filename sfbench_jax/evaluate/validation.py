"""Clean validation MSE, as the reference's drop-last validation loader computes it (spec 1.5, 5.2)."""

from __future__ import annotations

import functools
from typing import Any

import jax
import numpy as np

from sfbench_jax.data.prepared import PreparedData
from sfbench_jax.data.windows import WindowShape, window_shape
from sfbench_jax.evaluate.kernel import clean_mse
from sfbench_jax.predictors import Predictor

#: Jitted validation kernels kept per (predict function, window shape).
VALIDATION_CACHE_SIZE = 16


@functools.lru_cache(maxsize=VALIDATION_CACHE_SIZE)
def validation_kernel(predict: Predictor, shape: WindowShape) -> Any:
    """The jitted per-window clean MSE of one predict function."""
    return jax.jit(functools.partial(clean_mse, predict, shape=shape))


def validation_mse(predict: Predictor, state: Any, data: PreparedData) -> float:
    """Mean clean MSE over the validation windows a drop-last loader of the dataset's batch size visits.

    All batches have the same size, so the mean of batch means equals the mean over those windows.
    """
    starts = data.val_starts_drop_last(data.spec.batch_size)
    kernel = validation_kernel(predict, window_shape(data.spec))
    per_window = jax.device_get(kernel(jax.device_put(state), jax.device_put(data.standardised),
                                       jax.device_put(starts)))
    return float(np.mean(np.asarray(per_window, np.float64)))
