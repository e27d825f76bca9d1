"""Clean validation MSE, as the reference's drop-last validation loader computes it (protocol 1.5, 5.2).

`validation_mses` scores several predictors in one compiled pass that gathers each block of validation
windows once (SeasonalNaive's ten seasons on Traffic read 2 GB of windows once instead of ten times);
a validation set of at most `VALIDATION_ONE_BLOCK_BYTES` of window data (ETTh1, Beijing) is computed exactly as
one batch; a larger one (Traffic) in blocks of `VALIDATION_BLOCK_BYTES`, small enough that the ten seasons'
passes over a block read it from cache (same numbers, less time: docs/speed.md "Measured constants").
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np

from sfbench_jax.data.prepared import PreparedData
from sfbench_jax.data.windows import WindowShape, window_shape
from sfbench_jax.evaluation.kernel import clean_mse
from sfbench_jax.predictors.host import reporting_host_failures
from sfbench_jax.predictors.protocol import ModelState, Predictor

#: Jitted validation kernels kept per (predict functions, window shape, block).
VALIDATION_CACHE_SIZE = 16
#: A validation set with at most this much window data runs as one batch (ETTh1's and Beijing's do).
VALIDATION_ONE_BLOCK_BYTES = 64 * 2**20
#: Window data per block of a larger validation set: cache-sized, since every predictor passes over the block
#: (the fastest of the sizes tried on Traffic's ten seasons: docs/speed.md "Measured constants").
VALIDATION_BLOCK_BYTES = 4 * 2**20


@functools.lru_cache(maxsize=VALIDATION_CACHE_SIZE)
def validation_kernel(predictors: tuple[Predictor, ...], shape: WindowShape, block: int) -> jax.stages.Wrapped:
    """The jitted per-window clean MSE `(P, V)` of several predict functions over `V` windows (padded to whole
    blocks of `block` windows by the caller)."""

    def blocked(states: tuple[ModelState, ...], series: jax.Array, starts: jax.Array) -> jax.Array:
        def one_block(block_starts: jax.Array) -> jax.Array:
            return jnp.stack([clean_mse(predict, state, series, block_starts, shape)
                              for predict, state in zip(predictors, states, strict=True)])

        per_block = jax.lax.map(one_block, starts.reshape(-1, block))  # (blocks, P, block)
        return jnp.moveaxis(per_block, 1, 0).reshape(len(predictors), -1)

    return jax.jit(blocked)


def validation_mses(models: Sequence[tuple[Predictor, ModelState]], data: PreparedData) -> list[float]:
    """Mean clean MSE of each `(predict, state)` over the validation windows a drop-last loader of the
    dataset's batch size visits (all batches have one size, so the mean of batch means equals the mean over
    those windows)."""
    spec = data.spec
    starts = data.val_starts_drop_last(spec.batch_size)
    window_bytes = (spec.input_len + spec.horizon) * spec.num_channels * 4
    one_block = len(starts) * window_bytes <= VALIDATION_ONE_BLOCK_BYTES
    block = len(starts) if one_block else max(1, VALIDATION_BLOCK_BYTES // window_bytes)
    padded = np.concatenate([starts, np.repeat(starts[-1:], -len(starts) % block)])
    kernel = validation_kernel(tuple(predict for predict, _ in models), window_shape(spec), block)
    with reporting_host_failures():  # a host model's failure (e.g. an external predictor's NaN) as its own error
        per_window = jax.device_get(kernel(jax.device_put(tuple(state for _, state in models)),
                                           jax.device_put(data.standardised), jax.device_put(padded)))
    return [float(np.mean(np.asarray(row[: len(starts)], np.float64))) for row in per_window]


def validation_mse(predict: Predictor, state: ModelState, data: PreparedData) -> float:
    """Mean clean MSE of one predictor over the drop-last validation windows (see `validation_mses`)."""
    return validation_mses([(predict, state)], data)[0]
