"""Safety and regulatory tools (maintenance server): FMEA, SIL / PL compliance and exposure limits.

What lives here: ``assess_safety_risk`` and ``rank_failure_modes`` (FMEA RPN), ``check_compliance``
(IEC 61508 SIL or ISO 13849 PL), ``calculate_pfd`` (simplified PFDavg), ``assess_noise_exposure``
(OSHA 29 CFR 1910.95), ``assess_vibration_exposure`` (EU Directive 2002/44/EC),
``check_voltage_unbalance`` (NEMA MG 1) and ``check_inspection_status`` (FAA 14 CFR 91.409).
What does not: the clauses' arithmetic (`phm_kernels.safety`).
"""

from __future__ import annotations

import re
from typing import Annotated, Literal

from phm_kernels import safety
from pydantic import BaseModel, Field

from sfbench_jax.mcp.datasets import DataStore
from sfbench_jax.mcp.errors import InvalidArgumentsError, kernel_errors
from sfbench_jax.mcp.inputs import as_float_array, as_label_list
from sfbench_jax.mcp.tools._common import (
    NonNegative,
    ToolDef,
    ToolResult,
    code_label,
    flag,
    kernel_label,
    maybe_finite,
    scalar,
)

__all__ = ["TOOLS", "assess_noise_exposure", "assess_safety_risk", "assess_vibration_exposure",
           "calculate_pfd", "check_compliance", "check_inspection_status",
           "check_voltage_unbalance", "rank_failure_modes"]

Rating = Annotated[int, Field(ge=1, le=10)]
NumberList = list[float] | str
RiskLevel = Literal["low", "medium", "high", "critical"]


class RiskResult(ToolResult):
    """FMEA risk assessment of one failure mode."""

    failure_mode: str
    rpn: int
    risk_level: RiskLevel
    rpn_band: RiskLevel
    severity_override_applied: bool


class RankedMode(BaseModel):
    """One failure mode in an FMEA ranking."""

    failure_mode: str
    rpn: int
    risk_level: str
    rank: int = Field(description="1 = address first")


class RankingResult(ToolResult):
    """FMEA ranking of several failure modes (RPN descending, then severity)."""

    ranking: list[RankedMode]
    top_priority: str


class ComplianceResult(ToolResult):
    """Compliance of a failure measure with a target SIL (IEC 61508) or PL (ISO 13849)."""

    standard: str
    target_level: str
    achieved_level: str
    compliant: bool
    margin_factor: float | None
    beyond_table: bool
    note: str


class PfdResult(ToolResult):
    """Simplified average probability of failure on demand."""

    architecture: str
    pfd_avg: float
    achieved_sil: int
    risk_reduction_factor: float


class NoiseResult(ToolResult):
    """OSHA 29 CFR 1910.95 daily noise dose."""

    dose_pct: float
    twa_dba: float
    over_pel: bool
    over_action_level: bool
    pel_dose_pct: float


class VibrationExposureResult(ToolResult):
    """EU Directive 2002/44/EC daily vibration exposure A(8)."""

    kind: str
    a8_m_s2: float
    action_value_m_s2: float
    limit_value_m_s2: float
    over_action_value: bool
    over_limit_value: bool


class UnbalanceResult(ToolResult):
    """NEMA MG 1 voltage unbalance."""

    unbalance_pct: float
    derating_required: bool
    operation_not_recommended: bool


class InspectionResult(ToolResult):
    """FAA 14 CFR 91.409 inspection status."""

    annual_due: bool
    hundred_hour_due: bool
    within_10h_ferry_allowance: bool
    hundred_hour_overdue: bool


def _parse_level(standard: str, level: str) -> tuple[int | str, str]:
    text = level.strip().upper().replace(" ", "").replace("-", "")
    if standard == "IEC61508":
        match = re.fullmatch(r"(?:SIL)?([1-4])", text)
        if not match:
            raise InvalidArgumentsError(f"target_level={level!r} is not a SIL; use 1-4 or "
                                        "'SIL 2'")
        return int(match.group(1)), f"SIL {match.group(1)}"
    match = re.fullmatch(r"(?:PLR?)?([A-E])", text)
    if not match:
        raise InvalidArgumentsError(f"target_level={level!r} is not a performance level; use "
                                    "a-e or 'PL d'")
    return match.group(1).lower(), f"PL {match.group(1).lower()}"


def assess_safety_risk(
        failure_mode: Annotated[str, Field(max_length=200)],
        severity: Rating, probability: Rating, detectability: Rating,
) -> RiskResult:
    """FMEA risk level (low/medium/high/critical) from severity, occurrence and detection.

    RPN = S x O x D; bands low < 50 <= medium < 100 <= high < 200 <= critical; severity >= 9
    raises the level to at least high.
    """
    with kernel_errors():
        result = safety.fmea_rpn(severity, probability, detectability)
    return RiskResult(failure_mode=failure_mode, rpn=int(scalar(result.rpn)),
                      risk_level=code_label(result.risk_level, safety.RISK_LEVELS),
                      rpn_band=code_label(result.rpn_band, safety.RISK_LEVELS),
                      severity_override_applied=flag(result.override_applied),
                      kernel=kernel_label(safety.fmea_rpn),
                      units={"rpn": "dimensionless (1-1000)"})


