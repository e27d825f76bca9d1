"""The engine's view of a model: a pure predict function `predict(state, x)`, or a row-aware predictor whose
output for a row also depends on which (context, window) the row is (randomized smoothing keys its noise
by them). Shared by the evaluation engine and the method wrappers; only JAX below it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp

#: A predictor's state: any pytree (an NNX State, or whatever a wrapper's predictor carries). `Any`, because a
#: pytree has no static type (jax types it `Any` too).
ModelState = Any
#: `predict(state, x (B, n, m)) -> (B, H, targets)`.
PredictFn = Callable[[ModelState, jax.Array], jax.Array]

#: Context ids of the rows a row-aware predictor sees: the clean pass, scenario i (1 + i), validation.
CLEAN_CONTEXT, VALIDATION_CONTEXT = 0, 1000


class RowAwarePredictor:
    """Base of predictors whose output for a row depends on which (context, window) the row is, e.g.
    randomized smoothing's noise keyed by (context, window id), so that it never depends on chunking or
    batching. Subclasses are frozen dataclasses (hashable: they key the compiled-kernel caches)."""

    def apply(self, state: ModelState, x: jax.Array, rows: jax.Array) -> jax.Array:
        """`(B, n, m) -> (B, H, targets)`; `rows (B, 2)` int32: the context (`CLEAN_CONTEXT`,
        `1 + scenario index`, `VALIDATION_CONTEXT`) and the window's sample id of each row."""
        raise NotImplementedError


Predictor = PredictFn | RowAwarePredictor


def run_predictor(predict: Predictor, state: ModelState, x: jax.Array, contexts: jax.Array,
                  window_ids: jax.Array) -> jax.Array:
    """Call a plain or row-aware predictor on rows `x` with their context and window ids (each `(B,)`)."""
    if isinstance(predict, RowAwarePredictor):
        rows = jnp.stack([contexts.astype(jnp.int32), window_ids.astype(jnp.int32)], axis=1)
        return predict.apply(state, x, rows)
    return predict(state, x)


@dataclass(frozen=True)
class ChannelIndependentPredictor:
    """A predictor whose forecast of channel i depends on input channel i only (DLinear, PatchTST,
    SeasonalNaive). Called like a plain predict function; besides, `channels(state, x (B, n, k), ids (B, k))`
    forecasts any k input channels `ids`, so the engine can run the model only on the channels a fault touched
    (channel-sparse scoring).

    Attributes:
        full: `predict(state, x) -> (B, H, targets)`.
        channels: `channels(state, x (B, n, k), channel ids (B, k)) -> (B, H, k)`.
    """

    full: PredictFn
    channels: Callable[[ModelState, jax.Array, jax.Array], jax.Array]

    def __call__(self, state: ModelState, x: jax.Array) -> jax.Array:
        return self.full(state, x)
