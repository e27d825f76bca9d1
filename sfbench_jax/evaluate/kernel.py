"""The fused Monte Carlo kernel: one jitted program scores a chunk of windows, clean and under every
scored scenario (design.md section 3).

`x, y` are gathered from the standardised series by start index inside the kernel. The scenarios are a
static Python loop (unrolled in the trace; no vmap over a switch). In the JAX RNG mode the randomness of
(scenario p, window w) comes from `fold_in(fold_in(base_key, p), w)` and is drawn on the device; in the
reference mode the parameter pytrees arrive from the host. Both call the same apply functions.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float, Int

from sfbench_jax.data.windows import WindowShape, gather_windows
from sfbench_jax.faults.context import FaultContext
from sfbench_jax.faults.registry import Fault
from sfbench_jax.faults.streams import pair_key, stream_words
from sfbench_jax.predictors import (
    VALIDATION_CONTEXT,
    ChannelIndependentPredictor,
    Predictor,
    RowAwarePredictor,
    run_predictor,
)

#: Sub-batches the touched rows of a block are forecast in (each skipped when it holds no touched row).
TOUCHED_SUB_BATCHES = 16

#: Windows a row-aware predictor validates at once (its N copies of each window are materialised).
ROW_AWARE_VALIDATION_BLOCK = 64

#: Per-window arrays of one block of windows.
Windows = Float[Array, "window n channel"]


def window_mse(prediction: Float[Array, "window h target"],
               target: Float[Array, "window h target"]) -> Float[Array, " window"]:
    """Per-window mean squared error over horizon and targets -> `(C,)` float32."""
    error = prediction.astype(jnp.float32) - target
    return jnp.mean(error * error, axis=(1, 2))


def clean_mse(predict: Predictor, state: Any, series: Float[Array, "row channel"], starts: Int[Array, " window"],
              shape: WindowShape) -> Float[Array, " window"]:
    """Per-window clean MSE `(C,)` of a validation pass. A row-aware predictor sees the validation context and
    the windows' positions, in blocks of `ROW_AWARE_VALIDATION_BLOCK` windows (its copies of each window would
    not fit in memory all at once)."""
    if isinstance(predict, RowAwarePredictor):
        positions = jnp.arange(starts.shape[0], dtype=jnp.int32)

        def one(position: jax.Array, start: jax.Array) -> jax.Array:
            x, y = gather_windows(series, start[None], shape)
            rows = jnp.stack([jnp.int32(VALIDATION_CONTEXT), position])[None]
            return window_mse(predict.apply(state, x, rows), y)[0]

        return jax.lax.map(lambda args: one(*args), (positions, starts), batch_size=ROW_AWARE_VALIDATION_BLOCK)
    x, y = gather_windows(series, starts, shape)
    return window_mse(predict(state, x), y)


def sample_scenario_params(fault: Fault, base_key: jax.Array, window_ids: Int[Array, " window"],
                           ctx: FaultContext) -> Any:
    """Draw the parameters of one scenario for a chunk of windows from their folded keys."""
    keys = jax.vmap(lambda window: pair_key(base_key, fault.index, window))(window_ids)
    words = jax.vmap(stream_words)(keys)
    return jax.vmap(lambda w: fault.sample(w, ctx, None))(words)


def prepare_scenario_params(fault: Fault, params: Any, ctx: FaultContext) -> Any:
    """Per-window preparation of drawn parameters (e.g. time-warp source positions)."""
    return jax.vmap(lambda p: fault.prepare(p, ctx))(params)


def apply_scenario(fault: Fault, x: Windows, params: Any, ctx: FaultContext) -> Windows:
    """Apply one scenario (prepared parameters) to a chunk of windows `(C, n, m)`."""
    return jax.vmap(lambda window, p: fault.apply(window, p, ctx))(x, params)


def draw_block(base_key: jax.Array, window_ids: Int[Array, " window"], *, scenarios: Sequence[Fault],
               ctx: FaultContext) -> tuple[Any, ...]:
    """Stage 1 (JAX RNG mode): draw and prepare every scenario's parameters for a block of windows."""
    return tuple(prepare_scenario_params(fault, sample_scenario_params(fault, base_key, window_ids, ctx), ctx)
                 for fault in scenarios)


def prepare_block(params: Sequence[Any], *, scenarios: Sequence[Fault], ctx: FaultContext) -> tuple[Any, ...]:
    """Stage 1 (reference RNG mode): prepare host-drawn parameters for a block of windows."""
    return tuple(prepare_scenario_params(fault, p, ctx) for fault, p in zip(scenarios, params, strict=True))


