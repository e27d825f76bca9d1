"""The reference RNG mode: the reference's per-(scenario, sample) MT19937 streams, reproduced exactly
on the host (protocol 2.5) and turned into the same parameter pytrees the JAX samplers produce.

The reference seeds one PyTorch CPU generator (MT19937, `init_genrand`) per (scenario, test sample) with
`derive_seed(eval_seed, "degradation:scenario:{i}:sample:{k}")`, draws the severity first, then
`randperm(M)`, then the scenario's own draws. Here the generators run vectorised over a chunk of
samples in NumPy; draws are converted exactly as PyTorch converts them (24-bit floats, `lo + u mod n`
integers, the 16-lane Box-Muller of `randn`). Parameters (severity, k, durations) use the reference's
double-precision formulas. This mode exists to prove exactness against the published numbers; the JAX
mode is the fast one.

The parameter NamedTuples of `faults.scored` are typed for the device (`jax.Array` leaves, what the apply
functions read); this mode fills them with NumPy arrays, which the engine's `device_put` turns into device arrays.
They are built with `_make` (which takes any iterable) for that reason: a NamedTuple generic in its leaf type
would state both, but beartype, which checks this package's annotations in the tests, rejects generic NamedTuples.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from sfbench_jax.data.seeds import perturbation_seed
from sfbench_jax.faults import scored
from sfbench_jax.faults.context import FaultContext
from sfbench_jax.faults.spec import FaultSpec, ReferenceDraw

_N = 624
_M = 397
_MATRIX_A = np.uint32(0x9908B0DF)
_UPPER = np.uint32(0x80000000)
_LOWER = np.uint32(0x7FFFFFFF)
_MASK32 = np.uint64(0xFFFFFFFF)


def _init_genrand(seeds: np.ndarray) -> np.ndarray:
    """MT19937 `init_genrand` for a vector of 32-bit seeds -> states `(B, 624)` uint32 (built word-major, so each
    step reads and writes one contiguous row of B words)."""
    state = np.empty((_N, seeds.size), dtype=np.uint64)
    state[0] = seeds.astype(np.uint64) & _MASK32
    for i in range(1, _N):
        previous = state[i - 1]
        state[i] = (np.uint64(1812433253) * (previous ^ (previous >> np.uint64(30))) + np.uint64(i)) & _MASK32
    return state.T.astype(np.uint32)


def _twist(state: np.ndarray) -> None:
    """Regenerate the 624-word state in place (blocks respect the in-place dependency order)."""

    def update(lo: int, hi: int) -> None:
        idx = np.arange(lo, hi)
        y = (state[:, idx] & _UPPER) | (state[:, (idx + 1) % _N] & _LOWER)
        state[:, idx] = state[:, (idx + _M) % _N] ^ (y >> np.uint32(1)) ^ np.where(
            (y & np.uint32(1)).astype(bool), _MATRIX_A, np.uint32(0))

    for lo, hi in ((0, _N - _M), (_N - _M, 2 * (_N - _M)), (2 * (_N - _M), _N - 1), (_N - 1, _N)):
        update(lo, hi)


def _temper(y: np.ndarray) -> np.ndarray:
    y = y ^ (y >> np.uint32(11))
    y = y ^ ((y << np.uint32(7)) & np.uint32(0x9D2C5680))
    y = y ^ ((y << np.uint32(15)) & np.uint32(0xEFC60000))
    tempered: np.ndarray = y ^ (y >> np.uint32(18))  # numpy's stubs give `^` of untyped-dtype arrays as Any
    return tempered


def mt19937_outputs(seeds: np.ndarray, count: int) -> np.ndarray:
    """The first `count` 32-bit outputs of MT19937 seeded with each of `seeds` -> `(B, count)` uint32."""
    state = _init_genrand(np.asarray(seeds, dtype=np.uint64))
    blocks = []
    for _ in range(math.ceil(count / _N)):
        _twist(state)
        blocks.append(_temper(state))
    return np.concatenate(blocks, axis=1)[:, :count] if blocks else np.empty((len(seeds), 0), np.uint32)


def _unit_floats(draws: np.ndarray) -> np.ndarray:
    """PyTorch's float32 uniform: `(u & 0xFFFFFF) / 2**24` (exact in float64)."""
    return (draws & np.uint32(0xFFFFFF)).astype(np.float64) * 2.0 ** -24


