"""The fused Monte Carlo kernel: one jitted program scores a chunk of windows, clean and under every
scored scenario (design.md section 3).

`x, y` are gathered from the standardised series by start index inside the kernel. The scenarios are a
static Python loop (unrolled in the trace; no vmap over a switch). Two layouts give the same per-window values
(`Layout`; docs/speed.md, "Layouts"): the "cpu" layout walks windows and branches in loops sized for a cache
(`lax.map` over windows, blocks and branches, a `cond` skipping idle sub-batches); the "accelerator" layout computes
a whole chunk at once (one gather, every branch a static part of the trace, a `while` bounded by the sub-batch count
instead of a `cond`). In the JAX RNG mode the randomness of
(scenario p, window w) comes from `fold_in(fold_in(base_key, p), w)` and is drawn on the device; in the
reference mode the parameter pytrees arrive from the host. Both call the same apply functions.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Bool, Float, Int

from sfbench_jax.data.windows import Layout, WindowShape, gather_windows
from sfbench_jax.faults.context import FaultContext
from sfbench_jax.faults.registry import Fault
from sfbench_jax.faults.spec import FaultParams
from sfbench_jax.faults.streams import pair_key, stream_words
from sfbench_jax.predictors.protocol import (
    VALIDATION_CONTEXT,
    ChannelIndependentPredictor,
    ModelState,
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


def squared_errors(prediction: jax.Array, target: jax.Array) -> jax.Array:
    """Elementwise squared error in float32."""
    error = prediction.astype(jnp.float32) - target
    return error * error


def window_mse(prediction: Float[Array, "window h target"],
               target: Float[Array, "window h target"]) -> Float[Array, " window"]:
    """Per-window mean squared error over horizon and targets -> `(C,)` float32."""
    return jnp.mean(squared_errors(prediction, target), axis=(1, 2))


def clean_mse(predict: Predictor, state: ModelState, series: Float[Array, "row channel"], starts: Int[Array, " window"],
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

        losses: jax.Array = jax.lax.map(lambda args: one(*args), (positions, starts),
                                        batch_size=ROW_AWARE_VALIDATION_BLOCK)
        return losses
    x, y = gather_windows(series, starts, shape)
    return window_mse(predict(state, x), y)


def sample_scenario_params(fault: Fault, base_key: jax.Array, window_ids: Int[Array, " window"],
                           ctx: FaultContext) -> FaultParams:
    """Draw the parameters of one scenario for a chunk of windows from their folded keys."""
    keys = jax.vmap(lambda window: pair_key(base_key, fault.index, window))(window_ids)
    words = jax.vmap(stream_words)(keys)
    return jax.vmap(lambda w: fault.sample(w, ctx, None))(words)


def prepare_scenario_params(fault: Fault, params: FaultParams, ctx: FaultContext) -> FaultParams:
    """Per-window preparation of drawn parameters (e.g. time-warp source positions)."""
    return jax.vmap(lambda p: fault.prepare(p, ctx))(params)


def apply_scenario(fault: Fault, x: Windows, params: FaultParams, ctx: FaultContext) -> Windows:
    """Apply one scenario (prepared parameters) to a chunk of windows `(C, n, m)`."""
    return jax.vmap(lambda window, p: fault.apply(window, p, ctx))(x, params)


def draw_block(base_key: jax.Array, window_ids: Int[Array, " window"], *, scenarios: Sequence[Fault],
               ctx: FaultContext) -> tuple[FaultParams, ...]:
    """Stage 1 (JAX RNG mode): draw and prepare every scenario's parameters for a block of windows."""
    return tuple(prepare_scenario_params(fault, sample_scenario_params(fault, base_key, window_ids, ctx), ctx)
                 for fault in scenarios)


def prepare_block(params: Sequence[FaultParams], *, scenarios: Sequence[Fault],
                  ctx: FaultContext) -> tuple[FaultParams, ...]:
    """Stage 1 (reference RNG mode): prepare host-drawn parameters for a block of windows."""
    return tuple(prepare_scenario_params(fault, p, ctx) for fault, p in zip(scenarios, params, strict=True))


