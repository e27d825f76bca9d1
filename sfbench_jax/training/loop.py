"""The compiled training epoch (protocol 5.1-5.2): one jitted program per (architecture config,
dataset shape, group size) that runs a whole epoch.

An epoch draws its permutation of the fixed training windows from `fold_in(shuffle_key, epoch)`,
scans the drop-last batches (windows gathered by start index inside the program), takes one Adam
step per batch, then runs the clean validation pass (mean of batch means over the drop-last
validation batches, eval mode) and keeps the best parameters (strict improvement, first
occurrence). The host only reads the validation losses and decides early stopping.

An epoch takes three inputs: `CandidateInputs` (what is one candidate's own: its state, RNG streams, dropout key,
learning rate, active flag and recipe values), `EpochData` (what every candidate shares: the series, the window
starts and the shuffle key) and the epoch number.

`make_epoch_fn(..., num_candidates=G)` vmaps the same single-candidate epoch over G candidates that
share the model's static structure (same architecture hyperparameters and method transform structure;
learning rates, seeds, parameters and the method's recipe values differ). With a `mesh`, the candidate
axis is split over its devices (`shard_map`; each device vmaps its G/D candidates, nothing is
communicated), so on a CPU every core trains its own candidates instead of sharing small kernels.
Per-candidate `active` flags freeze stopped candidates: their parameters, optimiser state and best
checkpoint do not change. No IO here.

The geometry's `layout` (`data.windows.Layout`) says how windows are gathered (`gather_windows`): on a CPU ("cpu")
one dynamic slice per window in a loop; on an accelerator ("accelerator") one gather of every window of the batch
(no loop over the batch's windows). Both copy the same rows, so the numbers do not depend on it.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, NamedTuple, TypeVar

import jax
import jax.numpy as jnp
from flax import nnx
from jax.sharding import PartitionSpec as P

from sfbench_jax.data.windows import LAYOUTS, Layout, WindowShape, gather_windows
from sfbench_jax.methods.training import PLAIN_TRAINING, Latents, RecipeValues, TrainTransform

if TYPE_CHECKING:
    import optax

#: Mesh axis over which a vectorised group's candidates are split.
CANDIDATE_AXIS = "candidates"
#: Folded into a candidate's dropout key to start the method keys' namespace (larger than any epoch index).
METHOD_NAMESPACE = 1_000_003

#: A pytree of any structure (`stack_candidates`, `_next_state`'s choice between two states): truly generic.
Tree = TypeVar("Tree")

#: Adam of the protocol (protocol 5.1): beta (0.9, 0.999), eps 1e-8, no weight decay, no schedule, no
#: clipping. The learning rate multiplies its direction outside, so it can differ per candidate.
ADAM_B1, ADAM_B2, ADAM_EPS = 0.9, 0.999, 1e-8


def adam_direction() -> optax.GradientTransformation:
    """Adam's update direction (learning rate 1, sign not yet applied)."""
    import optax  # here, not at import: a run that trains nothing (SeasonalNaive, evaluation) never loads it

    return optax.scale_by_adam(b1=ADAM_B1, b2=ADAM_B2, eps=ADAM_EPS)


class TrainState(NamedTuple):
    """What an epoch carries for one candidate (a leading candidate axis when vectorised).

    Attributes:
        params: `nnx.Param` state.
        batch_stats: `nnx.BatchStat` state (empty for models without BatchNorm).
        latents: extra parameters of the training loss trained with the model (the adaptive robust loss's
            alpha and scale latents; empty otherwise).
        opt_state: Adam moments and step count of `(params, latents)`.
        best_params: parameters of the best epoch so far.
        best_batch_stats: batch statistics of the best epoch so far.
        best_loss: float32 best validation loss so far (inf until one is finite).
    """

    params: nnx.State
    batch_stats: nnx.State
    latents: Latents
    opt_state: optax.OptState
    best_params: nnx.State
    best_batch_stats: nnx.State
    best_loss: jax.Array


class CandidateInputs(NamedTuple):
    """One candidate's own inputs to an epoch (each with a leading candidate axis when vectorised).

    Attributes:
        state: the candidate's `TrainState`.
        other: the model's RNG stream state (`split_model`'s `other`; reseeded from explicit keys at every step).
        dropout_key: the candidate's dropout key (`training_seeds.dropout_key`); the method's keys fold from it.
        learning_rate: float32 learning rate.
        active: bool; False freezes the candidate (a stopped member of a vectorised group, or padding).
        recipe_values: the method transform's float32 recipe values (`transform.recipe_values()`; `{}` or None
            for a transform without any).
    """

    state: TrainState
    other: nnx.State
    dropout_key: jax.Array
    learning_rate: jax.Array
    active: jax.Array
    recipe_values: RecipeValues | None = None