def model_inputs_block(x: Windows, prepared: Sequence[Any], *, scenarios: Sequence[Fault],
                       ctx: FaultContext) -> Float[Array, "branch window n channel"]:
    """The clean block followed by every scenario applied to it -> `(1 + P, c, n, m)`.

    A loop over branch ids with a switch inside (one branch runs per iteration; this is not a vmap over
    the switch). The loop output is materialised, so the model reads each faulted element once: fused
    into a model such as SeasonalNaive, which reads an input step several times, XLA would recompute the
    fault (noise included) for every read.
    """
    branches = [lambda x, prepared: x]
    branches += [lambda x, prepared, fault=fault, index=index: apply_scenario(fault, x, prepared[index], ctx)
                 for index, fault in enumerate(scenarios)]
    branch_ids = jnp.arange(len(branches), dtype=jnp.int32)
    return jax.lax.map(lambda index: jax.lax.switch(index, branches, x, tuple(prepared)), branch_ids)


def score_block(predict: Predictor, state: Any, series: Float[Array, "row channel"], starts: Int[Array, " window"],
                window_ids: Int[Array, " window"], prepared: Sequence[Any], *, scenarios: Sequence[Fault],
                ctx: FaultContext,
                shape: WindowShape) -> tuple[Float[Array, " window"], Float[Array, "window scenario"],
                                             Int[Array, "window scenario"]]:
    """Stage 2: clean MSE `(c,)`, faulted MSE `(c, P)` and severity units `(c, P)` of a block.

    The parameters come prepared from stage 1 (a separate loop, so XLA never repeats per-window work
    inside per-element loops). The clean and faulted windows go through the model as one batch, so an
    unchanged window has bit-for-bit the clean loss.
    """
    x, y = gather_windows(series, starts, shape)
    inputs = model_inputs_block(x, prepared, scenarios=scenarios, ctx=ctx)
    branches, count = inputs.shape[:2]
    contexts = jnp.repeat(jnp.arange(branches, dtype=jnp.int32), count)  # CLEAN_CONTEXT, then 1 + scenario
    prediction = run_predictor(predict, state, inputs.reshape(branches * count, *x.shape[1:]), contexts,
                               jnp.tile(window_ids, branches))
    targets = jnp.broadcast_to(y[None], (branches, *y.shape)).reshape(-1, *y.shape[1:])
    losses = window_mse(prediction, targets).reshape(branches, count)
    units = jnp.stack([p.severity_units for p in prepared], axis=1)
    return losses[0], losses[1:].T, units


def score_block_sparse(predict: ChannelIndependentPredictor, state: Any, series: Float[Array, "row channel"],
                       starts: Int[Array, " window"], prepared: Sequence[Any], *, scenarios: Sequence[Fault],
                       ctx: FaultContext, shape: WindowShape) -> tuple[Float[Array, " window"],
                                                                       Float[Array, "window scenario"],
                                                                       Int[Array, "window scenario"]]:
    """Stage 2 for a channel-independent model, running it only where the loss can change (the same
    outputs as `score_block`, to float rounding; an unchanged window keeps bit-for-bit the clean loss).

    The clean pass and the scenarios that touch every channel (MissingData) forecast the target channels;
    a channel-scoped scenario changes only its selected channels, so only its selected target channels are
    forecast again (`forecast_touched_rows`) and written over the clean forecast before the loss.
    """
    x, y = gather_windows(series, starts, shape)
    count = x.shape[0]
    targets = np.asarray(shape.target_indices)
    target_ids = jnp.broadcast_to(jnp.asarray(targets, jnp.int32), (count, len(targets)))
    clean_forecast = predict.channels(state, x[..., targets], target_ids)
    touched = [touched_target_rows(fault, x, params, targets=targets, ctx=ctx)
               for fault, params in zip(scenarios, prepared, strict=True) if fault.is_channel_scoped]
    rows = forecast_touched_rows(predict, state, touched, sub_batches=TOUCHED_SUB_BATCHES)
    forecasts, position = [clean_forecast], 0
    for fault, params in zip(scenarios, prepared, strict=True):
        if fault.is_channel_scoped:
            window, slot, size = touched[position].window, touched[position].slot, touched[position].window.shape[0]
            forecasts.append(clean_forecast.at[window, :, slot].set(rows[:size], mode="drop"))
            rows, position = rows[size:], position + 1
        else:
            forecasts.append(predict.channels(state, apply_scenario(fault, x, params, ctx)[..., targets], target_ids))
    # one loss over all branches, shaped as in `score_block`, so equal forecasts give bit-equal losses
    branches = len(forecasts)
    targets_all = jnp.broadcast_to(y[None], (branches, *y.shape)).reshape(-1, *y.shape[1:])
    losses = window_mse(jnp.stack(forecasts).reshape(-1, *y.shape[1:]), targets_all).reshape(branches, count)
    units = jnp.stack([p.severity_units for p in prepared], axis=1)
    return losses[0], losses[1:].T, units