def model_inputs_block(x: Windows, prepared: Sequence[FaultParams], *, scenarios: Sequence[Fault],
                       ctx: FaultContext, layout: Layout = "cpu") -> Float[Array, "branch window n channel"]:
    """The clean block followed by every scenario applied to it -> `(1 + P, c, n, m)`, materialised, so the model
    reads each faulted element once: fused into a model such as SeasonalNaive, which reads an input step several
    times, XLA would recompute the fault (noise included) for every read.

    The "cpu" layout loops over branch ids with a switch inside (one branch runs per iteration, on a cache-sized
    block; not a vmap over the switch). The "accelerator" layout applies every scenario to the whole chunk as a
    static part of the trace and stacks the branches behind an optimisation barrier (the same materialisation).
    """
    if layout == "accelerator":
        stacked = jnp.stack([x, *(apply_scenario(fault, x, params, ctx)
                                  for fault, params in zip(scenarios, prepared, strict=True))])
        materialised: jax.Array = jax.lax.optimization_barrier(stacked)
        return materialised
    branches: list[Callable[[jax.Array, Sequence[FaultParams]], jax.Array]] = [lambda x, prepared: x]
    def faulting(fault: Fault, index: int) -> Callable[[jax.Array, Sequence[FaultParams]], jax.Array]:
        return lambda x, prepared: apply_scenario(fault, x, prepared[index], ctx)

    branches += [faulting(fault, index) for index, fault in enumerate(scenarios)]
    branch_ids = jnp.arange(len(branches), dtype=jnp.int32)
    faulted: jax.Array = jax.lax.map(lambda index: jax.lax.switch(index, branches, x, tuple(prepared)), branch_ids)
    return faulted


def score_block(predict: Predictor, state: ModelState, series: Float[Array, "row channel"],
                starts: Int[Array, " window"], window_ids: Int[Array, " window"], prepared: Sequence[FaultParams], *,
                scenarios: Sequence[Fault], ctx: FaultContext, shape: WindowShape,
                layout: Layout = "cpu") -> tuple[Float[Array, " window"], Float[Array, "window scenario"],
                                                 Int[Array, "window scenario"]]:
    """Stage 2: clean MSE `(c,)`, faulted MSE `(c, P)` and severity units `(c, P)` of a block.

    The parameters come prepared from stage 1 (a separate loop, so XLA never repeats per-window work
    inside per-element loops). The clean and faulted windows go through the model as one batch, so an
    unchanged window has bit-for-bit the clean loss.
    """
    x, y = gather_windows(series, starts, shape, layout=layout)
    inputs = model_inputs_block(x, prepared, scenarios=scenarios, ctx=ctx, layout=layout)
    branches, count = inputs.shape[:2]
    contexts = jnp.repeat(jnp.arange(branches, dtype=jnp.int32), count)  # CLEAN_CONTEXT, then 1 + scenario
    prediction = run_predictor(predict, state, inputs.reshape(branches * count, *x.shape[1:]), contexts,
                               jnp.tile(window_ids, branches))
    targets = jnp.broadcast_to(y[None], (branches, *y.shape)).reshape(-1, *y.shape[1:])
    losses = window_mse(prediction, targets).reshape(branches, count)
    units = jnp.stack([p.severity_units for p in prepared], axis=1)
    return losses[0], losses[1:].T, units


