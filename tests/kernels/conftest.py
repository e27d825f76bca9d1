"""Fixtures for the PHM kernel tests.

Kernel tests run in float64 (``jax.enable_x64`` as a context, so the flag is restored for the rest
of the suite) and share a helper asserting that a jitted core gives the same result batched with
``jax.vmap`` as item by item.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import jax
import numpy as np
import pytest


@pytest.fixture(autouse=True)
def _float64():
    """Runs every kernel test with jax_enable_x64 on, restoring the previous value after."""
    with jax.enable_x64(True):
        yield


def assert_vmap_matches_loop(core: Callable, batched_args: Sequence, *, in_axes=0,
                             rtol: float = 1e-12, atol: float = 0.0, **static):
    """Asserts ``jit(vmap(core))(batch)`` equals ``core(item)`` for every item of the batch.

    Args:
        core: A jitted ``*_core`` kernel.
        batched_args: Positional arguments; those mapped by ``in_axes`` carry a leading batch axis.
        in_axes: ``jax.vmap`` in_axes (int or tuple with None for broadcast arguments).
        rtol: Relative tolerance.
        atol: Absolute tolerance.
        **static: Keyword (static) arguments passed to every call.

    Returns:
        The batched result, for further assertions.
    """
    axes = in_axes if isinstance(in_axes, tuple) else (in_axes,) * len(batched_args)
    batched = jax.jit(jax.vmap(lambda *a: core(*a, **static), in_axes=axes))(*batched_args)
    size = next(np.shape(a)[0] for a, ax in zip(batched_args, axes, strict=True) if ax is not None)
    for i in range(size):
        item_args = [a if ax is None else np.asarray(a)[i] for a, ax in zip(batched_args, axes, strict=True)]
        single = core(*item_args, **static)
        for got, want in zip(jax.tree.leaves(batched), jax.tree.leaves(single), strict=True):
            np.testing.assert_allclose(np.asarray(got)[i], np.asarray(want), rtol=rtol, atol=atol)
    return batched


@pytest.fixture
def vmap_check() -> Callable:
    """The :func:`assert_vmap_matches_loop` helper as a fixture (test modules import nothing)."""
    return assert_vmap_matches_loop
