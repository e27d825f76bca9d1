"""The eight scored fault scenarios (protocol 2.2) as pure functions on one window.

Each scenario is split in two: a *sampler* turns randomness into a small fixed-shape parameter pytree
(severity units, the selected channels, positions, noise), and an *apply* function maps
`(x (n, m), params)` to the faulted window. The JAX RNG mode samples on the device from the
per-(scenario, window) stream (`streams.py`); the reference mode builds the same parameter pytrees on
the host from the reference's MT19937 streams (`reference_rng.py`). Both share the apply functions.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import jax
import jax.numpy as jnp

from sfbench_jax.faults.channel_subsets import distinct_keys, pool_to_channels, smallest_k_mask
from sfbench_jax.faults.context import FaultContext, FaultedWindow, StreamWords, Window
from sfbench_jax.faults.severity import (
    SEVERITY_BITS,
    SEVERITY_ONE,
    ceil_duration,
    channel_count,
    scaled_units,
    severity_or_draw,
    units_to_severity,
)
from sfbench_jax.faults.streams import (
    CHANNEL_KEY_OFFSET,
    NOISE_OFFSET,
    POSITION_OFFSET,
    START_OFFSET,
    bits_to_int,
    bits_to_normal,
    stream_bits,
)

DRIFT_MAX = 0.75
ATTENUATION_MIN = 0.25
NOISE_STD_MAX = 1.0
SPIKE_MAX = 7.5
STRETCH_MAX = 5.0
COMPRESS_MIN = 0.1
STUCK_FRACTION_MAX = 1.0
MISSING_FRACTION_MAX = 0.5


class ChannelFault(NamedTuple):
    """Drift and attenuation: a severity and the faulted channels."""

    severity_units: jax.Array  # int32 ()
    selected: jax.Array  # bool (m,)


class NoiseFault(NamedTuple):
    """Noise with explicit values: standard normals per (time, channel); only selected channels use theirs
    (the reference RNG mode supplies these)."""

    severity_units: jax.Array
    selected: jax.Array
    noise: jax.Array  # float32 (n, m)


class NoiseDraw(NamedTuple):
    """Noise drawn lazily (JAX RNG mode): the normals are expanded from the stream where they are used,
    so they are never materialised for a whole chunk."""

    severity_units: jax.Array
    selected: jax.Array
    words: jax.Array  # uint32 (2,) stream key


class SpikeFault(NamedTuple):
    """Spike: one time step per selected channel."""

    severity_units: jax.Array
    selected: jax.Array
    positions: jax.Array  # int32 (m,) in [1, n-1]


class TimeWarpFault(NamedTuple):
    """TimeStretch / TimeCompress: one window start shared by the selected channels."""

    severity_units: jax.Array
    selected: jax.Array
    start: jax.Array  # int32 () in [1, n-D]


class TimeWarpPlan(NamedTuple):
    """A TimeStretch/TimeCompress fault resolved to source positions for the `D` replaced steps
    `a .. a+D-1` (see `plan_time_warp`)."""

    severity_units: jax.Array
    selected: jax.Array  # bool (m,)
    start: jax.Array  # int32 (): a
    lower: jax.Array  # int32 (D,): source step below tau_i
    upper: jax.Array  # int32 (D,): source step above tau_i
    fraction: jax.Array  # float32 (D,): tau_i - lower


class StuckFault(NamedTuple):
    """StuckSensor: a hold window per selected channel, each with its own start."""

    severity_units: jax.Array
    selected: jax.Array
    starts: jax.Array  # int32 (m,) in [1, n-L]


class MissingFault(NamedTuple):
    """MissingData: one synchronised forward-filled gap over all channels."""

    severity_units: jax.Array
    start: jax.Array  # int32 () in [1, n-L]


# ----------------------------------------------------------------------------------------------
# Parameter maps theta(s) and durations


def drift_offset(units: jax.Array) -> jax.Array:
    """theta = 0.75 s."""
    return scaled_units(units, 3, SEVERITY_BITS + 2)


def attenuation_factor(units: jax.Array) -> jax.Array:
    """theta = 1 - 0.75 s (= (2**26 - 3 j) / 2**26)."""
    numerator = jnp.int32(4 * SEVERITY_ONE) - 3 * units.astype(jnp.int32)
    factor: jax.Array = numerator.astype(jnp.float32) * jnp.float32(2.0 ** -(SEVERITY_BITS + 2))
    return factor


def spike_magnitude(units: jax.Array) -> jax.Array:
    """theta = 7.5 s."""
    return scaled_units(units, 15, SEVERITY_BITS + 1)


def time_warp_duration(input_len: int) -> int:
    """D = ceil(n / 2)."""
    return math.ceil(input_len / 2)


def stuck_duration(units: jax.Array, input_len: int) -> jax.Array:
    """L = ceil(s (n - 1))."""
    return ceil_duration(units, span=input_len - 1)


def missing_duration(units: jax.Array, input_len: int) -> jax.Array:
    """L = ceil(0.5 s (n - 1))."""
    return ceil_duration(units, span=input_len - 1, half=True)


# ----------------------------------------------------------------------------------------------
# Apply functions: (x (n, m), params, ctx) -> x'


def apply_drift(x: Window, params: ChannelFault, ctx: FaultContext) -> FaultedWindow:
    """Add `0.75 s` to every step of the selected channels."""
    del ctx
    return jnp.where(params.selected[None, :], x + drift_offset(params.severity_units), x)


def apply_attenuation(x: Window, params: ChannelFault, ctx: FaultContext) -> FaultedWindow:
    """Scale the selected channels by `1 - 0.75 s`."""
    del ctx
    return jnp.where(params.selected[None, :], x * attenuation_factor(params.severity_units), x)


def noise_values(params: NoiseFault | NoiseDraw, ctx: FaultContext) -> jax.Array:
    """The standard normals `(n*m,)` of a noise fault (expanded from the stream for a `NoiseDraw`)."""
    if isinstance(params, NoiseDraw):
        return bits_to_normal(stream_bits(params.words, NOISE_OFFSET, (ctx.input_len * ctx.num_channels,)))
    return params.noise.reshape(-1)


def apply_noise(x: Window, params: NoiseFault | NoiseDraw, ctx: FaultContext) -> FaultedWindow:
    """Add `s * z` (z standard normal) to the selected channels.

    Works on the flattened window `(n*m,)`: the normals are generated where they are used, and their
    transform vectorises poorly over an (n, m) loop with few channels (ETTh1's 7).
    """
    flat = x.reshape(-1)
    selected = jnp.tile(params.selected, ctx.input_len)
    scale = units_to_severity(params.severity_units)
    return jnp.where(selected, flat + scale * noise_values(params, ctx), flat).reshape(x.shape)


def apply_spike(x: Window, params: SpikeFault, ctx: FaultContext) -> FaultedWindow:
    """Add `7.5 s` at one step `p_j in [1, n-1]` of each selected channel."""
    steps = jnp.arange(ctx.input_len, dtype=jnp.int32)[:, None]
    hit = (steps == params.positions[None, :]) & params.selected[None, :]
    return jnp.where(hit, x + spike_magnitude(params.severity_units), x)


def _floor_divide_product(factor: jax.Array, numerator: int, denominator: jax.Array) -> tuple[jax.Array, jax.Array]:
    """Exact `floor(factor * numerator / denominator)` and the remainder, in uint32 arithmetic.

    `factor < 2**12`, `numerator < 2**28` and `2**24 <= denominator < 2**28`: the product can exceed 32
    bits, so it is split at bit 16 and its low half is divided in by long division, four bits at a time.
    """
    factor = factor.astype(jnp.uint32)
    denominator = denominator.astype(jnp.uint32)
    high_product = factor * jnp.uint32(numerator >> 16)
    low_product = factor * jnp.uint32(numerator & 0xFFFF)
    high = high_product + (low_product >> 16)  # < 2**24 <= denominator
    low = low_product & 0xFFFF
    quotient = high // denominator
    remainder = high % denominator
    for shift in (12, 8, 4, 0):
        remainder = (remainder << 4) | ((low >> shift) & 0xF)
        quotient = (quotient << 4) | (remainder // denominator)
        remainder = remainder % denominator
    return quotient.astype(jnp.int32), remainder


def time_warp_positions(units: jax.Array, start: jax.Array, input_len: int, *, stretch: bool
                        ) -> tuple[jax.Array, jax.Array, jax.Array]:
    """Where the replaced steps `a + i` (i = 0..D-1) read from: `tau_i = (a-1) + (i+1)/rate`.

    The rate is the exact rational `1 + 4s = (2**24 + 4j) / 2**24` (stretch) or
    `1 - 0.9s = (5 * 2**25 - 9j) / (5 * 2**25)` (compress), so `tau`'s integer part is exact and its
    fractional part is accurate to float32 rounding, as in the reference's double-precision arithmetic.

    Returns:
        `lower (D,)` and `upper (D,)` source steps and `fraction (D,)`, with `tau` clipped to `n - 1`.
    """
    duration = time_warp_duration(input_len)
    if stretch:
        rate_scale, rate_numerator = 1 << SEVERITY_BITS, (1 << SEVERITY_BITS) + 4 * units
    else:
        rate_scale, rate_numerator = 5 << (SEVERITY_BITS + 1), (5 << (SEVERITY_BITS + 1)) - 9 * units
    advance = jnp.arange(1, duration + 1, dtype=jnp.int32)  # i + 1
    whole, remainder = _floor_divide_product(advance, rate_scale, rate_numerator)
    fraction = remainder.astype(jnp.float32) / rate_numerator.astype(jnp.float32)
    base = start - 1 + whole  # integer part of tau
    past_end = base >= input_len - 1  # tau clipped to n-1: exactly the last value
    lower = jnp.clip(base, 0, input_len - 1)
    upper = jnp.clip(base + 1, 0, input_len - 1)
    return lower, upper, jnp.where(past_end, 0.0, fraction)


def plan_time_warp(params: TimeWarpFault, ctx: FaultContext, *, stretch: bool) -> TimeWarpPlan:
    """Resolve a time-warp fault to source positions (done once per window, before applying)."""
    lower, upper, fraction = time_warp_positions(params.severity_units, params.start, ctx.input_len,
                                                 stretch=stretch)
    return TimeWarpPlan(params.severity_units, params.selected, params.start, lower, upper, fraction)


def plan_time_stretch(params: TimeWarpFault, ctx: FaultContext) -> TimeWarpPlan:
    """`plan_time_warp` for TimeStretch."""
    return plan_time_warp(params, ctx, stretch=True)


def plan_time_compress(params: TimeWarpFault, ctx: FaultContext) -> TimeWarpPlan:
    """`plan_time_warp` for TimeCompress."""
    return plan_time_warp(params, ctx, stretch=False)


def apply_time_warp(x: Window, plan: TimeWarpPlan, ctx: FaultContext) -> FaultedWindow:
    """Replace steps `a .. a+D-1` of the selected channels by the channel linearly interpolated between
    the planned source steps (row gathers: the same source step for every channel)."""
    duration = time_warp_duration(ctx.input_len)
    x_lower, x_upper = x[plan.lower], x[plan.upper]
    resampled = x_lower + (x_upper - x_lower) * plan.fraction[:, None]
    segment = jax.lax.dynamic_slice_in_dim(x, plan.start, duration, axis=0)
    segment = jnp.where(plan.selected[None, :], resampled, segment)
    return jax.lax.dynamic_update_slice_in_dim(x, segment, plan.start, axis=0)


def apply_stuck_sensor(x: Window, params: StuckFault, ctx: FaultContext) -> FaultedWindow:
    """Hold `x[a_j - 1, j]` for `L = ceil(s (n-1))` steps from `a_j` on each selected channel."""
    duration = stuck_duration(params.severity_units, ctx.input_len)
    steps = jnp.arange(ctx.input_len, dtype=jnp.int32)[:, None]
    held = jnp.take_along_axis(x, (params.starts - 1)[None, :], axis=0)  # (1, m)
    inside = (steps >= params.starts[None, :]) & (steps < params.starts[None, :] + duration)
    return jnp.where(inside & params.selected[None, :], held, x)


def apply_missing_data(x: Window, params: MissingFault, ctx: FaultContext) -> FaultedWindow:
    """Forward-fill a gap of `L = ceil(0.5 s (n-1))` steps from `a` on all channels."""
    duration = missing_duration(params.severity_units, ctx.input_len)
    steps = jnp.arange(ctx.input_len, dtype=jnp.int32)
    inside = (steps >= params.start) & (steps < params.start + duration)
    last_seen = jax.lax.dynamic_index_in_dim(x, params.start - 1, axis=0, keepdims=True)
    return jnp.where(inside[:, None], last_seen, x)


# ----------------------------------------------------------------------------------------------
# JAX-mode samplers: (stream words, ctx, severity units or None) -> params


def draw_selection(words: jax.Array, units: jax.Array, ctx: FaultContext) -> jax.Array:
    """The k(s) faulted channels: a uniformly random subset of the pool, as a bool mask `(m,)`."""
    count = channel_count(units, pool_size=ctx.pool_size, max_fraction=ctx.max_channel_fraction,
                          channel_fraction=ctx.channel_fraction)
    keys = distinct_keys(stream_bits(words, CHANNEL_KEY_OFFSET, (ctx.pool_size,)))
    return pool_to_channels(smallest_k_mask(keys, count), ctx, fill=False)


def sample_channel_fault(words: StreamWords, ctx: FaultContext, units: jax.Array | None = None) -> ChannelFault:
    """Drift / attenuation parameters."""
    units = severity_or_draw(words, units)
    return ChannelFault(units, draw_selection(words, units, ctx))


def sample_noise(words: StreamWords, ctx: FaultContext, units: jax.Array | None = None) -> NoiseDraw:
    """Noise parameters: severity, channels and the stream the normals are expanded from."""
    units = severity_or_draw(words, units)
    return NoiseDraw(units, draw_selection(words, units, ctx), words)


def sample_spike(words: StreamWords, ctx: FaultContext, units: jax.Array | None = None) -> SpikeFault:
    """Spike parameters: a position in [1, n-1] per channel."""
    units = severity_or_draw(words, units)
    bits = stream_bits(words, POSITION_OFFSET, (ctx.num_channels,))
    return SpikeFault(units, draw_selection(words, units, ctx), bits_to_int(bits, 1, ctx.input_len))


def sample_time_warp(words: StreamWords, ctx: FaultContext, units: jax.Array | None = None) -> TimeWarpFault:
    """TimeStretch / TimeCompress parameters: one start in [1, n-D]."""
    units = severity_or_draw(words, units)
    high = ctx.input_len - time_warp_duration(ctx.input_len) + 1
    start = bits_to_int(stream_bits(words, START_OFFSET, ()), 1, high)
    return TimeWarpFault(units, draw_selection(words, units, ctx), start)


def sample_stuck_sensor(words: StreamWords, ctx: FaultContext, units: jax.Array | None = None) -> StuckFault:
    """StuckSensor parameters: a start in [1, n-L] per channel."""
    units = severity_or_draw(words, units)
    duration = stuck_duration(units, ctx.input_len)
    bits = stream_bits(words, POSITION_OFFSET, (ctx.num_channels,))
    starts = bits_to_int(bits, 1, ctx.input_len - duration + 1)
    return StuckFault(units, draw_selection(words, units, ctx), starts)


def sample_missing_data(words: StreamWords, ctx: FaultContext, units: jax.Array | None = None) -> MissingFault:
    """MissingData parameters: one start in [1, n-L]."""
    units = severity_or_draw(words, units)
    duration = missing_duration(units, ctx.input_len)
    start = bits_to_int(stream_bits(words, START_OFFSET, ()), 1, ctx.input_len - duration + 1)
    return MissingFault(units, start)