def score_block_sparse(predict: ChannelIndependentPredictor, state: ModelState, series: Float[Array, "row channel"],
                       starts: Int[Array, " window"], prepared: Sequence[FaultParams], *, scenarios: Sequence[Fault],
                       ctx: FaultContext, shape: WindowShape,
                       layout: Layout = "cpu") -> tuple[Float[Array, " window"], Float[Array, "window scenario"],
                                                        Int[Array, "window scenario"]]:
    """Stage 2 for a channel-independent model, running it only where the loss can change (the same
    outputs as `score_block`, to float rounding; an unchanged window keeps bit-for-bit the clean loss).

    Losses are kept as per-target sums of squared errors. The clean pass and the scenarios that touch every
    channel (MissingData) forecast the target channels; a channel-scoped scenario changes only its selected
    channels, so only its selected target channels are forecast again (`touched_row_errors`), and their sums
    replace the clean ones. A window where no forecast changed keeps its clean sum itself.
    """
    x, y = gather_windows(series, starts, shape, layout=layout)
    count, horizon = x.shape[0], y.shape[1]
    targets = np.asarray(shape.target_indices)
    target_ids = jnp.broadcast_to(jnp.asarray(targets, jnp.int32), (count, len(targets)))
    clean_forecast = predict.channels(state, x[..., targets], target_ids)
    clean_errors = jnp.sum(squared_errors(clean_forecast, y), axis=1)  # (c, t)
    clean_sum = jnp.sum(clean_errors, axis=1)
    touched = [touched_target_rows(fault, x, params, targets=targets, ctx=ctx)
               for fault, params in zip(scenarios, prepared, strict=True) if fault.is_channel_scoped]
    errors, changed = touched_row_errors(predict, state, touched, clean_forecast, y, sub_batches=TOUCHED_SUB_BATCHES,
                                         layout=layout)
    sums, position = [], 0
    for fault, params in zip(scenarios, prepared, strict=True):
        if fault.is_channel_scoped:
            rows, size = touched[position], touched[position].window.shape[0]
            kept = clean_errors[rows.window, rows.slot]
            faulted_errors = clean_errors.at[rows.window, rows.slot].set(jnp.where(changed[:size], errors[:size], kept))
            any_changed = jnp.any(changed[:size].reshape(count, -1), axis=1)
            sums.append(jnp.where(any_changed, jnp.sum(faulted_errors, axis=1), clean_sum))
            errors, changed, position = errors[size:], changed[size:], position + 1
        else:
            forecast = predict.channels(state, apply_scenario(fault, x, params, ctx)[..., targets], target_ids)
            sums.append(jnp.sum(squared_errors(forecast, y), axis=(1, 2)))
    scale = 1.0 / (horizon * len(targets))
    units = jnp.stack([p.severity_units for p in prepared], axis=1)
    return clean_sum * scale, jnp.stack(sums, axis=1) * scale, units


class TouchedRows(NamedTuple):
    """The selected target channels of one channel-scoped scenario, as rows `(window, channel)`: at most
    `k = min(max channel count, targets)` per window, window-major (selected first, the rest invalid).

    Attributes:
        series: float32 `(c k, n)` the faulted input channel of each row.
        channel: int32 `(c k,)` its input channel id.
        window: int32 `(c k,)` its window in the block.
        slot: int32 `(c k,)` its target position (an unselected one for an invalid row, which changes nothing).
        valid: bool `(c k,)`.
    """

    series: jax.Array
    channel: jax.Array
    window: jax.Array
    slot: jax.Array
    valid: jax.Array