class EpochData(NamedTuple):
    """What every candidate of an epoch shares (replicated over a mesh).

    Attributes:
        series: `(rows, m)` float32 standardised series.
        train_starts: `(N,)` int32 start rows of the fixed training windows.
        val_starts: `(V, B)` int32 start rows of the drop-last validation batches.
        shuffle_key: the data seed's shuffle key; epoch e's permutation is drawn from `fold_in(shuffle_key, e)`.
    """

    series: jax.Array
    train_starts: jax.Array
    val_starts: jax.Array
    shuffle_key: jax.Array


#: Which inputs of `epoch(candidate, data, epoch)` carry the candidate axis (vmap's in_axes; the mesh's split).
CANDIDATE_IN_AXES = (0, None, None)


#: What the epoch's scan over steps carries: ((parameters, latents), batch statistics, Adam state).
StepCarry = tuple[tuple[nnx.State, Latents], nnx.State, "optax.OptState"]


class EpochMetrics(NamedTuple):
    """Per-epoch outputs (each `(G,)` when vectorised).

    Attributes:
        train_loss: mean of the epoch's step losses.
        val_loss: clean validation loss (mean of batch means).
        improved: whether this epoch set a new best (strictly lower by more than min_delta).
    """

    train_loss: jax.Array
    val_loss: jax.Array
    improved: jax.Array


@dataclass(frozen=True)
class EpochGeometry:
    """Static sizes of an epoch.

    Attributes:
        window: input length, horizon and target channels.
        batch_size: training and validation batch size.
        steps_per_epoch: optimiser steps per epoch (drop-last: floor(train windows / batch size)).
        num_train_windows: size of the fixed training window set.
        val_batches: drop-last validation batches.
        val_batches_per_block: validation batches evaluated at once (bounds memory).
        layout: how windows are gathered, one of `data.windows.LAYOUTS` (never changes a number).
    """

    window: WindowShape
    batch_size: int
    steps_per_epoch: int
    num_train_windows: int
    val_batches: int
    val_batches_per_block: int
    layout: Layout = "cpu"

    def __post_init__(self) -> None:
        if self.layout not in LAYOUTS:
            raise ValueError(f"Unknown epoch layout {self.layout!r}; use one of {list(LAYOUTS)}.")
        if self.steps_per_epoch < 1 or self.steps_per_epoch * self.batch_size > self.num_train_windows:
            raise ValueError(f"steps_per_epoch must lie in [1, {self.num_train_windows // self.batch_size}] "
                             f"for {self.num_train_windows} windows in batches of {self.batch_size}, got "
                             f"{self.steps_per_epoch}.")
        if self.val_batches < 1 or self.val_batches_per_block < 1:
            raise ValueError("Need at least one validation batch and one batch per block.")


def split_model(model: nnx.Module) -> tuple[nnx.GraphDef, nnx.GraphDef, nnx.State, nnx.State, nnx.State]:
    """Split a freshly built model into its train-mode and eval-mode graphdefs and its state.

    Returns:
        `(train_graphdef, eval_graphdef, params, batch_stats, other)`; `other` holds the RNG
        streams, which the epoch reseeds from explicit keys at every step.
    """
    model.train()
    train_graphdef, params, batch_stats, other = nnx.split(  # type: ignore[misc]  # flax: a variadic result tuple
        model, nnx.Param, nnx.BatchStat, ...)
    model.eval()
    eval_graphdef = nnx.split(model, nnx.Param, nnx.BatchStat, ...)[0]
    model.train()
    return train_graphdef, eval_graphdef, params, batch_stats, other


def initial_state(params: nnx.State, batch_stats: nnx.State, latents: Latents | None = None) -> TrainState:
    """Fresh optimiser state; the best checkpoint starts as the initial parameters with loss inf."""
    latents = {} if latents is None else latents
    return TrainState(params=params, batch_stats=batch_stats, latents=latents,
                      opt_state=adam_direction().init((params, latents)), best_params=params,
                      best_batch_stats=batch_stats, best_loss=jnp.asarray(jnp.inf, jnp.float32))


def eval_mode_loss(eval_graphdef: nnx.GraphDef, transform: TrainTransform, params: nnx.State, batch_stats: nnx.State,
                   other: nnx.State, latents: Latents, y: jax.Array) -> Callable[[jax.Array], jax.Array]:
    """The batch loss of the frozen model in eval mode (dropout off, BatchNorm on its running statistics, which
    it does not update) as a function of the input: what PGD's attack climbs (protocol 4.1)."""
    module = nnx.merge(eval_graphdef, params, batch_stats, other, copy=True)
    return lambda x: transform.loss(module(x), y, latents)