def rank_failure_modes(
        failure_modes: list[str] | str,
        severity: list[int] | str, occurrence: list[int] | str, detection: list[int] | str,
) -> RankingResult:
    """Rank several FMEA failure modes by RPN (then severity); lists are aligned by index."""
    names = as_label_list(failure_modes, argument="failure_modes")
    ratings = [as_float_array(v, argument=n) for n, v in
               (("severity", severity), ("occurrence", occurrence), ("detection", detection))]
    if any(r.shape[0] != len(names) for r in ratings):
        raise InvalidArgumentsError("failure_modes, severity, occurrence and detection must "
                                    "have the same length")
    with kernel_errors():
        result = safety.fmea_rpn(*ratings)
    rpn = [int(v) for v in result.rpn.tolist()]
    levels = [safety.RISK_LEVELS[int(c)] for c in result.risk_level.tolist()]
    ranks = [int(v) for v in result.rank.tolist()]
    ranking = sorted((RankedMode(failure_mode=n, rpn=r, risk_level=lv, rank=k + 1)
                      for n, r, lv, k in zip(names, rpn, levels, ranks, strict=True)),
                     key=lambda m: m.rank)
    return RankingResult(ranking=ranking, top_priority=ranking[0].failure_mode,
                         kernel=kernel_label(safety.fmea_rpn), units={"rpn": "dimensionless"})


def check_compliance(
        standard: Literal["IEC61508", "ISO13849"],
        target_level: Annotated[str, Field(
            description="IEC61508: target SIL 1-4 (e.g. 'SIL 2'); ISO13849: required PL a-e")],
        failure_measure: Annotated[float, Field(
            gt=0, lt=1, description="IEC61508 low demand: PFDavg; high demand: PFH (1/h); "
                                    "ISO13849: PFH_D (1/h)")],
        demand_mode: Literal["low_demand", "high_demand"] = "low_demand",
) -> ComplianceResult:
    """Check a safety function's failure measure against a SIL (IEC 61508) or PL (ISO 13849)."""
    level, label = _parse_level(standard, target_level)
    with kernel_errors():
        result: safety.SilCompliance | safety.PlCompliance
        if standard == "IEC61508":
            kernel = kernel_label(safety.check_sil_compliance)
            result = sil = safety.check_sil_compliance(failure_measure, target_sil=int(level), mode=demand_mode)
            achieved = f"SIL {int(scalar(sil.achieved_sil))}"
            margin = maybe_finite(sil.margin_factor)
        else:
            kernel = kernel_label(safety.check_pl_compliance)
            result = pl = safety.check_pl_compliance(failure_measure, required_pl=str(level))
            achieved = f"PL {code_label(pl.achieved_pl, safety.PL_LEVELS)}"
            margin = None
    return ComplianceResult(
        standard=standard, target_level=label, achieved_level=achieved,
        compliant=flag(result.compliant), margin_factor=margin,
        beyond_table=flag(result.beyond_table),
        note="checks the random-hardware failure measure only (architectural constraints and "
             "systematic capability are out of scope)",
        kernel=kernel,
        units={"failure_measure": "PFDavg (dimensionless)" if demand_mode == "low_demand"
               and standard == "IEC61508" else "1/h"})


def calculate_pfd(
        architecture: Literal["1oo1", "1oo2"],
        lambda_du_per_hour: Annotated[float, Field(gt=0, lt=1)],
        proof_test_interval_hours: Annotated[float, Field(gt=0)],
        common_cause_beta: Annotated[float, Field(ge=0, le=1)] = 0.1,
) -> PfdResult:
    """Simplified PFDavg of a 1oo1 or 1oo2 safety function (IEC 61508-6 Annex B)."""
    with kernel_errors():
        if architecture == "1oo1":
            kernel = kernel_label(safety.pfd_avg_1oo1)
            result = safety.pfd_avg_1oo1(lambda_du_per_hour, proof_test_interval_hours)
        else:
            kernel = kernel_label(safety.pfd_avg_1oo2)
            result = safety.pfd_avg_1oo2(lambda_du_per_hour, proof_test_interval_hours, common_cause_beta)
    pfd = scalar(result.pfd_avg)
    return PfdResult(architecture=architecture, pfd_avg=pfd,
                     achieved_sil=int(scalar(result.sil)), risk_reduction_factor=1.0 / pfd,
                     kernel=kernel,
                     units={"pfd_avg": "dimensionless", "lambda_du_per_hour": "1/h"})