def touched_target_rows(fault: Fault, x: Windows, params: FaultParams, *, targets: np.ndarray,
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
    return TouchedRows(series=jnp.swapaxes(series, 1, 2).reshape(-1, length), channel=channel.reshape(-1),
                       window=window.reshape(-1), slot=order.astype(jnp.int32).reshape(-1), valid=valid.reshape(-1))


def touched_row_errors(predict: ChannelIndependentPredictor, state: ModelState, touched: Sequence[TouchedRows],
                       clean_forecast: Float[Array, "window h target"], y: Float[Array, "window h target"], *,
                       sub_batches: int, layout: Layout = "cpu") -> tuple[Float[Array, " rows"], Bool[Array, " rows"]]:
    """For every row, its target's sum of squared errors under the faulted forecast, and whether that forecast
    differs from the clean one (false for invalid rows). The model runs on the valid rows only: they are moved to
    the front and forecast in `sub_batches` equal sub-batches, skipping those without a valid row (at most one
    sub-batch of work is wasted): the "cpu" layout maps over every sub-batch with a `cond`, the "accelerator" layout
    runs a `while` loop over the sub-batches that hold a valid row (the same forecasts, no `case` op). Only the
    per-row scalars go back to the rows' order. The order
    depends only on the block's contents, so results do not depend on the chunk size or the device count."""
    series = jnp.concatenate([rows.series for rows in touched])
    channel = jnp.concatenate([rows.channel for rows in touched])
    window = jnp.concatenate([rows.window for rows in touched])
    slot = jnp.concatenate([rows.slot for rows in touched])
    valid = jnp.concatenate([rows.valid for rows in touched])
    total = series.shape[0]
    sub_batch = -(-total // sub_batches)
    batches = -(-total // sub_batch)
    padding = batches * sub_batch - total
    order = jnp.argsort(~valid, stable=True)

    def batched(rows: jax.Array) -> jax.Array:  # sorted, padded, split into sub-batches
        rows = jnp.pad(rows[order], ((0, padding),) + ((0, 0),) * (rows.ndim - 1))
        return rows.reshape(batches, sub_batch, *rows.shape[1:])

    window, slot = batched(window), batched(slot)
    inputs = (jnp.arange(batches), batched(series)[..., None], batched(channel)[..., None],
              clean_forecast[window, :, slot], y[window, :, slot])
    valid_count = jnp.sum(valid)

    def forecast(rows: jax.Array, ids: jax.Array, clean: jax.Array,
                 target: jax.Array) -> tuple[jax.Array, jax.Array]:
        faulted = predict.channels(state, rows, ids)[..., 0].astype(jnp.float32)
        return jnp.sum(squared_errors(faulted, target), axis=1), jnp.any(faulted != clean, axis=1)

    if layout == "accelerator":
        errors, changed = _forecast_busy_sub_batches(forecast, inputs[1:], busy=-(-valid_count // sub_batch))
    else:
        def one(args: tuple[jax.Array, ...]) -> tuple[jax.Array, jax.Array]:
            index, *batch = args
            sums_and_changed: tuple[jax.Array, jax.Array] = jax.lax.cond(
                index * sub_batch < valid_count, lambda: forecast(*batch),
                lambda: (jnp.zeros((sub_batch,), jnp.float32), jnp.zeros((sub_batch,), bool)))
            return sums_and_changed

        errors, changed = jax.lax.map(one, inputs)
    changed = changed.reshape(-1)[:total] & (jnp.arange(total) < valid_count)
    return (jnp.zeros((total,), jnp.float32).at[order].set(errors.reshape(-1)[:total]),
            jnp.zeros((total,), bool).at[order].set(changed))


def _forecast_busy_sub_batches(forecast: Callable[..., tuple[jax.Array, jax.Array]], batches: Sequence[jax.Array], *,
                               busy: jax.Array) -> tuple[jax.Array, jax.Array]:
    """`forecast` on the first `busy` sub-batches (leading axis of `batches`) in a `while` loop; zeros and False
    for the rest. The loop is bounded by the number of sub-batches, never by the number of windows."""
    count, size = batches[0].shape[:2]

    def body(carry: tuple[jax.Array, jax.Array, jax.Array]) -> tuple[jax.Array, jax.Array, jax.Array]:
        index, errors, changed = carry
        sums, differs = forecast(*(batch[index] for batch in batches))
        return index + 1, errors.at[index].set(sums), changed.at[index].set(differs)

    start = (jnp.int32(0), jnp.zeros((count, size), jnp.float32), jnp.zeros((count, size), bool))
    _, errors, changed = jax.lax.while_loop(lambda carry: carry[0] < jnp.minimum(busy, count), body, start)
    return errors, changed


def map_blocks(block_fn: Callable[..., Any], batched: Sequence[Any], block_size: int) -> Any:  # pytrees, as lax.map
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