def method_key(dropout_key: jax.Array, epoch: jax.Array, step: jax.Array) -> jax.Array:
    """The key of a method's randomness at one step (noise, augmentation draws, the attack's start): its own
    namespace under the candidate's dropout key, never equal to a dropout or evaluation key."""
    return jax.random.fold_in(jax.random.fold_in(jax.random.fold_in(dropout_key, METHOD_NAMESPACE), epoch), step)


#: The epoch of one candidate before it is vectorised and jitted: `epoch(candidate, data, epoch)`.
EpochFn = Callable[[CandidateInputs, EpochData, jax.Array], tuple[TrainState, EpochMetrics]]

#: Jitted epoch programs kept for reuse (candidates differing only in learning rate or seed share one; a vectorised
#: group narrowed as its members stop uses one per width, about ten).
EPOCH_PROGRAM_CACHE_SIZE = 32


@functools.lru_cache(maxsize=EPOCH_PROGRAM_CACHE_SIZE)
def make_epoch_fn(train_graphdef: nnx.GraphDef, eval_graphdef: nnx.GraphDef, geometry: EpochGeometry, *,
                  min_delta: float = 0.0, num_candidates: int | None = None,
                  mesh: jax.sharding.Mesh | None = None,
                  transform: TrainTransform = PLAIN_TRAINING) -> jax.stages.Wrapped:
    """Build the jitted epoch program (cached by its static structure: graph definitions, geometry,
    min_delta, group width and mesh; JAX keeps its compiled programs per argument shape, so learning-rate
    and seed siblings compile once).

    The returned function is `epoch(candidate, data, epoch) -> (state, EpochMetrics)` with `candidate` a
    `CandidateInputs`, `data` an `EpochData` and `epoch` an int32 scalar. With `num_candidates=G` every field of
    `candidate` carries a leading axis of size G. `mesh` (one axis, `CANDIDATE_AXIS`, whose size divides G) splits
    that axis over the mesh's devices; `candidate` is then expected sharded along it and `data` and `epoch`
    replicated (`candidate_shardings`). `transform` is the method's step transform
    (`sfbench_jax.methods.training`): the batch the step trains on, and the training/validation loss; pass
    its `template()` so that variants differing only in recipe values share the program.
    """
    batch = geometry.batch_size
    direction = adam_direction()
    loss_fn = functools.partial(_training_loss, train_graphdef)

    def epoch_fn(candidate: CandidateInputs, data: EpochData, epoch: jax.Array) -> tuple[TrainState, EpochMetrics]:
        state, other, dropout_key, lr, active, recipe_values = candidate
        series, train_starts, val_starts, shuffle_key = data
        bound = transform.bind(recipe_values)  # this candidate's recipe values (traced) in the shared structure
        order = jax.random.permutation(jax.random.fold_in(shuffle_key, epoch), geometry.num_train_windows)
        batches = order[: geometry.steps_per_epoch * batch].reshape(geometry.steps_per_epoch, batch)
        epoch_key = jax.random.fold_in(dropout_key, epoch)

        def step(carry: StepCarry, inputs: tuple[jax.Array, jax.Array]) -> tuple[StepCarry, jax.Array]:
            (params, latents), batch_stats, opt_state = carry
            step_index, batch_ids = inputs
            x, y = gather_windows(series, train_starts[batch_ids], geometry.window, layout=geometry.layout)
            loss_at = eval_mode_loss(eval_graphdef, bound, params, batch_stats, other, latents, y)
            x = bound.training_inputs(method_key(dropout_key, epoch, step_index), x, loss_at)
            key = jax.random.fold_in(epoch_key, step_index)
            (loss, batch_stats), grads = jax.value_and_grad(loss_fn, has_aux=True)(
                (params, latents), batch_stats, other, key, x, y, bound)
            updates, opt_state = direction.update(grads, opt_state, (params, latents))
            params, latents = jax.tree.map(lambda p, u: p - lr * u, (params, latents), updates)
            return ((params, latents), batch_stats, opt_state), loss

        steps = jnp.arange(geometry.steps_per_epoch, dtype=jnp.int32)
        ((params, latents), batch_stats, opt_state), losses = jax.lax.scan(
            step, ((state.params, state.latents), state.batch_stats, state.opt_state), (steps, batches))
        val_loss = _validation_loss(eval_graphdef, geometry, params, batch_stats, other, latents, series, val_starts,
                                    bound)
        improved = active & jnp.isfinite(val_loss) & (val_loss < state.best_loss - min_delta)
        new_state = _next_state(state, (params, batch_stats, latents, opt_state), active, improved, val_loss)
        return new_state, EpochMetrics(train_loss=jnp.mean(losses), val_loss=val_loss, improved=improved)

    return _compiled(epoch_fn, num_candidates, mesh)


