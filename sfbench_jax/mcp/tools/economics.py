"""Maintenance-economics tools (maintenance server): costs, ROI and maintenance timing.

What lives here: ``calculate_maintenance_cost``, ``calculate_failure_cost``,
``calculate_maintenance_roi``, ``optimize_maintenance_schedule`` (RUL-conditioned) and
``optimize_replacement_age`` (Weibull age replacement). What does not: the cost models
(`phm_kernels.economics`).
"""

from __future__ import annotations

from typing import Annotated, Literal

from phm_kernels import economics
from pydantic import Field

from sfbench_jax.mcp.datasets import DataStore
from sfbench_jax.mcp.errors import kernel_errors
from sfbench_jax.mcp.tools._common import (
    NonNegative,
    ToolDef,
    ToolResult,
    code_label,
    kernel_label,
    maybe_finite,
    scalar,
)

__all__ = ["TOOLS", "calculate_failure_cost", "calculate_maintenance_cost",
           "calculate_maintenance_roi", "optimize_maintenance_schedule",
           "optimize_replacement_age"]

HourlyRate = Annotated[NonNegative, Field(description="cost of one hour of downtime")]


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


def calculate_maintenance_cost(
        preventive_cost: Annotated[NonNegative, Field(description="cost of one preventive action")],
        frequency_per_year: Annotated[NonNegative, Field(
            description="preventive actions per year")],
        downtime_hours: Annotated[NonNegative, Field(description="downtime per action, hours")],
        hourly_rate: HourlyRate,
) -> MaintenanceCost:
    """Annual cost of a preventive maintenance programme, f x (c_p + downtime x rate)."""
    with kernel_errors():
        result = economics.annual_preventive_cost(preventive_cost, frequency_per_year,
                                                  downtime_hours, hourly_rate,
                                                  allow_fractional_frequency=True)
    return MaintenanceCost(annual_cost=scalar(result.annual_cost),
                           cost_per_event=scalar(result.cost_per_event),
                           frequency_per_year=frequency_per_year,
                           kernel=kernel_label(economics.annual_preventive_cost),
                           units={"annual_cost": "currency/year", "cost_per_event": "currency"})


def calculate_failure_cost(
        failure_probability: Annotated[NonNegative, Field(
            description="annual failure probability in [0, 1] (or failures/year if "
                        "probability_is_rate)")],
        repair_cost: Annotated[NonNegative, Field(description="corrective repair cost")],
        downtime_hours: Annotated[NonNegative, Field(description="downtime per failure")],
        hourly_rate: HourlyRate,
        consequential_cost: Annotated[NonNegative, Field(
            description="other cost per failure (scrap, penalties)")] = 0.0,
        probability_is_rate: bool = False,
) -> FailureCost:
    """Expected annual cost of unplanned failures, p x (repair + downtime x rate + other)."""
    with kernel_errors():
        result = economics.expected_failure_cost(failure_probability, repair_cost,
                                                 downtime_hours, hourly_rate, consequential_cost,
                                                 p_is_rate=probability_is_rate)
    return FailureCost(expected_annual_cost=scalar(result.expected_cost),
                       cost_per_failure=scalar(result.cost_per_failure),
                       failure_probability=failure_probability,
                       kernel=kernel_label(economics.expected_failure_cost),
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
        result = economics.maintenance_roi(reactive_annual_cost, preventive_annual_cost,
                                           residual_failure_annual_cost, program_cost,
                                           years=years, discount_rate=discount_rate)
    payback = maybe_finite(result.payback_years)
    if payback is not None and payback < 0:
        payback = None
    return RoiResult(roi=scalar(result.roi), roi_pct=100.0 * scalar(result.roi),
                     annual_savings=scalar(result.savings), payback_years=payback,
                     payback_months=None if payback is None else 12.0 * payback,
                     annuity_factor=scalar(result.annuity_factor),
                     kernel=kernel_label(economics.maintenance_roi),
                     units={"roi": "fraction", "annual_savings": "currency/year",
                            "payback_years": "years"})


def optimize_maintenance_schedule(
        rul_estimate: Annotated[float, Field(gt=0, description="mean predicted RUL")],
        rul_std: Annotated[float, Field(gt=0, description="standard deviation of the RUL")],
        preventive_cost: Annotated[NonNegative, Field(description="planned maintenance cost")],
        failure_cost: Annotated[float, Field(gt=0, description="cost of a failure")],
        safety_margin: Annotated[float | None, Field(
            ge=0, lt=1, description="if set, act at (1 - margin) x RUL instead of the cost "
                                    "optimum")] = None,
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
        kernel=kernel_label(economics.rul_threshold_schedule),
        units={"maintain_in": "same as rul_estimate", "rul_threshold": "same as rul_estimate",
               "cost_rate": "currency per time unit"})


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
        kernel=kernel_label(economics.optimal_age_replacement),
        units={"optimal_age": "same as weibull_scale", "cost_rate": "currency per time unit"})


def _warm_up_costs(store: DataStore) -> None:
    del store
    calculate_maintenance_cost(5000.0, 4.0, 8.0, 1000.0)
    calculate_failure_cost(0.3, 50000.0, 48.0, 1000.0, 20000.0)
    calculate_maintenance_roi(118000.0, 52000.0, 5900.0, 40000.0)


def _warm_up_schedule(store: DataStore) -> None:
    del store
    optimize_maintenance_schedule(100.0, 20.0, 1.0, 10.0)


def _warm_up_replacement(store: DataStore) -> None:
    del store
    optimize_replacement_age(2.0, 1000.0, 1.0, 10.0)


TOOLS = (
    ToolDef(calculate_maintenance_cost, "maintenance", warmup=_warm_up_costs),
    ToolDef(calculate_failure_cost, "maintenance"),
    ToolDef(calculate_maintenance_roi, "maintenance"),
    ToolDef(optimize_maintenance_schedule, "maintenance", warmup=_warm_up_schedule),
    ToolDef(optimize_replacement_age, "maintenance", warmup=_warm_up_replacement),
)
