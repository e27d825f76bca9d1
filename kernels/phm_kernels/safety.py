"""Safety and regulatory kernels (spec phm_kernels.md section 7).

What lives here: FMEA risk priority numbers with the four-level band and the severity override
(IEC 60812 formula, bands by convention), IEC 61508 SIL from PFDavg/PFH and the simplified
1oo1/1oo2 PFD formulas (IEC 61508-6 Annex B), ISO 13849-1 performance levels with the supporting
MTTF_D and DC bands, and the few precise, citable regulatory items: OSHA 29 CFR 1910.95 noise
dose, EU Directive 2002/44/EC vibration exposure A(8), NEMA MG 1 voltage unbalance and insulation
class limits, and FAA 14 CFR 91.409 inspection status.

What does not live here: anything not tied to a citable clause (for example an "OSHA vibration
PEL", which does not exist), the licensed AIAG & VDA Action Priority tables, and the NEMA MG 1
derating curve (advisory only, kept out of pass/fail logic).

Compliance checks cover the random-hardware-failure target (PFD/PFH criterion) only; see
:data:`SIL_CRITERION_NOTE`.
"""

# jaxtyping shape strings (e.g. "n", "batch time") are not forward references:
# ruff: noqa: F821, UP037

from __future__ import annotations

import functools
from typing import Literal, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, ArrayLike, Bool, Float, Int, Real

from phm_kernels._checks import (
    as_float,
    finite_arrays,
    option_index,
    require_broadcastable,
    require_finite,
    require_integer_valued,
    require_range,
    require_same_shape,
    to_numpy,
)
from phm_kernels._ops import guard
from phm_kernels.errors import DomainError, UnknownOptionError

__all__ = [
    "DC_BANDS",
    "EU_VIBRATION_LIMITS",
    "INSULATION_CLASS_LIMITS_C",
    "MTTFD_BANDS",
    "PL_LEVELS",
    "RISK_LEVELS",
    "SIL_CRITERION_NOTE",
    "VIBRATION_EXPOSURE_KINDS",
    "Faa91409Status",
    "FmeaResult",
    "NoiseDose",
    "PfdResult",
    "PlCompliance",
    "PlResult",
    "SilCompliance",
    "SilResult",
    "VibrationExposure",
    "VoltageUnbalance",
    "check_pl_compliance",
    "check_pl_compliance_core",
    "check_sil_compliance",
    "check_sil_compliance_core",
    "dc_band",
    "dc_band_core",
    "faa_91_409_status",
    "faa_91_409_status_core",
    "fmea_rpn",
    "fmea_rpn_core",
    "mttfd_band",
    "mttfd_band_core",
    "nema_voltage_unbalance",
    "nema_voltage_unbalance_core",
    "osha_noise_dose",
    "osha_noise_dose_core",
    "pfd_avg_1oo1",
    "pfd_avg_1oo1_core",
    "pfd_avg_1oo2",
    "pfd_avg_1oo2_core",
    "pl_from_pfh",
    "pl_from_pfh_core",
    "sil_from_pfd",
    "sil_from_pfd_core",
    "sil_from_pfh",
    "sil_from_pfh_core",
    "validate_fmea_rpn",
    "vibration_exposure_a8",
    "vibration_exposure_a8_core",
]

#: Four-level FMEA risk labels (codes 0..3) required by PHMForge's assess_safety_risk.
RiskLevel = Literal["low", "medium", "high", "critical"]
RISK_LEVELS: tuple[RiskLevel, ...] = ("low", "medium", "high", "critical")
#: ISO 13849-1 performance levels; code 0 means the PFH_D is too high for any PL.
PL_LEVELS = ("none", "a", "b", "c", "d", "e")
#: SIL claimable alongside each PL (ISO 13849-1 / IEC 62061 correspondence), by PL code.
_PL_TO_SIL = (0, 0, 1, 1, 2, 3)
#: ISO 13849-1 MTTF_D bands per channel (years) [VERIFY against the 2023 edition].
MTTFD_BANDS = ("not_acceptable", "low", "medium", "high")
#: ISO 13849-1 diagnostic-coverage bands [VERIFY against the 2023 edition].
DC_BANDS = ("none", "low", "medium", "high")
#: Human vibration exposure kinds of Directive 2002/44/EC.
VIBRATION_EXPOSURE_KINDS = ("hand_arm", "whole_body")
#: (exposure action value, exposure limit value) in m/s^2 A(8), Directive 2002/44/EC Art. 3.
EU_VIBRATION_LIMITS = {"hand_arm": (2.5, 5.0), "whole_body": (0.5, 1.15)}
#: Thermal class limits in degC (IEC 60085 / NEMA MG 1). Report the limit only.
INSULATION_CLASS_LIMITS_C = {"A": 105.0, "B": 130.0, "F": 155.0, "H": 180.0}
#: Statement every SIL/PL compliance result must carry.
SIL_CRITERION_NOTE = (
    "Checks the random-hardware-failure target (PFDavg or PFH band) only; architectural "
    "constraints (hardware fault tolerance, safe failure fraction, IEC 61508-2) and systematic "
    "capability can further limit the claimable SIL/PL.")

