"""Fault registries in the benchmark's fixed order, and the one-window convenience `perturb`.

`SCENARIOS` holds the paper's eight scored scenarios in canonical order (the order is the worst-case tie-break
and the scenario id that keys randomness). `TRANSFER_FAMILIES` holds the seven training-only families.
`extra_scenarios()` lists the further scored scenarios: those of this package's own modules (each module that
binds a `SPEC` of type `spec.FaultSpec`, collected by `plugins.package_specs`, by name; no list to edit), then
those installed packages register (entry-point group `sfbench_jax.faults`). A run scores them only when
`eval.scenarios` names them, beside the eight and never in the paper's aggregate scores.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp

from sfbench_jax.faults import reference_rng, scored, transfer
from sfbench_jax.faults.context import FaultContext
from sfbench_jax.faults.severity import severity_to_units
from sfbench_jax.faults.spec import RESERVED_SCENARIO_IDS, Applier, FaultSpec, Preparer, ReferenceDraw, Sampler
from sfbench_jax.faults.streams import stream_words
from sfbench_jax.plugins.entry_points import PluginError, discovered, package_specs, register_specs, unknown_name_error

#: The spec type under its earlier name.
Fault = FaultSpec


def _scored(index: int, name: str, label: str, fault_class: str, sample: Sampler, apply: Applier, *,
            reference: ReferenceDraw, group: str, rank: int, scoped: bool = True,
            prepare: Preparer | None = None) -> FaultSpec:
    extra: dict[str, Preparer] = {} if prepare is None else {"prepare": prepare}
    return FaultSpec(name=name, label=label, fault_class=fault_class, sample=sample, apply=apply,
                     is_channel_scoped=scoped, group=group, group_rank=rank, reference=reference,
                     scenario_id=index, **extra)


SCENARIOS: tuple[FaultSpec, ...] = (
    _scored(0, "drift", "Drift", "Value", scored.sample_channel_fault, scored.apply_drift,
            reference=reference_rng.CHANNEL, group="value", rank=0),
    _scored(1, "attenuation", "Attenuation", "Value", scored.sample_channel_fault, scored.apply_attenuation,
            reference=reference_rng.CHANNEL, group="value", rank=1),
    _scored(2, "noise", "Noise", "Value", scored.sample_noise, scored.apply_noise,
            reference=reference_rng.NOISE, group="value", rank=2),
    _scored(3, "spike", "Spike", "Value", scored.sample_spike, scored.apply_spike,
            reference=reference_rng.SPIKE, group="value", rank=3),
    _scored(4, "time_stretch", "TimeStretch", "Timing", scored.sample_time_warp, scored.apply_time_warp,
            prepare=scored.plan_time_stretch, reference=reference_rng.TIME_WARP, group="timing_availability",
            rank=0),
    _scored(5, "time_compress", "TimeCompress", "Timing", scored.sample_time_warp, scored.apply_time_warp,
            prepare=scored.plan_time_compress, reference=reference_rng.TIME_WARP, group="timing_availability",
            rank=1),
    _scored(6, "stuck_sensor", "StuckSensor", "Availability", scored.sample_stuck_sensor,
            scored.apply_stuck_sensor, reference=reference_rng.STUCK_SENSOR, group="timing_availability", rank=3),
    _scored(7, "missing_data", "MissingData", "Availability", scored.sample_missing_data,
            scored.apply_missing_data, scoped=False, reference=reference_rng.MISSING_DATA,
            group="timing_availability", rank=2),
)
SCENARIO_KEYS: tuple[str, ...] = tuple(fault.key for fault in SCENARIOS)


def _transfer(index: int, name: str, label: str, sample: Sampler, apply: Applier) -> FaultSpec:
    return FaultSpec(name=name, label=label, fault_class="Transfer", sample=sample, apply=apply, scenario_id=index)


TRANSFER_FAMILIES: tuple[FaultSpec, ...] = (
    _transfer(0, "linear_drift", "LinearDrift", transfer.sample_transfer_channels, transfer.apply_linear_drift),
    _transfer(1, "nonlinear_drift", "NonlinearDrift", transfer.sample_transfer_channels,
              transfer.apply_nonlinear_drift),
    _transfer(2, "scaling", "Scaling", transfer.sample_transfer_channels, transfer.apply_scaling),
    _transfer(3, "time_varying_scaling", "TimeVaryingScaling", transfer.sample_transfer_channels,
              transfer.apply_time_varying_scaling),
    _transfer(4, "trimming_constant", "TrimmingConstant", transfer.sample_transfer_channels,
              transfer.apply_trimming_constant),
    _transfer(5, "trimming_varying", "TrimmingVarying", transfer.sample_transfer_channels,
              transfer.apply_trimming_varying),
    _transfer(6, "packet_loss", "PacketLoss", transfer.sample_packet_loss, transfer.apply_packet_loss),
)
TRANSFER_KEYS: tuple[str, ...] = tuple(fault.key for fault in TRANSFER_FAMILIES)


def _checked_extra(spec: FaultSpec) -> FaultSpec:
    """An extra fault may not choose a built-in's stream id (its draws would repeat a paper scenario's)."""
    if spec.scenario_id is not None and spec.scenario_id < RESERVED_SCENARIO_IDS:
        raise PluginError(f"Extra fault {spec.name!r} sets scenario_id={spec.scenario_id}, which is reserved for "
                          f"built-in faults (< {RESERVED_SCENARIO_IDS}). Leave scenario_id unset (an id is derived "
                          "from the name).")
    return spec


#: Every fault by name: the eight, the transfer families, the extra scenarios of this package's modules (by name),
#: then the plug-ins (by entry-point name).
FAULTS: dict[str, FaultSpec] = {fault.key: fault for fault in SCENARIOS + TRANSFER_FAMILIES}
register_specs(FAULTS, (_checked_extra(spec) for spec in package_specs("sfbench_jax.faults", FaultSpec)), kind="faults")
register_specs(FAULTS, (_checked_extra(spec) for spec in discovered("faults", FaultSpec)), kind="faults")


def extra_scenarios() -> tuple[FaultSpec, ...]:
    """The scored scenarios that plug-ins add (opt-in with `eval.scenarios`), in registration order."""
    return tuple(fault for fault in FAULTS.values() if fault.key not in SCENARIO_KEYS + TRANSFER_KEYS)


def scenario_group(group: str) -> tuple[str, ...]:
    """The paper's scored scenarios shown in a figure group ("value", "timing_availability"), in panel order."""
    members = sorted((fault for fault in SCENARIOS if fault.group == group), key=lambda fault: fault.group_rank)
    if not members:
        groups = sorted({fault.group for fault in SCENARIOS})
        raise ValueError(f"Unknown scenario group {group!r}; groups: {', '.join(groups)}.")
    return tuple(fault.key for fault in members)


