"""`FaultSpec`: everything the engine, the reference RNG mode and the report need to know about one fault.

A spec holds the fault's pure functions (the JAX-mode sampler, the optional per-window preparation and the
apply function the fused kernel calls), its class and figure group, its label, and optionally its
reference-RNG parameter draw. The paper's eight scored scenarios and seven transfer families are specs built in
`faults/registry.py`; an extra scenario added inside this repository is `SPEC` in its own module of
`sfbench_jax/faults/` (the registry collects it); a plug-in package builds its own and names it in the entry-point
group `sfbench_jax.faults` (see `sfbench_jax/plugins/`). This module imports only the fault context, so a plug-in
imports the type without importing a registry.

Contract of the functions (all pure, traced by JAX, one window at a time; the engine vmaps them):

* `sample(words, ctx, units) -> params`: `words` are the two uint32 stream words of the (scenario, window)
  key (`faults.streams.stream_bits(words, offset, shape)` draws from them); `units` is a fixed severity in
  units of 2**-24 (int32) or None to draw it (`faults.severity.draw_severity_units`). `params` is a NamedTuple
  of fixed-shape arrays with a `severity_units` int32 () field; a channel-scoped fault's also has
  `selected` bool (m,) (the channels it changes: a channel-independent model is re-run only on those).
* `prepare(params, ctx) -> params'`: per-window work done once before `apply` (default: none).
* `apply(x, params', ctx) -> x'`: the faulted window, float32 (n, m).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple

import jax
import numpy as np

from sfbench_jax.faults.context import FaultContext

#: A fault's parameter pytree (a NamedTuple of fixed-shape arrays). Each fault has its own NamedTuple and the
#: registry holds every fault, so as a type it is `Any`: `FaultSpec` is not generic in it because beartype, which
#: checks this package in the tests, rejects generic NamedTuples (`reference_rng.py`) and the engine holds specs of
#: every kind in one tuple.
FaultParams = Any
Sampler = Callable[[jax.Array, FaultContext, jax.Array | None], FaultParams]
Preparer = Callable[[FaultParams, FaultContext], FaultParams]
Applier = Callable[[jax.Array, FaultParams, FaultContext], jax.Array]

#: Fault classes of the paper's scored scenarios, and of the training-only transfer families.
SCORED_CLASSES = ("Value", "Timing", "Availability")
TRANSFER_CLASS = "Transfer"
#: Scenario ids below this are reserved for built-in faults (the paper's eight use 0..7); a plug-in's stream
#: id is derived from its name above it, so its draws never share a key with a built-in scenario.
RESERVED_SCENARIO_IDS = 2**16
_DERIVED_ID_SPAN = 2**31 - RESERVED_SCENARIO_IDS


def as_drawn(params: FaultParams, ctx: FaultContext) -> FaultParams:
    """The default `prepare`: parameters are used as drawn."""
    del ctx
    return params


def derived_scenario_id(name: str) -> int:
    """A stable stream id for a plug-in fault: `2**16 + sha256(name) mod (2**31 - 2**16)` (never a built-in's)."""
    digest = int.from_bytes(hashlib.sha256(f"sfbench_jax.faults:{name}".encode()).digest()[:8], "big")
    return RESERVED_SCENARIO_IDS + digest % _DERIVED_ID_SPAN


class ReferenceDraw(NamedTuple):
    """How the reference RNG mode draws a fault's parameters from the reference's MT19937 streams.

    Attributes:
        draw_count: `(ctx) -> int`, the most 32-bit draws one stream can consume.
        params: `(draws uint32 (B, draw_count), ctx) -> params` with NumPy leaves batched on axis 0, the same
            NamedTuple the JAX sampler returns (helpers: `faults.reference_rng.severity_units`,
            `faults.reference_rng.channel_selection`).
    """

    draw_count: Callable[[FaultContext], int]
    params: Callable[[np.ndarray, FaultContext], NamedTuple]


@dataclass(frozen=True)
class FaultSpec:
    """One fault.

    Attributes:
        name: snake_case key used in configs and summary columns (`d_<name>`, `mse_<name>`), e.g. "missing_data".
        label: display label for tables and figures, e.g. "MissingData".
        fault_class: "Value", "Timing" or "Availability" for a scored scenario ("Transfer" for a training-only
            transfer family); a plug-in may name its own class.
        sample: JAX-mode sampler (module docstring).
        apply: apply function (module docstring).
        prepare: per-window preparation (default: none).
        is_channel_scoped: acts on k(s) channels of the pool and reports them as `params.selected` (False: on all
            channels).
        group: the figure group a scored scenario's examples are shown in ("value": Figure 3,
            "timing_availability": Figure 4; "" for none).
        group_rank: its panel position within that group.
        reference: its reference-RNG parameter draw (None: the fault has no reference stream and `eval.rng_mode=
            reference` refuses it).
        scenario_id: the id its randomness is folded from. The paper's set it (a scored scenario's is its position
            0..7); an extra scenario leaves it None and gets `derived_scenario_id(name)` (>= 2**16).
    """

    name: str
    label: str
    fault_class: str
    sample: Sampler
    apply: Applier
    prepare: Preparer = as_drawn
    is_channel_scoped: bool = True
    group: str = ""
    group_rank: int = 0
    reference: ReferenceDraw | None = None
    scenario_id: int | None = None

    def __post_init__(self) -> None:
        if not self.name.isidentifier() or self.name != self.name.lower():
            raise ValueError(f"Fault name {self.name!r} must be a lower-case identifier (snake_case): it becomes the "
                             f"summary columns d_{self.name} and mse_{self.name}.")
        for attribute in ("sample", "apply", "prepare"):
            if not callable(getattr(self, attribute)):
                raise ValueError(f"FaultSpec {self.name!r}: {attribute} must be a function, got "
                                 f"{getattr(self, attribute)!r}.")
        if self.scenario_id is not None and not 0 <= self.scenario_id < 2**31:
            raise ValueError(f"FaultSpec {self.name!r}: scenario_id must be in [0, 2**31), got {self.scenario_id}.")

    @property
    def index(self) -> int:
        """The id the (scenario, window) keys are folded from."""
        return derived_scenario_id(self.name) if self.scenario_id is None else self.scenario_id

    @property
    def key(self) -> str:
        """The name (the engine's and the tables' word for it)."""
        return self.name

    @property
    def display_name(self) -> str:
        """The label."""
        return self.label
