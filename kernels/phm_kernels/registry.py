"""Registry of kernel families: family name -> public functions, jitted cores and label tuples.

The MCP adapter (``sfbench_jax/mcp``) names the kernels behind each tool result through
:func:`qualified_name`, and anyone may look kernels up here by name instead of importing modules
by string. Each family lists its *public* (validated) functions, their
``*_core`` counterparts where they exist, and the module-level label tuples that map int codes
to strings. The registry is read-only.

What does not live here: tool declarations, JSON conversion or label formatting (adapter).
"""

from __future__ import annotations

import types
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TypeVar

from phm_kernels import (
    battery,
    bearing,
    cmapss,
    economics,
    loaders,
    metrics,
    safety,
    trends,
    turbofan,
    vibration,
)
from phm_kernels.errors import UnknownOptionError

__all__ = ["KERNELS", "KERNEL_FAMILIES", "KernelFamily", "get_family", "get_kernel",
           "qualified_name"]


_T = TypeVar("_T")


@dataclass(frozen=True)
class KernelFamily:
    """One family of kernels.

    Attributes:
        name: Registry key, e.g. "battery".
        description: One line on what the family covers.
        module: Dotted module name.
        kernels: Public validated functions by name.
        cores: Jitted ``*_core`` functions by public name (subset of ``kernels``).
        labels: Label tuples (code -> string) by constant name.
    """

    name: str
    description: str
    module: str
    kernels: Mapping[str, Callable]
    cores: Mapping[str, Callable]
    labels: Mapping[str, tuple[str, ...]]


def _family(name: str, module: types.ModuleType, description: str,
            kernel_names: tuple[str, ...]) -> KernelFamily:
    kernels = {k: getattr(module, k) for k in kernel_names}
    cores = {k: getattr(module, f"{k}_core") for k in kernel_names
             if hasattr(module, f"{k}_core")}
    labels = {k: v for k, v in vars(module).items()
              if k.isupper() and isinstance(v, tuple) and v and all(isinstance(s, str) for s in v)}
    return KernelFamily(name, description, module.__name__, types.MappingProxyType(kernels),
                        types.MappingProxyType(cores), types.MappingProxyType(labels))


_FAMILIES = (
    _family("metrics", metrics, "RUL regression metrics, PHM08 score, classification metrics",
            ("regression_metrics", "phm08_score", "verify_rul_predictions",
             "classification_metrics")),
    _family("economics", economics, "Maintenance cost, ROI, age replacement, RUL schedules",
            ("annual_preventive_cost", "expected_failure_cost", "maintenance_roi",
             "age_replacement_cost_rate", "optimal_age_replacement", "rul_threshold_schedule")),
    _family("safety", safety, "FMEA RPN, IEC 61508 SIL, ISO 13849 PL, citable regulations",
            ("fmea_rpn", "sil_from_pfd", "sil_from_pfh", "check_sil_compliance", "pfd_avg_1oo1",
             "pfd_avg_1oo2", "pl_from_pfh", "check_pl_compliance", "mttfd_band", "dc_band",
             "osha_noise_dose", "vibration_exposure_a8", "nema_voltage_unbalance",
             "faa_91_409_status")),
    _family("vibration", vibration, "ISO 10816-1/-3 zones, operational limits, unit conversion",
            ("iso10816_1_zone", "iso10816_3_zone", "iso10816_3_operational_limits",
             "vib_convert")),
    _family("bearing", bearing, "Bearing defect frequencies, envelope spectrum, diagnosis",
            ("bearing_fault_frequencies", "envelope_spectrum", "averaged_envelope_spectrum",
             "match_fault_peaks", "diagnose_bearing")),
    _family("battery", battery, "Battery SOH, stage, fade RUL, fleet baseline, composites",
            ("battery_soh", "battery_stage", "battery_stage_escalated", "linear_fade_rul",
             "exp_fade_fit", "exp_fade_rul", "arrhenius_factor", "compare_to_baseline",
             "thermal_anomaly_checker", "impedance_trend_analyzer", "health_report_triage")),
    _family("trends", trends, "Trend fit, Mann-Kendall test, rolling z-score anomaly detector",
            ("trend_fit", "mann_kendall", "rolling_zscore_anomaly",
             "rolling_zscore_anomaly_multi")),
    _family("turbofan", turbofan, "Turbofan component health and efficiency/flow signature",
            ("component_health", "efficiency_flow_signature")),
    _family("cmapss", cmapss, "C-MAPSS RUL targets, sensor selection, regimes, HI baseline",
            ("cmapss_rul_targets", "select_informative", "fit_regime_centroids", "assign_regime",
             "fit_regime_stats", "cmapss_condition_normalize", "fit_health_index",
             "linear_health_index_rul", "fit_linear_health_index_baseline",
             "predict_linear_health_index_baseline")),
    _family("loaders", loaders, "Validated loaders for C-MAPSS, NASA battery and CWRU files",
            ("load_cmapss", "load_battery", "load_cwru")),
)

#: Families by name (read-only).
KERNEL_FAMILIES: Mapping[str, KernelFamily] = types.MappingProxyType(
    {family.name: family for family in _FAMILIES})
#: Every public kernel by name across families (names are unique).
KERNELS: Mapping[str, Callable] = types.MappingProxyType(
    {name: fn for family in _FAMILIES for name, fn in family.kernels.items()})


def _look_up(table: Mapping[str, _T], name: str, what: str) -> _T:
    if name in table:
        return table[name]
    raise UnknownOptionError(f"unknown {what} {name!r}; choose one of {sorted(table)}.")


def get_family(name: str) -> KernelFamily:
    """Returns a family by name.

    Raises:
        UnknownOptionError: Unknown family, listing the valid names.
    """
    return _look_up(KERNEL_FAMILIES, name, "kernel family")


def get_kernel(name: str) -> Callable:
    """Returns a public kernel by name from any family.

    Raises:
        UnknownOptionError: Unknown kernel, listing the valid names.
    """
    return _look_up(KERNELS, name, "kernel")


def qualified_name(kernel: Callable) -> str:
    """Returns ``"family.name"`` of a public kernel, e.g. ``"safety.fmea_rpn"``.

    The MCP adapter labels every result with the kernels that produced it through this, so a
    label always names a registered kernel where it lives.

    Raises:
        UnknownOptionError: The function is not a registered public kernel.
    """
    for family in _FAMILIES:
        for name, fn in family.kernels.items():
            if fn is kernel:
                return f"{family.name}.{name}"
    shown = getattr(kernel, "__qualname__", repr(kernel))
    raise UnknownOptionError(f"{shown} is not a registered public kernel; add it to its family in "
                             "phm_kernels.registry.")
