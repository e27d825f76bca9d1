"""The shell around the fused kernel: chunking, padding, device sharding, compilation with a memory
budget, host-side reference draws, progress.

`score_windows` evaluates K test windows clean and under every scored scenario and returns per-window
losses; `faulted_window_checksums` runs the fault pass alone (for the benchmark). Per device and chunk,
stage 1 draws and prepares every scenario's parameters block by block and stage 2 applies them and runs
the model, block by block (`kernel.py`). Chunks have one fixed size (the last is padded and its padding
dropped); windows are sharded along a one-axis device mesh ("data"); randomness is keyed by (scenario
id, window id), so results do not depend on the chunk size or the number of devices.
"""

from __future__ import annotations

import math
import sys
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

from sfbench_jax.data.prepared import PreparedData
from sfbench_jax.evaluate.kernel import (
    PredictFn,
    WindowShape,
    apply_scenario,
    draw_block,
    gather_windows,
    map_blocks,
    prepare_block,
    score_block,
)
from sfbench_jax.faults.context import FaultContext
from sfbench_jax.faults.reference_rng import reference_params, scenario_seeds
from sfbench_jax.faults.registry import SCENARIOS, Fault

RNG_MODES = ("jax", "reference")
MAX_WINDOWS = 1_000_000  # per-window losses are kept on the host: (1 + 2P) x K numbers
DEFAULT_FIRST_CHUNK = 1024  # windows per device per compiled call
CPU_BLOCK_BYTES = 3 * 2**20  # window data per inner block on CPU (stays in cache; tuned on Traffic)
MIN_BYTES_PER_EXTRA_DEVICE = 512 * 2**20  # window data that makes one more device worth its overhead
KERNEL_CACHE_SIZE = 16  # jitted chunk kernels kept for later calls (each keeps its compiled programs)


@dataclass(frozen=True)
class EvalOptions:
    """How to run the Monte Carlo evaluation.

    Attributes:
        eval_data_seed: seeds the test-window draw, the perturbation keys and the bootstrap.
        rng: "jax" (on-device folded keys, fast) or "reference" (the reference's MT19937 streams, exact).
        num_windows: K test windows.
        chunk_size: windows per compiled call (rounded up to whole blocks on every device); None: about
            1024 windows per device. Never changes a result.
        block_size: windows per inner block, the unit the compiled program computes at once; None
            chooses it per platform (cache-sized on CPU, memory-budgeted on accelerators) and halves it
            until the compiled memory analysis fits `memory_budget_mb`. Results are bit-identical for any
            chunk size and device count at a given block size.
        fixed_fraction: fixed channel fraction q (sensitivity variant), or None for the severity rule.
        memory_budget_mb: budget for the compiled program's temporaries per device; an automatic block
            size is halved until they fit.
        num_devices: devices in the mesh (None: all local devices when the evaluation moves enough window
            data to pay for the per-device overhead, `MIN_BYTES_PER_EXTRA_DEVICE` per extra device,
            else fewer). Never changes a result.
        progress: print one line per chunk group with throughput and ETA to stderr.
    """

    eval_data_seed: int
    rng: str = "jax"
    num_windows: int = 10_000
    chunk_size: int | None = None
    block_size: int | None = None
    fixed_fraction: float | None = None
    memory_budget_mb: int = 1024
    num_devices: int | None = None
    progress: bool = True

    def __post_init__(self) -> None:
        if self.rng not in RNG_MODES:
            raise ValueError(f"Unknown RNG mode {self.rng!r}; use one of {list(RNG_MODES)}.")
        if not 1 <= self.num_windows <= MAX_WINDOWS:
            raise ValueError(f"num_windows (eval.k) must be in [1, {MAX_WINDOWS:,}], got {self.num_windows}; "
                             "the benchmark protocol uses 10,000.")
        if self.chunk_size is not None and self.chunk_size < 1:
            raise ValueError(f"chunk_size must be >= 1 (or null for automatic), got {self.chunk_size}.")
        if self.block_size is not None and self.block_size < 1:
            raise ValueError(f"block_size must be >= 1 (or null for automatic), got {self.block_size}.")
        if self.memory_budget_mb < 1:
            raise ValueError(f"memory_budget_mb must be >= 1, got {self.memory_budget_mb}.")
        if self.fixed_fraction is not None and not 0.0 < self.fixed_fraction <= 0.5:
            raise ValueError(f"fixed channel fraction must lie in (0, 0.5], got {self.fixed_fraction}.")
        if self.num_devices is not None and self.num_devices < 1:
            raise ValueError(f"num_devices must be >= 1, got {self.num_devices}.")


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


