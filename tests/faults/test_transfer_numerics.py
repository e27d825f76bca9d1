"""The seven training-only transfer families against the independent NumPy implementation."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from sfbench_jax.faults import FaultContext, get_fault, transfer
from sfbench_jax.faults.scored import ChannelFault
from sfbench_jax.faults.severity import SEVERITY_ONE

from . import numpy_faults as ref

N, M = 96, 7
CTX = FaultContext(input_len=N, num_channels=M, pool=tuple(range(M)))
SIMPLE = ["linear_drift", "nonlinear_drift", "scaling", "time_varying_scaling", "trimming_constant",
          "trimming_varying"]


def _case(seed: int):
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal((N, M)) * 2.0).astype(np.float32)  # wide enough to hit the trimming bounds
    units = int(rng.integers(1, SEVERITY_ONE))
    channels = sorted(int(c) for c in rng.permutation(M)[: int(rng.integers(1, 4))])
    mask = np.zeros(M, bool)
    mask[channels] = True
    return x, units, units / SEVERITY_ONE, channels, mask


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("key", SIMPLE)
def test_channel_families(key: str, seed: int) -> None:
    x, units, s, channels, mask = _case(seed)
    fault = get_fault(key)
    out = jax.jit(lambda x, p: fault.apply(x, p, CTX))(jnp.asarray(x), ChannelFault(jnp.int32(units),
                                                                                        jnp.asarray(mask)))
    expected = getattr(ref, key)(x, s, channels)
    np.testing.assert_allclose(np.asarray(out, np.float64), expected, rtol=2e-6, atol=2e-6)


@pytest.mark.parametrize("seed", range(6))
def test_packet_loss(seed: int) -> None:
    x, units, s, channels, mask = _case(seed)
    rng = np.random.default_rng(50 + seed)
    anchors = rng.integers(1, N, size=M).astype(np.int32)
    uniforms = rng.random((N, M)).astype(np.float32)
    params = transfer.PacketLossFault(jnp.int32(units), jnp.asarray(mask), jnp.asarray(anchors),
                                      jnp.asarray(uniforms))
    out = jax.jit(lambda x, p: transfer.apply_packet_loss(x, p, CTX))(jnp.asarray(x), params)
    expected = ref.packet_loss(x, np.float32(s), channels, [int(anchors[j]) for j in channels], uniforms)
    np.testing.assert_array_equal(np.asarray(out, np.float64), expected)


def test_packet_loss_strong_severity_makes_long_bursts() -> None:
    x, _, _, channels, mask = _case(0)
    anchors = np.full(M, 10, np.int32)
    uniforms = np.full((N, M), 0.5, np.float32)  # below p_continue = 0.9 s at s ~ 1, above p_start
    params = transfer.PacketLossFault(jnp.int32(SEVERITY_ONE - 1), jnp.asarray(mask), jnp.asarray(anchors),
                                      jnp.asarray(uniforms))
    out = np.asarray(transfer.apply_packet_loss(jnp.asarray(x), params, CTX))
    for j in channels:  # the anchor starts a burst that never ends: held at x[9]
        np.testing.assert_array_equal(out[10:, j], np.full(N - 10, x[9, j]))
        np.testing.assert_array_equal(out[:10, j], x[:10, j])
