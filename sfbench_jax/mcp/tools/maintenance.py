"""Maintenance-server tools: cost-benefit analysis and safety / policy checks.

What lives here: thin adapters over `phm_kernels.economics` (annual preventive cost, expected
failure cost, ROI, RUL-conditioned schedule, Weibull age replacement) and `phm_kernels.safety`
(FMEA RPN, IEC 61508 SIL, ISO 13849 PL, simplified PFDavg, OSHA noise dose, EU hand-arm /
whole-body vibration, NEMA voltage unbalance, FAA 14 CFR 91.409), plus the offline distractor
stubs ``web_search`` and ``weather_data_loader`` (PHMForge distractors; they never touch the
network and always return "no results"). What does not: any arithmetic of those kernels.
"""

from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import BaseModel, Field

from sfbench_jax.mcp.errors import InvalidArgumentsError, kernel_errors
from sfbench_jax.mcp.inputs import as_float_array, as_label_list
from sfbench_jax.mcp.tools import ToolContext, ToolDef
from sfbench_jax.mcp.tools._common import ToolResult, code_label, flag, maybe_finite, scalar

__all__ = ["build"]

NonNegative = Annotated[float, Field(ge=0, allow_inf_nan=False)]
Rating = Annotated[int, Field(ge=1, le=10)]
NumberList = list[float] | str


class MaintenanceCost(ToolResult):
    """Annual preventive maintenance cost."""

    annual_cost: float
    cost_per_event: float
    frequency_per_year: float


class FailureCost(ToolResult):
    """Expected annual cost of unplanned failures."""

    expected_annual_cost: float
    cost_per_failure: float
    failure_probability: float


class RoiResult(ToolResult):
    """Return on investment of a maintenance programme."""

    roi: float = Field(description="(savings x annuity factor - program cost) / program cost")
    roi_pct: float
    annual_savings: float
    payback_years: float | None = Field(description="None when the programme never pays back")
    payback_months: float | None
    annuity_factor: float


class ScheduleResult(ToolResult):
    """When to maintain given an RUL estimate."""

    mode: Literal["cost_optimal", "safety_margin"]
    maintain_in: float = Field(description="time from now until maintenance")
    rul_threshold: float = Field(description="predicted RUL at which to act")
    p_fail_before: float = Field(description="probability of failure before maintenance")
    cost_rate: float | None
    expected_cost_per_cycle: float


class AgeReplacementResult(ToolResult):
    """Optimal preventive replacement age for a Weibull life."""

    status: str
    optimal_age: float | None = Field(description="None when run-to-failure is optimal")
    cost_rate: float
    run_to_failure_rate: float
    savings_fraction: float


class RiskResult(ToolResult):
    """FMEA risk assessment of one failure mode."""

    failure_mode: str
    rpn: int
    risk_level: Literal["low", "medium", "high", "critical"]
    rpn_band: Literal["low", "medium", "high", "critical"]
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


class SearchResult(ToolResult):
    """Offline search stub result."""

    query: str
    results: list[str]
    note: str


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


