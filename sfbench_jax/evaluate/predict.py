"""Turning an NNX model into the engine's pure `predict(state, x)` function."""

from __future__ import annotations

from typing import Any

import jax
from flax import nnx

from sfbench_jax.evaluate.kernel import PredictFn


def predict_fn(model: nnx.Module) -> tuple[PredictFn, Any]:
    """Split an NNX model once (in eval mode) into a pure predict function and its state.

    Returns:
        `(predict, state)` with `predict(state, x) = merge(graphdef, state)(x)`.
    """
    model.eval()
    graphdef, state = nnx.split(model)

    def predict(state: Any, x: jax.Array) -> jax.Array:
        return nnx.merge(graphdef, state)(x)

    return predict, state
