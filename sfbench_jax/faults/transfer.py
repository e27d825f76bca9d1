"""The seven training-only transfer families of fault augmentation (protocol 2.3).

Same machinery as the scored scenarios (severity -> k(s) channels of the pool -> own draws), with the
augmentation's channel fraction in `FaultContext.max_channel_fraction`. These never enter evaluation.
`t = 0..n-1` and `T = max(n - 1, 1)`.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp

from sfbench_jax.faults.context import FaultContext, FaultedWindow, StreamWords, Window
from sfbench_jax.faults.scored import ChannelFault, draw_selection
from sfbench_jax.faults.severity import severity_or_draw, units_to_severity
from sfbench_jax.faults.streams import POSITION_OFFSET, UNIFORM_OFFSET, bits_to_int, stream_bits

PACKET_START_MAX = 0.25
PACKET_CONTINUE_MAX = 0.9


class PacketLossFault(NamedTuple):
    """Packet loss: per channel an anchor step and one uniform per step for the burst chain."""

    severity_units: jax.Array
    selected: jax.Array  # bool (m,)
    anchors: jax.Array  # int32 (m,) in [1, n-1]
    uniforms: jax.Array  # float32 (n, m) in [0, 1)


def _ramp(ctx: FaultContext) -> jax.Array:
    """`t / T` for t = 0..n-1, as a column `(n, 1)`."""
    return (jnp.arange(ctx.input_len, dtype=jnp.float32) / max(ctx.input_len - 1, 1))[:, None]


def apply_linear_drift(x: Window, params: ChannelFault, ctx: FaultContext) -> FaultedWindow:
    """`x + s t / T`: a ramp from 0 to s at the last step."""
    s = units_to_severity(params.severity_units)
    return jnp.where(params.selected[None, :], x + s * _ramp(ctx), x)


def apply_nonlinear_drift(x: Window, params: ChannelFault, ctx: FaultContext) -> FaultedWindow:
    """`x + 0.5 s t/T + 0.5 s (t/T)**2`."""
    s = units_to_severity(params.severity_units)
    ramp = _ramp(ctx)
    return jnp.where(params.selected[None, :], x + 0.5 * s * ramp + 0.5 * s * ramp * ramp, x)


def apply_scaling(x: Window, params: ChannelFault, ctx: FaultContext) -> FaultedWindow:
    """`(1 + s) x`."""
    del ctx
    s = units_to_severity(params.severity_units)
    return jnp.where(params.selected[None, :], (1.0 + s) * x, x)


def apply_time_varying_scaling(x: Window, params: ChannelFault, ctx: FaultContext) -> FaultedWindow:
    """`x (1 + s t / T)`."""
    s = units_to_severity(params.severity_units)
    return jnp.where(params.selected[None, :], x * (1.0 + s * _ramp(ctx)), x)


def apply_trimming_constant(x: Window, params: ChannelFault, ctx: FaultContext) -> FaultedWindow:
    """Clip to `[-b, b]` with `b = 3 - 2 s` (standardised units)."""
    del ctx
    bound = 3.0 - 2.0 * units_to_severity(params.severity_units)
    return jnp.where(params.selected[None, :], jnp.clip(x, -bound, bound), x)


def apply_trimming_varying(x: Window, params: ChannelFault, ctx: FaultContext) -> FaultedWindow:
    """Compress beyond `+-b` by the factor `d = 1 - 0.4 s` (`b = 3 - 2 s`)."""
    del ctx
    s = units_to_severity(params.severity_units)
    bound = 3.0 - 2.0 * s
    damping = 1.0 - 0.4 * s
    trimmed = jnp.where(x < -bound, -bound + (x + bound) * damping,
                        jnp.where(x > bound, bound + (x - bound) * damping, x))
    return jnp.where(params.selected[None, :], trimmed, x)


def packet_loss_bursts(anchors: jax.Array, uniforms: jax.Array, *, start_probability: jax.Array,
                       continue_probability: jax.Array) -> jax.Array:
    """Burst indicator `(n, m)` of the packet-loss chain (step 0 is never in a burst).

    At the anchor step the chain enters a burst without a draw; elsewhere it stays in (enters) a burst
    when the step's uniform is below the continue (start) probability.
    """
    n = uniforms.shape[0]

    def step(in_burst: jax.Array, inputs: tuple[jax.Array, jax.Array]) -> tuple[jax.Array, jax.Array]:
        position, uniform = inputs
        probability = jnp.where(in_burst, continue_probability, start_probability)
        now = jnp.where(position == anchors, True, uniform < probability)
        return now, now

    positions = jnp.arange(1, n, dtype=jnp.int32)
    _, bursts = jax.lax.scan(step, jnp.zeros(anchors.shape, bool), (positions, uniforms[1:]))
    return jnp.concatenate([jnp.zeros((1, anchors.shape[0]), bool), bursts], axis=0)


def apply_packet_loss(x: Window, params: PacketLossFault, ctx: FaultContext) -> FaultedWindow:
    """Forward-fill burst steps from the last step outside a burst (cascading fill)."""
    s = units_to_severity(params.severity_units)
    bursts = packet_loss_bursts(params.anchors, params.uniforms,
                                start_probability=PACKET_START_MAX * s,
                                continue_probability=PACKET_CONTINUE_MAX * s)
    bursts = bursts & params.selected[None, :]
    steps = jnp.arange(ctx.input_len, dtype=jnp.int32)[:, None]
    source = jax.lax.cummax(jnp.where(bursts, 0, steps), axis=0)
    return jnp.take_along_axis(x, source, axis=0)


def sample_transfer_channels(words: StreamWords, ctx: FaultContext,
                             units: jax.Array | None = None) -> ChannelFault:
    """Severity and channels for the six channel-only families."""
    units = severity_or_draw(words, units)
    return ChannelFault(units, draw_selection(words, units, ctx))


def sample_packet_loss(words: StreamWords, ctx: FaultContext,
                       units: jax.Array | None = None) -> PacketLossFault:
    """Packet-loss parameters: anchors in [1, n-1] and one uniform per (step, channel)."""
    units = severity_or_draw(words, units)
    anchors = bits_to_int(stream_bits(words, POSITION_OFFSET, (ctx.num_channels,)), 1, ctx.input_len)
    bits = stream_bits(words, UNIFORM_OFFSET, (ctx.input_len, ctx.num_channels))
    uniforms = (bits >> 8).astype(jnp.float32) * jnp.float32(2.0 ** -24)
    return PacketLossFault(units, draw_selection(words, units, ctx), anchors, uniforms)