Scalar = Float[Array, "*batch"]
Code = Int[Array, "*batch"]
Flag = Bool[Array, "*batch"]


def _band_of(value, lower_edges):
    """Index of the band holding ``value`` (int32): 0 below the first edge, k from edge k-1 on.

    A value on an edge belongs to the band above it, as in every table of this module ("from x"
    or ">= lower bound"). Edges must increase; they are cast to the value's dtype.
    """
    value = jnp.asarray(value)
    return jnp.searchsorted(jnp.asarray(lower_edges, value.dtype), value,
                            side="right").astype(jnp.int32)


# ---------------------------------------------------------------------------------------------
# 7.1 FMEA
# ---------------------------------------------------------------------------------------------


class FmeaResult(NamedTuple):
    """Result of :func:`fmea_rpn` for M failure modes.

    Attributes:
        rpn: ``S * O * D`` per mode, in [1, 1000].
        risk_level: Final code into :data:`RISK_LEVELS` (band, raised by the severity override).
        rpn_band: Code of the RPN band before the override.
        override_applied: True where the severity override raised the level.
        priority_order: Mode indices sorted by RPN descending, then S descending, then index.
        rank: 0-based position of each mode in ``priority_order``.
    """

    rpn: Int[Array, "*modes"]
    risk_level: Int[Array, "*modes"]
    rpn_band: Int[Array, "*modes"]
    override_applied: Bool[Array, "*modes"]
    priority_order: Int[Array, "*modes"]
    rank: Int[Array, "*modes"]


def validate_fmea_rpn(severity, occurrence, detection, *, band_edges=(50, 100, 200),
                      override_severity=9) -> None:
    """Checks that S, O and D are whole numbers in 1..10 of one shape and the bands increase."""
    arrays = finite_arrays({"severity": severity, "occurrence": occurrence,
                            "detection": detection})
    for name, arr in arrays.items():
        require_integer_valued(name, arr)
        require_range(name, arr, lo=1, hi=10, hint="FMEA ratings are integers on a 1-10 scale.")
    require_same_shape(**arrays)
    if arrays["severity"].ndim > 1:
        raise DomainError("severity/occurrence/detection must be scalars or 1-D arrays of failure "
                          f"modes; got shape {arrays['severity'].shape}. vmap the core for "
                          "batches of mode lists.")
    edges = to_numpy("band_edges", band_edges, ndim=1)
    if edges.shape != (3,) or np.any(np.diff(edges) <= 0):
        raise DomainError(f"band_edges must be 3 increasing RPN values; got {edges.tolist()}.")
    require_range("override_severity", to_numpy("override_severity", override_severity), lo=1,
                  hi=11)


@jax.jit
def fmea_rpn_core(severity, occurrence, detection, band_edges=(50, 100, 200),
                  override_severity=9) -> FmeaResult:
    """Jitted core of :func:`fmea_rpn` (scalars or one 1-D list of modes; vmap for batches)."""
    s = jnp.asarray(severity).astype(jnp.int32)
    o = jnp.asarray(occurrence).astype(jnp.int32)
    d = jnp.asarray(detection).astype(jnp.int32)
    in_scale = ((s >= 1) & (s <= 10) & (o >= 1) & (o <= 10) & (d >= 1) & (d <= 10))
    rpn = guard(in_scale, s * o * d)
    band = _band_of(rpn, band_edges)
    override = (s >= override_severity) & (band < 2)
    level = jnp.where(s >= override_severity, jnp.maximum(band, 2), band).astype(jnp.int32)
    band, level = guard(in_scale, band), guard(in_scale, level)
    if rpn.ndim == 0:
        order = jnp.zeros((), jnp.int32)
        rank = jnp.zeros((), jnp.int32)
    else:
        # lexsort: last key is primary -> RPN desc, then S desc, then original index (stable).
        order = jnp.lexsort((-s, -rpn)).astype(jnp.int32)
        rank = jnp.zeros_like(order).at[order].set(jnp.arange(order.shape[0], dtype=jnp.int32))
    return FmeaResult(rpn, level, band, override, order, rank)