class TouchedRows(NamedTuple):
    """The selected target channels of one channel-scoped scenario, as rows `(window, channel)`: at most
    `k = min(max channel count, targets)` per window (selected first, the rest invalid).

    Attributes:
        series: float32 `(c k, n)` the faulted input channel of each row.
        channel: int32 `(c k,)` its input channel id.
        window: int32 `(c k,)` its window in the block.
        slot: int32 `(c k,)` its target position; invalid rows point past the targets (dropped on write).
        valid: bool `(c k,)`.
    """

    series: jax.Array
    channel: jax.Array
    window: jax.Array
    slot: jax.Array
    valid: jax.Array


def touched_target_rows(fault: Fault, x: Windows, params: Any, *, targets: np.ndarray,
                        ctx: FaultContext) -> TouchedRows:
    """The rows of a channel-scoped scenario's faulted block that a channel-independent model must forecast."""
    count, length = x.shape[0], x.shape[1]
    capacity = max(1, min(ctx.max_count, len(targets)))
    selected = params.selected[:, targets]  # (c, t)
    order = jnp.argsort(~selected, axis=1, stable=True)[:, :capacity]  # selected target slots first
    valid = jnp.take_along_axis(selected, order, axis=1)
    channel = jnp.asarray(targets, jnp.int32)[order]
    series = jnp.take_along_axis(apply_scenario(fault, x, params, ctx), channel[:, None, :], axis=2)
    window = jnp.broadcast_to(jnp.arange(count, dtype=jnp.int32)[:, None], order.shape)
    slot = jnp.where(valid, order, len(targets)).astype(jnp.int32)
    return TouchedRows(series=jnp.swapaxes(series, 1, 2).reshape(-1, length), channel=channel.reshape(-1),
                       window=window.reshape(-1), slot=slot.reshape(-1), valid=valid.reshape(-1))


def forecast_touched_rows(predict: ChannelIndependentPredictor, state: Any, touched: Sequence[TouchedRows], *,
                          sub_batches: int) -> jax.Array:
    """Forecasts `(rows, H)` of every valid row (zeros for invalid ones), computed on the valid rows only:
    valid rows are moved to the front and the model runs on `sub_batches` equal sub-batches, skipping
    (`lax.cond`) those without a valid row (at most one sub-batch of work is wasted). The order depends only
    on the block's contents, so results do not depend on the chunk size or the device count."""
    series = jnp.concatenate([rows.series for rows in touched])
    channel = jnp.concatenate([rows.channel for rows in touched])
    valid = jnp.concatenate([rows.valid for rows in touched])
    total, length = series.shape
    sub_batch = -(-total // sub_batches)
    order = jnp.argsort(~valid, stable=True)
    batches = -(-total // sub_batch)
    padding = batches * sub_batch - total
    series = jnp.pad(series[order], ((0, padding), (0, 0))).reshape(batches, sub_batch, length, 1)
    channel = jnp.pad(channel[order], (0, padding)).reshape(batches, sub_batch, 1)
    valid_count = jnp.sum(valid)
    horizon = jax.eval_shape(predict.channels, state, series[0], channel[0]).shape[1]

    def one(args: tuple[jax.Array, jax.Array, jax.Array]) -> jax.Array:
        index, rows, ids = args
        return jax.lax.cond(index * sub_batch < valid_count,
                            lambda: predict.channels(state, rows, ids)[..., 0].astype(jnp.float32),
                            lambda: jnp.zeros((sub_batch, horizon), jnp.float32))

    forecasts = jax.lax.map(one, (jnp.arange(batches), series, channel)).reshape(-1, horizon)[:total]
    return jnp.zeros((total, horizon), jnp.float32).at[order].set(forecasts)


def map_blocks(block_fn: Callable[..., Any], batched: Sequence[Any], block_size: int) -> Any:
    """Run `block_fn` over consecutive blocks of `block_size` windows with `lax.map` (inside XLA).

    `batched` leaves have a leading window axis whose length is a multiple of `block_size`; outputs of
    `block_fn` must also have a leading window axis. Blocks bound the working set (cache-sized on CPU)
    without a host round-trip per block.
    """
    total = jax.tree.leaves(batched)[0].shape[0]
    if total % block_size:
        raise ValueError(f"{total} windows are not a multiple of the block size {block_size}.")
    blocks = total // block_size
    # always a loop, also for one block, so the compiled block program never depends on the chunk size
    reshaped = jax.tree.map(lambda a: a.reshape(blocks, block_size, *a.shape[1:]), tuple(batched))
    out = jax.lax.map(lambda args: block_fn(*args), reshaped)
    return jax.tree.map(lambda a: a.reshape(blocks * block_size, *a.shape[2:]), out)
