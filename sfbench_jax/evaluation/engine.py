"""The shell around the fused kernel: chunk plan, cached chunk kernels, compilation within a memory budget,
the chunk runner with progress, and host-side reference draws.

`score_windows` evaluates K test windows clean and under every scored scenario and returns per-window
losses; `faulted_window_checksums` runs the fault pass alone (for the benchmark). Both are a
`WindowProgram` (what stage two computes per block) run by `run_window_program`, which reads as the list
of steps: plan the chunks, put the inputs on the devices, compile within the memory budget, run the
chunks. Per device and chunk, stage one draws (JAX mode) or prepares (reference mode) every scenario's
parameters block by block and stage two applies them and runs the model, block by block (`kernel.py`).
Chunks have one fixed size (the last is padded and its padding dropped); windows are sharded along a
one-axis device mesh ("data"); randomness is keyed by (scenario id, window id), so results do not depend
on the chunk size or the number of devices.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, Self

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

from sfbench_jax.config import EvalConfig
from sfbench_jax.data.prepared import PreparedData
from sfbench_jax.data.windows import LAYOUTS, Layout, WindowShape, gather_windows, window_shape
from sfbench_jax.evaluation import program_cache
from sfbench_jax.evaluation.abandon import stop_if_abandoned
from sfbench_jax.evaluation.kernel import (
    apply_scenario,
    draw_block,
    map_blocks,
    prepare_block,
    score_block,
    score_block_sparse,
)
from sfbench_jax.faults.context import FaultContext
from sfbench_jax.faults.reference_rng import reference_params, scenario_seeds
from sfbench_jax.faults.registry import SCENARIOS, Fault
from sfbench_jax.faults.spec import FaultParams
from sfbench_jax.predictors.protocol import ChannelIndependentPredictor, ModelState, Predictor

DEFAULT_CHUNK_PER_DEVICE = 1024  # windows per device per compiled call
CPU_BLOCK_BYTES = 3 * 2**20  # window data per inner block on CPU (stays in cache; tuned on Traffic)
MIN_BYTES_PER_EXTRA_DEVICE = 512 * 2**20  # window data that makes one more device worth its overhead
KERNEL_CACHE_SIZE = 16  # jitted chunk kernels kept for later calls (each keeps its compiled programs)
ACCELERATOR_MAX_CHUNK_PER_DEVICE = 16_384  # windows per device and call in the accelerator layout, at most
ACCELERATOR_MEMORY_FRACTION = 0.5  # of an accelerator's memory for one chunk's temporaries (the rest: XLA, inputs)


@dataclass(frozen=True)
class WindowLosses:
    """Per-window results of one evaluation.

    Attributes:
        sample_starts: int32 `(K,)` absolute start rows of the test windows (sample id = position).
        clean: float32 `(K,)` clean MSE per window.
        faulted: float32 `(P, K)` MSE per scenario and window.
        severity_units: int32 `(P, K)` drawn severity (units of 2**-24) per scenario and window.
        scenario_keys: the P scenario keys in canonical order.
    """

    sample_starts: np.ndarray
    clean: np.ndarray
    faulted: np.ndarray
    severity_units: np.ndarray
    scenario_keys: tuple[str, ...]

    @property
    def severity(self) -> np.ndarray:
        """float64 `(P, K)` severities in [0, 1)."""
        return self.severity_units.astype(np.float64) * 2.0 ** -24


@dataclass(frozen=True)
class EngineStats:
    """Timing and layout of one evaluation."""

    compile_seconds: float
    run_seconds: float
    chunk_size: int
    num_chunks: int
    num_devices: int
    block_size: int
    temp_bytes_per_chunk: int | None = None
    compiles: int = 1
    notes: tuple[str, ...] = field(default_factory=tuple)
    #: Where the compiled program came from: "loaded" (the program cache), "stored" (compiled and cached),
    #: "compiled" (compiled, not cacheable), None (the program cache is off).
    program_cache: str | None = None
    #: The layout the chunk program ran in ("cpu" or "accelerator"; `eval.layout`).
    layout: str = "cpu"


# --- what a program computes ------------------------------------------------------------------------


@dataclass(frozen=True)
class ScoreProgram:
    """Stage two of an evaluation: clean and faulted per-window MSE and the drawn severities.

    Hashable (the predict function by identity): it keys the kernel cache.
    """

    predict: Predictor
    scenarios: tuple[Fault, ...]
    ctx: FaultContext
    shape: WindowShape
    channel_sparse: bool = True
    layout: Layout = "cpu"

    #: Stage two receives the windows' sample ids (a row-aware predictor keys its randomness by them).
    uses_window_ids = True

    def with_layout(self, layout: Layout) -> ScoreProgram:
        """This program in `layout`."""
        return dataclasses.replace(self, layout=layout)

    def block(self, state: ModelState, series: jax.Array, starts: jax.Array, window_ids: jax.Array,
              prepared: tuple[FaultParams, ...]) -> tuple[jax.Array, ...]:
        """`(clean (c,), faulted (c, P), severity units (c, P))` of one block of windows; a channel-independent
        model runs only on the channels the faults touched (`channel_sparse`)."""
        if self.channel_sparse and isinstance(self.predict, ChannelIndependentPredictor):
            return score_block_sparse(self.predict, state, series, starts, prepared, scenarios=self.scenarios,
                                      ctx=self.ctx, shape=self.shape, layout=self.layout)
        return score_block(self.predict, state, series, starts, window_ids, prepared, scenarios=self.scenarios,
                           ctx=self.ctx, shape=self.shape, layout=self.layout)


@dataclass(frozen=True)
class ChecksumProgram:
    """Stage two of the fault pass alone: each faulted window reduced to its sum of squares (so every
    element is computed), no model."""

    scenarios: tuple[Fault, ...]
    ctx: FaultContext
    shape: WindowShape
    layout: Layout = "cpu"

    def with_layout(self, layout: Layout) -> ChecksumProgram:
        """This program in `layout`."""
        return dataclasses.replace(self, layout=layout)

    def block(self, state: ModelState, series: jax.Array, starts: jax.Array,
              prepared: tuple[FaultParams, ...]) -> tuple[jax.Array]:
        """`(sums of squares (c, P),)` of one block of windows."""
        del state
        x, _ = gather_windows(series, starts, self.shape, layout=self.layout)
        sums = [jnp.sum(jnp.square(apply_scenario(fault, x, p, self.ctx)), axis=(1, 2))
                for fault, p in zip(self.scenarios, prepared, strict=True)]
        return (jnp.stack(sums, axis=1),)


class WindowProgram(Protocol):
    """What stage two computes per block (`ScoreProgram`, `ChecksumProgram`, `curves.CurveProgram`): the scenarios
    and their context, the window shape, and `block(state, series, starts, [window ids,] prepared)`, whose window
    ids come only where the program sets `uses_window_ids`."""

    @property
    def scenarios(self) -> tuple[Fault, ...]: ...

    @property
    def ctx(self) -> FaultContext: ...

    @property
    def shape(self) -> WindowShape: ...

    @property
    def layout(self) -> Layout: ...

    def with_layout(self, layout: Layout) -> Self: ...  # the same program in another layout

    @property
    def block(self) -> Callable[..., tuple[jax.Array, ...]]: ...

    def __hash__(self) -> int: ...  # it keys the kernel cache


def fault_context(data: PreparedData, channel_fraction: float | None = None) -> FaultContext:
    """The fault context of a prepared dataset (`channel_fraction`: the fixed fraction q, or None)."""
    spec = data.spec
    return FaultContext(input_len=spec.input_len, num_channels=spec.num_channels,
                        pool=spec.continuous_pool, channel_fraction=channel_fraction)


# --- the chunk plan ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class ChunkPlan:
    """How the windows of one evaluation are laid out: which windows, on which devices, in which blocks
    and chunks.

    Attributes:
        starts: int32 `(K,)` absolute window starts (sample id = position).
        mesh: one-axis ("data") device mesh the windows are sharded over.
        block_size: windows per inner block (the unit the compiled program computes at once); in the
            accelerator layout, a device's whole share of the chunk.
        chunk_size: windows per compiled call over all devices (whole blocks on every device).
        layout: "cpu" (blocks walked in a loop inside the program) or "accelerator" (one block per device and
            chunk, every window at once).
    """

    starts: np.ndarray = field(repr=False)
    mesh: jax.sharding.Mesh
    block_size: int
    chunk_size: int
    layout: Layout = "cpu"

    @property
    def num_windows(self) -> int:
        """K."""
        return len(self.starts)

    @property
    def num_chunks(self) -> int:
        """Compiled calls needed for all windows."""
        return math.ceil(self.num_windows / self.chunk_size)

    def window_ids(self, chunk: int) -> np.ndarray:
        """Sample ids of one chunk (the last may be shorter than `chunk_size`)."""
        return np.arange(chunk * self.chunk_size, min((chunk + 1) * self.chunk_size, self.num_windows))

    def with_block_size(self, block_size: int, requested_chunk: int | None) -> ChunkPlan:
        """This plan with another block size and the chunk size that follows from it: per device about
        `requested_chunk / devices` windows (default `DEFAULT_CHUNK_PER_DEVICE`), at most the device's
        share of K, rounded up to whole blocks. In the accelerator layout the block is the device's chunk."""
        devices = self.mesh.size
        if self.layout == "accelerator":
            return dataclasses.replace(self, block_size=block_size, chunk_size=block_size * devices)
        wanted = DEFAULT_CHUNK_PER_DEVICE if requested_chunk is None else math.ceil(requested_chunk / devices)
        wanted = min(wanted, math.ceil(self.num_windows / devices))
        per_device = block_size * max(1, math.ceil(wanted / block_size))
        return dataclasses.replace(self, block_size=block_size, chunk_size=per_device * devices)