def fmea_rpn(severity: Real[ArrayLike, "*modes"], occurrence: Real[ArrayLike, "*modes"],
             detection: Real[ArrayLike, "*modes"], *,
             band_edges: tuple[int, int, int] = (50, 100, 200),
             override_severity: int = 9) -> FmeaResult:
    """FMEA risk priority number ``RPN = S x O x D`` with the four-level risk band.

    Bands [CONV, configurable]: low 1-49, medium 50-99, high 100-199, critical >= 200. Severity
    override: S >= 9 (safety/regulatory hazard) raises the level to at least high. Always report
    the four-level label (collapsing it to safe/unsafe is a known agent error).

    Args:
        severity: S, integer 1..10 (scalar or one per failure mode).
        occurrence: O, integer 1..10.
        detection: D, integer 1..10.
        band_edges: Lowest RPN of medium, high and critical.
        override_severity: Severity at or above which the level is at least high.

    Returns:
        FmeaResult (rpn, risk_level code into RISK_LEVELS, rpn_band, override_applied,
        priority_order, rank).

    Raises:
        DomainError: A rating that is not an integer in 1..10.

    Example:
        >>> r = fmea_rpn([8, 9], [5, 2], [4, 2])
        >>> r.rpn.tolist(), [RISK_LEVELS[c] for c in r.risk_level.tolist()]
        ([160, 36], ['high', 'high'])
    """
    validate_fmea_rpn(severity, occurrence, detection, band_edges=band_edges,
                      override_severity=override_severity)
    return fmea_rpn_core(severity, occurrence, detection, band_edges, override_severity)


# ---------------------------------------------------------------------------------------------
# 7.2 IEC 61508 SIL
# ---------------------------------------------------------------------------------------------


class SilResult(NamedTuple):
    """Achieved SIL for a PFDavg (low demand) or PFH (high demand / continuous).

    Attributes:
        sil: 0 (no SIL) .. 4. SIL 4 is the *smallest* failure measure.
        beyond_table: True when the value is below the SIL 4 band (SIL 4 is the highest claim).
        risk_reduction_factor: ``1 / value`` (meaningful for PFDavg).
    """

    sil: Code
    beyond_table: Flag
    risk_reduction_factor: Scalar


def _sil_from_bands(value, lowest_bound):
    # Band edges lowest_bound * 10^k, k = 0..4; a value on an edge belongs to the band above it
    # (">= lower bound" in IEC 61508-1 Tables 2-3).
    idx = _band_of(value, lowest_bound * jnp.asarray([1.0, 10.0, 100.0, 1000.0, 10000.0]))
    sil = jnp.clip(5 - idx, 0, 4).astype(jnp.int32)
    valid = (value > 0) & (value < 1)
    return SilResult(guard(valid, sil), guard(valid, idx == 0), guard(valid, 1.0 / value))


def _validate_probability_like(name, value):
    arr = to_numpy(name, value)
    require_finite(name, arr)
    require_range(name, arr, lo=0.0, hi=1.0, lo_open=True, hi_open=True)
    return arr


@jax.jit
def sil_from_pfd_core(pfd_avg) -> SilResult:
    """Jitted core of :func:`sil_from_pfd` (elementwise)."""
    return _sil_from_bands(as_float(pfd_avg), 1e-5)


def sil_from_pfd(pfd_avg: Real[ArrayLike, "*batch"]) -> SilResult:
    """IEC 61508-1 Table 2: SIL achieved by an average probability of failure on demand.

    SIL 4: [1e-5, 1e-4); SIL 3: [1e-4, 1e-3); SIL 2: [1e-3, 1e-2); SIL 1: [1e-2, 1e-1);
    PFD >= 0.1 gives 0 (no SIL); PFD < 1e-5 gives SIL 4 with ``beyond_table``.

    Args:
        pfd_avg: PFDavg in (0, 1).

    Returns:
        SilResult (sil, beyond_table, risk_reduction_factor).

    Example:
        >>> int(sil_from_pfd(8.76e-3).sil)
        2
    """
    _validate_probability_like("pfd_avg", pfd_avg)
    return sil_from_pfd_core(pfd_avg)


@jax.jit
def sil_from_pfh_core(pfh) -> SilResult:
    """Jitted core of :func:`sil_from_pfh` (elementwise)."""
    return _sil_from_bands(as_float(pfh), 1e-9)


def sil_from_pfh(pfh: Real[ArrayLike, "*batch"]) -> SilResult:
    """IEC 61508-1 Table 3: SIL achieved by a dangerous failure frequency PFH (1/h).

    SIL 4: [1e-9, 1e-8); SIL 3: [1e-8, 1e-7); SIL 2: [1e-7, 1e-6); SIL 1: [1e-6, 1e-5);
    PFH >= 1e-5 gives 0; PFH < 1e-9 gives SIL 4 with ``beyond_table``.

    Args:
        pfh: Probability of dangerous failure per hour, in (0, 1).

    Returns:
        SilResult.
    """
    _validate_probability_like("pfh", pfh)
    return sil_from_pfh_core(pfh)


