"""Registry coverage, documentation, and runtime shape/type checks of every public kernel.

Each public kernel is wrapped with ``jaxtyping.jaxtyped(typechecker=beartype)`` and called on a
small valid example, so its jaxtyping annotations (shapes shared between arguments, dtype kinds)
are checked at runtime as the style guide asks; a wrongly-shaped call must fail the check.
"""

from __future__ import annotations

import inspect

import numpy as np
import phm_kernels
import pytest
from beartype import beartype
from beartype.roar import BeartypeException
from jaxtyping import TypeCheckError, jaxtyped
from phm_kernels import bearing, registry
from phm_kernels.errors import UnknownOptionError

A = np.asarray
K = np.arange(1.0, 41.0)
CAP = 1.9 * np.exp(-0.003 * K)
SIGNAL = np.sin(2 * np.pi * 3000 * np.arange(12_000) / 12_000.0) * (
    1 + 0.5 * np.cos(2 * np.pi * 107.0 * np.arange(12_000) / 12_000.0))
FREQS = np.linspace(0.0, 500.0, 501)
AMP = np.abs(np.sin(FREQS))

EXAMPLES = {
    "regression_metrics": ((A([1.0, 2.0]), A([1.5, 2.5])), {}),
    "phm08_score": ((A([1.0, 2.0]), A([1.5, 2.5])), {}),
    "verify_rul_predictions": ((A([1.0, 2.0]), A([1.5, 2.5])),
                               {"mae_range": (0, 1), "rmse_range": (0, 1)}),
    "classification_metrics": ((A([0, 1, 1]), A([0, 1, 0])), {"n_classes": 2}),
    "annual_preventive_cost": ((5000, 4, 8, 1000), {}),
    "expected_failure_cost": ((0.3, 50_000, 48, 1000, 20_000), {}),
    "maintenance_roi": ((118_000, 52_000, 5_900, 40_000), {}),
    "age_replacement_cost_rate": ((500.0,), {"beta": 2.0, "eta": 1000.0, "preventive_cost": 1.0,
                                            "failure_cost": 10.0}),
    "optimal_age_replacement": ((2.0, 1000.0, 1.0, 10.0), {"grid_size": 101}),
    "rul_threshold_schedule": ((100.0, 20.0, 1.0, 10.0), {}),
    "fmea_rpn": ((A([8, 9]), A([5, 2]), A([4, 2])), {}),
    "sil_from_pfd": ((8.76e-3,), {}),
    "sil_from_pfh": ((5e-8,), {}),
    "check_sil_compliance": ((8.76e-3,), {"target_sil": 2}),
    "pfd_avg_1oo1": ((2e-6, 8760.0), {}),
    "pfd_avg_1oo2": ((2e-6, 8760.0, 0.1), {}),
    "pl_from_pfh": ((2e-6,), {}),
    "check_pl_compliance": ((2e-6,), {"required_pl": "c"}),
    "mttfd_band": ((20.0,), {}),
    "dc_band": ((0.95,), {}),
    "osha_noise_dose": ((A([95.0]), A([6.0])), {}),
    "vibration_exposure_a8": ((A([4.0]), A([2.0])), {}),
    "nema_voltage_unbalance": ((A([462.0, 463.0, 455.0]),), {}),
    "faa_91_409_status": ((105.0, 3.0), {"for_hire": True}),
    "iso10816_1_zone": ((A([0.5, 2.8]),), {"machine_class": "II"}),
    "iso10816_3_zone": ((3.0,), {"group": 2, "foundation": "rigid"}),
    "iso10816_3_operational_limits": ((1.0,), {"group": 2, "foundation": "rigid"}),
    "vib_convert": ((0.15,), {"from_unit": "in/s pk", "to_unit": "mm/s rms"}),
    "bearing_fault_frequencies": ((1797.0,), bearing.CWRU_DRIVE_END._asdict()),
    "envelope_spectrum": ((SIGNAL,), {"fs": 12_000.0, "f_lo": 2000.0, "f_hi": 4000.0}),
    "averaged_envelope_spectrum": ((SIGNAL,), {"fs": 12_000.0, "f_lo": 2000.0, "f_hi": 4000.0,
                                               "segment_length": 6000}),
    "match_fault_peaks": ((FREQS, AMP, A([107.0, 162.0])), {}),
    "diagnose_bearing": ((SIGNAL,), {"fs": 12_000.0, "rpm": 1797.0, "f_lo": 2000.0,
                                     "f_hi": 4000.0}),
    "battery_soh": ((A([1.856, 1.62]),), {}),
    "battery_stage": ((A([0.81, 0.7]),), {}),
    "battery_stage_escalated": ((CAP,), {}),
    "rolling_zscore_anomaly": ((A([10, 10.2, 9.8, 10.1, 9.9, 10.0, 13.0, 13.5]),),
                               {"window": 5}),
    "rolling_zscore_anomaly_multi": ((np.stack([CAP, CAP[::-1]], axis=1),), {}),
    "linear_fade_rul": ((K, CAP), {}),
    "exp_fade_fit": ((K, CAP), {}),
    "exp_fade_rul": ((K, CAP), {}),
    "arrhenius_factor": ((318.15,), {}),
    "compare_to_baseline": ((CAP, np.stack([CAP, CAP * 1.01, CAP * 0.99])), {}),
    "thermal_anomaly_checker": ((CAP + 300, CAP + 299, CAP[:10] / 20, CAP[:10] / 10), {}),
    "impedance_trend_analyzer": ((CAP[:10] / 20, CAP[:10] / 10), {}),
    "health_report_triage": ((1, 50.0, False, False), {}),
    "trend_fit": ((K, CAP), {"y_threshold": 1.4}),
    "mann_kendall": ((CAP,), {}),
    "component_health": (("HPC", -0.021, -0.008), {}),
    "efficiency_flow_signature": (("HPC", -0.01, -0.03), {}),
    "cmapss_rul_targets": ((A([1.0, 75.0, 200.0]), 200.0), {}),
    "select_informative": ((np.stack([K, np.ones(40)], axis=1),), {}),
    "fit_regime_centroids": ((np.stack([K % 2, np.zeros(40), np.full(40, 100.0)], axis=1),),
                             {"n_regimes": 2}),
    "fit_regime_stats": ((np.stack([K, K], axis=1), (np.arange(40) % 2)), {"n_regimes": 2}),
    "cmapss_condition_normalize": ((A([[643.0]]), A([0]), A([[642.0]]), A([[0.5]])), {}),
    "fit_health_index": ((np.stack([K, K ** 0.5], axis=1), 1.0 - K / 40.0), {}),
    "linear_health_index_rul": ((np.stack([K, K ** 0.5], axis=1), A([1.0, -0.01, 0.0])), {}),
}
SKIP = {"assign_regime", "fit_linear_health_index_baseline", "predict_linear_health_index_baseline",
        "load_cmapss", "load_battery", "load_cwru"}  # need fitted models or files (tested elsewhere)


