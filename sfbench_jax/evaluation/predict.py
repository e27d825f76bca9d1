"""Turning an NNX model into the engine's pure `predict(state, x)` function."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import jax
from flax import nnx

from sfbench_jax.evaluation.program_cache import describe
from sfbench_jax.predictors.protocol import ChannelIndependentPredictor, ModelState, PredictFn

#: Predict functions kept per graph definition (one per model structure seen in a process).
PREDICT_CACHE_SIZE = 64


def predict_fn(model: nnx.Module, *, channel_sparse: bool = False) -> tuple[PredictFn, ModelState]:
    """Split an NNX model once (in eval mode) into a pure predict function and its state.

    Models of one structure (equal graph definitions, e.g. two candidates that differ only in their
    weights) get the same predict function, so the jitted kernels keyed by it are built once. A model
    with an `inference_form()` (an equivalent module that forecasts with less work, e.g. DLinear folded
    into one map) is evaluated in that form. With `channel_sparse` (the model spec's `channel_sparse`: a
    channel-independent model whose `predict_channels` forecasts a few channels for less than all) it is a
    `ChannelIndependentPredictor`, which the engine can run on the channels a fault touched only.

    The functions are described by their graph definition (`program_cache.describe`): with the code, it determines
    the traced program, so the compiled evaluation program can be cached.

    Returns:
        `(predict, state)` with `predict(state, x) = merge(graphdef, state)(x)`.
    """
    model.eval()
    if hasattr(model, "inference_form"):
        model = model.inference_form()
    graphdef, state = nnx.split(model)
    if channel_sparse:
        return ChannelIndependentPredictor(full=predict_with(graphdef), channels=channels_with(graphdef)), state
    return predict_with(graphdef), state


@functools.lru_cache(maxsize=PREDICT_CACHE_SIZE)
def predict_with(graphdef: nnx.GraphDef[nnx.Module]) -> PredictFn:
    """The pure predict function of one model structure."""

    def predict(state: ModelState, x: jax.Array) -> jax.Array:
        forecast: jax.Array = nnx.merge(graphdef, state)(x)
        return forecast

    describe(predict, ("predict_with", graphdef))  # the program cache's key
    return predict


# `GraphDef[Any]`: the graph of any module with `predict_channels` (read off the merged module, not typed here)
@functools.lru_cache(maxsize=PREDICT_CACHE_SIZE)
def channels_with(graphdef: nnx.GraphDef[Any]) -> Callable[[ModelState, jax.Array, jax.Array], jax.Array]:
    """The channel forecast `channels(state, x (B, n, k), ids (B, k)) -> (B, H, k)` of a channel-independent
    model structure."""

    def channels(state: ModelState, x: jax.Array, channel_ids: jax.Array) -> jax.Array:
        forecast: jax.Array = nnx.merge(graphdef, state).predict_channels(x, channel_ids)
        return forecast

    describe(channels, ("channels_with", graphdef))
    return channels
