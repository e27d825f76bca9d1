"""Turbofan component-health kernels (spec sections 2.1-2.3).

What lives here: the module-level health band of one rotating module (FAN, LPC, HPC, HPT, LPT)
from its fractional efficiency and flow deviations (:func:`component_health`), and the
efficiency / flow dominance signature with a qualitative gas-path mechanism hint
(:func:`efficiency_flow_signature`, PHMForge's ``diagnose_timing_issues``).

Background (Saxena et al. 2008): C-MAPSS degrades the efficiency and flow modifiers of the five
modules with an exponential wear law; failure is declared when the minimum normalised
operability margin reaches 0. No public standard gives module-level limits, so the bands here
are conventions ([CONV]) held in a per-component (5, 3) threshold table.

What does not live here: degradation trend tests (``trends.py``) and C-MAPSS RUL handling
(``rul.py``).
"""

from __future__ import annotations

from typing import Literal, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, ArrayLike, Float, Int, Real

from phm_kernels._checks import (
    as_float,
    finite_arrays,
    option_codes,
    require_broadcastable,
    to_numpy,
)
from phm_kernels._ops import guard
from phm_kernels.errors import DomainError

__all__ = [
    "COMPONENTS",
    "DEFAULT_HEALTH_THRESHOLDS",
    "HEALTH_BANDS",
    "MECHANISM_HINTS",
    "PHMFORGE_HEALTH_LABELS",
    "SIGNATURE_CLASSES",
    "ComponentHealth",
    "EfficiencyFlowSignature",
    "component_health",
    "component_health_core",
    "efficiency_flow_signature",
    "efficiency_flow_signature_core",
    "validate_deviations",
]

#: Rotating modules; component codes 0..4 index this tuple.
COMPONENTS = ("FAN", "LPC", "HPC", "HPT", "LPT")
#: Health bands (codes 0..3).
HealthBand = Literal["HEALTHY", "DEGRADED", "SEVERE", "CRITICAL"]
HEALTH_BANDS: tuple[HealthBand, ...] = ("HEALTHY", "DEGRADED", "SEVERE", "CRITICAL")
#: PHMForge scenario wording per health band code.
HealthStatus = Literal["Operating Normally", "Abnormal Degradation", "Imminent Failure"]
PHMFORGE_HEALTH_LABELS: tuple[HealthStatus, ...] = ("Operating Normally", "Abnormal Degradation",
                                                   "Abnormal Degradation", "Imminent Failure")
#: Dominance classes of :func:`efficiency_flow_signature` (codes 0..3).
SignatureClass = Literal["NONE", "EFFICIENCY_DOMINANT", "FLOW_DOMINANT", "COUPLED"]
SIGNATURE_CLASSES: tuple[SignatureClass, ...] = ("NONE", "EFFICIENCY_DOMINANT", "FLOW_DOMINANT", "COUPLED")
#: Advisory mechanism hints (codes 0..4); validators should score the class, not the hint.
MECHANISM_HINTS = ("fouling", "erosion_or_clearance", "turbine_erosion", "turbine_fouling",
                   "indeterminate")
#: Lower edges of DEGRADED, SEVERE, CRITICAL on m = max(|eff|, |flow|), one row per component.
DEFAULT_HEALTH_THRESHOLDS = ((0.01, 0.03, 0.05),) * 5

_IS_TURBINE = np.array([False, False, False, True, True])


def validate_deviations(eff_dev, flow_dev) -> None:
    """Checks finite fractional deviations within [-0.5, 0.5] (else a percent/fraction mix-up)."""
    arrays = finite_arrays({"eff_dev": eff_dev, "flow_dev": flow_dev}, lo=-0.5, hi=0.5,
                           hint="Deviations are fractions (-0.021 for -2.1 %), not percent.")
    require_broadcastable(**arrays)