def resolved_eval_seed(options: EvalConfig) -> int:
    """The evaluation seed of settings resolved at the evaluation's entry (`EvalConfig.for_dataset`, called once
    by `evaluate_predictor`, `severity_curves`, `score_windows` and `faulted_window_checksums`); the engine below
    them never resolves it.

    Raises:
        ValueError: the seed is unresolved (None): a caller below the entries got the user's settings.
    """
    if options.seed is None:
        raise ValueError("eval.seed is unresolved: resolve the settings once with EvalConfig.for_dataset(spec) "
                         "before calling the engine (evaluate_predictor, severity_curves and score_windows do it).")
    return options.seed


def plan_chunks(data: PreparedData, options: EvalConfig, test_starts: np.ndarray | None) -> ChunkPlan:
    """The chunk plan of an evaluation (`options.seed` resolved): the seeded test draw (or the given
    starts), the device mesh, the layout its platform takes, and that layout's first block size."""
    eval_seed = resolved_eval_seed(options)
    starts = (data.test_starts(eval_seed, options.k) if test_starts is None
              else np.asarray(test_starts, np.int32))
    mesh = make_mesh(options.num_devices or automatic_device_count(data, len(starts)))
    layout = resolved_layout(options.layout, mesh.devices.flat[0].platform)
    if layout == "accelerator":
        block = accelerator_block_size(len(starts), mesh.size, options)
    else:
        block = options.block_size or default_block_size(data, mesh.devices.flat[0].platform,
                                                         options.memory_budget_mb)
    plan = ChunkPlan(starts=starts, mesh=mesh, block_size=block, chunk_size=block, layout=layout)
    return plan.with_block_size(block, options.chunk_size)


