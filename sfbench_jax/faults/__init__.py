"""Fault engine: severity model, channel-count rule, channel subsets, window draws, the eight scored
scenarios and the seven transfer families as pure functions on one window, their specs (`spec.FaultSpec`) and
registries (plug-in scenarios included). No batching and no models live here."""

from sfbench_jax.faults.context import FaultContext
from sfbench_jax.faults.registry import (
    SCENARIO_KEYS,
    SCENARIOS,
    TRANSFER_FAMILIES,
    TRANSFER_KEYS,
    TRANSFER_PROFILES,
    Fault,
    extra_scenarios,
    get_fault,
    perturb,
)
from sfbench_jax.faults.severity import channel_count, severity_to_units
from sfbench_jax.faults.spec import FaultSpec

__all__ = [
    "SCENARIOS", "SCENARIO_KEYS", "TRANSFER_FAMILIES", "TRANSFER_KEYS", "TRANSFER_PROFILES", "Fault",
    "FaultContext", "FaultSpec", "channel_count", "extra_scenarios", "get_fault", "perturb", "severity_to_units",
]