class ComponentHealth(NamedTuple):
    """Result of :func:`component_health`.

    Attributes:
        band: Code into :data:`HEALTH_BANDS` (and :data:`PHMFORGE_HEALTH_LABELS`).
        magnitude: ``m = max(|eff_dev|, |flow_dev|)``.
        margin_to_next: Distance from m to the next band's lower edge (+inf when CRITICAL).
    """

    band: Int[Array, "*batch"]
    magnitude: Float[Array, "*batch"]
    margin_to_next: Float[Array, "*batch"]


@jax.jit
def component_health_core(component, eff_dev, flow_dev,
                          thresholds=DEFAULT_HEALTH_THRESHOLDS) -> ComponentHealth:
    """Jitted core of :func:`component_health`; ``component`` is an int code (broadcasts)."""
    eff, flow = as_float(eff_dev), as_float(flow_dev)
    magnitude = jnp.maximum(jnp.abs(eff), jnp.abs(flow))
    edges = jnp.asarray(thresholds, magnitude.dtype)[jnp.asarray(component, jnp.int32)]
    magnitude, edges = jnp.broadcast_arrays(magnitude[..., None], edges)
    magnitude = magnitude[..., 0]
    band = jnp.sum(magnitude[..., None] >= edges, axis=-1).astype(jnp.int32)
    padded = jnp.concatenate([edges, jnp.full(edges.shape[:-1] + (1,), jnp.inf, edges.dtype)],
                             axis=-1)
    upper = jnp.take_along_axis(padded, band[..., None], axis=-1)[..., 0]
    valid = jnp.isfinite(magnitude) & (magnitude <= 0.5)
    return ComponentHealth(guard(valid, band), guard(valid, magnitude),
                           guard(valid, upper - magnitude))


def component_health(component: str | int | Int[ArrayLike, "*batch"],
                     eff_dev: Real[ArrayLike, "*batch"], flow_dev: Real[ArrayLike, "*batch"], *,
                     thresholds: Real[ArrayLike, "5 3"] | tuple[tuple[float, float, float], ...]
                     = DEFAULT_HEALTH_THRESHOLDS) -> ComponentHealth:
    """Health band of a turbofan module from efficiency and flow deviations [CONV bands].

    ``m = max(|eff_dev|, |flow_dev|)`` (either loss alone consumes margin); HEALTHY m < 0.01,
    DEGRADED [0.01, 0.03), SEVERE [0.03, 0.05), CRITICAL >= 0.05 by default. Always report the
    label string (PHMForge marks a numeric score wrong where a category is asked).

    Args:
        component: "FAN", "LPC", "HPC", "HPT", "LPT", an int code, or an array of codes.
        eff_dev: Fractional efficiency deviation from nominal (e.g. -0.021).
        flow_dev: Fractional flow-capacity deviation.
        thresholds: (5, 3) increasing band edges per component.

    Returns:
        ComponentHealth (band, magnitude, margin_to_next).

    Raises:
        UnknownOptionError: Unknown component. DomainError: |deviation| > 0.5 or bad table.

    Example:
        >>> HEALTH_BANDS[int(component_health("HPC", -0.021, -0.008).band)]
        'DEGRADED'
    """
    codes = option_codes("component", component, COMPONENTS)
    validate_deviations(eff_dev, flow_dev)
    table = to_numpy("thresholds", thresholds, ndim=2)
    if table.shape != (5, 3) or np.any(np.diff(table, axis=1) <= 0) or np.any(table <= 0):
        raise DomainError(f"thresholds must be a (5, 3) table of positive increasing edges; got "
                          f"shape {table.shape}.")
    require_broadcastable(component=codes, eff_dev=np.asarray(eff_dev, float),
                          flow_dev=np.asarray(flow_dev, float))
    return component_health_core(codes, eff_dev, flow_dev, thresholds)


