"""Small shared jittable array helpers used by several kernel families (no kernel logic)."""

from __future__ import annotations

import jax
import jax.numpy as jnp


def masked_median(values: jax.Array, mask: jax.Array, axis: int = -1) -> jax.Array:
    """Median of ``values`` where ``mask`` is True along ``axis`` (NaN if nothing is valid).

    One sort with invalid entries pushed to +inf, then the middle one or two valid order
    statistics; much faster under jit/vmap than ``jnp.nanmedian``.
    """
    filled = jnp.where(mask, values, jnp.inf)
    ordered = jnp.sort(filled, axis=axis)
    count = jnp.sum(mask, axis=axis, keepdims=True)
    low = jnp.take_along_axis(ordered, jnp.maximum((count - 1) // 2, 0), axis=axis)
    high = jnp.take_along_axis(ordered, jnp.maximum(count // 2, 0), axis=axis)
    # take_along_axis with an out-of-range index cannot happen: count // 2 <= size - 1 unless
    # count == size == 0, which the where below covers.
    median = jnp.squeeze(0.5 * (low + high), axis=axis)
    return jnp.where(jnp.squeeze(count, axis=axis) > 0, median, jnp.nan)


def guard(valid: jax.Array, value: jax.Array) -> jax.Array:
    """Second line of defence inside jitted cores: NaN (floats) or -1 (int codes) where invalid.

    Public kernels reject bad input eagerly; cores called directly under jit/vmap cannot raise,
    so they mark results computed from impossible inputs instead of returning plausible numbers.
    """
    value = jnp.asarray(value)
    if jnp.issubdtype(value.dtype, jnp.floating):
        return jnp.where(valid, value, jnp.nan)
    if jnp.issubdtype(value.dtype, jnp.integer):
        return jnp.where(valid, value, -1).astype(value.dtype)
    return jnp.where(valid, value, False)