def _training_loss(train_graphdef: nnx.GraphDef, trainable: tuple[nnx.State, Latents], batch_stats: nnx.State,
                   other: nnx.State, key: jax.Array, x: jax.Array, y: jax.Array,
                   transform: TrainTransform) -> tuple[jax.Array, nnx.State]:
    """One training batch's loss in train mode (dropout keyed by `key`) and the updated batch statistics."""
    params, latents = trainable
    module = nnx.merge(train_graphdef, params, batch_stats, other, copy=True)
    nnx.reseed(module, dropout=key)
    loss = transform.loss(module(x), y, latents)
    return loss, nnx.state(module, nnx.BatchStat)


def _validation_loss(eval_graphdef: nnx.GraphDef, geometry: EpochGeometry, params: nnx.State, batch_stats: nnx.State,
                     other: nnx.State, latents: Latents, series: jax.Array, val_starts: jax.Array,
                     transform: TrainTransform) -> jax.Array:
    """The clean validation loss in eval mode: the mean over the validation batches, a block at a time."""
    module = nnx.merge(eval_graphdef, params, batch_stats, other, copy=True)

    def batch_mean(starts: jax.Array) -> jax.Array:
        x, y = gather_windows(series, starts, geometry.window, layout=geometry.layout)
        return transform.loss(module(x), y, latents)

    means = jax.lax.map(batch_mean, val_starts, batch_size=geometry.val_batches_per_block)
    return jnp.mean(means)


def _next_state(state: TrainState, trained: tuple[nnx.State, nnx.State, Latents, optax.OptState], active: jax.Array,
                improved: jax.Array, val_loss: jax.Array) -> TrainState:
    """The state after an epoch: an inactive candidate keeps its state, an improved one its new best."""
    params, batch_stats, latents, opt_state = trained

    def choose(flag: jax.Array, new: Tree, old: Tree) -> Tree:
        return jax.tree.map(lambda a, b: jnp.where(flag, a, b), new, old)

    return TrainState(
        params=choose(active, params, state.params),
        batch_stats=choose(active, batch_stats, state.batch_stats),
        latents=choose(active, latents, state.latents),
        opt_state=choose(active, opt_state, state.opt_state),
        best_params=choose(improved, params, state.best_params),
        best_batch_stats=choose(improved, batch_stats, state.best_batch_stats),
        best_loss=jnp.where(improved, val_loss, state.best_loss),
    )


def _compiled(epoch_fn: EpochFn, num_candidates: int | None, mesh: jax.sharding.Mesh | None) -> jax.stages.Wrapped:
    """`epoch_fn` jitted: alone, vectorised over `num_candidates`, or also split over `mesh`'s devices."""
    if num_candidates is None:
        return jax.jit(epoch_fn)
    vectorised = jax.vmap(epoch_fn, in_axes=CANDIDATE_IN_AXES)
    if mesh is None:
        return jax.jit(vectorised)
    if num_candidates % mesh.size:
        raise ValueError(f"{num_candidates} candidates cannot be split evenly over {mesh.size} devices.")
    specs = tuple(P() if axis is None else P(CANDIDATE_AXIS) for axis in CANDIDATE_IN_AXES)
    # check_vma=False: the models build constants (e.g. a recurrent zero state) that are not marked as
    # varying over the candidate axis; every candidate is independent, so there is nothing to check.
    return jax.jit(jax.shard_map(vectorised, mesh=mesh, in_specs=specs, out_specs=P(CANDIDATE_AXIS),
                                 check_vma=False))


def candidate_mesh(num_devices: int) -> jax.sharding.Mesh:
    """A one-axis mesh (`CANDIDATE_AXIS`) over the first `num_devices` local devices."""
    devices = jax.local_devices()
    if not 1 <= num_devices <= len(devices):
        raise ValueError(f"Asked for {num_devices} devices to split candidates over, but "
                         f"{len(devices)} are available ({devices[0].platform}).")
    return jax.make_mesh((num_devices,), (CANDIDATE_AXIS,), devices=devices[:num_devices],
                         axis_types=(jax.sharding.AxisType.Auto,))


def candidate_shardings(mesh: jax.sharding.Mesh) -> tuple[jax.sharding.Sharding, jax.sharding.Sharding]:
    """`(split, replicated)`: where per-candidate and shared arguments of a sharded epoch live."""
    return (jax.sharding.NamedSharding(mesh, P(CANDIDATE_AXIS)), jax.sharding.NamedSharding(mesh, P()))


def stack_candidates(trees: list[Tree]) -> Tree:
    """Stack per-candidate pytrees along a new leading axis (one compiled program for the whole tree, not one
    per leaf shape)."""
    return _stacked(tuple(trees))


@jax.jit
def _stacked(trees: tuple[Tree, ...]) -> Tree:
    return jax.tree.map(lambda *leaves: jnp.stack(leaves), *trees)