class SilCompliance(NamedTuple):
    """Result of :func:`check_sil_compliance` (PFD/PFH criterion only, see SIL_CRITERION_NOTE).

    Attributes:
        compliant: ``value < upper bound of the target band``.
        achieved_sil: SIL achieved by the value.
        margin_factor: ``upper bound / value`` (> 1 means compliant with margin).
        beyond_table: Value below the SIL 4 band.
    """

    compliant: Flag
    achieved_sil: Code
    margin_factor: Scalar
    beyond_table: Flag


@functools.partial(jax.jit, static_argnames=("mode",))
def check_sil_compliance_core(value, target_sil, *, mode: str = "low_demand") -> SilCompliance:
    """Jitted core of :func:`check_sil_compliance` (elementwise)."""
    value = as_float(value)
    lowest = 1e-5 if mode == "low_demand" else 1e-9
    achieved = _sil_from_bands(value, lowest)
    upper = lowest * 10.0 ** (5.0 - as_float(target_sil))
    return SilCompliance(value < upper, achieved.sil, upper / value, achieved.beyond_table)


def check_sil_compliance(value: Real[ArrayLike, "*batch"], *,
                         target_sil: Real[ArrayLike, "*batch"],
                         mode: str = "low_demand") -> SilCompliance:
    """IEC 61508 compliance of a PFDavg (low demand) or PFH (high demand) with a target SIL.

    Compliant iff the value is below the upper bound of the target band, e.g. PFDavg < 10^-SIL
    in low-demand mode. This checks the random-hardware-failure target only.

    Args:
        value: PFDavg (``mode="low_demand"``) or PFH in 1/h (``mode="high_demand"``).
        target_sil: Required SIL, 1..4.
        mode: "low_demand" or "high_demand" (continuous mode uses "high_demand").

    Returns:
        SilCompliance (compliant, achieved_sil, margin_factor, beyond_table).

    Raises:
        UnknownOptionError: Bad mode. DomainError: target_sil not in 1..4 or value outside (0, 1).
    """
    mode = ("low_demand", "high_demand")[option_index("mode", mode, ("low_demand", "high_demand"))]
    arr = _validate_probability_like("value", value)
    target = to_numpy("target_sil", target_sil)
    require_integer_valued("target_sil", target)
    require_range("target_sil", target, lo=1, hi=4)
    require_broadcastable(value=arr, target_sil=target)
    return check_sil_compliance_core(value, target_sil, mode=mode)


def _validate_pfd_inputs(lambda_du, proof_test_interval_h, beta=None):
    values = {"lambda_du": lambda_du, "proof_test_interval_h": proof_test_interval_h}
    if beta is not None:
        values["beta"] = beta
    arrays = finite_arrays(values)
    require_range("lambda_du", arrays["lambda_du"], lo=0.0, lo_open=True,
                  hint="Pass the dangerous undetected failure rate per hour, e.g. 2e-6.")
    require_range("proof_test_interval_h", arrays["proof_test_interval_h"], lo=0.0, lo_open=True)
    if beta is not None:
        require_range("beta", arrays["beta"], lo=0.0, hi=1.0,
                      hint="beta is the common-cause fraction, e.g. 0.1.")
    require_broadcastable(**arrays)
    pfd = arrays["lambda_du"] * arrays["proof_test_interval_h"] / 2.0
    if np.any(pfd >= 1.0):
        raise DomainError("lambda_du * proof_test_interval_h / 2 >= 1: the simplified PFD "
                          "formula only holds for lambda*T1 << 1; check units (per hour, hours).")


class PfdResult(NamedTuple):
    """Simplified PFDavg and the SIL it achieves."""

    pfd_avg: Scalar
    sil: Code
    beyond_table: Flag


@jax.jit
def pfd_avg_1oo1_core(lambda_du, proof_test_interval_h) -> PfdResult:
    """Jitted core of :func:`pfd_avg_1oo1` (elementwise)."""
    pfd = as_float(lambda_du) * as_float(proof_test_interval_h) / 2.0
    sil = _sil_from_bands(pfd, 1e-5)
    return PfdResult(pfd, sil.sil, sil.beyond_table)


def pfd_avg_1oo1(lambda_du: Real[ArrayLike, "*batch"],
                 proof_test_interval_h: Real[ArrayLike, "*batch"]) -> PfdResult:
    """Simplified 1oo1 PFDavg ``lambda_DU T1 / 2`` (IEC 61508-6 Annex B, no diagnostics/repair).

    Args:
        lambda_du: Dangerous undetected failure rate, 1/h.
        proof_test_interval_h: Proof-test interval T1, hours.

    Returns:
        PfdResult (pfd_avg, sil, beyond_table).

    Example:
        >>> r = pfd_avg_1oo1(2e-6, 8760)
        >>> round(float(r.pfd_avg), 5), int(r.sil)
        (0.00876, 2)
    """
    _validate_pfd_inputs(lambda_du, proof_test_interval_h)
    return pfd_avg_1oo1_core(lambda_du, proof_test_interval_h)


