"""The JAX-mode samplers: identity at s = 0, the drawn parameters obey the scenario laws, channel
subsets are uniform, and the one-window API validates its input."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from sfbench_jax.faults import (
    SCENARIOS,
    TRANSFER_FAMILIES,
    FaultContext,
    channel_count,
    get_fault,
    perturb,
)
from sfbench_jax.faults.channel_subsets import distinct_keys, smallest_k_mask
from sfbench_jax.faults.streams import pair_key, stream_words

N = 96
BEIJING = FaultContext(input_len=N, num_channels=12, pool=tuple(range(11)))


def _draw(fault_key: str, ctx: FaultContext, count: int, seed: int = 0):
    fault = get_fault(fault_key)
    base = jax.random.key(seed)
    words = jax.vmap(lambda w: stream_words(pair_key(base, fault.index, w)))(jnp.arange(count))
    return jax.device_get(jax.jit(jax.vmap(lambda w: fault.sample(w, ctx, None)))(words))


@pytest.mark.parametrize("fault", SCENARIOS + TRANSFER_FAMILIES, ids=lambda f: f.key)
def test_severity_zero_is_identity(fault) -> None:
    x = jnp.asarray(np.random.default_rng(0).standard_normal((N, 12)), jnp.float32)
    for seed in range(3):
        out = perturb(fault.key, x, rng_key=jax.random.key(seed), ctx=BEIJING, severity=0.0)
        np.testing.assert_array_equal(np.asarray(out), np.asarray(x))


@pytest.mark.parametrize("fault", SCENARIOS + TRANSFER_FAMILIES, ids=lambda f: f.key)
def test_positive_severity_changes_the_window(fault) -> None:
    x = jnp.asarray(np.random.default_rng(1).standard_normal((N, 12)), jnp.float32)
    out = perturb(fault.key, x, rng_key=jax.random.key(5), ctx=BEIJING, severity=0.9)
    assert not np.array_equal(np.asarray(out), np.asarray(x))


@pytest.mark.parametrize("key", ["drift", "attenuation", "noise", "spike", "time_stretch", "time_compress",
                                 "stuck_sensor"])
def test_channel_scoped_draws_select_k_pool_channels(key: str) -> None:
    params = _draw(key, BEIJING, 4000)
    counts = np.asarray(channel_count(jnp.asarray(params.severity_units), pool_size=11))
    np.testing.assert_array_equal(params.selected.sum(axis=1), counts)
    assert not params.selected[:, 11].any(), "the discrete channel wd must never be faulted"
    severity = params.severity_units / 2**24
    assert severity.min() >= 0.0 and severity.max() < 1.0
    assert abs(severity.mean() - 0.5) < 0.02  # U[0, 1)


def test_positions_and_starts_follow_their_ranges() -> None:
    spike = _draw("spike", BEIJING, 3000)
    assert spike.positions.min() == 1 and spike.positions.max() == N - 1
    warp = _draw("time_stretch", BEIJING, 3000)
    assert warp.start.min() == 1 and warp.start.max() == N - math.ceil(N / 2)
    stuck = _draw("stuck_sensor", BEIJING, 3000)
    length = np.ceil(stuck.severity_units / 2**24 * (N - 1)).astype(int)
    assert (stuck.starts >= 1).all() and (stuck.starts <= (N - length)[:, None]).all()
    missing = _draw("missing_data", BEIJING, 3000)
    length = np.ceil(missing.severity_units / 2**24 * 0.5 * (N - 1)).astype(int)
    assert (missing.start >= 1).all() and (missing.start <= N - length).all()


def test_noise_is_standard_normal() -> None:
    from sfbench_jax.faults.scored import noise_values

    draws = _draw("noise", BEIJING, 400)
    noise = np.asarray(jax.vmap(lambda p: noise_values(p, BEIJING))(draws)).ravel()
    assert abs(noise.mean()) < 0.01 and abs(noise.std() - 1.0) < 0.01
    assert np.isfinite(noise).all()
    assert abs(np.mean(np.abs(noise) > 1.96) - 0.05) < 0.003


def test_inverse_cdf_matches_float64_everywhere() -> None:
    """The normal transform against the float64 inverse normal CDF on every 97th of the 2**24 grid
    points and on the 64 most extreme ones at each end (the tails, where float32 loses most)."""
    from statistics import NormalDist

    from sfbench_jax.faults.streams import bits_to_normal

    top = np.concatenate([np.arange(64), np.arange(64, 2**24 - 64, 97), np.arange(2**24 - 64, 2**24)])
    z = np.asarray(jax.jit(bits_to_normal)(jnp.asarray(top.astype(np.uint32) << 8)), np.float64)
    inverse = np.vectorize(NormalDist().inv_cdf)
    exact = inverse((top + 0.5) / 2**24)
    np.testing.assert_allclose(z, exact, rtol=0, atol=2e-6)
    assert np.abs(z).max() < 5.5


def test_channel_subsets_are_uniform() -> None:
    ctx = FaultContext(input_len=N, num_channels=8, pool=tuple(range(8)))
    count = 40_000
    keys = jax.vmap(lambda w: distinct_keys(jax.random.bits(jax.random.fold_in(jax.random.key(3), w), (8,),
                                                            jnp.uint32)))(jnp.arange(count))
    masks = np.asarray(jax.jit(jax.vmap(lambda k: smallest_k_mask(k, jnp.int32(3))))(keys))
    assert (masks.sum(axis=1) == 3).all()
    frequency = masks.mean(axis=0)
    np.testing.assert_allclose(frequency, 3 / 8, atol=0.01)
    # pairs are uniform too (not just margins): P(i and j) = (3/8)(2/7)
    pair = (masks[:, 0] & masks[:, 7]).mean()
    assert abs(pair - 3 / 8 * 2 / 7) < 0.01
    assert ctx.max_count == 4


def test_smallest_k_mask_edge_counts() -> None:
    keys = distinct_keys(jax.random.bits(jax.random.key(0), (862,), jnp.uint32))
    for k in (0, 1, 431, 862):
        assert int(smallest_k_mask(keys, jnp.int32(k)).sum()) == k


def test_perturb_rejects_bad_input() -> None:
    x = jnp.zeros((N, 12))
    with pytest.raises(ValueError, match="Unknown fault scenario 'warp'.*drift, attenuation"):
        perturb("warp", x, rng_key=jax.random.key(0), ctx=BEIJING)
    with pytest.raises(ValueError, match=r"Severity must lie in \[0, 1\]"):
        perturb("drift", x, rng_key=jax.random.key(0), ctx=BEIJING, severity=1.2)
    with pytest.raises(ValueError, match="does not match the fault context"):
        perturb("drift", jnp.zeros((N, 5)), rng_key=jax.random.key(0), ctx=BEIJING)
    with pytest.raises(ValueError, match="pool"):
        FaultContext(input_len=N, num_channels=3, pool=(0, 5))


def test_same_key_same_fault_different_keys_differ() -> None:
    x = jnp.asarray(np.random.default_rng(2).standard_normal((N, 12)), jnp.float32)
    a = perturb("noise", x, rng_key=jax.random.key(7), ctx=BEIJING)
    b = perturb("noise", x, rng_key=jax.random.key(7), ctx=BEIJING)
    c = perturb("noise", x, rng_key=jax.random.key(8), ctx=BEIJING)
    np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    assert not np.array_equal(np.asarray(a), np.asarray(c))


@pytest.mark.parametrize(("pool", "fraction", "expected"), [(11, 0.25, 3), (11, 0.5, 6), (65, 0.25, 17)])
def test_fixed_fraction_variant_selects_ceil_q_m_channels(pool: int, fraction: float, expected: int) -> None:
    ctx = FaultContext(input_len=N, num_channels=pool + 1, pool=tuple(range(pool)), channel_fraction=fraction)
    for key in ("drift", "noise", "stuck_sensor"):
        params = _draw(key, ctx, 500, seed=3)
        counts = params.selected.sum(axis=1)
        np.testing.assert_array_equal(counts, np.where(params.severity_units > 0, expected, 0))


# ----------------------------------------------------------------------------------------------
# The exact joint laws of the drawn parameters (the reference's laws, protocol 2.1-2.2), by chi-square
# goodness of fit on 2**20 windows. Draws are seeded, so a pass is deterministic; a real deviation
# (a biased start, a duration that leaks into the start, correlated per-channel draws) gives a
# statistic thousands of standard deviations out.

LAW_DRAWS = 1 << 20


def _duration_law(span_numerator: int, shift_bits: int, max_duration: int) -> np.ndarray:
    """P(L = l), l = 0..max_duration, for L = ceil(j * span / 2**shift) with j uniform on [0, 2**24):
    exact integer counting on the 24-bit severity grid."""
    limits = np.arange(max_duration + 1, dtype=np.int64) << shift_bits  # L <= l  <=>  j * span <= l * 2**shift
    at_most = np.minimum(limits // span_numerator + 1, 1 << 24)
    return np.diff(np.concatenate([[0], at_most])) / float(1 << 24)


def _assert_fits(observed: np.ndarray, expected_probability: np.ndarray) -> None:
    """Pearson chi-square over the cells with positive probability, within six standard deviations."""
    cells = expected_probability > 0
    assert observed[~cells].sum() == 0, "draws landed in cells the law gives probability zero"
    expected = expected_probability[cells] * observed.sum()
    statistic = float((((observed[cells] - expected) ** 2) / expected).sum())
    dof = int(cells.sum()) - 1
    assert statistic < dof + 6 * math.sqrt(2 * dof), f"chi-square {statistic:.0f} on {dof} degrees of freedom"


def _start_given_duration(law: np.ndarray) -> np.ndarray:
    """P(L = l, a = i): a uniform on [1, n - l] given L (row l, column i; row 0 is s = 0, a unused)."""
    joint = np.zeros((len(law), N))
    for duration in range(1, len(law)):
        joint[duration, 1:N - duration + 1] = law[duration] / (N - duration)
    return joint


def test_missing_data_duration_and_start_follow_the_exact_law() -> None:
    params = _draw("missing_data", BEIJING, LAW_DRAWS, seed=11)
    duration = np.ceil(params.severity_units.astype(np.int64) * (N - 1) / 2**25).astype(int)
    keep = duration > 0  # s = 0 (probability 2**-24) draws no start
    observed = np.zeros((49, N))
    np.add.at(observed, (duration[keep], params.start[keep]), 1)
    _assert_fits(observed, _start_given_duration(_duration_law(N - 1, 25, 48)))


def test_stuck_sensor_duration_and_per_channel_starts_follow_the_exact_law() -> None:
    params = _draw("stuck_sensor", BEIJING, LAW_DRAWS, seed=12)
    duration = np.ceil(params.severity_units.astype(np.int64) * (N - 1) / 2**24).astype(int)
    keep = duration > 0
    law = _start_given_duration(_duration_law(N - 1, 24, N - 1))
    for channel in (0, 10):
        observed = np.zeros((N, N))
        np.add.at(observed, (duration[keep], params.starts[keep, channel]), 1)
        _assert_fits(observed, law)
    # two channels' starts are independent given the duration: their difference has the law of the
    # difference of two independent uniforms on [1, n - L]
    short = keep & (duration == 1)
    gap = params.starts[short, 0] - params.starts[short, 10]
    observed = np.bincount(gap + N - 2, minlength=2 * N - 3)
    width = N - 1
    triangle = (width - np.abs(np.arange(-(N - 2), N - 1))) / width**2
    _assert_fits(observed, triangle)


def test_spike_positions_are_uniform_and_independent_across_channels() -> None:
    params = _draw("spike", BEIJING, LAW_DRAWS, seed=13)
    observed = np.zeros((N, N))
    np.add.at(observed, (params.positions[:, 0], params.positions[:, 5]), 1)
    expected = np.zeros((N, N))
    expected[1:, 1:] = 1.0 / (N - 1) ** 2
    _assert_fits(observed, expected)


def test_time_warp_start_is_uniform_and_independent_of_the_channel_count() -> None:
    params = _draw("time_compress", BEIJING, LAW_DRAWS, seed=14)
    count = params.selected.sum(axis=1)  # Beijing: k = 1 + floor(5 s), each with probability 1/5
    observed = np.zeros((7, N))
    np.add.at(observed, (count, params.start), 1)
    expected = np.zeros((7, N))
    expected[1:6, 1:49] = 1.0 / (5 * 48)
    _assert_fits(observed, expected)
