"""Fixed-shape channel subsets: pick exactly k of the pool's channels uniformly at random.

Sorting per window is the obvious way and is slow on CPU for Traffic (862 channels x 80,000 windows).
Instead each pool channel gets a uniform 32-bit key and the k channels with the smallest keys are
selected: a 32-step bitwise search finds the k-th smallest key, ties broken by channel index.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from sfbench_jax.faults.context import FaultContext


def smallest_k_mask(keys: jax.Array, count: jax.Array) -> jax.Array:
    """Boolean mask of the `count` smallest uint32 `keys` (ties broken by lower index).

    Args:
        keys: uint32 `(M,)`.
        count: int32 scalar in `[0, M]`.
    """
    threshold = jnp.uint32(0)
    for bit in range(31, -1, -1):  # static unroll: the k-th smallest key, most significant bit first
        candidate = threshold | jnp.uint32(1 << bit)
        below = jnp.sum(keys < candidate, dtype=jnp.int32)
        threshold = jnp.where(below < count, candidate, threshold)
    strictly_below = keys < threshold
    ties = keys == threshold
    tie_rank = jnp.cumsum(ties, dtype=jnp.int32) - ties.astype(jnp.int32)
    needed = count - jnp.sum(strictly_below, dtype=jnp.int32)
    return strictly_below | (ties & (tie_rank < needed))


def pool_to_channels(pool_values: jax.Array, ctx: FaultContext, fill: bool | int = False) -> jax.Array:
    """Scatter a per-pool-channel array `(M, ...)` onto all `m` channels (others get `fill`)."""
    if ctx.pool_is_all_channels:
        return pool_values
    shape = (ctx.num_channels, *pool_values.shape[1:])
    base = jnp.full(shape, fill, dtype=pool_values.dtype)
    return base.at[jnp.asarray(ctx.pool)].set(pool_values)