@jax.jit
def pfd_avg_1oo2_core(lambda_du, proof_test_interval_h, beta) -> PfdResult:
    """Jitted core of :func:`pfd_avg_1oo2` (elementwise)."""
    lam_t = as_float(lambda_du) * as_float(proof_test_interval_h)
    beta = as_float(beta)
    pfd = ((1.0 - beta) * lam_t) ** 2 / 3.0 + beta * lam_t / 2.0
    sil = _sil_from_bands(pfd, 1e-5)
    return PfdResult(pfd, sil.sil, sil.beyond_table)


def pfd_avg_1oo2(lambda_du: Real[ArrayLike, "*batch"],
                 proof_test_interval_h: Real[ArrayLike, "*batch"],
                 beta: Real[ArrayLike, "*batch"]) -> PfdResult:
    """Simplified 1oo2 PFDavg ``((1 - b) l T1)^2 / 3 + b l T1 / 2`` (IEC 61508-6 Annex B).

    Args:
        lambda_du: Dangerous undetected failure rate per channel, 1/h.
        proof_test_interval_h: Proof-test interval T1, hours.
        beta: Common-cause failure fraction in [0, 1].

    Returns:
        PfdResult (pfd_avg, sil, beyond_table).
    """
    _validate_pfd_inputs(lambda_du, proof_test_interval_h, beta)
    return pfd_avg_1oo2_core(lambda_du, proof_test_interval_h, beta)


# ---------------------------------------------------------------------------------------------
# 7.3 ISO 13849-1 PL
# ---------------------------------------------------------------------------------------------


class PlResult(NamedTuple):
    """Result of :func:`pl_from_pfh`.

    Attributes:
        pl: Code into :data:`PL_LEVELS` (0 = none, 1 = a, ..., 5 = e).
        corresponding_sil: SIL matching the PL (0 for a or none).
        beyond_table: PFH_D below 1e-8 (PL e is the highest claim).
    """

    pl: Code
    corresponding_sil: Code
    beyond_table: Flag


_PL_EDGES = (1e-8, 1e-7, 1e-6, 3e-6, 1e-5, 1e-4)


@jax.jit
def pl_from_pfh_core(pfh_d) -> PlResult:
    """Jitted core of :func:`pl_from_pfh` (elementwise)."""
    pfh_d = as_float(pfh_d)
    idx = _band_of(pfh_d, _PL_EDGES)
    code = jnp.clip(6 - idx, 0, 5).astype(jnp.int32)
    valid = (pfh_d > 0) & (pfh_d < 1)
    return PlResult(guard(valid, code), guard(valid, jnp.asarray(_PL_TO_SIL, jnp.int32)[code]),
                    guard(valid, idx == 0))


def pl_from_pfh(pfh_d: Real[ArrayLike, "*batch"]) -> PlResult:
    """ISO 13849-1 Table 2: performance level for an average dangerous failure frequency.

    a: [1e-5, 1e-4); b: [3e-6, 1e-5); c: [1e-6, 3e-6); d: [1e-7, 1e-6); e: [1e-8, 1e-7);
    PFH_D >= 1e-4 gives no PL; < 1e-8 gives e with ``beyond_table``.

    Args:
        pfh_d: PFH_D in 1/h, in (0, 1).

    Returns:
        PlResult (pl code into PL_LEVELS, corresponding_sil, beyond_table).

    Example:
        >>> PL_LEVELS[int(pl_from_pfh(2e-6).pl)]
        'c'
    """
    _validate_probability_like("pfh_d", pfh_d)
    return pl_from_pfh_core(pfh_d)


class PlCompliance(NamedTuple):
    """Result of :func:`check_pl_compliance` (PFH_D criterion only)."""

    compliant: Flag
    achieved_pl: Code
    beyond_table: Flag


@jax.jit
def check_pl_compliance_core(pfh_d, required_pl) -> PlCompliance:
    """Jitted core of :func:`check_pl_compliance` (``required_pl`` as a code 1..5)."""
    achieved = pl_from_pfh_core(pfh_d)
    return PlCompliance(achieved.pl >= jnp.asarray(required_pl, jnp.int32), achieved.pl,
                        achieved.beyond_table)


def check_pl_compliance(pfh_d: Real[ArrayLike, "*batch"], *, required_pl: str | int) -> PlCompliance:
    """ISO 13849-1 compliance: achieved PL >= required PL (PL_r).

    Args:
        pfh_d: PFH_D in 1/h.
        required_pl: "a".."e" (or code 1..5).

    Returns:
        PlCompliance (compliant, achieved_pl code, beyond_table).

    Example:
        >>> bool(check_pl_compliance(2e-6, required_pl="c").compliant)
        True
    """
    _validate_probability_like("pfh_d", pfh_d)
    code = option_index("required_pl", required_pl, PL_LEVELS)
    if code == 0:
        raise UnknownOptionError("required_pl must be one of 'a'..'e'; 'none' is not a "
                                 "requirement.")
    return check_pl_compliance_core(pfh_d, code)


