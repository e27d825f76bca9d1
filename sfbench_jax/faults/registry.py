"""Fault registries in the benchmark's fixed order, and the one-window convenience `perturb`.

`SCENARIOS` holds the eight scored scenarios in canonical order (the order is the worst-case tie-break
and the scenario id that keys randomness). `TRANSFER_FAMILIES` holds the seven training-only families.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp

from sfbench_jax.faults import scored, transfer
from sfbench_jax.faults.context import FaultContext
from sfbench_jax.faults.severity import severity_to_units
from sfbench_jax.faults.streams import stream_words

Sampler = Callable[[jax.Array, FaultContext, Any], Any]
Preparer = Callable[[Any, FaultContext], Any]
Applier = Callable[[jax.Array, Any, FaultContext], jax.Array]


def _as_drawn(params: Any, ctx: FaultContext) -> Any:
    del ctx
    return params


@dataclass(frozen=True)
class Fault:
    """One registered fault.

    Attributes:
        index: position in its registry (scored scenarios: the scenario id keying the randomness).
        key: snake_case name used in configs and tables (e.g. "missing_data").
        display_name: label for tables and figures (e.g. "MissingData").
        fault_class: "Value", "Timing" or "Availability" (scored scenarios), "Transfer" otherwise.
        is_channel_scoped: whether it acts on k(s) channels of the pool (False: all channels).
        sample: JAX-mode sampler `(stream words, ctx, severity units | None) -> params`.
        apply: `(x (n, m), prepared params, ctx) -> x'`.
        prepare: `(params, ctx) -> prepared params`: per-window work done once before `apply` (e.g. the
            time warps' source positions); the engine runs it in a separate stage so it is never
            repeated per element.
    """

    index: int
    key: str
    display_name: str
    fault_class: str
    is_channel_scoped: bool
    sample: Sampler
    apply: Applier
    prepare: Preparer = _as_drawn


SCENARIOS: tuple[Fault, ...] = (
    Fault(0, "drift", "Drift", "Value", True, scored.sample_channel_fault, scored.apply_drift),
    Fault(1, "attenuation", "Attenuation", "Value", True, scored.sample_channel_fault,
          scored.apply_attenuation),
    Fault(2, "noise", "Noise", "Value", True, scored.sample_noise, scored.apply_noise),
    Fault(3, "spike", "Spike", "Value", True, scored.sample_spike, scored.apply_spike),
    Fault(4, "time_stretch", "TimeStretch", "Timing", True, scored.sample_time_warp,
          scored.apply_time_warp, scored.plan_time_stretch),
    Fault(5, "time_compress", "TimeCompress", "Timing", True, scored.sample_time_warp,
          scored.apply_time_warp, scored.plan_time_compress),
    Fault(6, "stuck_sensor", "StuckSensor", "Availability", True, scored.sample_stuck_sensor,
          scored.apply_stuck_sensor),
    Fault(7, "missing_data", "MissingData", "Availability", False, scored.sample_missing_data,
          scored.apply_missing_data),
)
SCENARIO_KEYS: tuple[str, ...] = tuple(fault.key for fault in SCENARIOS)

TRANSFER_FAMILIES: tuple[Fault, ...] = (
    Fault(0, "linear_drift", "LinearDrift", "Transfer", True, transfer.sample_transfer_channels,
          transfer.apply_linear_drift),
    Fault(1, "nonlinear_drift", "NonlinearDrift", "Transfer", True, transfer.sample_transfer_channels,
          transfer.apply_nonlinear_drift),
    Fault(2, "scaling", "Scaling", "Transfer", True, transfer.sample_transfer_channels,
          transfer.apply_scaling),
    Fault(3, "time_varying_scaling", "TimeVaryingScaling", "Transfer", True,
          transfer.sample_transfer_channels, transfer.apply_time_varying_scaling),
    Fault(4, "trimming_constant", "TrimmingConstant", "Transfer", True,
          transfer.sample_transfer_channels, transfer.apply_trimming_constant),
    Fault(5, "trimming_varying", "TrimmingVarying", "Transfer", True,
          transfer.sample_transfer_channels, transfer.apply_trimming_varying),
    Fault(6, "packet_loss", "PacketLoss", "Transfer", True, transfer.sample_packet_loss,
          transfer.apply_packet_loss),
)
TRANSFER_KEYS: tuple[str, ...] = tuple(fault.key for fault in TRANSFER_FAMILIES)

#: Profiles of the fault-augmentation recipe (spec 2.3).
TRANSFER_PROFILES: dict[str, tuple[str, ...]] = {
    "holdout_simple": ("linear_drift", "scaling", "trimming_constant", "packet_loss"),
    "holdout_varying": ("nonlinear_drift", "time_varying_scaling", "trimming_varying", "packet_loss"),
    "holdout": TRANSFER_KEYS,
}


def get_fault(key: str) -> Fault:
    """A scored scenario or transfer family by key; unknown keys list the valid ones."""
    for fault in SCENARIOS + TRANSFER_FAMILIES:
        if fault.key == key:
            return fault
    raise ValueError(f"Unknown fault scenario {key!r}. Scored scenarios: {', '.join(SCENARIO_KEYS)}; "
                     f"transfer families: {', '.join(TRANSFER_KEYS)}.")


def perturb(key: str, x: jax.Array, *, rng_key: jax.Array, ctx: FaultContext,
            severity: float | None = None) -> jax.Array:
    """Apply one fault to one window `(n, m)`.

    Args:
        key: fault name (see `SCENARIO_KEYS`, `TRANSFER_KEYS`).
        x: the window, float32 `(n, m)`.
        rng_key: typed JAX key of this (fault, window) pair.
        ctx: the dataset's fault context.
        severity: fixed severity in [0, 1]; None draws it from `rng_key` (as evaluation does).

    Raises:
        ValueError: unknown fault, severity outside [0, 1], or a window of the wrong shape.
    """
    fault = get_fault(key)
    if tuple(x.shape) != (ctx.input_len, ctx.num_channels):
        raise ValueError(f"Window shape {tuple(x.shape)} does not match the fault context "
                         f"({ctx.input_len}, {ctx.num_channels}).")
    units = None if severity is None else jnp.asarray(severity_to_units(severity))
    params = fault.prepare(fault.sample(stream_words(rng_key), ctx, units), ctx)
    return fault.apply(jnp.asarray(x, jnp.float32), params, ctx)