#: Profiles of the fault-augmentation recipe (protocol 2.3).
TRANSFER_PROFILES: dict[str, tuple[str, ...]] = {
    "holdout_simple": ("linear_drift", "scaling", "trimming_constant", "packet_loss"),
    "holdout_varying": ("nonlinear_drift", "time_varying_scaling", "trimming_varying", "packet_loss"),
    "holdout": TRANSFER_KEYS,
}


def get_fault(key: str) -> Fault:
    """A scored scenario or transfer family by key; unknown keys list the valid ones."""
    if key in FAULTS:
        return FAULTS[key]
    extras = ", ".join(fault.key for fault in extra_scenarios())
    extras = f"; plug-in scenarios: {extras}" if extras else ""
    raise unknown_name_error("faults", key, f"Unknown fault scenario {key!r}. Scored scenarios: "
                             f"{', '.join(SCENARIO_KEYS)}; transfer families: {', '.join(TRANSFER_KEYS)}{extras}.")


def scored_scenarios(extras: tuple[str, ...] | list[str] = ()) -> tuple[FaultSpec, ...]:
    """The paper's eight scenarios followed by the named plug-in scenarios (`eval.scenarios`).

    Raises:
        ValueError: a name that is not a registered plug-in scenario (the eight are always scored).
    """
    chosen = []
    for name in extras:
        fault = next((fault for fault in extra_scenarios() if fault.key == name), None)
        if fault is None:
            valid = ", ".join(fault.key for fault in extra_scenarios()) or "none installed"
            raise unknown_name_error("faults", name, f"eval.scenarios names {name!r}, which is not a registered "
                                     f"extra scenario (the paper's eight are always scored). Registered extra "
                                     f"scenarios: {valid}.")
        chosen.append(fault)
    return SCENARIOS + tuple(chosen)


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
    # (jax.jit's wrapper is untyped)
    faulted: jax.Array = _perturbed(jnp.asarray(x, jnp.float32), rng_key, units, key=fault.key, ctx=ctx)
    return faulted


@functools.partial(jax.jit, static_argnames=("key", "ctx"))
def _perturbed(x: jax.Array, rng_key: jax.Array, units: jax.Array | None, *, key: str,
               ctx: FaultContext) -> jax.Array:
    """`perturb`'s draw and fault as one compiled program per (fault, context, window shape) (run eagerly,
    each of their operations would be a small program of its own)."""
    fault = get_fault(key)
    return fault.apply(x, fault.prepare(fault.sample(stream_words(rng_key), ctx, units), ctx), ctx)