@jax.jit
def mttfd_band_core(mttfd_years) -> Code:
    """Jitted core of :func:`mttfd_band` (elementwise)."""
    return _band_of(as_float(mttfd_years), (3.0, 10.0, 30.0))


def mttfd_band(mttfd_years: Real[ArrayLike, "*batch"]) -> Code:
    """ISO 13849-1 MTTF_D band per channel: low 3-10 y, medium 10-30 y, high >= 30 y [VERIFY].

    Values below 3 years are ``not_acceptable``; ISO 13849-1 caps credited MTTF_D at 100 years
    (the band stays high).

    Returns:
        Code into :data:`MTTFD_BANDS`.
    """
    arr = to_numpy("mttfd_years", mttfd_years)
    require_finite("mttfd_years", arr)
    require_range("mttfd_years", arr, lo=0.0, lo_open=True)
    return mttfd_band_core(mttfd_years)


@jax.jit
def dc_band_core(dc_fraction) -> Code:
    """Jitted core of :func:`dc_band` (elementwise)."""
    return _band_of(as_float(dc_fraction), (0.60, 0.90, 0.99))


def dc_band(dc_fraction: Real[ArrayLike, "*batch"]) -> Code:
    """ISO 13849-1 diagnostic coverage band: none < 60 %, low 60-90 %, medium 90-99 %, high >= 99 %.

    Args:
        dc_fraction: DC_avg as a fraction in [0, 1] (0.95 for 95 %).

    Returns:
        Code into :data:`DC_BANDS` [VERIFY against the 2023 edition].
    """
    arr = to_numpy("dc_fraction", dc_fraction)
    require_finite("dc_fraction", arr)
    require_range("dc_fraction", arr, lo=0.0, hi=1.0, hint="Pass DC as a fraction (0.95 = 95 %).")
    return dc_band_core(dc_fraction)


# ---------------------------------------------------------------------------------------------
# 7.4 Citable regulatory items
# ---------------------------------------------------------------------------------------------


class NoiseDose(NamedTuple):
    """Result of :func:`osha_noise_dose` (OSHA 29 CFR 1910.95).

    Attributes:
        dose_pct: ``100 sum C_i / T_i`` over levels from ``threshold_dba`` (80 dBA) on: the
            hearing-conservation dose of 1910.95(c)-(d) and Appendix A.
        twa_dba: ``16.61 log10(D / 100) + 90`` of that dose (-inf for zero dose).
        over_pel: ``pel_dose_pct`` > 100 % (the sum of C_i / T_i exceeds unity, 1910.95(b)(2)).
        over_action_level: dose >= 50 % (TWA >= 85 dBA, hearing conservation).
        allowed_hours: Permissible duration ``8 / 2^((L - 90) / 5)`` per exposure.
        pel_dose_pct: The dose over levels from ``pel_threshold_dba`` (90 dBA) on: Table G-16
            lists no permissible time below 90 dBA, so quieter periods do not count toward the
            PEL (OSHA Technical Manual III:5, dosimeter threshold 90 dBA for the PEL, 80 dBA for
            the action level).
    """

    dose_pct: Scalar
    twa_dba: Scalar
    over_pel: Flag
    over_action_level: Flag
    allowed_hours: Float[Array, "*batch exposures"]
    pel_dose_pct: Scalar


@jax.jit
def osha_noise_dose_core(levels_dba, hours, threshold_dba=80.0, pel_threshold_dba=90.0) -> NoiseDose:
    """Jitted core of :func:`osha_noise_dose` for one worker (exposures on the last axis)."""
    levels, hours = as_float(levels_dba), as_float(hours)
    allowed = 8.0 / 2.0 ** ((levels - 90.0) / 5.0)

    def dose_from(threshold):
        return 100.0 * jnp.sum(jnp.where(levels >= as_float(threshold), hours / allowed, 0.0), axis=-1)

    dose, pel_dose = dose_from(threshold_dba), dose_from(pel_threshold_dba)
    twa = 16.61 * jnp.log10(dose / 100.0) + 90.0
    return NoiseDose(dose, twa, pel_dose > 100.0, dose >= 50.0, allowed, pel_dose)