def fault_context(data: PreparedData, fixed_fraction: float | None = None) -> FaultContext:
    """The fault context of a prepared dataset."""
    spec = data.spec
    return FaultContext(input_len=spec.input_len, num_channels=spec.num_channels,
                        pool=spec.continuous_pool, fixed_fraction=fixed_fraction)


def window_shape(data: PreparedData) -> WindowShape:
    """The static window geometry of a prepared dataset."""
    spec = data.spec
    return WindowShape(spec.input_len, spec.horizon, spec.target_indices)


def automatic_device_count(data: PreparedData, num_windows: int) -> int:
    """All local devices for heavy evaluations (Traffic), fewer for light ones (ETTh1), where the fixed
    cost of another device outweighs its share of the work."""
    spec = data.spec
    window_bytes = (spec.input_len + spec.horizon) * spec.num_channels * 4
    worth = 1 + num_windows * window_bytes // MIN_BYTES_PER_EXTRA_DEVICE
    return max(1, min(len(jax.local_devices()), worth))


def make_mesh(num_devices: int | None = None) -> jax.sharding.Mesh:
    """A one-axis ("data") mesh over the first `num_devices` local devices."""
    devices = jax.local_devices()
    count = len(devices) if num_devices is None else num_devices
    if count > len(devices):
        raise ValueError(f"Asked for {count} devices but only {len(devices)} are available "
                         f"({devices[0].platform}).")
    return jax.make_mesh((count,), ("data",), devices=devices[:count],
                         axis_types=(jax.sharding.AxisType.Auto,))


def _padded(values: np.ndarray, size: int) -> np.ndarray:
    """Pad the leading axis to `size` by repeating the last entry (padding is dropped later)."""
    if len(values) == size:
        return values
    return np.concatenate([values, np.repeat(values[-1:], size - len(values), axis=0)])


class _Progress:
    """One concise stderr line per group of chunks, with throughput and ETA after the first chunk."""

    def __init__(self, total: int, enabled: bool, label: str) -> None:
        self.total, self.enabled, self.label = total, enabled, label
        self.started = time.perf_counter()
        self.first_done: tuple[float, int] | None = None

    def update(self, done: int, chunk: int, num_chunks: int) -> None:
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


