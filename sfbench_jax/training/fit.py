"""Training candidates (the shell around the compiled epoch of `loop.py`).

`train_group` trains candidates that share the model's static structure either together, vectorised
in one compiled program (`vectorize=True`), or one after another with the single-candidate program;
both give the same validation curves to float rounding. The host loop only moves the epoch number
and the active flags in, reads the per-epoch losses out and applies early stopping. Checkpoints and
the candidate store are `store.py`'s; the random subgrid is `search.py`'s.
"""

from __future__ import annotations

import collections
import dataclasses
import time
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field

import jax
import numpy as np
from flax import nnx

from sfbench_jax.config import AUTO, TrainConfig
from sfbench_jax.data.prepared import PreparedData
from sfbench_jax.data.windows import Layout, window_shape
from sfbench_jax.methods.spec import MethodSpec, Recipe, read_only
from sfbench_jax.methods.training import PLAIN_TRAINING, TrainTransform, dataset_facts
from sfbench_jax.models.hparams import HParams
from sfbench_jax.models.restore import build_for
from sfbench_jax.models.revin import RevINConfig
from sfbench_jax.models.spec import ModelSpec
from sfbench_jax.training.early_stopping import StoppingState, advance
from sfbench_jax.training.loop import (
    EPOCH_PROGRAM_CACHE_SIZE,
    CandidateInputs,
    EpochData,
    EpochGeometry,
    candidate_mesh,
    candidate_shardings,
    initial_state,
    make_epoch_fn,
    split_model,
    stack_candidates,
)
from sfbench_jax.training.training_seeds import dropout_key, shuffle_key

#: Elements of validation input (windows x length x channels) evaluated at once (ETTh1: 12 batches of 16
#: windows; Beijing, Traffic: one batch). Larger blocks were slower on CPU: the activations of a block
#: (e.g. the GRU's gates for every time step) outgrow the caches long before the per-block overhead matters.
VALIDATION_BLOCK_ELEMENTS = 1 << 17

#: Baseline candidates trained together under vmap on a CPU when `train.group_size` is auto. There the epoch is
#: compute-bound: 8 candidates split over the cores train faster than one after another (benchmarks/training.py;
#: docs/speed.md), but a group runs until its last member stops, so a sweep's learning-rate siblings gain little.
AUTO_GROUP_SIZE = {"cpu": 1}
#: Candidates per group on an accelerator when its memory cannot be read (no `memory_stats`): one small candidate
#: leaves the device mostly idle.
AUTO_GROUP_SIZE_ACCELERATOR = 8
#: Most candidates one auto-sized group holds on an accelerator (beyond the device's saturation a larger group only
#: compiles longer).
AUTO_GROUP_LIMIT = 64
#: Share of the device memory still free (`bytes_limit - bytes_in_use`) that an auto-sized group's compiled epoch
#: may take (its arguments, outputs and temporaries by XLA's memory analysis); the rest is headroom.
AUTO_MEMORY_FRACTION = 0.8
#: Validation input elements per candidate evaluated at once on an accelerator (ETTh1: 97 of its batches; Traffic:
#: one batch): blocks as large as a training batch or larger keep the device busy, while the activations of a
#: block stay well below a training step's for the large inputs.
VALIDATION_BLOCK_ELEMENTS_ACCELERATOR = 1 << 20


#: Method variants (same inherited hyperparameters, recipes differing only in values) trained together on a CPU when
#: `train.group_size` is auto: all of a method's variants of one structure (the adaptive loss's 40; fault
#: augmentation's groups of 4, PGD's of 3): one group split over the cores trains them faster than one after another
#: on CPU, warm (about even on a cold compilation cache, where a group compiles one program per width).
#: `benchmarks/training.py --variants`; the measurements are in docs/speed.md "Vectorised method variants".
AUTO_VARIANT_GROUP_SIZE = 40


def is_automatic(options: TrainConfig) -> bool:
    """Whether `train.group_size` asks for the automatic size ("auto", or null: its former spelling)."""
    return options.group_size is None or options.group_size == AUTO


