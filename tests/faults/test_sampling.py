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
from sfbench_jax.faults.selection import distinct_keys, smallest_k_mask
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
    assert 0.0 <= severity.min() and severity.max() < 1.0
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
    ctx = FaultContext(input_len=N, num_channels=pool + 1, pool=tuple(range(pool)), fixed_fraction=fraction)
    for key in ("drift", "noise", "stuck_sensor"):
        params = _draw(key, ctx, 500, seed=3)
        counts = params.selected.sum(axis=1)
        np.testing.assert_array_equal(counts, np.where(params.severity_units > 0, expected, 0))