def assess_noise_exposure(levels_dba: NumberList, hours: NumberList) -> NoiseResult:
    """OSHA 29 CFR 1910.95 daily noise dose and 8-h TWA for exposure periods (aligned lists).

    The dose and TWA integrate levels from 80 dBA (hearing conservation, action level 50 % /
    85 dBA); the PEL check uses the dose over levels from 90 dBA (``pel_dose_pct``, Table G-16).
    """
    levels = as_float_array(levels_dba, argument="levels_dba")
    durations = as_float_array(hours, argument="hours")
    with kernel_errors():
        result = safety.osha_noise_dose(levels, durations)
    return NoiseResult(dose_pct=scalar(result.dose_pct), twa_dba=scalar(result.twa_dba),
                       over_pel=flag(result.over_pel),
                       over_action_level=flag(result.over_action_level),
                       pel_dose_pct=scalar(result.pel_dose_pct),
                       kernel=kernel_label(safety.osha_noise_dose),
                       units={"dose_pct": "% (levels from 80 dBA)", "twa_dba": "dBA",
                              "pel_dose_pct": "% (levels from 90 dBA)"})


def assess_vibration_exposure(
        acceleration_m_s2: NumberList, hours: NumberList,
        kind: Literal["hand_arm", "whole_body"] = "hand_arm",
) -> VibrationExposureResult:
    """Daily human vibration exposure A(8) against EU Directive 2002/44/EC (OSHA has no PEL)."""
    acceleration = as_float_array(acceleration_m_s2, argument="acceleration_m_s2")
    durations = as_float_array(hours, argument="hours")
    with kernel_errors():
        result = safety.vibration_exposure_a8(acceleration, durations, kind=kind)
    action, limit = safety.EU_VIBRATION_LIMITS[kind]
    return VibrationExposureResult(
        kind=kind, a8_m_s2=scalar(result.a8), action_value_m_s2=action, limit_value_m_s2=limit,
        over_action_value=flag(result.over_action_value),
        over_limit_value=flag(result.over_limit_value),
        kernel=kernel_label(safety.vibration_exposure_a8), units={"a8_m_s2": "m/s^2"})


def check_voltage_unbalance(line_voltages: NumberList) -> UnbalanceResult:
    """NEMA MG 1 percent voltage unbalance of three line-to-line voltages."""
    volts = as_float_array(line_voltages, argument="line_voltages")
    if volts.shape[0] != 3:
        raise InvalidArgumentsError(f"line_voltages needs exactly 3 values, got {volts.shape[0]}")
    with kernel_errors():
        result = safety.nema_voltage_unbalance(volts)
    return UnbalanceResult(unbalance_pct=scalar(result.unbalance_pct),
                           derating_required=flag(result.derating_required),
                           operation_not_recommended=flag(result.not_recommended),
                           kernel=kernel_label(safety.nema_voltage_unbalance),
                           units={"unbalance_pct": "%"})


def check_inspection_status(
        hours_since_100h: NonNegative, months_since_annual: NonNegative, for_hire: bool,
) -> InspectionResult:
    """FAA 14 CFR 91.409 annual / 100-hour inspection status of an aircraft."""
    with kernel_errors():
        result = safety.faa_91_409_status(hours_since_100h, months_since_annual,
                                          for_hire=for_hire)
    return InspectionResult(annual_due=flag(result.annual_due),
                            hundred_hour_due=flag(result.hundred_hour_due),
                            within_10h_ferry_allowance=flag(result.within_10h_ferry_allowance),
                            hundred_hour_overdue=flag(result.hundred_hour_overdue),
                            kernel=kernel_label(safety.faa_91_409_status),
                            units={"hours_since_100h": "h", "months_since_annual": "months"})


def _warm_up(store: DataStore) -> None:
    del store
    assess_safety_risk("warm-up", 8, 5, 4)
    check_compliance("IEC61508", "2", 8.76e-3)
    check_compliance("ISO13849", "c", 2e-6)
    calculate_pfd("1oo1", 2e-6, 8760.0)
    assess_noise_exposure([95.0], [6.0])
    check_voltage_unbalance([462.0, 463.0, 455.0])
    check_inspection_status(105.0, 3.0, True)


TOOLS = (
    ToolDef(assess_safety_risk, "maintenance", warmup=_warm_up),
    ToolDef(rank_failure_modes, "maintenance"),
    ToolDef(check_compliance, "maintenance"),
    ToolDef(calculate_pfd, "maintenance"),
    ToolDef(assess_noise_exposure, "maintenance"),
    ToolDef(assess_vibration_exposure, "maintenance"),
    ToolDef(check_voltage_unbalance, "maintenance"),
    ToolDef(check_inspection_status, "maintenance"),
)
