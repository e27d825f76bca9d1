"""Every scored scenario's apply function (under jit) against the independent NumPy implementation."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from sfbench_jax.faults import FaultContext, scored
from sfbench_jax.faults.severity import SEVERITY_ONE

from . import numpy_faults as ref

N, M = 96, 12
CTX = FaultContext(input_len=N, num_channels=M, pool=tuple(range(11)))


def _window(seed: int) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((N, M)).astype(np.float32)


def _case(seed: int) -> tuple[np.ndarray, int, float, list[int]]:
    rng = np.random.default_rng(1000 + seed)
    units = int(rng.integers(1, SEVERITY_ONE))
    channels = [int(c) for c in rng.permutation(11)[: int(rng.integers(1, 7))]]
    return _window(seed), units, units / SEVERITY_ONE, channels


def _mask(channels: list[int]) -> np.ndarray:
    mask = np.zeros(M, bool)
    mask[channels] = True
    return mask


def _apply(fn, x, params):
    return np.asarray(jax.jit(lambda x, p: fn(x, p, CTX))(jnp.asarray(x), params), np.float64)


VALUE_TOLERANCE = {"rtol": 0, "atol": 1e-6}


@pytest.mark.parametrize("seed", range(6))
def test_drift_and_attenuation(seed: int) -> None:
    x, units, s, channels = _case(seed)
    params = scored.ChannelFault(jnp.int32(units), jnp.asarray(_mask(channels)))
    np.testing.assert_allclose(_apply(scored.apply_drift, x, params), ref.drift(x, s, channels), **VALUE_TOLERANCE)
    np.testing.assert_allclose(_apply(scored.apply_attenuation, x, params), ref.attenuation(x, s, channels),
                               **VALUE_TOLERANCE)


@pytest.mark.parametrize("seed", range(6))
def test_noise(seed: int) -> None:
    x, units, s, channels = _case(seed)
    z = np.random.default_rng(seed).standard_normal((N, len(channels))).astype(np.float32)
    full = np.zeros((N, M), np.float32)
    full[:, channels] = z
    params = scored.NoiseFault(jnp.int32(units), jnp.asarray(_mask(channels)), jnp.asarray(full))
    np.testing.assert_allclose(_apply(scored.apply_noise, x, params), ref.noise(x, s, channels, z),
                               **VALUE_TOLERANCE)


@pytest.mark.parametrize("seed", range(6))
def test_spike(seed: int) -> None:
    x, units, s, channels = _case(seed)
    positions = np.random.default_rng(seed).integers(1, N, size=M).astype(np.int32)
    params = scored.SpikeFault(jnp.int32(units), jnp.asarray(_mask(channels)), jnp.asarray(positions))
    expected = ref.spike(x, s, channels, [int(positions[j]) for j in channels])
    np.testing.assert_allclose(_apply(scored.apply_spike, x, params), expected, **VALUE_TOLERANCE)


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("kind", ["time_stretch", "time_compress"])
def test_time_warps(seed: int, kind: str) -> None:
    x, units, s, channels = _case(seed)
    if seed == 0:
        units, s = SEVERITY_ONE - 1, (SEVERITY_ONE - 1) / SEVERITY_ONE  # strongest rate
    start = 1 + seed * 47 // 7 if seed < 8 else 1  # covers a = 1 ... 48
    rate = 1.0 + 4.0 * s if kind == "time_stretch" else 1.0 + s * (0.1 - 1.0)
    params = scored.TimeWarpFault(jnp.int32(units), jnp.asarray(_mask(channels)), jnp.int32(start))
    plan = scored.plan_time_stretch if kind == "time_stretch" else scored.plan_time_compress
    fn = lambda x, p, ctx: scored.apply_time_warp(x, plan(p, ctx), ctx)
    np.testing.assert_allclose(_apply(fn, x, params), ref.time_warp(x, rate, start, channels), rtol=0,
                               atol=2e-6)


@pytest.mark.parametrize("seed", range(6))
def test_stuck_sensor(seed: int) -> None:
    x, units, s, channels = _case(seed)
    if seed == 0:
        units, s = SEVERITY_ONE, 1.0  # the longest hold, L = n - 1
    length = math.ceil(s * (N - 1))
    starts = np.random.default_rng(seed).integers(1, N - length + 1, size=M).astype(np.int32)
    params = scored.StuckFault(jnp.int32(units), jnp.asarray(_mask(channels)), jnp.asarray(starts))
    expected = ref.stuck(x, s, channels, [int(starts[j]) for j in channels])
    np.testing.assert_array_equal(_apply(scored.apply_stuck_sensor, x, params), expected)


@pytest.mark.parametrize("seed", range(6))
def test_missing_data(seed: int) -> None:
    x, units, s, _ = _case(seed)
    length = math.ceil(s * 0.5 * (N - 1))
    start = int(np.random.default_rng(seed).integers(1, N - length + 1))
    params = scored.MissingFault(jnp.int32(units), jnp.int32(start))
    np.testing.assert_array_equal(_apply(scored.apply_missing_data, x, params), ref.missing(x, s, start))


@pytest.mark.parametrize("stretch", [True, False])
def test_time_warp_positions_are_exact(stretch: bool) -> None:
    units = np.array([1, 7, 12345, 2**22 + 3, 2**23, SEVERITY_ONE - 1, SEVERITY_ONE], np.int32)
    for u in units:
        s = u / SEVERITY_ONE
        rate = 1.0 + 4.0 * s if stretch else 1.0 + s * (0.1 - 1.0)
        for start in (1, 20, 48):
            lower, upper, fraction = jax.device_get(
                scored.time_warp_positions(jnp.int32(u), jnp.int32(start), N, stretch=stretch))
            assert len(lower) == 48
            for i in range(48):
                tau = min((start - 1) + (i + 1) / rate, N - 1.0)
                assert 0.0 <= fraction[i] < 1.0 and upper[i] == min(lower[i] + 1, N - 1)
                assert abs((lower[i] + fraction[i]) - tau) < 3e-7 * max(1.0, tau)


def test_parameter_maps_equal_float32_of_double() -> None:
    units = np.array([0, 1, 3, 12345, 2**23 + 7, SEVERITY_ONE - 1, SEVERITY_ONE], np.int32)
    s = units.astype(np.float64) / SEVERITY_ONE
    u = jnp.asarray(units)
    np.testing.assert_array_equal(np.asarray(scored.drift_offset(u)), (0.75 * s).astype(np.float32))
    np.testing.assert_array_equal(np.asarray(scored.attenuation_factor(u)),
                                  (1.0 + s * (0.25 - 1.0)).astype(np.float32))
    np.testing.assert_array_equal(np.asarray(scored.spike_magnitude(u)), (7.5 * s).astype(np.float32))
    np.testing.assert_array_equal(np.asarray(scored.stuck_duration(u, N)), np.ceil(s * (N - 1)).astype(int))
    np.testing.assert_array_equal(np.asarray(scored.missing_duration(u, N)),
                                  np.ceil(s * 0.5 * (N - 1)).astype(int))
