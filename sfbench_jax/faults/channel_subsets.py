"""Fixed-shape channel subsets: pick exactly k of the pool's channels uniformly at random.

Sorting per window is the obvious way and is slow on CPU for Traffic (862 channels x 80,000 windows).
Instead each pool channel gets a distinct 32-bit key (random high bits, the channel's pool index in the
low bits, so keys never tie) and the k channels with the smallest keys are selected: a 32-step bitwise
search finds the k-th smallest key. The subset is uniform up to ties among the random high bits
(probability below 1e-4 per window for Traffic's 862 channels, and then only the order of two channels
with equal random bits is decided by index).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from sfbench_jax.faults.context import FaultContext


def distinct_keys(bits: jax.Array) -> jax.Array:
    """Make per-channel uint32 draws `(M,)` distinct: random high bits, channel index in the low bits."""
    size = bits.shape[-1]
    index_bits = max(1, (size - 1).bit_length())
    high = bits >> index_bits << index_bits
    return high | jnp.arange(size, dtype=jnp.uint32)


def smallest_k_mask(keys: jax.Array, count: jax.Array) -> jax.Array:
    """Boolean mask of the `count` smallest of the distinct uint32 `keys` `(M,)`.

    Args:
        keys: distinct uint32 keys `(M,)` (see `distinct_keys`).
        count: int32 scalar in `[0, M]`.
    """
    def refine(bit: jax.Array, threshold: jax.Array) -> jax.Array:
        candidate = threshold | (jnp.uint32(1) << (31 - bit).astype(jnp.uint32))
        below = jnp.sum(keys < candidate, dtype=jnp.int32)
        return jnp.where(below < count, candidate, threshold)

    # the largest value with fewer than `count` keys below it is the count-th smallest key
    zero = keys[0] & jnp.uint32(0)  # derived from keys so it carries their sharding type
    threshold = jax.lax.fori_loop(0, 32, refine, zero)
    selected = (keys <= threshold) & (count > 0)
    # materialise the mask: otherwise XLA fuses this search into every (time, channel) element of the
    # consumers and repeats it n times per window
    materialised: jax.Array = jax.lax.optimization_barrier(selected)
    return materialised


def pool_to_channels(pool_values: jax.Array, ctx: FaultContext, fill: bool | int = False) -> jax.Array:
    """Scatter a per-pool-channel array `(M, ...)` onto all `m` channels (others get `fill`)."""
    if ctx.pool_is_all_channels:
        return pool_values
    shape = (ctx.num_channels, *pool_values.shape[1:])
    base = jnp.full(shape, fill, dtype=pool_values.dtype)
    return base.at[jnp.asarray(ctx.pool)].set(pool_values)