def group_size(options: TrainConfig, *, variants: bool = False) -> int:
    """Candidates trained together without looking at the device's memory: `train.group_size`, or (auto) on a CPU
    `AUTO_GROUP_SIZE` (baseline candidates) or `AUTO_VARIANT_GROUP_SIZE` (method variants), on an accelerator
    `AUTO_GROUP_SIZE_ACCELERATOR` (`candidates_per_group` sizes accelerator groups by memory instead)."""
    if not is_automatic(options):
        return int(options.group_size)  # type: ignore[arg-type]  # an int: TrainConfig refuses other strings
    if variants:
        return AUTO_VARIANT_GROUP_SIZE
    return AUTO_GROUP_SIZE.get(jax.default_backend(), AUTO_GROUP_SIZE_ACCELERATOR)


@dataclass(frozen=True)
class GroupMember:
    """One candidate of a training group.

    Attributes:
        learning_rate: Adam learning rate.
        seed: model seed (parameter init and dropout keys).
        transform: this member's method step transform when the group's members are variants of one method
            (same `template()`, different recipe values); None: the group recipe's transform.
    """

    learning_rate: float
    seed: int
    transform: TrainTransform | None = None


@dataclass(frozen=True)
class TrainOutcome:
    """What training one candidate produced.

    Attributes:
        stopping: final early-stopping state (best loss and epoch, epochs run, stop reason).
        val_curve: validation loss per epoch.
        train_curve: mean training loss per epoch.
        checkpoint: best-epoch `{"params": flat, "batch_stats": flat}` (None if it failed).
        compile_seconds: compile time of its program (shared by a vectorised group).
        train_seconds: wall time of the epochs (shared by a vectorised group).
        group_size: candidates in its compiled program.
    """

    stopping: StoppingState
    val_curve: list[float]
    train_curve: list[float]
    checkpoint: dict[str, dict[str, np.ndarray]] | None = field(repr=False)
    compile_seconds: float
    train_seconds: float
    group_size: int


def group_devices(group_size: int, requested: int | None) -> int:
    """Devices a vectorised group of `group_size` candidates is split over: `requested`, or (None) every
    local device but at most one per candidate."""
    available = len(jax.local_devices())
    if requested is None:
        return max(1, min(available, group_size))
    if requested > available:
        raise ValueError(f"train.num_devices={requested} but only {available} {jax.default_backend()} device(s) "
                         f"are available; use train.num_devices=null to take them all.")
    return requested


def epoch_layout(platform: str | None = None) -> Layout:
    """The epoch layout (`data.windows.LAYOUTS`) for a JAX platform ("cpu", "cuda", "rocm", "tpu", "gpu"; None: the
    default backend's)."""
    return "cpu" if (platform or jax.default_backend()) == "cpu" else "accelerator"


