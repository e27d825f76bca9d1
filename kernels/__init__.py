"""phm_kernels: pure, jitted, vmappable JAX kernels for prognostics and health management.

Installed from the top-level ``kernels/`` folder under the import name ``phm_kernels``. It never
imports ``sfbench_jax``. Families (one module each): ``metrics``, ``economics``, ``safety``,
``vibration``, ``bearing``, ``battery``, ``trends``, ``turbofan``, ``cmapss`` (RUL labels,
regimes, health-index baseline) and ``loaders`` (validated file readers). The learned RUL models
live in ``phm_kernels.rul_model`` (imported on demand: it pulls in Flax and optax).

Every public kernel validates its inputs eagerly (raising a :class:`PHMInputError` subclass
whose message names the argument and the fix) and then calls a jitted ``*_core`` function that
works on one item and vmaps over a leading batch axis. Results are NamedTuples of arrays;
categorical results are int codes into module-level label tuples (e.g. ``ISO_ZONES``).

The registry (:data:`KERNEL_FAMILIES`, :func:`get_kernel`) maps names to functions for the MCP
adapter. The library never changes ``jax_enable_x64``; enable it yourself for float64.
"""

from phm_kernels.battery import (
    BATTERY_STAGES,
    EOL_CAPACITY_AH,
    IMPEDANCE_LABELS,
    RATED_CAPACITY_AH,
    THERMAL_LABELS,
    TRIAGE_LEVELS,
    arrhenius_factor,
    battery_soh,
    battery_stage,
    battery_stage_escalated,
    celsius_to_kelvin,
    compare_to_baseline,
    exp_fade_fit,
    exp_fade_rul,
    health_report_triage,
    impedance_trend_analyzer,
    linear_fade_rul,
    rolling_zscore_anomaly,
    rolling_zscore_anomaly_multi,
    thermal_anomaly_checker,
)
from phm_kernels.bearing import (
    BEARING_FAULT_LABELS,
    CWRU_DRIVE_END,
    CWRU_FAN_END,
    BearingGeometry,
    averaged_envelope_spectrum,
    bearing_fault_frequencies,
    diagnose_bearing,
    envelope_spectrum,
    match_fault_peaks,
)
from phm_kernels.cmapss import (
    DEFAULT_FD001_SENSORS,
    DEFAULT_RUL_CAP,
    assign_regime,
    cmapss_condition_normalize,
    cmapss_rul_targets,
    fit_health_index,
    fit_linear_health_index_baseline,
    fit_regime_centroids,
    fit_regime_stats,
    linear_health_index_rul,
    predict_linear_health_index_baseline,
    select_informative,
)
from phm_kernels.economics import (
    AGE_REPLACEMENT_STATUS,
    age_replacement_cost_rate,
    annual_preventive_cost,
    expected_failure_cost,
    maintenance_roi,
    optimal_age_replacement,
    rul_threshold_schedule,
)
from phm_kernels.errors import (
    DomainError,
    InsufficientDataError,
    NonFiniteInputError,
    PHMInputError,
    ShapeMismatchError,
    UnknownOptionError,
)
from phm_kernels.loaders import (
    BATTERY_CELLS,
    CMAPSS_SUBSETS,
    CWRU_RECORDS,
    load_battery,
    load_cmapss,
    load_cwru,
)
from phm_kernels.metrics import (
    classification_metrics,
    phm08_score,
    regression_metrics,
    verify_rul_predictions,
)
from phm_kernels.registry import KERNEL_FAMILIES, KERNELS, KernelFamily, get_family, get_kernel
from phm_kernels.safety import (
    PL_LEVELS,
    RISK_LEVELS,
    SIL_CRITERION_NOTE,
    check_pl_compliance,
    check_sil_compliance,
    dc_band,
    faa_91_409_status,
    fmea_rpn,
    mttfd_band,
    nema_voltage_unbalance,
    osha_noise_dose,
    pfd_avg_1oo1,
    pfd_avg_1oo2,
    pl_from_pfh,
    sil_from_pfd,
    sil_from_pfh,
    vibration_exposure_a8,
)
from phm_kernels.trends import TREND_LABELS, TREND_MODELS, mann_kendall, trend_fit
from phm_kernels.turbofan import (
    COMPONENTS,
    HEALTH_BANDS,
    MECHANISM_HINTS,
    PHMFORGE_HEALTH_LABELS,
    SIGNATURE_CLASSES,
    component_health,
    efficiency_flow_signature,
)
from phm_kernels.vibration import (
    ISO10816_1_CLASSES,
    ISO_ZONES,
    VIB_UNITS,
    iso10816_1_zone,
    iso10816_3_operational_limits,
    iso10816_3_zone,
    vib_convert,
)

__all__ = [name for name in dir() if not name.startswith("_") and name not in {
    "battery", "bearing", "cmapss", "economics", "errors", "loaders", "metrics", "registry",
    "safety", "trends", "turbofan", "vibration"}]
