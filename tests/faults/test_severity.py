"""Severity units, the channel-count rule (protocol 2.1 values) and exactness against double precision."""

from __future__ import annotations

import math

import jax.numpy as jnp
import numpy as np
import pytest

from sfbench_jax.faults import channel_count, severity_to_units
from sfbench_jax.faults.severity import SEVERITY_ONE, ceil_duration, max_channel_count

POOLS = {"beijing_air_tiantan": 11, "penmanshiel_wt08": 65, "etth1": 7, "traffic": 862}


@pytest.mark.parametrize(("pool", "k_max"), [(11, 6), (65, 33), (7, 4), (862, 431), (1, 1)])
def test_k_max_values(pool: int, k_max: int) -> None:
    assert max_channel_count(pool) == k_max


@pytest.mark.parametrize(("pool", "q", "expected"), [
    (11, 0.25, 3), (65, 0.25, 17), (7, 0.25, 2), (862, 0.25, 216),
    (11, 0.5, 6), (65, 0.5, 33), (7, 0.5, 4), (862, 0.5, 431)])
def test_fixed_fraction_counts(pool: int, q: float, expected: int) -> None:
    counts = np.asarray(channel_count(jnp.asarray([0, 1, SEVERITY_ONE // 2, SEVERITY_ONE - 1]),
                                      pool_size=pool, channel_fraction=q))
    np.testing.assert_array_equal(counts, [0, expected, expected, expected])


def _reference_count(s: float, pool: int) -> int:
    k_max = math.ceil(0.5 * pool)
    if s == 0.0:
        return 0
    if s == 1.0:
        return k_max
    return 1 + math.floor(s * (k_max - 1))


@pytest.mark.parametrize("pool", sorted(POOLS.values()) + [1, 2, 3])
def test_channel_count_matches_double_precision_rule(pool: int) -> None:
    k_max = max_channel_count(pool)
    rng = np.random.default_rng(pool)
    units = list(rng.integers(0, SEVERITY_ONE, size=2000))
    for i in range(1, k_max):  # both sides of every step of the rule
        edge = math.ceil(i * SEVERITY_ONE / max(k_max - 1, 1))
        units += [edge - 1, edge, edge + 1]
    units = np.clip(np.asarray(units + [0, 1, SEVERITY_ONE - 1, SEVERITY_ONE]), 0, SEVERITY_ONE)
    got = np.asarray(channel_count(jnp.asarray(units, jnp.int32), pool_size=pool))
    expected = [_reference_count(u / SEVERITY_ONE, pool) for u in units]
    np.testing.assert_array_equal(got, expected)


def test_channel_count_documented_examples() -> None:
    # Beijing k = 1 + floor(5 s); traffic 1 + floor(430 s)
    s = np.array([0.0, 0.1, 0.25, 0.5, 0.99, 1.0])
    np.testing.assert_array_equal(np.asarray(channel_count(jnp.asarray(severity_to_units(s)), pool_size=11)),
                                  [0, 1, 2, 3, 5, 6])
    np.testing.assert_array_equal(np.asarray(channel_count(jnp.asarray(severity_to_units(s)), pool_size=862)),
                                  [0, 44, 108, 216, 426, 431])


@pytest.mark.parametrize("span", [95, 47, 1, 7])
def test_ceil_durations_exact(span: int) -> None:
    units = np.concatenate([np.random.default_rng(span).integers(0, SEVERITY_ONE, 3000),
                            [0, 1, SEVERITY_ONE - 1, SEVERITY_ONE]]).astype(np.int32)
    s = units / SEVERITY_ONE
    np.testing.assert_array_equal(np.asarray(ceil_duration(jnp.asarray(units), span=span)),
                                  np.ceil(s * span))
    np.testing.assert_array_equal(np.asarray(ceil_duration(jnp.asarray(units), span=span, half=True)),
                                  np.ceil(s * 0.5 * span))


@pytest.mark.parametrize("bad", [-0.1, 1.5, float("nan"), float("inf")])
def test_severity_outside_unit_interval_is_rejected(bad: float) -> None:
    with pytest.raises(ValueError, match=r"Severity must lie in \[0, 1\]"):
        severity_to_units(bad)