def epoch_geometry(data: PreparedData, options: TrainConfig, members_per_device: int = 1,
                   layout: Layout = "cpu") -> EpochGeometry:
    """Static epoch sizes for a dataset: drop-last batches, validation blocks (of `VALIDATION_BLOCK_ELEMENTS`
    input elements over the `members_per_device` candidates a device evaluates together on a CPU, of
    `VALIDATION_BLOCK_ELEMENTS_ACCELERATOR` per candidate on an accelerator; at least one batch)."""
    spec = data.spec
    batch = spec.batch_size
    full_steps = len(data.train_starts) // batch
    steps = full_steps if options.steps_per_epoch is None else options.steps_per_epoch
    if steps > full_steps:
        raise ValueError(f"train.steps_per_epoch={steps} exceeds the {full_steps} drop-last batches of "
                         f"{spec.key} (batch size {batch}); use null for full epochs.")
    val_batches = len(data.val_starts_drop_last(batch)) // batch
    budget = VALIDATION_BLOCK_ELEMENTS if layout == "cpu" else VALIDATION_BLOCK_ELEMENTS_ACCELERATOR
    block_elements = members_per_device * batch * spec.input_len * spec.num_channels
    per_block = max(1, min(val_batches, budget // block_elements))
    return EpochGeometry(window=window_shape(spec), batch_size=batch, steps_per_epoch=steps,
                         num_train_windows=len(data.train_starts), val_batches=val_batches,
                         val_batches_per_block=per_block, layout=layout)


@dataclass(frozen=True)
class TrainingRecipe:
    """How a candidate is trained beyond its architecture: the method's step transform and the RevIN wrapper
    (the baseline: plain training, no wrapper).

    Attributes:
        transform: the step transform (`sfbench_jax.methods.training`).
        revin: RevIN options when the method wraps the model in RevIN.
    """

    transform: TrainTransform = PLAIN_TRAINING
    revin: RevINConfig | None = None

    @property
    def structure(self) -> TrainingRecipe:
        """What shapes the compiled program (the transform's template and RevIN): recipes with equal structure
        differ only in recipe values and can train as one vectorised group."""
        return TrainingRecipe(transform=self.transform.template(), revin=self.revin)


PLAIN_RECIPE = TrainingRecipe()


def member_transforms(members: Sequence[GroupMember], recipe: TrainingRecipe) -> list[TrainTransform]:
    """Each member's step transform (its own, or the group recipe's).

    Raises:
        ValueError: a member's transform has another structure than the group recipe's (not a value variant).
    """
    transforms = [recipe.transform if member.transform is None else member.transform for member in members]
    template = recipe.transform.template()
    for transform in transforms:
        if transform.template() != template:
            raise ValueError(f"A group member's method transform {transform} differs from the group's {template} "
                             "in more than recipe values; train it in its own group.")
    return transforms


def training_recipe(data: PreparedData, method: MethodSpec, recipe: Recipe) -> TrainingRecipe:
    """The training recipe of a method recipe on this dataset (`{}` / baseline: plain training)."""
    if not recipe:
        return PLAIN_RECIPE
    spec = data.spec
    facts = dataset_facts(mean=data.mean, std=data.std, pool=spec.continuous_pool, input_len=spec.input_len)
    transform = PLAIN_TRAINING if method.transform is None else method.transform(read_only(recipe), facts)
    return TrainingRecipe(transform=transform, revin=method.model_wrapping(recipe))


def state_to_flat(state: nnx.State) -> dict[str, np.ndarray]:
    """An NNX state as `{"dotted.path": array}` on the host."""
    return {".".join(str(part) for part in path): np.asarray(jax.device_get(variable.get_value()))
            for path, variable in nnx.to_flat_state(state)}


#: Compiled epoch programs kept in memory, by program and argument shapes: candidates trained one after another
#: (learning-rate, seed or recipe-value siblings) reuse one executable instead of tracing and compiling it each.
_COMPILED: collections.OrderedDict[Hashable, jax.stages.Compiled] = collections.OrderedDict()

#: The epoch program's arguments: the candidate's (or group's) inputs, the shared inputs and the epoch number.
EpochArguments = tuple[CandidateInputs, EpochData, jax.Array]


def compiled_epoch(fn: jax.stages.Wrapped, arguments: EpochArguments) -> jax.stages.Compiled:
    """`fn` lowered and compiled for `arguments`' shapes, dtypes and shardings (kept for the next candidate with
    the same ones; the `EPOCH_PROGRAM_CACHE_SIZE` most recent are kept)."""
    leaves, structure = jax.tree.flatten(arguments)
    key = (fn, structure, tuple((leaf.shape, leaf.dtype, getattr(leaf, "sharding", None)) for leaf in leaves))
    if key in _COMPILED:
        _COMPILED.move_to_end(key)
        return _COMPILED[key]
    compiled = _COMPILED[key] = fn.lower(*arguments).compile()
    if len(_COMPILED) > EPOCH_PROGRAM_CACHE_SIZE:
        _COMPILED.popitem(last=False)
    return compiled


class EpochProgram:
    """The compiled epoch program of a group of candidates, their device state and the fixed inputs.

    `vectorize=True` stacks the candidates and runs the vmapped program once per epoch; `False` runs the
    single-candidate program for each candidate in turn. Programs are cached by architecture
    configuration, method transform structure, dataset shape and group size, so learning-rate, seed and
    recipe-value siblings (members with their own `transform`) compile once.
    """

    def __init__(self, data: PreparedData, model: ModelSpec, hparams: HParams,
                 members: Sequence[GroupMember], options: TrainConfig, vectorize: bool,
                 recipe: TrainingRecipe = PLAIN_RECIPE, *, platform: str | None = None, compile: bool = True) -> None:
        self.vectorize = vectorize
        self.size = len(members)
        self.members = list(members)
        self.layout = epoch_layout(platform)
        self._build = (data, model, hparams, options, recipe, platform)
        num_devices = group_devices(self.size, options.num_devices) if vectorize else 1
        # A group split over D devices is padded to a multiple of D with inactive copies of its last member.
        padded = list(members) + [members[-1]] * (-self.size % num_devices) if vectorize else list(members)
        self.width = len(padded)
        # On CPU a device's validation block holds VALIDATION_BLOCK_ELEMENTS over all its candidates (cache-sized).
        together = self.width // num_devices if vectorize and self.layout == "cpu" else 1
        geometry = epoch_geometry(data, options, together, self.layout)
        self.geometry = geometry
        # members with the same model seed (a sweep's learning-rate siblings) share one build: the same values
        built = {seed: split_model(build_for(data, model, hparams, seed, recipe.revin))
                 for seed in dict.fromkeys(member.seed for member in padded)}
        splits = [built[member.seed] for member in padded]
        train_graphdef, eval_graphdef = splits[0][0], splits[0][1]
        transforms = member_transforms(padded, recipe)
        targets = (data.spec.horizon, len(data.spec.target_indices))
        states = [initial_state(params, batch_stats, transform.initial_latents(*targets))
                  for (_, _, params, batch_stats, _), transform in zip(splits, transforms, strict=True)]
        candidates = [CandidateInputs(state=state, other=other, dropout_key=dropout_key(member.seed),
                                      learning_rate=jax.device_put(np.float32(member.learning_rate)),
                                      active=jax.device_put(np.bool_(True)), recipe_values=transform.recipe_values())
                      for state, (*_, other), member, transform in zip(states, splits, padded, transforms,
                                                                       strict=True)]
        mesh = candidate_mesh(num_devices) if num_devices > 1 else None
        self.num_devices = num_devices
        self.fn = make_epoch_fn(train_graphdef, eval_graphdef, geometry, min_delta=options.min_delta,
                                num_candidates=self.width if vectorize else None, mesh=mesh,
                                transform=recipe.transform.template())
        split, replicated = candidate_shardings(mesh) if mesh is not None else (None, None)
        self._split = split
        batch = geometry.batch_size
        val_starts = data.val_starts_drop_last(batch).reshape(geometry.val_batches, batch)
        self.shared = EpochData(*(jax.device_put(a, replicated) for a in (
            data.standardised, data.train_starts.astype(np.int32), val_starts.astype(np.int32),
            shuffle_key(data.spec.seeds.data_seed))))
        self.candidates = self._place(candidates)
        self._replicated = replicated
        self.compiled: jax.stages.Compiled | None = None
        self.compile_seconds = 0.0
        if compile:
            started = time.perf_counter()
            self.compiled = compiled_epoch(self.fn, self.arguments(0, [True] * self.size))
            self.compile_seconds = time.perf_counter() - started

    def arguments(self, epoch: int, active: Sequence[bool], index: int = 0) -> EpochArguments:
        """The epoch program's arguments, all on the device: the inputs of candidate `index` (the whole group when
        vectorised) with the flags `active`, the shared inputs and the epoch number."""
        flags = self._active(active if self.vectorize else [True])
        return self.candidates[index]._replace(active=flags), self.shared, self._epoch(epoch)

    def _place(self, per_candidate: list[CandidateInputs]) -> list[CandidateInputs]:
        """Per-candidate inputs on the device: stacked and split over the mesh as one entry when vectorised,
        one entry per candidate otherwise."""
        if self.vectorize:
            return [jax.device_put(stack_candidates(per_candidate), self._split)]
        return [jax.device_put(tree) for tree in per_candidate]

    def narrowed(self, keep: Sequence[int]) -> EpochProgram:
        """This vectorised group continued with only the members at positions `keep`: a program for the narrower
        group (compiled once per width) carrying their training state, keys, learning rates and recipe values
        over, so their numbers go on as if nothing had changed (to float rounding)."""
        data, model, hparams, options, recipe, platform = self._build
        narrow = EpochProgram(data, model, hparams, [self.members[i] for i in keep], options, True, recipe,
                              platform=platform)
        slots = np.asarray([*keep, *[keep[-1]] * (narrow.width - len(keep))])  # padding: copies of the last

        # a group narrowed onto one device has no split: its members go to that device (`device_put(x, None)` would
        # leave them on the wider group's mesh, and the narrow program refuses them)
        placement = narrow._split if narrow._split is not None else jax.local_devices()[0]

        narrow.candidates = [jax.device_put(jax.tree.map(lambda a: a[slots], self.candidates[0]), placement)]
        narrow.compile_seconds += self.compile_seconds
        return narrow

    def _epoch(self, epoch: int) -> jax.Array:
        return jax.device_put(np.int32(epoch), self._replicated)

    def _active(self, flags: Sequence[bool]) -> jax.Array:
        """Device flags: per candidate (padding always inactive) when vectorised, a scalar otherwise."""
        values = np.zeros(self.width, bool)
        values[: len(flags)] = flags
        return jax.device_put(values, self._split) if self.vectorize else jax.device_put(values[0])

    def _executable(self) -> jax.stages.Compiled:
        if self.compiled is None:
            raise RuntimeError("This epoch program was built with compile=False (to trace or lower it, as "
                               "epoch_function does); build it with compile=True to run epochs.")
        return self.compiled

    def run_epoch(self, epoch: int, active: Sequence[bool]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """One epoch for every active candidate; returns train losses, val losses and improved flags
        `(G,)` (NaN / False for candidates that did not run). The only transfers are the epoch number and the
        flags in and these three small vectors out, once per epoch (sequential candidates are all dispatched
        before their losses are read)."""
        compiled = self._executable()
        if self.vectorize:
            state, metrics = compiled(*self.arguments(epoch, active))
            self.candidates[0] = self.candidates[0]._replace(state=state)
            metrics = jax.device_get(metrics)
            train_loss, val_loss, improved = (np.asarray(values)[: self.size] for values in
                                              (metrics.train_loss, metrics.val_loss, metrics.improved))
            return train_loss, val_loss, improved
        train = np.full(self.size, np.nan, np.float32)
        val = np.full(self.size, np.nan, np.float32)
        improved = np.zeros(self.size, bool)
        running = [index for index, flag in enumerate(active) if flag]  # a stopped candidate is not run at all
        dispatched = {}
        for index in running:
            state, dispatched[index] = compiled(*self.arguments(epoch, [True], index))
            self.candidates[index] = self.candidates[index]._replace(state=state)
        for index, metrics in jax.device_get(dispatched).items():
            train[index], val[index], improved[index] = metrics.train_loss, metrics.val_loss, metrics.improved
        return train, val, improved

    def best_checkpoints(self) -> list[dict[str, dict[str, np.ndarray]]]:
        """Best-epoch parameters and batch statistics per candidate, on the host (only those come over)."""
        if self.vectorize:
            state = self.candidates[0].state
            best = jax.device_get((state.best_params, state.best_batch_stats))
            per_candidate = [jax.tree.map(lambda a, i=i: a[i], best) for i in range(self.size)]
        else:
            per_candidate = [jax.device_get((c.state.best_params, c.state.best_batch_stats)) for c in self.candidates]
        return [{"params": state_to_flat(params), "batch_stats": state_to_flat(stats)}
                for params, stats in per_candidate]


#: Learning rates the members of `epoch_function`'s group take in turn (the program does not depend on them).
EXAMPLE_LEARNING_RATES = (1e-3, 5e-4, 1e-4)


def epoch_function(data: PreparedData, model: ModelSpec, group_size: int, *,
                   hparams: HParams | None = None, options: TrainConfig | None = None,
                   recipe: TrainingRecipe = PLAIN_RECIPE,
                   platform: str | None = None) -> tuple[jax.stages.Wrapped, EpochArguments]:
    """The engine's own jitted epoch program for `group_size` candidates of `model` on `data`'s shapes,
    and arguments to call, trace or lower it with (nothing is compiled here).

    It is the function `train_group` compiles for such a group (`loop.make_epoch_fn`, the same cached object): the
    single-candidate program for `group_size=1`, the vectorised one otherwise, in the layout of `platform` (None:
    this process's backend), so a CPU host can lower what a GPU would compile:
    `fn.trace(*args).lower(lowering_platforms=("cuda",))` with `platform="cuda"`. The members have the
    architecture's default hyperparameters unless `hparams` is given, learning rates `EXAMPLE_LEARNING_RATES` in
    turn and model seed 0 (one model built, whatever the group size); `options` defaults to full epochs on one
    device (`TrainConfig(num_devices=1)`).

    Returns:
        `(fn, args)`: `fn(*args)` runs epoch 0 with every candidate active and returns `(TrainState, EpochMetrics)`.
    """
    if group_size < 1:
        raise ValueError(f"group_size must be at least 1, got {group_size}.")
    members = [GroupMember(EXAMPLE_LEARNING_RATES[i % len(EXAMPLE_LEARNING_RATES)], 0) for i in range(group_size)]
    program = EpochProgram(data, model, dict(hparams or {}), members, options or TrainConfig(num_devices=1),
                           vectorize=group_size > 1, recipe=recipe, platform=platform, compile=False)
    return program.fn, program.arguments(0, [True] * group_size)


def device_memory_budget(device: jax.Device | None = None) -> int | None:
    """Bytes an auto-sized group's epoch may take on `device` (default: the first local device):
    `AUTO_MEMORY_FRACTION` of its `bytes_limit - bytes_in_use`; None where the device does not report its memory
    (a CPU)."""
    stats = (device or jax.local_devices()[0]).memory_stats()
    if not stats or "bytes_limit" not in stats:
        return None
    return int((stats["bytes_limit"] - stats.get("bytes_in_use", 0)) * AUTO_MEMORY_FRACTION)


def epoch_memory_bytes(data: PreparedData, model: ModelSpec, hparams: HParams, options: TrainConfig,
                       group: int, recipe: TrainingRecipe = PLAIN_RECIPE, platform: str | None = None) -> int | None:
    """Device bytes the compiled epoch of `group` candidates takes on one device by XLA's memory analysis
    (arguments + outputs - aliased + temporaries; None where the backend gives no analysis). The program is compiled
    here and kept (`compiled_epoch`), so the group that trains with this width next reuses it."""
    fn, arguments = epoch_function(data, model, group, hparams=hparams, recipe=recipe, platform=platform,
                                   options=dataclasses.replace(options, num_devices=1))
    stats = compiled_epoch(fn, arguments).memory_analysis()
    if stats is None:
        return None
    return int(stats.argument_size_in_bytes + stats.output_size_in_bytes - stats.alias_size_in_bytes
               + stats.temp_size_in_bytes)


#: Compilations `fitting_group_size` may spend narrowing the size down after its first two.
AUTO_SIZE_PROBES = 4


def fitting_group_size(data: PreparedData, model: ModelSpec, hparams: HParams, options: TrainConfig,
                       recipe: TrainingRecipe = PLAIN_RECIPE, *, most: int, budget: int | None = None,
                       platform: str | None = None) -> int:
    """The most candidates (at most `most` and `AUTO_GROUP_LIMIT`) whose compiled epoch on one device fits `budget`
    bytes (default `device_memory_budget()`; where the device reports no memory or XLA no memory analysis,
    `AUTO_GROUP_SIZE_ACCELERATOR`).

    The widest group is compiled first (it fits: done, and that program trains); else one candidate, and the size
    between them is interpolated (memory grows linearly with the width) and checked by compiling it, at most
    `AUTO_SIZE_PROBES` times. Returns 1 when even one candidate exceeds the budget (training then reports what is
    missing)."""
    most = max(1, min(most, AUTO_GROUP_LIMIT))
    budget = device_memory_budget() if budget is None else budget
    if budget is None:
        return min(most, AUTO_GROUP_SIZE_ACCELERATOR)
    if most == 1:
        return 1

    def need(group: int) -> int:
        needed = epoch_memory_bytes(data, model, hparams, options, group, recipe, platform)
        return -1 if needed is None else needed

    high, need_high = most, need(most)
    if need_high < 0:  # no memory analysis on this backend
        return min(most, AUTO_GROUP_SIZE_ACCELERATOR)
    if need_high <= budget:
        return most
    low, need_low = 1, need(1)
    if need_low > budget:
        return 1
    for _ in range(AUTO_SIZE_PROBES):
        if high - low <= 1:
            break
        per_candidate = max((need_high - need_low) / (high - low), 1.0)
        guess = min(max(low + int((budget - need_low) // per_candidate), low + 1), high - 1)
        if (needed := need(guess)) <= budget:
            low, need_low = guess, needed
        else:
            high, need_high = guess, needed
    return low


def candidates_per_group(data: PreparedData, model: ModelSpec, hparams: HParams, options: TrainConfig,
                         recipe: TrainingRecipe = PLAIN_RECIPE, *, most: int, variants: bool = False) -> int:
    """How many of `most` candidates of one structure train together: `train.group_size` when it is a number; with
    auto on a CPU `group_size`'s choice (today's), on an accelerator as many as fit each device's memory
    (`fitting_group_size`) times the devices the group is split over."""
    if not is_automatic(options) or jax.default_backend() == "cpu":
        return group_size(options, variants=variants)
    devices = options.num_devices or len(jax.local_devices())
    return devices * fitting_group_size(data, model, hparams, options, recipe, most=-(-most // devices))


#: A vectorised group goes on in a narrower program once its running members fill at most this fraction of its
#: width: its stopped members then cost at most a quarter of an epoch, for one compilation per width (about ten
#: widths from 40 down to 1; a warm compilation cache or `_COMPILED` makes them cheap).
NARROW_FRACTION = 0.75


def _narrows(program: EpochProgram, running: int, options: TrainConfig) -> bool:
    """Whether a vectorised group with `running` members still training goes on in a narrower program (one that is
    narrower after padding to its devices, with at most `NARROW_FRACTION` of the width still running)."""
    if not program.vectorize or running == 0:
        return False
    devices = group_devices(running, options.num_devices)
    return running + (-running % devices) < program.width and running <= NARROW_FRACTION * program.width


def _without_stopped(program: EpochProgram, slots: list[int], active: Sequence[bool],
                     finished: dict[int, dict]) -> tuple[EpochProgram, list[int]]:
    """The stopped members' best checkpoints go to the host and the others go on in a narrower program, so a group
    does not compute for members that stopped long ago."""
    checkpoints = program.best_checkpoints()
    keep = [position for position, member in enumerate(slots) if active[member]]
    finished.update((member, checkpoints[p]) for p, member in enumerate(slots) if not active[member])
    return program.narrowed(keep), [slots[position] for position in keep]


def train_group(data: PreparedData, model: ModelSpec, hparams: HParams,
                members: Sequence[GroupMember], options: TrainConfig, *, vectorize: bool = True,
                log: Callable[[str], None] | None = None, recipe: TrainingRecipe = PLAIN_RECIPE) -> list[TrainOutcome]:
    """Train candidates that share an architecture (`model`) and its (non-lr) hyperparameters.

    Args:
        data: prepared dataset (fixed training and validation windows).
        model: the spec of a trainable architecture.
        hparams: architecture hyperparameters shared by the group (`lr` excluded).
        members: learning rate and seed of each candidate.
        options: epochs, patience, steps per epoch.
        vectorize: one vmapped program for the whole group (True) or the single-candidate program
            run for each candidate in turn (False).
        log: receives one progress line per epoch.
        recipe: the method's training recipe (default: plain training).

    Returns:
        One outcome per member, in order.
    """
    if not members:
        return []
    program = EpochProgram(data, model, hparams, members, options, vectorize, recipe)
    size = len(members)
    states = [StoppingState() for _ in members]
    curves: list[tuple[list[float], list[float]]] = [([], []) for _ in members]
    slots = list(range(size))  # the member at each program position
    finished: dict[int, dict] = {}  # stopped members' checkpoints
    started = time.perf_counter()
    for epoch in range(options.max_epochs):
        active = [not state.stopped for state in states]
        if not any(active):
            break
        epoch_started = time.perf_counter()
        if _narrows(program, sum(active[member] for member in slots), options):
            program, slots = _without_stopped(program, slots, active, finished)
        train, val, improved = program.run_epoch(epoch, [active[member] for member in slots])
        for position, index in enumerate(slots):
            if not active[index]:
                continue
            curves[index][0].append(float(val[position]))
            curves[index][1].append(float(train[position]))
            states[index] = advance(states[index], val_loss=float(val[position]), improved=bool(improved[position]),
                                    patience=options.patience, max_epochs=options.max_epochs)
        if log is not None:
            losses = ", ".join("stopped" if not active[i] else f"{curves[i][0][-1]:.4f}" for i in range(size))
            log(f"{model.name} epoch {epoch + 1}: val [{losses}] "
                f"({time.perf_counter() - epoch_started:.2f} s, {sum(active)} active)")
    elapsed = time.perf_counter() - started
    finished.update(zip(slots, program.best_checkpoints(), strict=True))
    checkpoints = [finished[index] for index in range(size)]
    return [TrainOutcome(stopping=state, val_curve=val_curve, train_curve=train_curve,
                         checkpoint=None if state.failed else checkpoint,
                         compile_seconds=program.compile_seconds, train_seconds=elapsed,
                         group_size=size if vectorize else 1)
            for state, (val_curve, train_curve), checkpoint in zip(states, curves, checkpoints, strict=True)]