def default_block_size(data: PreparedData, platform: str, memory_budget_mb: int) -> int:
    """Windows per inner block before the memory check: on CPU about 3 MiB of window data (it stays in
    cache), elsewhere a power of two sized from the memory budget (at most 4096)."""
    spec = data.spec
    window_bytes = (spec.input_len + spec.horizon) * spec.num_channels * 4
    if platform == "cpu":
        return max(1, min(512, CPU_BLOCK_BYTES // window_bytes))
    fitting = max(1, memory_budget_mb * 2**20 // (window_bytes * 16))
    return min(4096, 1 << (fitting.bit_length() - 1))


StageTwo = Callable[[Any, jax.Array, jax.Array, tuple], tuple]

_KERNELS: OrderedDict[Hashable, Any] = OrderedDict()


def _cached_kernel(key: Hashable, build: Callable[[], Any]) -> Any:
    """The jitted chunk kernel for `key`, built once and reused by later calls (least recently used are
    dropped beyond `KERNEL_CACHE_SIZE`). JAX keeps a jitted function's compiled programs per argument
    shape, so an evaluation that repeats an earlier one's program and shapes (another eval seed, the
    next fault seed) does not compile again."""
    kernel = _KERNELS.pop(key) if key in _KERNELS else build()
    _KERNELS[key] = kernel
    while len(_KERNELS) > KERNEL_CACHE_SIZE:
        _KERNELS.popitem(last=False)
    return kernel


def _run_window_program(block_program: Callable[[int], StageTwo], program_key: Hashable, state: Any,
                        data: PreparedData, options: EvalOptions, *, scenarios: tuple[Fault, ...], label: str,
                        test_starts: np.ndarray | None) -> tuple[list, np.ndarray, EngineStats]:
    """Run stage 1 (draw/prepare the scenario parameters) and a stage-2 block program over all windows.

    `block_program(block)` returns `stage_two(state, series, starts, prepared)` mapping one device's
    chunk to per-window outputs (leading window axis); `program_key` identifies everything that program
    closes over (its kernel is reused by later calls with the same key). Handles the seeded test draw,
    padding, the mesh, the block size (with the memory check), chunked dispatch and progress.

    Returns:
        `(host outputs per chunk, with their valid window counts), the window starts, statistics)`.
    """
    ctx = fault_context(data, options.fixed_fraction)
    starts = (data.test_starts(options.eval_data_seed, options.num_windows) if test_starts is None
              else np.asarray(test_starts, np.int32))
    num_windows = len(starts)
    mesh = make_mesh(options.num_devices or automatic_device_count(data, num_windows))
    num_devices = mesh.size
    sharded = NamedSharding(mesh, P("data"))
    replicated = NamedSharding(mesh, P())
    series = jax.device_put(data.standardised, replicated)
    state = jax.device_put(state, replicated)
    # the key is built on the device from an explicitly transferred seed (no implicit transfer)
    base_key = jax.random.key(jax.device_put(np.asarray(options.eval_data_seed, np.uint32), replicated))
    platform = mesh.devices.flat[0].platform

    def build_kernel(block: int) -> Any:
        return _cached_kernel((program_key, options.rng, block, mesh), partial(new_kernel, block))

    def new_kernel(block: int) -> Any:
        stage_two = block_program(block)
        if options.rng == "jax":
            def local(state: Any, series: jax.Array, base_key: jax.Array, starts: jax.Array,
                      ids: jax.Array) -> tuple:
                prepared = map_blocks(partial(draw_block, base_key, scenarios=scenarios, ctx=ctx), (ids,), block)
                return stage_two(state, series, starts, prepared)
            specs = (P(), P(), P(), P("data"), P("data"))
        else:
            def local(state: Any, series: jax.Array, starts: jax.Array, params: tuple) -> tuple:
                prepared = map_blocks(lambda p: prepare_block(p, scenarios=scenarios, ctx=ctx), (params,), block)
                return stage_two(state, series, starts, prepared)
            specs = (P(), P(), P("data"), P("data"))
        # check_vma=False: models build constants inside (e.g. the GRU's zero initial state, a scan carry)
        # that are not marked as varying over the window axis; windows are independent and nothing is
        # communicated between devices, so there is nothing for the check to protect.
        return jax.jit(jax.shard_map(local, mesh=mesh, in_specs=specs, out_specs=P("data"), check_vma=False))

    def chunk_arguments(ids: np.ndarray, size: int) -> tuple:
        ids = _padded(ids, size)
        chunk_starts = jax.device_put(starts[ids], sharded)
        if options.rng == "jax":
            return (state, series, base_key, chunk_starts, jax.device_put(ids.astype(np.int32), sharded))
        params = tuple(jax.device_put(reference_params(
            fault, scenario_seeds(options.eval_data_seed, fault.index, ids), ctx), sharded)
            for fault in scenarios)
        return (state, series, chunk_starts, params)

    def per_device_chunk(block: int) -> int:
        """Windows per device per call: a whole number of blocks."""
        wanted = (DEFAULT_FIRST_CHUNK if options.chunk_size is None
                  else math.ceil(options.chunk_size / num_devices))
        wanted = min(wanted, math.ceil(num_windows / num_devices))
        return block * max(1, math.ceil(wanted / block))

    def compile_for(block: int) -> tuple[Any, int | None, tuple, int]:
        size = per_device_chunk(block) * num_devices
        arguments = chunk_arguments(np.arange(min(size, num_windows)), size)
        compiled = build_kernel(block).lower(*arguments).compile()
        analysis = compiled.memory_analysis()
        temp = None if analysis is None else int(analysis.temp_size_in_bytes)
        return compiled, temp, arguments, size

    notes: list[str] = []
    compile_started = time.perf_counter()
    block = options.block_size or default_block_size(data, platform, options.memory_budget_mb)
    compiled, temp, first_arguments, chunk_size = compile_for(block)
    compiles = 1
    budget = options.memory_budget_mb * 2**20
    while options.block_size is None and temp is not None and temp > budget and block > 1:
        block //= 2  # deterministic for a given dataset shape, platform and budget
        compiled, temp, first_arguments, chunk_size = compile_for(block)
        compiles += 1
        notes.append(f"block size halved to {block} to keep temporaries under {options.memory_budget_mb} MiB")
    compile_seconds = time.perf_counter() - compile_started

    num_chunks = math.ceil(num_windows / chunk_size)
    progress = _Progress(num_windows, options.progress, label)
    outputs = []
    run_started = time.perf_counter()
    for chunk in range(num_chunks):
        ids = np.arange(chunk * chunk_size, min((chunk + 1) * chunk_size, num_windows))
        arguments = first_arguments if chunk == 0 else chunk_arguments(ids, chunk_size)
        outputs.append((len(ids), compiled(*arguments)))
        if chunk >= 1:  # keep one chunk in flight; report the previous one
            jax.block_until_ready(outputs[-2][1])
            progress.update(int(ids[0]), chunk, num_chunks)
    host = jax.device_get([out for _, out in outputs])
    run_seconds = time.perf_counter() - run_started
    progress.update(num_windows, num_chunks, num_chunks)
    stats = EngineStats(compile_seconds=compile_seconds, run_seconds=run_seconds, chunk_size=chunk_size,
                        num_chunks=num_chunks, num_devices=num_devices, block_size=block,
                        temp_bytes_per_chunk=temp, compiles=compiles, notes=tuple(notes))
    trimmed = [jax.tree.map(lambda a, count=count: a[:count], out)
               for (count, _), out in zip(outputs, host, strict=True)]
    return trimmed, starts, stats


def _concatenate(outputs: list, index: int) -> np.ndarray:
    return np.concatenate([out[index] for out in outputs])


def score_windows(predict: PredictFn, state: Any, data: PreparedData, options: EvalOptions, *,
                  scenarios: Sequence[Fault] = SCENARIOS, label: str = "evaluate",
                  test_starts: np.ndarray | None = None) -> tuple[WindowLosses, EngineStats]:
    """Score K test windows clean and under every scenario with the fused kernel.

    Args:
        predict: `predict(state, x) -> y_hat` (pure; the model in eval mode).
        state: the model state pytree (replicated on every device).
        data: the prepared dataset.
        options: evaluation options (seed, RNG mode, K, chunking, devices).
        scenarios: scenarios to score (default: the eight, in canonical order).
        label: progress label.
        test_starts: absolute window starts to score instead of the seeded test draw (e.g. validation
            windows); sample ids are their positions.

    Returns:
        Per-window losses and engine statistics.
    """
    scenarios = tuple(scenarios)
    ctx, shape = fault_context(data, options.fixed_fraction), window_shape(data)

    def block_program(block: int) -> StageTwo:
        def stage_two(state: Any, series: jax.Array, starts: jax.Array, prepared: tuple) -> tuple:
            return map_blocks(partial(score_block, predict, state, series, scenarios=scenarios, ctx=ctx,
                                      shape=shape), (starts, prepared), block)
        return stage_two

    outputs, starts, stats = _run_window_program(block_program, ("score", predict, scenarios, ctx, shape), state,
                                                 data, options, scenarios=scenarios, label=label,
                                                 test_starts=test_starts)
    losses = WindowLosses(sample_starts=starts, clean=_concatenate(outputs, 0),
                          faulted=np.ascontiguousarray(_concatenate(outputs, 1).T),
                          severity_units=np.ascontiguousarray(_concatenate(outputs, 2).T, dtype=np.int32),
                          scenario_keys=tuple(fault.key for fault in scenarios))
    return losses, stats


def faulted_window_checksums(data: PreparedData, options: EvalOptions, *,
                             scenarios: Sequence[Fault] = SCENARIOS) -> tuple[np.ndarray, EngineStats]:
    """The fault pass alone: draw and apply every scenario to every test window, no model.

    Each faulted window is reduced to its sum of squares (so every element is computed), through the
    same stages, blocks, chunks and devices as `score_windows`. Used by the throughput benchmark.

    Returns:
        float32 `(P, K)` sums of squares and engine statistics.
    """
    scenarios = tuple(scenarios)
    ctx, shape = fault_context(data, options.fixed_fraction), window_shape(data)

    def checksums(series: jax.Array, starts: jax.Array, prepared: tuple) -> jax.Array:
        x, _ = gather_windows(series, starts, shape)
        sums = [jnp.sum(jnp.square(apply_scenario(fault, x, p, ctx)), axis=(1, 2))
                for fault, p in zip(scenarios, prepared, strict=True)]
        return jnp.stack(sums, axis=1)

    def block_program(block: int) -> StageTwo:
        def stage_two(state: Any, series: jax.Array, starts: jax.Array, prepared: tuple) -> tuple:
            del state
            return (map_blocks(partial(checksums, series), (starts, prepared), block),)
        return stage_two

    outputs, _, stats = _run_window_program(block_program, ("checksums", scenarios, ctx, shape), {}, data,
                                            options, scenarios=scenarios, label="fault pass", test_starts=None)
    return np.ascontiguousarray(_concatenate(outputs, 0).T), stats
