"""Turning an NNX model into the engine's pure `predict(state, x)` function."""

from __future__ import annotations

import functools
from typing import Any

import jax
from flax import nnx

from sfbench_jax.predictors import PredictFn

#: Predict functions kept per graph definition (one per model structure seen in a process).
PREDICT_CACHE_SIZE = 64


def predict_fn(model: nnx.Module) -> tuple[PredictFn, Any]:
    """Split an NNX model once (in eval mode) into a pure predict function and its state.

    Models of one structure (equal graph definitions, e.g. two candidates that differ only in their
    weights) get the same predict function, so the jitted kernels keyed by it are built once.

    Returns:
        `(predict, state)` with `predict(state, x) = merge(graphdef, state)(x)`.
    """
    model.eval()
    graphdef, state = nnx.split(model)
    return predict_with(graphdef), state


@functools.lru_cache(maxsize=PREDICT_CACHE_SIZE)
def predict_with(graphdef: nnx.GraphDef) -> PredictFn:
    """The pure predict function of one model structure."""

    def predict(state: Any, x: jax.Array) -> jax.Array:
        return nnx.merge(graphdef, state)(x)

    return predict