def resolved_layout(requested: str, platform: str) -> Layout:
    """`eval.layout`: "auto" is the "cpu" layout on a CPU and the "accelerator" layout on any other platform."""
    if requested == "auto":
        return "cpu" if platform == "cpu" else "accelerator"
    if requested not in LAYOUTS:
        raise ValueError(f"Unknown eval.layout {requested!r}; use auto, {' or '.join(LAYOUTS)}.")
    return "cpu" if requested == "cpu" else "accelerator"


def accelerator_block_size(num_windows: int, num_devices: int, options: EvalConfig) -> int:
    """A device's first chunk in the accelerator layout: its share of K (or of `eval.chunk_size`), at most
    `eval.block_size` and `ACCELERATOR_MAX_CHUNK_PER_DEVICE`. `compile_within_budget` shrinks it until the compiled
    program's temporaries fit the device's memory."""
    share = math.ceil(num_windows / num_devices)
    if options.chunk_size is not None:
        share = min(share, math.ceil(options.chunk_size / num_devices))
    if options.block_size is not None:
        share = min(share, options.block_size)
    return max(1, min(share, ACCELERATOR_MAX_CHUNK_PER_DEVICE))


def memory_budget_bytes(options: EvalConfig, device: jax.Device, layout: Layout) -> int:
    """Temporaries one device's chunk program may take: `eval.memory_budget_mb` in the CPU layout; in the
    accelerator layout `ACCELERATOR_MEMORY_FRACTION` of what the device's allocator may hold (`memory_stats`), or
    `eval.memory_budget_mb` where the device does not say (a CPU running the accelerator layout)."""
    if layout == "accelerator":
        stats = device.memory_stats() or {}
        if stats.get("bytes_limit"):
            return int(ACCELERATOR_MEMORY_FRACTION * stats["bytes_limit"])
    return options.memory_budget_mb * 2**20