def _box_muller_blocks(uniforms: np.ndarray) -> np.ndarray:
    """PyTorch `randn` lane transform on blocks of 16: first 8 -> r cos, last 8 -> r sin."""
    blocks = uniforms.reshape(*uniforms.shape[:-1], -1, 16)
    radius = np.sqrt(-2.0 * np.log(1.0 - blocks[..., :8]))
    angle = 2.0 * np.pi * blocks[..., 8:]
    out = np.concatenate([radius * np.cos(angle), radius * np.sin(angle)], axis=-1)
    return out.reshape(uniforms.shape)


def reference_channel_count(severity: np.ndarray, ctx: FaultContext) -> np.ndarray:
    """k(s) with the reference's double-precision formula (host side)."""
    pool_size = ctx.pool_size
    if pool_size == 0:
        return np.zeros(severity.shape, np.int64)
    if ctx.channel_fraction is not None:
        return np.where(severity > 0, math.ceil(ctx.channel_fraction * pool_size), 0)
    k_max = math.ceil(ctx.max_channel_fraction * pool_size)
    count = 1 + np.floor(severity * (k_max - 1)).astype(np.int64)
    count = np.where(severity == 1.0, k_max, count)
    return np.where(severity == 0.0, 0, count)


def _randperm_ranks(draws: np.ndarray, pool_size: int) -> np.ndarray:
    """Rank (position in `randperm(M)`) of each pool index, from the draws after the severity."""
    batch = draws.shape[0]
    perm = np.tile(np.arange(pool_size), (batch, 1))
    rows = np.arange(batch)
    for i in range(pool_size - 1):
        swap = i + (draws[:, i] % np.uint32(pool_size - i)).astype(np.int64)
        current = perm[:, i].copy()
        perm[:, i] = perm[rows, swap]
        perm[rows, swap] = current
    ranks = np.empty_like(perm)
    ranks[rows[:, None], perm] = np.arange(pool_size)[None, :]
    return ranks


def _to_channels(pool_values: np.ndarray, ctx: FaultContext, fill: int) -> np.ndarray:
    out = np.full((pool_values.shape[0], ctx.num_channels), fill, dtype=pool_values.dtype)
    out[:, list(ctx.pool)] = pool_values
    return out


def _after_perm(ctx: FaultContext) -> int:
    """Draws a stream spends before a scenario's own: the severity, then `randperm(M)`."""
    return 1 + max(ctx.pool_size - 1, 0)


