"""Turbofan module-health tools (prognostics server): health band and degradation signature.

What lives here: ``assess_component_health`` (HEALTHY..CRITICAL band of a Fan/LPC/HPC/HPT/LPT
module from its efficiency and flow deviations) and ``diagnose_timing_issues`` (efficiency- vs
flow-dominated degradation). What does not: the band tables and the signature rule
(`phm_kernels.turbofan`).
"""

from __future__ import annotations

from typing import Annotated, Literal

from phm_kernels import turbofan
from pydantic import Field

from sfbench_jax.mcp.datasets import DataStore
from sfbench_jax.mcp.errors import kernel_errors
from sfbench_jax.mcp.tools._common import (
    ToolDef,
    ToolResult,
    code_label,
    kernel_label,
    maybe_finite,
    scalar,
)

__all__ = ["TOOLS", "assess_component_health", "diagnose_timing_issues"]

Component = Literal["FAN", "LPC", "HPC", "HPT", "LPT"]


class ComponentHealthResult(ToolResult):
    """Health band of one turbofan module."""

    component: Component
    health_band: Literal["HEALTHY", "DEGRADED", "SEVERE", "CRITICAL"]
    status: Literal["Operating Normally", "Abnormal Degradation", "Imminent Failure"]
    severity_magnitude: float
    margin_to_next_band: float | None


class SignatureResult(ToolResult):
    """Efficiency- vs flow-dominated degradation of one module."""

    component: str
    signature: Literal["NONE", "EFFICIENCY_DOMINANT", "FLOW_DOMINANT", "COUPLED"]
    flow_to_efficiency_ratio: float
    mechanism_hint: str
    note: str


def assess_component_health(
        component: Component,
        efficiency: Annotated[float, Field(
            ge=-0.5, le=0.5, description="fractional efficiency deviation, e.g. -0.021")],
        flow_modifier: Annotated[float, Field(
            ge=-0.5, le=0.5, description="fractional flow-capacity deviation")],
) -> ComponentHealthResult:
    """Health band of a turbofan module (Fan/LPC/HPC/HPT/LPT) from its efficiency and flow
    deviations (fractions, not percent)."""
    with kernel_errors():
        result = turbofan.component_health(component, efficiency, flow_modifier)
    code = int(scalar(result.band))
    return ComponentHealthResult(
        component=component, health_band=turbofan.HEALTH_BANDS[code],
        status=turbofan.PHMFORGE_HEALTH_LABELS[code],
        severity_magnitude=scalar(result.magnitude),
        margin_to_next_band=maybe_finite(result.margin_to_next),
        kernel=kernel_label(turbofan.component_health), units={"severity_magnitude": "fraction"})


def diagnose_timing_issues(
        efficiency_deviation: Annotated[float, Field(ge=-0.5, le=0.5)],
        flow_deviation: Annotated[float, Field(ge=-0.5, le=0.5)],
        component: Component = "HPC",
) -> SignatureResult:
    """Is a module's degradation efficiency-dominated, flow-dominated or coupled?"""
    with kernel_errors():
        result = turbofan.efficiency_flow_signature(component, efficiency_deviation,
                                                    flow_deviation)
    return SignatureResult(
        component=component, signature=code_label(result.signature, turbofan.SIGNATURE_CLASSES),
        flow_to_efficiency_ratio=scalar(result.ratio),
        mechanism_hint=code_label(result.mechanism_hint, turbofan.MECHANISM_HINTS),
        note="the mechanism hint is advisory (qualitative gas-path analysis)",
        kernel=kernel_label(turbofan.efficiency_flow_signature), units={"ratio": "dimensionless"})


def _warm_up(store: DataStore) -> None:
    del store
    assess_component_health("HPC", -0.021, -0.008)
    diagnose_timing_issues(-0.010, -0.030)


TOOLS = (
    ToolDef(assess_component_health, "prognostics", warmup=_warm_up),
    ToolDef(diagnose_timing_issues, "prognostics"),
)