def automatic_device_count(data: PreparedData, num_windows: int) -> int:
    """All local devices for heavy evaluations (Traffic), fewer for light ones (ETTh1), where the fixed
    cost of another device outweighs its share of the work."""
    worth = 1 + num_windows * _window_bytes(data) // MIN_BYTES_PER_EXTRA_DEVICE
    return max(1, min(len(jax.local_devices()), worth))


def default_block_size(data: PreparedData, platform: str, memory_budget_mb: int) -> int:
    """Windows per inner block before the memory check: on CPU about 3 MiB of window data (it stays in
    cache), elsewhere a power of two sized from the memory budget (at most 4096)."""
    window_bytes = _window_bytes(data)
    if platform == "cpu":
        return max(1, min(512, CPU_BLOCK_BYTES // window_bytes))
    fitting = max(1, memory_budget_mb * 2**20 // (window_bytes * 16))
    return min(4096, 1 << (fitting.bit_length() - 1))


def _window_bytes(data: PreparedData) -> int:
    spec = data.spec
    return (spec.input_len + spec.horizon) * spec.num_channels * 4


def make_mesh(num_devices: int | None = None) -> jax.sharding.Mesh:
    """A one-axis ("data") mesh over the first `num_devices` local devices."""
    devices = jax.local_devices()
    count = len(devices) if num_devices is None else num_devices
    if count > len(devices):
        raise ValueError(f"Asked for {count} devices but only {len(devices)} are available "
                         f"({devices[0].platform}).")
    return jax.make_mesh((count,), ("data",), devices=devices[:count],
                         axis_types=(jax.sharding.AxisType.Auto,))


# --- the compiled chunk kernel ------------------------------------------------------------------------


@functools.lru_cache(maxsize=KERNEL_CACHE_SIZE)
def chunk_kernel(program: WindowProgram, rng_mode: str, block_size: int,
                 mesh: jax.sharding.Mesh) -> jax.stages.Wrapped:
    """The jitted, device-sharded program of one chunk: stage one (draw or prepare every scenario's
    parameters) then the program's stage two, block by block.

    Cached: JAX keeps a jitted function's compiled programs per argument shape, so an evaluation that
    repeats an earlier one's program and shapes (another eval seed, the next fault seed) does not
    compile again.
    """
    scenarios, ctx = program.scenarios, program.ctx

    def blockwise(block_fn: Callable[..., tuple[jax.Array, ...]], batched: Sequence[program_cache.Pytree]) -> Any:
        """The CPU layout walks cache-sized blocks in a loop; the accelerator layout's block is the whole chunk."""
        if program.layout == "accelerator":
            return block_fn(*batched)
        return map_blocks(block_fn, batched, block_size)

    def stage_two(state: ModelState, series: jax.Array, starts: jax.Array, ids: jax.Array,
                  prepared: tuple[FaultParams, ...]) -> tuple[jax.Array, ...]:
        batched = (starts, ids, prepared) if getattr(program, "uses_window_ids", False) else (starts, prepared)
        outputs: tuple[jax.Array, ...] = blockwise(functools.partial(program.block, state, series), batched)
        return outputs

    local: Callable[..., tuple[jax.Array, ...]]  # its arguments differ between the two RNG modes
    if rng_mode == "jax":
        def local(state: ModelState, series: jax.Array, base_key: jax.Array, starts: jax.Array,
                  ids: jax.Array) -> tuple[jax.Array, ...]:
            draw = functools.partial(draw_block, base_key, scenarios=scenarios, ctx=ctx)
            return stage_two(state, series, starts, ids, blockwise(draw, (ids,)))
        specs = (P(), P(), P(), P("data"), P("data"))
    else:
        def local(state: ModelState, series: jax.Array, starts: jax.Array, ids: jax.Array,
                  params: tuple[FaultParams, ...]) -> tuple[jax.Array, ...]:
            prepare = functools.partial(prepare_block, scenarios=scenarios, ctx=ctx)
            return stage_two(state, series, starts, ids, blockwise(prepare, (params,)))
        specs = (P(), P(), P("data"), P("data"), P("data"))
    # check_vma=False: models build constants inside (e.g. the GRU's zero initial state, a scan carry)
    # that are not marked as varying over the window axis; windows are independent and nothing is
    # communicated between devices, so there is nothing for the check to protect.
    return jax.jit(jax.shard_map(local, mesh=mesh, in_specs=specs, out_specs=P("data"), check_vma=False))


@dataclass(frozen=True)
class DeviceInputs:
    """What every chunk call shares, on the devices, and how to build one chunk's arguments."""

    state: ModelState
    series: jax.Array
    base_key: jax.Array
    options: EvalConfig
    scenarios: tuple[Fault, ...]
    ctx: FaultContext

    def chunk_arguments(self, plan: ChunkPlan, ids: np.ndarray) -> tuple[program_cache.Pytree, ...]:
        """The kernel's arguments for the windows `ids`, padded to the chunk size by repeating the last."""
        ids = _padded(ids, plan.chunk_size)
        sharded = NamedSharding(plan.mesh, P("data"))
        starts = jax.device_put(plan.starts[ids], sharded)
        window_ids = jax.device_put(ids.astype(np.int32), sharded)
        if self.options.rng_mode == "jax":
            return (self.state, self.series, self.base_key, starts, window_ids)
        params = tuple(jax.device_put(reference_params(
            fault, scenario_seeds(resolved_eval_seed(self.options), fault.index, ids), self.ctx), sharded)
            for fault in self.scenarios)
        return (self.state, self.series, starts, window_ids, params)


def device_inputs(program: WindowProgram, state: ModelState, data: PreparedData, options: EvalConfig,
                  mesh: jax.sharding.Mesh) -> DeviceInputs:
    """Replicate the state and the standardised series on the mesh; build the base key on the device from
    an explicitly transferred seed (no implicit transfer)."""
    replicated = NamedSharding(mesh, P())
    seed = jax.device_put(np.asarray(resolved_eval_seed(options), np.uint32), replicated)
    return DeviceInputs(state=jax.device_put(state, replicated),
                        series=jax.device_put(data.standardised, replicated), base_key=jax.random.key(seed),
                        options=options, scenarios=program.scenarios, ctx=program.ctx)


def _padded(values: np.ndarray, size: int) -> np.ndarray:
    """Pad the leading axis to `size` by repeating the last entry (padding is dropped later)."""
    if len(values) == size:
        return values
    return np.concatenate([values, np.repeat(values[-1:], size - len(values), axis=0)])


@dataclass(frozen=True)
class CompiledChunk:
    """A compiled chunk program, the plan it was compiled for and its first chunk's arguments."""

    compiled: jax.stages.Compiled
    plan: ChunkPlan
    first_arguments: tuple[program_cache.Pytree, ...]
    temp_bytes: int | None
    program_cache: str | None = None


def compile_chunk(program: WindowProgram, inputs: DeviceInputs, plan: ChunkPlan) -> CompiledChunk:
    """Compile (or fetch from the caches) the chunk kernel for the plan's block and chunk sizes."""
    arguments = inputs.chunk_arguments(plan, plan.window_ids(0))
    compiled, source = cached_program(program, inputs.options.rng_mode, plan, arguments)
    analysis = compiled.memory_analysis()
    temp = None if analysis is None else int(analysis.temp_size_in_bytes)
    return CompiledChunk(compiled=compiled, plan=plan, first_arguments=arguments, temp_bytes=temp,
                         program_cache=source)


def cached_program(program: WindowProgram, rng_mode: str, plan: ChunkPlan,
                   arguments: tuple[program_cache.Pytree, ...]) -> tuple[jax.stages.Compiled, str | None]:
    """The chunk kernel compiled for `arguments` and where it came from (`EngineStats.program_cache`): loaded from
    the program cache (`program_cache.py`: no trace, no lowering), else traced and compiled, and stored there."""
    def compile_now() -> jax.stages.Compiled:
        return chunk_kernel(program, rng_mode, plan.block_size, plan.mesh).lower(*arguments).compile()

    if program_cache.program_cache_folder() is None:
        return compile_now(), None
    key = program_cache.program_key(program, rng_mode, plan.block_size, plan.mesh, arguments)
    if key is None:
        return compile_now(), "compiled"
    loaded = program_cache.load(key, plan.mesh)
    if loaded is program_cache.UNSTORABLE:
        return compile_now(), "compiled"
    if loaded is not None:
        return loaded, "loaded"
    with program_cache.fresh_compilation():
        compiled = compile_now()
    stored = program_cache.store(key, compiled, program_cache.loaded_code(), plan.mesh, arguments)
    return compiled, "stored" if stored else "compiled"


def compile_within_budget(program: WindowProgram, inputs: DeviceInputs,
                          plan: ChunkPlan) -> tuple[CompiledChunk, int, list[str]]:
    """Compile the chunk kernel; with an automatic block size, halve the block until the compiled
    program's temporaries fit `memory_budget_mb` (deterministic for a dataset shape, platform and budget).

    Returns:
        `(compiled chunk, number of compiles, notes)`.
    """
    options = inputs.options
    budget = memory_budget_bytes(options, plan.mesh.devices.flat[0], plan.layout)
    shrinkable = options.block_size is None or plan.layout == "accelerator"
    chunk = compile_chunk(program, inputs, plan)
    compiles, notes = 1, []
    while shrinkable and chunk.temp_bytes is not None and chunk.temp_bytes > budget and chunk.plan.block_size > 1:
        block = smaller_block(chunk.plan.block_size, chunk.temp_bytes, budget)
        chunk = compile_chunk(program, inputs, chunk.plan.with_block_size(block, options.chunk_size))
        compiles += 1
        notes.append(f"block size lowered to {block} to keep temporaries under {budget / 2**20:,.0f} MiB")
    return chunk, compiles, notes


def smaller_block(block: int, temp_bytes: int, budget: int) -> int:
    """The next block size to try when `block` windows took `temp_bytes` of temporaries over `budget`: at most half,
    and the largest power of two that would fit if temporaries grow in proportion to the block (they do, less a
    constant part, so one more try usually fits)."""
    proportional = max(1, block * budget // max(temp_bytes, 1))
    return max(1, min(block // 2, 1 << (proportional.bit_length() - 1)))


# --- running the chunks ---------------------------------------------------------------------------------


class Progress:
    """One concise stderr line per group of chunks, with throughput and ETA after the first chunk."""

    def __init__(self, total: int, enabled: bool, label: str) -> None:
        self.total, self.enabled, self.label = total, enabled, label
        self.first_done: tuple[float, int] | None = None

    def update(self, done: int, chunk: int, num_chunks: int) -> None:
        """Report that `done` windows (through chunk `chunk`) are finished."""
        if not self.enabled or num_chunks < 2:
            return
        now = time.perf_counter()
        if self.first_done is None:
            self.first_done = (now, done)
            return
        every = max(1, num_chunks // 10)
        if chunk % every and chunk != num_chunks:
            return
        elapsed = now - self.first_done[0]
        rate = (done - self.first_done[1]) / max(elapsed, 1e-9)
        eta = (self.total - done) / max(rate, 1e-9)
        print(f"[sfbench] {self.label}: chunk {chunk}/{num_chunks}, {done}/{self.total} windows, "
              f"{rate:,.0f} windows/s, ETA {eta:,.1f} s", file=sys.stderr, flush=True)


def run_chunks(chunk: CompiledChunk, inputs: DeviceInputs, progress: Progress) -> list[tuple[np.ndarray, ...]]:
    """Run the compiled program over every chunk, one chunk in flight while the next is dispatched; an evaluation its
    caller gave up on stops before the next chunk (`abandon.py`).

    Returns:
        Per chunk, the host outputs with the padding dropped.
    """
    plan = chunk.plan
    outputs: list[tuple[int, tuple[jax.Array, ...]]] = []
    for index in range(plan.num_chunks):
        stop_if_abandoned()
        ids = plan.window_ids(index)
        arguments = chunk.first_arguments if index == 0 else inputs.chunk_arguments(plan, ids)
        outputs.append((len(ids), chunk.compiled(*arguments)))
        if index >= 1:  # keep one chunk in flight; report the previous one
            jax.block_until_ready(outputs[-2][1])
            progress.update(int(ids[0]), index, plan.num_chunks)
    host = jax.device_get([out for _, out in outputs])
    progress.update(plan.num_windows, plan.num_chunks, plan.num_chunks)
    return [jax.tree.map(lambda a, count=count: a[:count], out)
            for (count, _), out in zip(outputs, host, strict=True)]


def laid_out(program: WindowProgram, state: ModelState, data: PreparedData, options: EvalConfig,
             test_starts: np.ndarray | None) -> tuple[WindowProgram, ChunkPlan, DeviceInputs]:
    """The chunk plan of an evaluation, the program in the layout the plan's platform takes, and the device inputs."""
    plan = plan_chunks(data, options, test_starts)
    program = program.with_layout(plan.layout)
    return program, plan, device_inputs(program, state, data, options, plan.mesh)


def traceable_chunk(program: WindowProgram, state: ModelState, data: PreparedData,
                    options: EvalConfig) -> tuple[jax.stages.Wrapped, tuple[program_cache.Pytree, ...]]:
    """The jitted chunk program and its first chunk's arguments, exactly as `run_window_program` compiles them
    (before any shrinking to the memory budget). Traced inside `models.layers.traced_for("cuda")`,
    `jit(f).trace(*args).lower(lowering_platforms=("cuda",))` is what a CUDA device compiles
    (benchmarks/gpu_check.py --lower-only)."""
    program, plan, inputs = laid_out(program, state, data, options.for_dataset(data.spec), None)
    return (chunk_kernel(program, inputs.options.rng_mode, plan.block_size, plan.mesh),
            inputs.chunk_arguments(plan, plan.window_ids(0)))


def run_window_program(program: WindowProgram, state: ModelState, data: PreparedData, options: EvalConfig, *,
                       label: str, test_starts: np.ndarray | None,
                       ) -> tuple[list[tuple[np.ndarray, ...]], np.ndarray, EngineStats]:
    """Run stage one and `program` over all test windows (or `test_starts`).

    Returns:
        `(host outputs per chunk, the window starts, statistics)`.
    """
    program, plan, inputs = laid_out(program, state, data, options, test_starts)
    started = time.perf_counter()
    chunk, compiles, notes = compile_within_budget(program, inputs, plan)
    compile_seconds = time.perf_counter() - started
    outputs = run_chunks(chunk, inputs, Progress(plan.num_windows, options.progress, label))
    plan = chunk.plan
    stats = EngineStats(compile_seconds=compile_seconds, run_seconds=time.perf_counter() - started - compile_seconds,
                        chunk_size=plan.chunk_size, num_chunks=plan.num_chunks, num_devices=plan.mesh.size,
                        block_size=plan.block_size, temp_bytes_per_chunk=chunk.temp_bytes, compiles=compiles,
                        notes=tuple(notes), program_cache=chunk.program_cache, layout=plan.layout)
    return outputs, plan.starts, stats


def _concatenate(outputs: list[tuple[np.ndarray, ...]], index: int) -> np.ndarray:
    return np.concatenate([out[index] for out in outputs])


# --- public entry points ----------------------------------------------------------------------------


def score_windows(predict: Predictor, state: ModelState, data: PreparedData, options: EvalConfig, *,
                  scenarios: Sequence[Fault] = SCENARIOS, label: str = "evaluate",
                  test_starts: np.ndarray | None = None) -> tuple[WindowLosses, EngineStats]:
    """Score K test windows clean and under every scenario with the fused kernel.

    Args:
        predict: `predict(state, x) -> y_hat` (pure; the model in eval mode), or a `RowAwarePredictor`.
        state: the model state pytree (replicated on every device).
        data: the prepared dataset.
        options: evaluation settings (seed, RNG mode, K, chunking, devices); a seed of None is the dataset's
            canonical one, resolved here, once.
        scenarios: scenarios to score (default: the eight, in canonical order).
        label: progress label.
        test_starts: absolute window starts to score instead of the seeded test draw (e.g. validation
            windows); sample ids are their positions.

    Returns:
        Per-window losses and engine statistics.
    """
    return score_resolved_windows(predict, state, data, options.for_dataset(data.spec), scenarios=scenarios,
                                  label=label, test_starts=test_starts)


def score_resolved_windows(predict: Predictor, state: ModelState, data: PreparedData, options: EvalConfig, *,
                           scenarios: Sequence[Fault] = SCENARIOS, label: str = "evaluate",
                           test_starts: np.ndarray | None = None) -> tuple[WindowLosses, EngineStats]:
    """`score_windows` for settings whose seed an entry already resolved (`evaluate_predictor`)."""
    program = score_program(predict, data, options, scenarios)
    outputs, starts, stats = run_window_program(program, state, data, options, label=label, test_starts=test_starts)
    losses = WindowLosses(sample_starts=starts, clean=_concatenate(outputs, 0),
                          faulted=np.ascontiguousarray(_concatenate(outputs, 1).T),
                          severity_units=np.ascontiguousarray(_concatenate(outputs, 2).T, dtype=np.int32),
                          scenario_keys=tuple(fault.key for fault in program.scenarios))
    return losses, stats


def score_program(predict: Predictor, data: PreparedData, options: EvalConfig,
                  scenarios: Sequence[Fault] = SCENARIOS) -> ScoreProgram:
    """What `score_windows` computes per block for `predict` on `data` (its layout set by the chunk plan)."""
    return ScoreProgram(predict=predict, scenarios=tuple(scenarios), ctx=fault_context(data, options.channel_fraction),
                        shape=window_shape(data.spec), channel_sparse=options.channel_sparse)


def faulted_window_checksums(data: PreparedData, options: EvalConfig, *,
                             scenarios: Sequence[Fault] = SCENARIOS) -> tuple[np.ndarray, EngineStats]:
    """The fault pass alone: draw and apply every scenario to every test window, no model.

    Each faulted window is reduced to its sum of squares (so every element is computed), through the
    same stages, blocks, chunks and devices as `score_windows`. Used by the throughput benchmark.

    Returns:
        float32 `(P, K)` sums of squares and engine statistics.
    """
    options = options.for_dataset(data.spec)
    program = ChecksumProgram(scenarios=tuple(scenarios), ctx=fault_context(data, options.channel_fraction),
                              shape=window_shape(data.spec))
    outputs, _, stats = run_window_program(program, {}, data, options, label="fault pass", test_starts=None)
    return np.ascontiguousarray(_concatenate(outputs, 0).T), stats