def test_registry_lists_every_family_and_lookup_errors():
    assert set(registry.KERNEL_FAMILIES) == {"metrics", "economics", "safety", "vibration",
                                             "bearing", "battery", "trends", "turbofan", "cmapss",
                                             "loaders"}
    assert registry.get_kernel("fmea_rpn") is phm_kernels.fmea_rpn
    assert registry.get_family("vibration").labels["ISO_ZONES"] == ("A", "B", "C", "D")
    assert "mann_kendall" in registry.get_family("trends").cores
    with pytest.raises(UnknownOptionError, match="fmea_rpn"):
        registry.get_kernel("fmea")
    with pytest.raises(UnknownOptionError, match="battery"):
        registry.get_family("batteries")


def test_every_kernel_and_module_is_documented():
    for family in registry.KERNEL_FAMILIES.values():
        module = inspect.getmodule(next(iter(family.kernels.values())))
        assert module.__doc__ and "What" in module.__doc__, family.name
        for name, fn in family.kernels.items():
            doc = inspect.getdoc(fn) or ""
            assert "Returns" in doc or "Args" in doc, name


def test_examples_cover_every_kernel():
    assert set(registry.KERNELS) - SKIP == set(EXAMPLES)


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_kernel_annotations_hold_at_runtime(name):
    args, kwargs = EXAMPLES[name]
    checked = jaxtyped(typechecker=beartype)(registry.KERNELS[name])
    checked(*args, **kwargs)


@pytest.mark.parametrize("name, args", [
    ("regression_metrics", (A([1.0, 2.0]), A([1.0, 2.0, 3.0]))),   # "n" must match
    ("nema_voltage_unbalance", (A([462.0, 463.0]),)),               # exactly 3 voltages
    ("mann_kendall", (np.ones((3, 4)),)),                           # 1-D series
])
def test_wrong_shapes_fail_the_runtime_check(name, args):
    checked = jaxtyped(typechecker=beartype)(registry.KERNELS[name])
    with pytest.raises((TypeCheckError, BeartypeException)):
        checked(*args)


def test_cores_mark_impossible_inputs_instead_of_answering():
    """Second line of defence (phm-reference 0.2): jitted cores cannot raise, so impossible inputs give
    NaN (floats) or -1 (codes) rather than a plausible-looking result."""
    from phm_kernels import battery, economics, safety, turbofan, vibration

    zone = vibration.iso10816_1_zone_core(np.array([-1.0, 1.0]), 1)
    assert zone.zone.tolist() == [-1, 0] and np.isnan(float(zone.ratio_to_cd[0]))
    assert safety.sil_from_pfd_core(np.array([0.0, 1e-3, 2.0])).sil.tolist() == [-1, 2, -1]
    assert safety.pl_from_pfh_core(np.array([-1.0, 2e-6])).pl.tolist() == [-1, 3]
    assert safety.fmea_rpn_core(np.array([0, 8]), np.array([5, 5]),
                                np.array([4, 4])).rpn.tolist() == [-1, 160]
    freqs = bearing.bearing_fault_frequencies_core(np.array([-5.0, 1797.0]), 9, 0.3126, 1.537)
    assert np.isnan(float(freqs.bpfo[0])) and np.isfinite(float(freqs.bpfo[1]))
    assert battery.battery_stage_core(np.array([-0.1, 0.85])).tolist() == [-1, 1]
    assert np.isnan(float(battery.arrhenius_factor_core(-3.0)))
    assert int(turbofan.component_health_core(2, -2.1, 0.0).band) == -1
    assert np.isnan(float(economics.optimal_age_replacement_core(2.0, 1000.0, 10.0,
                                                                 5.0).optimal_age))
    assert np.isnan(float(economics.rul_threshold_schedule_core(100.0, -1.0, 1.0,
                                                                10.0).maintain_in))