def severity_units(draws: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The first draw of each stream as severity units (int32, 2**-24) and as the reference's float64 severity."""
    units = (draws[:, 0] & np.uint32(0xFFFFFF)).astype(np.int32)
    return units, units.astype(np.float64) * 2.0 ** -24


class ChannelDraws(NamedTuple):
    """The shared part of a channel-scoped stream: severity, k(s), the selected channels and the ranks.

    Attributes:
        units: int32 `(B,)` severity units. severity: float64 `(B,)`. count: `(B,)` k(s).
        selected: bool `(B, m)`. ranks: `(B, m)` position of each channel in `randperm(M)` (0 off the pool).
        own: uint32 `(B, rest)` the scenario's own draws after the permutation.
    """

    units: np.ndarray
    severity: np.ndarray
    count: np.ndarray  # type: ignore[assignment]  # a public field name; it shadows tuple.count
    selected: np.ndarray
    ranks: np.ndarray
    own: np.ndarray


def channel_selection(draws: np.ndarray, ctx: FaultContext) -> ChannelDraws:
    """Severity, then `randperm(M)` and the k(s) selected channels, as the reference draws them."""
    units, severity = severity_units(draws)
    count = reference_channel_count(severity, ctx)
    ranks_pool = _randperm_ranks(draws[:, 1:], ctx.pool_size)
    selected = _to_channels(ranks_pool < count[:, None], ctx, fill=False)
    ranks = _to_channels(ranks_pool, ctx, fill=0)
    return ChannelDraws(units, severity, count, selected, ranks, draws[:, _after_perm(ctx):])


def one_own_draw(ctx: FaultContext) -> int:
    """Draw count of a scenario with at most one own draw after the permutation."""
    return _after_perm(ctx) + 1


def per_channel_draws(ctx: FaultContext) -> int:
    """Draw count of a scenario with one own draw per selected channel."""
    return _after_perm(ctx) + ctx.max_count


def noise_draws(ctx: FaultContext) -> int:
    """Draw count of the noise scenario (`randn(n, k)` in 16-blocks plus one refill block)."""
    return _after_perm(ctx) + 16 * math.ceil(ctx.input_len * max(ctx.max_count, 1) / 16) + 16


def channel_params(draws: np.ndarray, ctx: FaultContext) -> scored.ChannelFault:
    """Drift / attenuation."""
    common = channel_selection(draws, ctx)
    return scored.ChannelFault._make((common.units, common.selected))


def time_warp_params(draws: np.ndarray, ctx: FaultContext) -> scored.TimeWarpFault:
    """TimeStretch / TimeCompress: one start in [1, n-D]."""
    common, n = channel_selection(draws, ctx), ctx.input_len
    span = n - scored.time_warp_duration(n)
    return scored.TimeWarpFault._make((common.units, common.selected,
                                       1 + (common.own[:, 0] % np.uint32(span)).astype(np.int32)))


def _per_rank(common: ChannelDraws, span: np.ndarray | int, ctx: FaultContext) -> np.ndarray:
    """`1 + own[rank] mod span` for each channel (its rank in the permutation picks its draw)."""
    per_rank = 1 + (common.own[:, : max(ctx.max_count, 1)] % np.asarray(span, np.uint32)).astype(np.int32)
    rank_index = np.minimum(common.ranks, per_rank.shape[1] - 1)
    return np.take_along_axis(per_rank, rank_index, axis=1)


def spike_params(draws: np.ndarray, ctx: FaultContext) -> scored.SpikeFault:
    """Spike: a position in [1, n-1] per selected channel."""
    common = channel_selection(draws, ctx)
    return scored.SpikeFault._make((common.units, common.selected, _per_rank(common, ctx.input_len - 1, ctx)))


def stuck_sensor_params(draws: np.ndarray, ctx: FaultContext) -> scored.StuckFault:
    """StuckSensor: a start in [1, n-L] per selected channel."""
    common, n = channel_selection(draws, ctx), ctx.input_len
    duration = np.ceil(common.severity * (n - 1)).astype(np.int64)
    span = np.maximum(n - duration, 1).astype(np.uint32)[:, None]
    return scored.StuckFault._make((common.units, common.selected, _per_rank(common, span, ctx)))


def noise_params(draws: np.ndarray, ctx: FaultContext) -> scored.NoiseFault:
    """Noise: the reference's `randn(n, k)` scattered onto the selected channels."""
    common = channel_selection(draws, ctx)
    noise = _reference_noise(common.own, common.count, common.ranks, common.selected, ctx)
    return scored.NoiseFault._make((common.units, common.selected, noise))


def missing_data_params(draws: np.ndarray, ctx: FaultContext) -> scored.MissingFault:
    """MissingData: no permutation; one start in [1, n-L] from the second draw."""
    units, severity = severity_units(draws)
    duration = np.ceil(severity * 0.5 * (ctx.input_len - 1)).astype(np.int64)
    start = 1 + (draws[:, 1] % (ctx.input_len - duration).astype(np.uint32)).astype(np.int32)
    return scored.MissingFault._make((units, start))


def missing_data_draws(ctx: FaultContext) -> int:
    """Draw count of MissingData (the permutation's draws are reserved as in the reference's buffer)."""
    return one_own_draw(ctx)


CHANNEL = ReferenceDraw(one_own_draw, channel_params)
TIME_WARP = ReferenceDraw(one_own_draw, time_warp_params)
SPIKE = ReferenceDraw(per_channel_draws, spike_params)
STUCK_SENSOR = ReferenceDraw(per_channel_draws, stuck_sensor_params)
NOISE = ReferenceDraw(noise_draws, noise_params)
MISSING_DATA = ReferenceDraw(missing_data_draws, missing_data_params)


def reference_params(fault: FaultSpec, seeds: np.ndarray, ctx: FaultContext) -> tuple[np.ndarray, ...]:
    """Parameters of `fault` for a batch of reference streams (one per sample).

    Args:
        fault: a fault with a reference draw (the paper's eight scored scenarios).
        seeds: `(B,)` generator seeds (`perturbation_seed(eval_seed, i, k)`).
        ctx: the dataset's fault context.

    Returns:
        The scenario's parameter NamedTuple with NumPy leaves batched on axis 0.
    """
    if fault.reference is None:
        raise ValueError(f"{fault.key!r} has no reference-RNG draw; the reference mode covers the paper's eight "
                         "scored scenarios. Use eval.rng_mode=jax.")
    draws = mt19937_outputs(seeds, fault.reference.draw_count(ctx))
    return fault.reference.params(draws, ctx)


def _reference_noise(own: np.ndarray, count: np.ndarray, ranks: np.ndarray, selected: np.ndarray,
                     ctx: FaultContext) -> np.ndarray:
    """`randn(n, k)` per sample, scattered so channel `S[c]` gets column c -> float32 `(B, n, m)`."""
    n, batch = ctx.input_len, own.shape[0]
    if n < 16:
        raise ValueError(f"The reference RNG mode needs input_len >= 16 (PyTorch's vectorised randn "
                         f"path); got {n}. Use eval.rng_mode=jax.")
    width = n * max(ctx.max_count, 1)
    padded = 16 * math.ceil(width / 16)
    uniforms = _unit_floats(own[:, : padded + 16])
    normals = _box_muller_blocks(uniforms[:, :padded])  # complete 16-blocks from the buffer start
    total = n * count  # numbers drawn per sample
    ragged = (total % 16 != 0) & (total > 0)
    if ragged.any():  # PyTorch overwrites the last 16 values with 16 fresh transformed uniforms
        lanes = np.arange(16)[None, :]
        fresh = _box_muller_blocks(np.take_along_axis(uniforms, total[:, None] + lanes, axis=1))
        targets = np.clip(total[:, None] - 16 + lanes, 0, padded - 1)
        current = np.take_along_axis(normals, targets, axis=1)
        np.put_along_axis(normals, targets, np.where(ragged[:, None], fresh, current), axis=1)
    steps = np.arange(n)[None, :, None]
    index = np.clip(steps * count[:, None, None] + ranks[:, None, :], 0, padded - 1)
    values = np.take_along_axis(normals, index.reshape(batch, -1), axis=1)
    values = values.reshape(batch, n, ctx.num_channels)
    return np.where(selected[:, None, :], values, 0.0).astype(np.float32)


def scenario_seeds(eval_seed: int, scenario_index: int, sample_ids: np.ndarray) -> np.ndarray:
    """Reference generator seeds for a scenario and a batch of sample ids."""
    return np.asarray([perturbation_seed(eval_seed, scenario_index, int(k)) for k in sample_ids],
                      dtype=np.uint64)