def osha_noise_dose(levels_dba: Real[ArrayLike, "exposures"], hours: Real[ArrayLike, "exposures"],
                    *, threshold_dba: float = 80.0, pel_threshold_dba: float = 90.0) -> NoiseDose:
    """Daily noise dose and 8-h TWA under OSHA 29 CFR 1910.95.

    Permissible duration at level L (dBA, slow): ``T(L) = 8 / 2^((L - 90) / 5)`` hours (PEL
    90 dBA for 8 h, 5-dB exchange rate). Dose ``D = 100 sum C_i / T_i`` %; TWA
    ``16.61 log10(D/100) + 90``; action level 85 dBA TWA (dose 50 %). The dose and TWA integrate
    levels from ``threshold_dba`` on (80 dBA, 1910.95(d)(2)(i), the hearing-conservation
    measurement); the PEL check integrates levels from ``pel_threshold_dba`` on (90 dBA: Table
    G-16 gives no permissible time below it, and 1910.95(b)(2) sums C_i / T_i over its levels), so
    4 h at 95 dBA plus 4 h at 85 dBA is a 125 % dose (TWA 91.6 dBA, over the action level) but
    exactly 100 % of the PEL, which is not exceeded.

    Args:
        levels_dba: Sound level of each exposure period, dBA.
        hours: Duration of each period, hours (>= 0, total <= 24).
        threshold_dba: Lowest level integrated into the (hearing-conservation) dose.
        pel_threshold_dba: Lowest level integrated into the PEL dose.

    Returns:
        NoiseDose (dose_pct, twa_dba, over_pel, over_action_level, allowed_hours, pel_dose_pct).

    Example:
        >>> r = osha_noise_dose([95.0], [6.0])
        >>> round(float(r.dose_pct), 1), round(float(r.twa_dba), 2)
        (150.0, 92.92)
    """
    levels = to_numpy("levels_dba", levels_dba, ndim=1)
    durations = to_numpy("hours", hours, ndim=1)
    require_finite("levels_dba", levels)
    require_finite("hours", durations)
    require_same_shape(levels_dba=levels, hours=durations)
    require_range("levels_dba", levels, lo=0.0, hi=200.0)
    require_range("hours", durations, lo=0.0)
    if durations.sum() > 24.0:
        raise DomainError(f"hours sum to {durations.sum():g} > 24 for one working day.")
    if not 0.0 <= threshold_dba <= pel_threshold_dba:
        raise DomainError(f"need 0 <= threshold_dba <= pel_threshold_dba; got {threshold_dba:g} and "
                          f"{pel_threshold_dba:g} dBA (OSHA: 80 and 90).")
    return osha_noise_dose_core(levels_dba, hours, threshold_dba, pel_threshold_dba)


class VibrationExposure(NamedTuple):
    """Result of :func:`vibration_exposure_a8` (Directive 2002/44/EC).

    Attributes:
        a8: Daily exposure ``sqrt(sum a_i^2 T_i / 8 h)`` in m/s^2.
        over_action_value: a8 > exposure action value.
        over_limit_value: a8 > exposure limit value.
    """

    a8: Scalar
    over_action_value: Flag
    over_limit_value: Flag


@functools.partial(jax.jit, static_argnames=("kind",))
def vibration_exposure_a8_core(acceleration_m_s2, hours, *, kind: str = "hand_arm"
                               ) -> VibrationExposure:
    """Jitted core of :func:`vibration_exposure_a8` (exposures on the last axis)."""
    acc, hours = as_float(acceleration_m_s2), as_float(hours)
    a8 = jnp.sqrt(jnp.sum(acc**2 * hours, axis=-1) / 8.0)
    action, limit = EU_VIBRATION_LIMITS[kind]
    return VibrationExposure(a8, a8 > action, a8 > limit)


def vibration_exposure_a8(acceleration_m_s2: Real[ArrayLike, "exposures"],
                          hours: Real[ArrayLike, "exposures"], *,
                          kind: str = "hand_arm") -> VibrationExposure:
    """Daily human vibration exposure A(8) against EU Directive 2002/44/EC.

    ``A(8) = a sqrt(T / 8 h)`` for one exposure, ``sqrt(sum a_i^2 T_i / 8)`` for several.
    Hand-arm: action 2.5, limit 5 m/s^2. Whole-body: action 0.5, limit 1.15 m/s^2. (OSHA has no
    numeric vibration PEL.)

    Args:
        acceleration_m_s2: Frequency-weighted RMS acceleration per exposure (a_hv or a_w), m/s^2.
        hours: Exposure duration per period, hours.
        kind: "hand_arm" or "whole_body".

    Returns:
        VibrationExposure (a8, over_action_value, over_limit_value).

    Example:
        >>> float(vibration_exposure_a8([4.0], [2.0]).a8)
        2.0
    """
    kind = VIBRATION_EXPOSURE_KINDS[option_index("kind", kind, VIBRATION_EXPOSURE_KINDS)]
    acc = to_numpy("acceleration_m_s2", acceleration_m_s2, ndim=1)
    durations = to_numpy("hours", hours, ndim=1)
    for name, arr in (("acceleration_m_s2", acc), ("hours", durations)):
        require_finite(name, arr)
        require_range(name, arr, lo=0.0)
    require_same_shape(acceleration_m_s2=acc, hours=durations)
    if durations.sum() > 24.0:
        raise DomainError(f"hours sum to {durations.sum():g} > 24 for one day.")
    return vibration_exposure_a8_core(acceleration_m_s2, hours, kind=kind)