def build(context: ToolContext) -> list[ToolDef]:
    """Declare the maintenance-server tools.

    Args:
        context: Tool context (unused: these tools read no data).

    Returns:
        Tool declarations.
    """
    del context
    from phm_kernels import economics, safety

    def calculate_maintenance_cost(
            preventive_cost: Annotated[NonNegative, Field(
                description="cost of one preventive action")],
            frequency_per_year: Annotated[NonNegative, Field(
                description="preventive actions per year")],
            downtime_hours: Annotated[NonNegative, Field(description="downtime per action, hours")],
            hourly_rate: Annotated[NonNegative, Field(description="cost of one hour of downtime")],
    ) -> MaintenanceCost:
        """Annual cost of a preventive maintenance programme, f x (c_p + downtime x rate)."""
        with kernel_errors():
            result = economics.annual_preventive_cost(
                preventive_cost, frequency_per_year, downtime_hours, hourly_rate,
                allow_fractional_frequency=True)
        return MaintenanceCost(annual_cost=scalar(result.annual_cost),
                               cost_per_event=scalar(result.cost_per_event),
                               frequency_per_year=frequency_per_year,
                               kernel="economics.annual_preventive_cost",
                               units={"annual_cost": "currency/year",
                                      "cost_per_event": "currency"})

    def calculate_failure_cost(
            failure_probability: Annotated[NonNegative, Field(
                description="annual failure probability in [0, 1] (or failures/year if "
                            "probability_is_rate)")],
            repair_cost: Annotated[NonNegative, Field(description="corrective repair cost")],
            downtime_hours: Annotated[NonNegative, Field(description="downtime per failure")],
            hourly_rate: Annotated[NonNegative, Field(description="cost of one hour of downtime")],
            consequential_cost: Annotated[NonNegative, Field(
                description="other cost per failure (scrap, penalties)")] = 0.0,
            probability_is_rate: bool = False,
    ) -> FailureCost:
        """Expected annual cost of unplanned failures, p x (repair + downtime x rate + other)."""
        with kernel_errors():
            result = economics.expected_failure_cost(
                failure_probability, repair_cost, downtime_hours, hourly_rate,
                consequential_cost, p_is_rate=probability_is_rate)
        return FailureCost(expected_annual_cost=scalar(result.expected_cost),
                           cost_per_failure=scalar(result.cost_per_failure),
                           failure_probability=failure_probability,
                           kernel="economics.expected_failure_cost",
                           units={"expected_annual_cost": "currency/year",
                                  "cost_per_failure": "currency"})

    def calculate_maintenance_roi(
            reactive_annual_cost: Annotated[NonNegative, Field(
                description="annual cost of running to failure")],
            preventive_annual_cost: Annotated[NonNegative, Field(
                description="annual cost of the preventive programme")],
            residual_failure_annual_cost: Annotated[NonNegative, Field(
                description="annual cost of failures still expected under the programme")],
            program_cost: Annotated[float, Field(gt=0, description="one-off programme cost")],
            years: Annotated[int, Field(ge=1, le=100, description="horizon in years")] = 1,
            discount_rate: Annotated[float, Field(ge=0, le=1)] = 0.0,
    ) -> RoiResult:
        """ROI and payback of a maintenance programme versus run-to-failure."""
        with kernel_errors():
            result = economics.maintenance_roi(
                reactive_annual_cost, preventive_annual_cost, residual_failure_annual_cost,
                program_cost, years=years, discount_rate=discount_rate)
        payback = maybe_finite(result.payback_years)
        if payback is not None and payback < 0:
            payback = None
        return RoiResult(roi=scalar(result.roi), roi_pct=100.0 * scalar(result.roi),
                         annual_savings=scalar(result.savings), payback_years=payback,
                         payback_months=None if payback is None else 12.0 * payback,
                         annuity_factor=scalar(result.annuity_factor),
                         kernel="economics.maintenance_roi",
                         units={"roi": "fraction", "annual_savings": "currency/year",
                                "payback_years": "years"})

    def optimize_maintenance_schedule(
            rul_estimate: Annotated[float, Field(gt=0, description="mean predicted RUL")],
            rul_std: Annotated[float, Field(gt=0, description="standard deviation of the RUL")],
            preventive_cost: Annotated[NonNegative, Field(description="planned maintenance cost")],
            failure_cost: Annotated[float, Field(gt=0, description="cost of a failure")],
            safety_margin: Annotated[float | None, Field(
                ge=0, lt=1, description="if set, act at (1 - margin) x RUL instead of the "
                                        "cost optimum")] = None,
            lead_time: NonNegative = 0.0,
            distribution: Literal["normal", "lognormal"] = "normal",
    ) -> ScheduleResult:
        """Cost-optimal (or safety-margin) maintenance time for an uncertain RUL estimate."""
        with kernel_errors():
            result = economics.rul_threshold_schedule(
                rul_estimate, rul_std, preventive_cost, failure_cost, lead_time=lead_time,
                safety_margin=safety_margin, distribution=distribution)
        return ScheduleResult(
            mode="cost_optimal" if safety_margin is None else "safety_margin",
            maintain_in=scalar(result.maintain_in), rul_threshold=scalar(result.rul_threshold),
            p_fail_before=scalar(result.p_fail_before), cost_rate=maybe_finite(result.cost_rate),
            expected_cost_per_cycle=scalar(result.expected_cost),
            kernel="economics.rul_threshold_schedule",
            units={"maintain_in": "same as rul_estimate", "rul_threshold": "same as "
                   "rul_estimate", "cost_rate": "currency per time unit"})

    def optimize_replacement_age(
            weibull_shape: Annotated[float, Field(gt=0, description="Weibull beta")],
            weibull_scale: Annotated[float, Field(gt=0, description="Weibull eta (time units)")],
            preventive_cost: Annotated[float, Field(gt=0)],
            failure_cost: Annotated[float, Field(gt=0, description="must exceed preventive_cost")],
    ) -> AgeReplacementResult:
        """Optimal age-replacement interval for a Weibull life (Barlow & Proschan)."""
        with kernel_errors():
            result = economics.optimal_age_replacement(weibull_shape, weibull_scale,
                                                       preventive_cost, failure_cost)
        return AgeReplacementResult(
            status=code_label(result.status, economics.AGE_REPLACEMENT_STATUS),
            optimal_age=maybe_finite(result.optimal_age), cost_rate=scalar(result.cost_rate),
            run_to_failure_rate=scalar(result.run_to_failure_rate),
            savings_fraction=scalar(result.savings_fraction),
            kernel="economics.optimal_age_replacement",
            units={"optimal_age": "same as weibull_scale", "cost_rate": "currency per time "
                   "unit"})

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
                          kernel="safety.fmea_rpn", units={"rpn": "dimensionless (1-1000)"})

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
                             kernel="safety.fmea_rpn", units={"rpn": "dimensionless"})

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
            if standard == "IEC61508":
                result = safety.check_sil_compliance(failure_measure, target_sil=level,
                                                     mode=demand_mode)
                achieved = f"SIL {int(scalar(result.achieved_sil))}"
                margin = maybe_finite(result.margin_factor)
            else:
                result = safety.check_pl_compliance(failure_measure, required_pl=level)
                achieved = f"PL {code_label(result.achieved_pl, safety.PL_LEVELS)}"
                margin = None
        return ComplianceResult(
            standard=standard, target_level=label, achieved_level=achieved,
            compliant=flag(result.compliant), margin_factor=margin,
            beyond_table=flag(result.beyond_table),
            note="checks the random-hardware failure measure only (architectural constraints "
                 "and systematic capability are out of scope)",
            kernel="safety.check_sil_compliance" if standard == "IEC61508"
            else "safety.check_pl_compliance",
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
                result = safety.pfd_avg_1oo1(lambda_du_per_hour, proof_test_interval_hours)
            else:
                result = safety.pfd_avg_1oo2(lambda_du_per_hour, proof_test_interval_hours,
                                             common_cause_beta)
        pfd = scalar(result.pfd_avg)
        return PfdResult(architecture=architecture, pfd_avg=pfd,
                         achieved_sil=int(scalar(result.sil)), risk_reduction_factor=1.0 / pfd,
                         kernel=f"safety.pfd_avg_{architecture}",
                         units={"pfd_avg": "dimensionless", "lambda_du_per_hour": "1/h"})

    def assess_noise_exposure(levels_dba: NumberList, hours: NumberList) -> NoiseResult:
        """OSHA 29 CFR 1910.95 daily noise dose and 8-h TWA for exposure periods (aligned lists)."""
        levels = as_float_array(levels_dba, argument="levels_dba")
        durations = as_float_array(hours, argument="hours")
        with kernel_errors():
            result = safety.osha_noise_dose(levels, durations)
        return NoiseResult(dose_pct=scalar(result.dose_pct), twa_dba=scalar(result.twa_dba),
                           over_pel=flag(result.over_pel),
                           over_action_level=flag(result.over_action_level),
                           kernel="safety.osha_noise_dose",
                           units={"dose_pct": "%", "twa_dba": "dBA"})

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
            kind=kind, a8_m_s2=scalar(result.a8), action_value_m_s2=action,
            limit_value_m_s2=limit, over_action_value=flag(result.over_action_value),
            over_limit_value=flag(result.over_limit_value),
            kernel="safety.vibration_exposure_a8", units={"a8_m_s2": "m/s^2"})

    def check_voltage_unbalance(line_voltages: NumberList) -> UnbalanceResult:
        """NEMA MG 1 percent voltage unbalance of three line-to-line voltages."""
        volts = as_float_array(line_voltages, argument="line_voltages")
        if volts.shape[0] != 3:
            raise InvalidArgumentsError("line_voltages needs exactly 3 values, got "
                                        f"{volts.shape[0]}")
        with kernel_errors():
            result = safety.nema_voltage_unbalance(volts)
        return UnbalanceResult(unbalance_pct=scalar(result.unbalance_pct),
                               derating_required=flag(result.derating_required),
                               operation_not_recommended=flag(result.not_recommended),
                               kernel="safety.nema_voltage_unbalance",
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
                                kernel="safety.faa_91_409_status",
                                units={"hours_since_100h": "h", "months_since_annual": "months"})

    def web_search(query: Annotated[str, Field(max_length=500)],
                   count: Annotated[int, Field(ge=1, le=20)] = 5) -> SearchResult:
        """Search the web for domain information (offline in this deployment: no results)."""
        del count
        return SearchResult(query=query, results=[],
                            note="offline: this server has no network access",
                            kernel="none (offline stub)")

    def weather_data_loader(location: Annotated[str, Field(max_length=200)],
                            days: Annotated[int, Field(ge=1, le=31)] = 7) -> SearchResult:
        """Load recent weather observations for a site (offline in this deployment: no data)."""
        del days
        return SearchResult(query=location, results=[],
                            note="offline: no weather data source is configured",
                            kernel="none (offline stub)")

    def warm_economics() -> None:
        calculate_maintenance_cost(5000.0, 4.0, 8.0, 1000.0)
        calculate_failure_cost(0.3, 50000.0, 48.0, 1000.0, 20000.0)
        calculate_maintenance_roi(118000.0, 52000.0, 5900.0, 40000.0)

    def warm_safety() -> None:
        assess_safety_risk("warm-up", 8, 5, 4)
        check_compliance("IEC61508", "2", 8.76e-3)
        check_compliance("ISO13849", "c", 2e-6)
        calculate_pfd("1oo1", 2e-6, 8760.0)
        assess_noise_exposure([95.0], [6.0])
        check_voltage_unbalance([462.0, 463.0, 455.0])
        check_inspection_status(105.0, 3.0, True)

    group = "maintenance"
    return [
        ToolDef(calculate_maintenance_cost, group, warmup=warm_economics),
        ToolDef(calculate_failure_cost, group),
        ToolDef(calculate_maintenance_roi, group),
        ToolDef(optimize_maintenance_schedule, group,
                warmup=lambda: optimize_maintenance_schedule(100.0, 20.0, 1.0, 10.0)),
        ToolDef(optimize_replacement_age, group,
                warmup=lambda: optimize_replacement_age(2.0, 1000.0, 1.0, 10.0)),
        ToolDef(assess_safety_risk, group, warmup=warm_safety),
        ToolDef(rank_failure_modes, group),
        ToolDef(check_compliance, group),
        ToolDef(calculate_pfd, group),
        ToolDef(assess_noise_exposure, group),
        ToolDef(assess_vibration_exposure, group),
        ToolDef(check_voltage_unbalance, group),
        ToolDef(check_inspection_status, group),
        ToolDef(web_search, group, is_offline_stub=True),
        ToolDef(weather_data_loader, group, is_offline_stub=True),
    ]
