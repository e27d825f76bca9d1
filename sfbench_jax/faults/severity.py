"""Severity model shared by every fault (protocol 2.1).

Severities live on the reference's 24-bit grid: `s = j / 2**24` with integer *severity units*
`j in [0, 2**24]` (`j = 2**24` is s = 1, which evaluation never draws). Working in units keeps the
channel-count rule and the durations exactly equal to the reference's double-precision arithmetic
without 64-bit floats on the device.

A fault's severity is drawn here too: the first draw of its (scenario, window) stream (`draw_severity_units`), or
the fixed severity a severity curve asks for (`severity_or_draw`).
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np

from sfbench_jax.faults.streams import SEVERITY_OFFSET, stream_bits

SEVERITY_BITS = 24
SEVERITY_ONE = 1 << SEVERITY_BITS  # units of s = 1
DEFAULT_CHANNEL_FRACTION = 0.5  # gamma = PERTURBATION_CHANNEL_FRACTION_MAX


def severity_to_units(severity: float | np.ndarray) -> np.ndarray | np.int32:
    """Host-side: severities in [0, 1] -> int32 units (rounded to the 24-bit grid).

    Raises:
        ValueError: a severity outside [0, 1] or not finite.
    """
    values = np.asarray(severity, dtype=np.float64)
    if not np.all(np.isfinite(values)) or np.any(values < 0.0) or np.any(values > 1.0):
        raise ValueError(f"Severity must lie in [0, 1]; got {severity!r}. Severity 0 is the clean input "
                         "and 1 the strongest fault.")
    return np.rint(values * SEVERITY_ONE).astype(np.int32)


def units_to_severity(units: jax.Array) -> jax.Array:
    """Units -> float32 severity `j / 2**24` (exact)."""
    severity: jax.Array = units.astype(jnp.float32) * jnp.float32(1.0 / SEVERITY_ONE)
    return severity


def draw_severity_units(words: jax.Array) -> jax.Array:
    """The first draw of a stream: a 24-bit severity `j` (s = j / 2**24 in [0, 1))."""
    return (stream_bits(words, SEVERITY_OFFSET, ()) >> 8).astype(jnp.int32)


def severity_or_draw(words: jax.Array, units: jax.Array | None) -> jax.Array:
    """A sampler's severity units: `units` when given (a severity curve's fixed severity), else drawn from `words`."""
    return draw_severity_units(words) if units is None else jnp.asarray(units, jnp.int32)


def scaled_units(units: jax.Array, numerator: int, shift_bits: int) -> jax.Array:
    """`float32(numerator * j / 2**shift_bits)` rounded once, i.e. exactly as float32(double product).

    Used for parameter maps whose slope is a dyadic rational (0.75 = 3/4, 7.5 = 15/2, 4), so the
    float32 parameter equals the reference's double value rounded to float32.
    """
    product = units.astype(jnp.int32) * jnp.int32(numerator)
    scaled: jax.Array = product.astype(jnp.float32) * jnp.float32(2.0 ** -shift_bits)
    return scaled


def _floor_product(units: jax.Array, factor: int, shift_bits: int) -> tuple[jax.Array, jax.Array]:
    """Exact `floor(j * factor / 2**shift_bits)` and whether the division left a remainder.

    `j <= 2**24` and `factor < 2**18` keep every intermediate inside int32.
    """
    if factor < 0 or factor >= 1 << 18:
        raise ValueError(f"factor {factor} outside [0, 2**18)")
    low_bits = 12
    high = units >> low_bits
    low = units & ((1 << low_bits) - 1)
    carry = high * factor + ((low * factor) >> low_bits)
    remaining = shift_bits - low_bits
    quotient = carry >> remaining
    has_remainder = ((carry & ((1 << remaining) - 1)) != 0) | (((low * factor) & ((1 << low_bits) - 1)) != 0)
    return quotient, has_remainder


def ceil_duration(units: jax.Array, *, span: int, half: bool = False) -> jax.Array:
    """`ceil(s * span)` (or `ceil(s * 0.5 * span)` with `half`), exact for grid severities."""
    quotient, has_remainder = _floor_product(units.astype(jnp.int32), span,
                                             SEVERITY_BITS + (1 if half else 0))
    return quotient + has_remainder.astype(jnp.int32)


def max_channel_count(pool_size: int, *, max_fraction: float = DEFAULT_CHANNEL_FRACTION) -> int:
    """`k_max = ceil(max_fraction * M)` (0 for an empty pool)."""
    return 0 if pool_size == 0 else math.ceil(max_fraction * pool_size)


def channel_count(units: jax.Array, *, pool_size: int, max_fraction: float = DEFAULT_CHANNEL_FRACTION,
                  channel_fraction: float | None = None) -> jax.Array:
    """Number of faulted channels k(s) (protocol 2.1).

    Severity mode: `0` if s = 0 or M = 0, `k_max` if s = 1, else `1 + floor(s (k_max - 1))`.
    Fixed-fraction mode: `ceil(q M)` for s > 0, else 0.

    Args:
        units: int32 severity units (any shape).
        pool_size: size M of the channel pool.
        max_fraction: gamma of the severity rule.
        channel_fraction: q of the fixed-fraction sensitivity variant, or None.
    """
    units = jnp.asarray(units, jnp.int32)
    if pool_size == 0:
        return jnp.zeros_like(units)
    if channel_fraction is not None:
        return jnp.where(units > 0, jnp.int32(math.ceil(channel_fraction * pool_size)), 0)
    k_max = max_channel_count(pool_size, max_fraction=max_fraction)
    floor_part, _ = _floor_product(units, k_max - 1, SEVERITY_BITS)
    count = 1 + floor_part
    count = jnp.where(units >= SEVERITY_ONE, k_max, count)
    return jnp.where(units <= 0, 0, count).astype(jnp.int32)


def largest_channel_count(pool_size: int, *, max_fraction: float = DEFAULT_CHANNEL_FRACTION,
                          channel_fraction: float | None = None) -> int:
    """The largest k(s) any severity can produce (static; sizes fixed-shape buffers)."""
    if pool_size == 0:
        return 0
    if channel_fraction is not None:
        return min(pool_size, math.ceil(channel_fraction * pool_size))
    return max_channel_count(pool_size, max_fraction=max_fraction)
