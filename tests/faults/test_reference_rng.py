"""The reference RNG mode against a one-sample-at-a-time re-implementation of protocol 2.5 written here
(NumPy's legacy RandomState gives the raw MT19937 outputs that PyTorch's CPU generator produces)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from sfbench_jax.data.seeds import perturbation_seed
from sfbench_jax.faults import SCENARIOS, FaultContext
from sfbench_jax.faults.reference_rng import mt19937_outputs, reference_params, scenario_seeds

N = 96


@pytest.mark.parametrize("count", [1, 623, 624, 625, 2000])
def test_mt19937_matches_numpy_legacy_generator(count: int) -> None:
    seeds = np.array([0, 1, 42, 5489, 341970080, 2**31 - 2, 2**32 - 1], dtype=np.uint64)
    ours = mt19937_outputs(seeds, count)
    for row, seed in enumerate(seeds):
        raw = np.random.RandomState(int(seed))._bit_generator.random_raw(count)
        np.testing.assert_array_equal(ours[row], raw.astype(np.uint32))


class _Stream:
    """Sequential draws from one generator, converted as PyTorch converts them."""

    def __init__(self, seed: int) -> None:
        self.raw = np.random.RandomState(seed)._bit_generator

    def u32(self) -> int:
        return int(self.raw.random_raw())

    def uniform(self) -> float:
        return (self.u32() & 0xFFFFFF) / 2**24

    def integer(self, low: int, high: int) -> int:
        return low + self.u32() % (high - low)

    def randperm(self, size: int) -> list[int]:
        perm = list(range(size))
        for i in range(size - 1):
            z = self.u32() % (size - i)
            perm[i], perm[i + z] = perm[i + z], perm[i]
        return perm

    def randn(self, count: int) -> list[float]:
        buffer = [self.uniform() for _ in range(count)]

        def transform(block: list[float]) -> list[float]:
            out = list(block)
            for j in range(8):
                radius = math.sqrt(-2.0 * math.log(1.0 - block[j]))
                angle = 2.0 * math.pi * block[8 + j]
                out[j], out[8 + j] = radius * math.cos(angle), radius * math.sin(angle)
            return out

        start = 0
        while start <= count - 16:
            buffer[start:start + 16] = transform(buffer[start:start + 16])
            start += 16
        if count % 16:
            buffer[count - 16:] = transform([self.uniform() for _ in range(16)])
        return buffer


def _sequential(key: str, seed: int, ctx: FaultContext) -> dict:
    """The reference's draw order for one (scenario, sample) generator."""
    stream = _Stream(seed)
    units = stream.u32() & 0xFFFFFF
    s = units / 2**24
    out: dict = {"units": units}
    if key == "missing_data":
        length = math.ceil(s * 0.5 * (N - 1))
        out["start"] = stream.integer(1, N - length + 1)
        return out
    pool = list(ctx.pool)
    if ctx.channel_fraction is not None:
        count = math.ceil(ctx.channel_fraction * len(pool)) if s > 0 else 0
    else:
        k_max = math.ceil(0.5 * len(pool))
        count = 0 if s == 0 else 1 + math.floor(s * (k_max - 1))
    perm = stream.randperm(len(pool))
    channels = [pool[p] for p in perm[:count]]
    out["channels"] = channels
    if key == "noise":
        normals = stream.randn(N * count)
        out["noise"] = {(t, channels[c]): normals[t * count + c] for t in range(N) for c in range(count)}
    elif key == "spike":
        out["positions"] = {j: stream.integer(1, N) for j in channels}
    elif key in ("time_stretch", "time_compress"):
        out["start"] = stream.integer(1, N - math.ceil(N / 2) + 1)
    elif key == "stuck_sensor":
        length = math.ceil(s * (N - 1))
        out["starts"] = {j: stream.integer(1, N - length + 1) for j in channels}
    return out


CONTEXTS = {
    "beijing": FaultContext(input_len=N, num_channels=12, pool=tuple(range(11))),
    "etth1": FaultContext(input_len=N, num_channels=7, pool=tuple(range(7))),
    "wide_fixed_fraction": FaultContext(input_len=N, num_channels=40, pool=tuple(range(40)),
                                        channel_fraction=0.25),
}


@pytest.mark.parametrize("context", sorted(CONTEXTS))
@pytest.mark.parametrize("fault", SCENARIOS, ids=lambda f: f.key)
def test_reference_params_match_sequential_draws(fault, context: str) -> None:
    ctx = CONTEXTS[context]
    samples = np.arange(12)
    seeds = scenario_seeds(1806770612, fault.index, samples)
    params = reference_params(fault, seeds, ctx)
    for row, sample in enumerate(samples):
        expected = _sequential(fault.key, perturbation_seed(1806770612, fault.index, int(sample)), ctx)
        assert int(params.severity_units[row]) == expected["units"]
        if fault.key == "missing_data":
            assert int(params.start[row]) == expected["start"]
            continue
        assert sorted(np.flatnonzero(params.selected[row])) == sorted(expected["channels"])
        if fault.key == "noise":
            for (t, j), value in expected["noise"].items():
                assert abs(float(params.noise[row, t, j]) - value) < 1e-6
        elif fault.key == "spike":
            for j, position in expected["positions"].items():
                assert int(params.positions[row, j]) == position
        elif fault.key in ("time_stretch", "time_compress"):
            assert int(params.start[row]) == expected["start"]
        elif fault.key == "stuck_sensor":
            for j, start in expected["starts"].items():
                assert int(params.starts[row, j]) == start


def test_scenario_seeds_follow_the_derivation() -> None:
    seeds = scenario_seeds(341970080, 3, np.array([0, 9999]))
    assert [int(s) for s in seeds] == [perturbation_seed(341970080, 3, 0), perturbation_seed(341970080, 3, 9999)]