class VoltageUnbalance(NamedTuple):
    """Result of :func:`nema_voltage_unbalance` (NEMA MG 1 definition).

    Attributes:
        unbalance_pct: ``100 max |V_i - V_avg| / V_avg``.
        derating_required: unbalance > 1 %.
        not_recommended: unbalance > 5 % (operation not recommended).
    """

    unbalance_pct: Scalar
    derating_required: Flag
    not_recommended: Flag


@jax.jit
def nema_voltage_unbalance_core(line_voltages) -> VoltageUnbalance:
    """Jitted core of :func:`nema_voltage_unbalance` (the 3 voltages on the last axis)."""
    volts = as_float(line_voltages)
    mean = jnp.mean(volts, axis=-1)
    pct = 100.0 * jnp.max(jnp.abs(volts - mean[..., None]), axis=-1) / mean
    return VoltageUnbalance(pct, pct > 1.0, pct > 5.0)


def nema_voltage_unbalance(line_voltages: Real[ArrayLike, "3"]) -> VoltageUnbalance:
    """Percent voltage unbalance per NEMA MG 1 (max deviation from the mean over the mean).

    Not (Vmax - Vmin) / Vavg, a common error. Motors need derating above 1 %; operation above
    5 % is not recommended. The derating factor itself is read from an MG 1 figure and is not
    computed here.

    Args:
        line_voltages: The three line-to-line voltages (> 0), volts.

    Returns:
        VoltageUnbalance (unbalance_pct, derating_required, not_recommended).

    Example:
        >>> round(float(nema_voltage_unbalance([462, 463, 455]).unbalance_pct), 3)
        1.087
    """
    volts = to_numpy("line_voltages", line_voltages, ndim=1)
    if volts.shape != (3,):
        raise DomainError(f"line_voltages must hold exactly 3 line-to-line voltages; got "
                          f"{volts.shape[0]}.")
    require_finite("line_voltages", volts)
    require_range("line_voltages", volts, lo=0.0, lo_open=True)
    return nema_voltage_unbalance_core(line_voltages)


class Faa91409Status(NamedTuple):
    """Result of :func:`faa_91_409_status` (14 CFR 91.409).

    Attributes:
        annual_due: No annual inspection within the preceding 12 calendar months.
        hundred_hour_due: For hire and >= 100 h since the last 100-hour inspection.
        within_10h_ferry_allowance: For hire and over 100 h by at most 10 h (may be flown to
            where the inspection can be done; the excess counts against the next 100 h).
        hundred_hour_overdue: For hire and beyond 110 h.
    """

    annual_due: Flag
    hundred_hour_due: Flag
    within_10h_ferry_allowance: Flag
    hundred_hour_overdue: Flag


@jax.jit
def faa_91_409_status_core(hours_since_100h, months_since_annual, for_hire) -> Faa91409Status:
    """Jitted core of :func:`faa_91_409_status` (elementwise)."""
    hours = as_float(hours_since_100h)
    months = as_float(months_since_annual)
    hire = jnp.asarray(for_hire, dtype=bool)
    return Faa91409Status(months >= 12.0, hire & (hours >= 100.0),
                          hire & (hours > 100.0) & (hours <= 110.0), hire & (hours > 110.0))


def faa_91_409_status(hours_since_100h: Real[ArrayLike, "*batch"],
                      months_since_annual: Real[ArrayLike, "*batch"],
                      *, for_hire: bool | Bool[ArrayLike, "*batch"]) -> Faa91409Status:
    """Inspection status under FAA 14 CFR 91.409 (annual and 100-hour inspections).

    Args:
        hours_since_100h: Time in service since the last 100-hour inspection, hours.
        months_since_annual: Calendar months since the last annual inspection.
        for_hire: Aircraft carries persons for hire or gives flight instruction for hire.

    Returns:
        Faa91409Status flags.

    Example:
        >>> bool(faa_91_409_status(105.0, 3.0, for_hire=True).within_10h_ferry_allowance)
        True
    """
    for name, value in (("hours_since_100h", hours_since_100h),
                        ("months_since_annual", months_since_annual)):
        arr = to_numpy(name, value)
        require_finite(name, arr)
        require_range(name, arr, lo=0.0)
    return faa_91_409_status_core(hours_since_100h, months_since_annual, for_hire)