class EfficiencyFlowSignature(NamedTuple):
    """Result of :func:`efficiency_flow_signature`.

    Attributes:
        signature: Code into :data:`SIGNATURE_CLASSES`.
        ratio: ``|flow_dev| / max(|eff_dev|, eps)``.
        mechanism_hint: Code into :data:`MECHANISM_HINTS` (advisory).
    """

    signature: Int[Array, "*batch"]
    ratio: Float[Array, "*batch"]
    mechanism_hint: Int[Array, "*batch"]


@jax.jit
def efficiency_flow_signature_core(component, eff_dev, flow_dev, none_tol=0.005,
                                   eff_ratio=0.5, flow_ratio=2.0, eps=1e-12
                                   ) -> EfficiencyFlowSignature:
    """Jitted core of :func:`efficiency_flow_signature` (elementwise)."""
    eff, flow = as_float(eff_dev), as_float(flow_dev)
    ratio = jnp.abs(flow) / jnp.maximum(jnp.abs(eff), as_float(eps))
    is_none = (jnp.abs(eff) < none_tol) & (jnp.abs(flow) < none_tol)
    signature = jnp.where(is_none, 0, jnp.where(ratio < eff_ratio, 1,
                                                jnp.where(ratio > flow_ratio, 2, 3)))
    turbine = jnp.asarray(_IS_TURBINE)[jnp.asarray(component, jnp.int32)]
    compressor_hint = jnp.where(
        (eff < 0) & (signature == 1), 1,
        jnp.where((eff < 0) & (flow < 0) & ((signature == 2) | (signature == 3)), 0, 4))
    turbine_hint = jnp.where((flow > 0) & (eff < 0), 2, jnp.where(flow < 0, 3, 4))
    hint = jnp.where(is_none, 4, jnp.where(turbine, turbine_hint, compressor_hint))
    return EfficiencyFlowSignature(signature.astype(jnp.int32), ratio, hint.astype(jnp.int32))


def efficiency_flow_signature(component: str | int | Int[ArrayLike, "*batch"],
                              eff_dev: Real[ArrayLike, "*batch"],
                              flow_dev: Real[ArrayLike, "*batch"], *, none_tol: float = 0.005,
                              eff_ratio: float = 0.5, flow_ratio: float = 2.0
                              ) -> EfficiencyFlowSignature:
    """Efficiency- vs flow-dominated degradation (PHMForge's diagnose_timing_issues).

    ``ratio = |flow| / |eff|``: NONE if both |dev| < 0.005, EFFICIENCY_DOMINANT if ratio < 0.5,
    FLOW_DOMINANT if ratio > 2, else COUPLED. Mechanism hint (qualitative gas-path analysis):
    compressors (FAN, LPC, HPC) with both losses and flow not minor -> fouling, an
    efficiency-dominant loss -> erosion_or_clearance; turbines (HPT, LPT) with flow up and
    efficiency down -> turbine_erosion, flow down -> turbine_fouling; otherwise indeterminate.

    Args:
        component: Module name or code (selects compressor vs turbine hints).
        eff_dev: Fractional efficiency deviation.
        flow_dev: Fractional flow deviation.
        none_tol: Both deviations below this -> NONE.
        eff_ratio: Ratio below which the loss is efficiency-dominant.
        flow_ratio: Ratio above which it is flow-dominant.

    Returns:
        EfficiencyFlowSignature (signature, ratio, mechanism_hint).

    Example:
        >>> r = efficiency_flow_signature("HPC", -0.010, -0.030)
        >>> SIGNATURE_CLASSES[int(r.signature)], MECHANISM_HINTS[int(r.mechanism_hint)]
        ('FLOW_DOMINANT', 'fouling')
    """
    codes = option_codes("component", component, COMPONENTS)
    validate_deviations(eff_dev, flow_dev)
    if not (none_tol > 0 and 0 < eff_ratio < 1 < flow_ratio):
        raise DomainError("need none_tol > 0 and 0 < eff_ratio < 1 < flow_ratio.")
    return efficiency_flow_signature_core(codes, eff_dev, flow_dev, none_tol, eff_ratio,
                                          flow_ratio)
