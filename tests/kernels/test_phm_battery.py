"""Tests for phm_kernels.battery: phm-reference 5 worked examples, composites, validation, jit/vmap.

The rolling z-score detector (phm-reference 5.4) lives in trends; its tests are in test_phm_trends.py.
"""

from __future__ import annotations

import jax
import numpy as np
import pytest
from phm_kernels import battery
from phm_kernels.errors import DomainError, InsufficientDataError, ShapeMismatchError


def test_battery_soh_example():
    r = battery.battery_soh([1.856, 1.62])
    assert float(r.soh_first[-1]) == pytest.approx(0.872845, abs=1e-6)
    assert float(r.soh_rated[-1]) == pytest.approx(0.81, abs=1e-12)
    assert float(r.fade_pct[-1]) == pytest.approx(100 * (1 - 1.62 / 1.856))
    assert int(r.eol_index) == -1  # censored: never below 1.4 Ah


def test_battery_soh_eol_index_and_rated_reference():
    r = battery.battery_soh([1.9, 1.5, 1.41, 1.39, 1.42], reference="rated")
    assert int(r.eol_index) == 3
    assert r.eol_reached.tolist() == [False, False, False, True, False]
    assert float(r.fade_pct[0]) == pytest.approx(5.0)


def test_battery_stage_examples_and_boundaries():
    codes = battery.battery_stage([0.81, 0.80, 0.70, 0.9, 0.95])
    assert [battery.BATTERY_STAGES[c] for c in codes.tolist()] == [
        "EARLY_DEGRADATION", "ACCELERATED_DEGRADATION", "EOL", "EARLY_DEGRADATION", "HEALTHY"]


def test_battery_stage_escalation():
    k = np.arange(60.0)
    slow_then_fast = np.where(k < 50, 1.95 - 0.001 * k, 1.90 - 0.01 * (k - 50))
    r = battery.battery_stage_escalated(slow_then_fast)
    assert int(r.base_stage) == 0 and bool(r.escalated)
    assert battery.BATTERY_STAGES[int(r.stage)] == "ACCELERATED_DEGRADATION"
    steady = battery.battery_stage_escalated(1.95 - 0.001 * k)
    assert not bool(steady.escalated) and int(steady.stage) == 0


def test_linear_fade_rul_example():
    k = np.arange(1.0, 11.0)
    r = battery.linear_fade_rul(k, 2.0 - 0.01 * k)
    assert float(r.k_eol) == pytest.approx(60.0)
    assert float(r.rul) == pytest.approx(50.0)
    assert battery.FADE_STATUS[int(r.status)] == "ok"
    flat = battery.linear_fade_rul(k, np.full(10, 1.9))
    assert np.isinf(float(flat.rul)) and battery.FADE_STATUS[int(flat.status)] == "no_fade"
    done = battery.linear_fade_rul(k, 1.5 - 0.02 * k)
    assert float(done.rul) == 0.0 and battery.FADE_STATUS[int(done.status)] == "eol_reached"


def test_linear_fade_observed_window():
    k = np.arange(1.0, 21.0)
    cap = np.where(k <= 10, 2.0 - 0.01 * k, 0.5)  # only the first 10 are trusted
    r = battery.linear_fade_rul(k, cap, observed_cycles=10)
    assert float(r.rul) == pytest.approx(50.0)


def test_exp_fade_example():
    k = np.arange(1.0, 61.0)
    cap = 1.86 * np.exp(-0.0025 * k)
    fit = battery.exp_fade_fit(k, cap)
    assert float(fit.c0) == pytest.approx(1.86, abs=1e-6)
    assert float(fit.decay_rate) == pytest.approx(0.0025, abs=1e-6)
    r = battery.exp_fade_rul(k, cap)
    assert float(r.k_eol) == pytest.approx(113.6417, abs=1e-4)
    assert float(r.first_cycle_below) == 114
    assert float(r.rul) == pytest.approx(53.6417, abs=1e-4)


def test_arrhenius_factor_examples():
    assert float(battery.arrhenius_factor(318.15, activation_energy_j_mol=31_700)) == \
        pytest.approx(2.234181, abs=1e-6)
    assert float(battery.arrhenius_factor(battery.celsius_to_kelvin(24.0))) == \
        pytest.approx(0.957879, abs=1e-6)


def test_exp_fade_rul_temperature_transfer():
    k = np.arange(1.0, 61.0)
    cap = 1.86 * np.exp(-0.0025 * k)
    hot = battery.exp_fade_rul(k, cap, temperature_k=298.15, target_temperature_k=318.15)
    assert float(hot.decay_rate_used) == pytest.approx(0.0025 * 2.234181, rel=1e-6)
    assert float(hot.k_eol) == pytest.approx(113.6417 / 2.234181, rel=1e-5)


def test_compare_to_baseline_flags_persistent_outlier():
    rng = np.random.default_rng(7)
    fleet = 1.8 + rng.normal(0, 0.01, (5, 40))
    target = np.median(fleet, axis=0).copy()
    target[20:25] -= 0.2
    r = battery.compare_to_baseline(target, fleet)
    assert bool(r.is_outlier) and int(r.n_events) == 1
    assert np.flatnonzero(r.flags).tolist() == [22, 23, 24]
    single = target.copy()
    single[20:25] = np.median(fleet, axis=0)[20:25]
    single[30] -= 0.2
    assert not bool(battery.compare_to_baseline(single, fleet).is_outlier)


def test_thermal_checker_labels():
    cycles = 40
    t_avg = np.full(cycles, 305.0)
    t_max = np.full(cycles, 311.0)
    flat_r = np.full(20, 0.2) + np.tile([0.0, 0.001], 10)
    normal = battery.thermal_anomaly_checker(t_max, t_avg, flat_r / 2, flat_r / 2)
    assert battery.THERMAL_LABELS[int(normal.label)] == "normal_aging"
    spiky = t_max.copy()
    spiky[25] += 6.0
    r = battery.thermal_anomaly_checker(spiky, t_avg, flat_r / 2, flat_r / 2)
    assert battery.THERMAL_LABELS[int(r.label)] == "thermal_spike"
    assert np.flatnonzero(r.spike).tolist() == [25]
    rising_r = np.linspace(0.2, 0.3, 20)
    warming = t_avg + 0.05 * np.arange(cycles)
    ir = battery.thermal_anomaly_checker(t_max, warming, rising_r / 2, rising_r / 2)
    assert battery.THERMAL_LABELS[int(ir.label)] == "internal_resistance_rise"


def test_impedance_analyzer_labels():
    n = 30
    wiggle = 0.0005 * np.sin(np.arange(n))
    re = np.full(n, 0.05) + wiggle
    rct = np.full(n, 0.10) - wiggle
    flat = battery.impedance_trend_analyzer(re, rct)
    assert battery.IMPEDANCE_LABELS[int(flat.label)] == "inconclusive"
    rising = battery.impedance_trend_analyzer(re + np.linspace(0, 0.02, n), rct)
    assert battery.IMPEDANCE_LABELS[int(rising.label)] == "real_degradation"
    spike = rct.copy()
    spike[12] += 0.05
    faulty = battery.impedance_trend_analyzer(re + np.linspace(0, 0.02, n), spike)
    assert battery.IMPEDANCE_LABELS[int(faulty.label)] == "sensor_fault"
    assert np.flatnonzero(faulty.jump).tolist() == [12]
    assert bool(faulty.degradation_after_cleaning)
    negative = re.copy()
    negative[3] = -0.01
    assert int(battery.impedance_trend_analyzer(negative, rct).label) == 0


def test_health_report_triage_first_match():
    codes = battery.health_report_triage([0, 1, 2, 3, 0, 0, 0, 0],
                                         [500, 500, 500, 500, 8, 25, 500, 500],
                                         [False] * 6 + [True, False],
                                         [False] * 7 + [True])
    assert [battery.TRIAGE_LEVELS[c] for c in codes.tolist()] == [
        "routine", "elevated", "urgent", "emergency", "emergency", "urgent", "emergency",
        "elevated"]


@pytest.mark.parametrize("call, error", [
    (lambda: battery.battery_soh([1856.0, 1620.0]), DomainError),
    (lambda: battery.battery_soh([1.8, -0.1]), DomainError),
    (lambda: battery.battery_soh([1.8, 1.7], reference="nominal"), ValueError),
    (lambda: battery.battery_stage(81.0), DomainError),
    (lambda: battery.linear_fade_rul([1.0, 2.0], [1.9, 1.8]), InsufficientDataError),
    (lambda: battery.linear_fade_rul([1.0, 3.0, 2.0], [1.9, 1.8, 1.7]), DomainError),
    (lambda: battery.exp_fade_rul([1.0, 2.0, 3.0], [1.9, 1.8, 1.7], temperature_k=-5.0),
     DomainError),
    (lambda: battery.compare_to_baseline(np.ones(10), np.ones((3, 9))), ShapeMismatchError),
    (lambda: battery.impedance_trend_analyzer(np.ones(6), np.ones(7)), ShapeMismatchError),
])
def test_bad_input_raises(call, error):
    with pytest.raises(error):
        call()


def test_mah_error_message_explains_fix():
    with pytest.raises(DomainError, match="mAh"):
        battery.battery_soh([1856.0, 1620.0])


def test_jit_vmap_agreement(vmap_check):
    rng = np.random.default_rng(8)
    k = np.tile(np.arange(1.0, 41.0), (3, 1))
    cap = 1.9 * np.exp(-rng.uniform(0.001, 0.004, (3, 1)) * k) + rng.normal(0, 0.002, (3, 40))
    vmap_check(battery.battery_soh_core, (cap, 2.0, 1.4), in_axes=(0, None, None),
               reference="first")
    vmap_check(battery.linear_fade_rul_core, (k, cap, 1.4, 30), in_axes=(0, 0, None, None))
    vmap_check(battery.exp_fade_rul_core, (k, cap, 1.4, 40), in_axes=(0, 0, None, None))
    vmap_check(battery.battery_stage_core, (rng.uniform(0.6, 1.0, 9),))
    vmap_check(battery.compare_to_baseline_core,
               (rng.normal(0, 1, (3, 20)), rng.normal(0, 1, (3, 4, 20))), min_persistence=3)
    vmap_check(battery.impedance_trend_analyzer_core,
               (rng.uniform(0.04, 0.06, (3, 15)), rng.uniform(0.09, 0.11, (3, 15))))


def test_float32():
    with jax.enable_x64(False):
        k = np.arange(1.0, 61.0, dtype=np.float32)
        r = battery.exp_fade_rul(k, (1.86 * np.exp(-0.0025 * k)).astype(np.float32))
        soh = battery.battery_soh([1.856, 1.62])
    np.testing.assert_allclose(float(r.k_eol), 113.6417, rtol=1e-4)
    np.testing.assert_allclose(float(soh.soh_first[-1]), 0.872845, rtol=1e-5)


@pytest.mark.parametrize("cell", ["B0005", "B0006", "B0007", "B0018"])
def test_real_cells_eol_and_fade_fits(data_root, cell):
    from phm_kernels import loaders

    b = loaders.load_battery(data_root, cell)
    soh = battery.battery_soh(b.capacity_ah)
    below = np.flatnonzero(b.capacity_ah < 1.4)
    assert int(soh.eol_index) == (below[0] if below.size else -1)
    if cell == "B0007":
        assert int(soh.eol_index) == -1  # never crosses 1.4 Ah: censored, not extrapolated
    k = b.cycle.astype(float)
    slope, intercept = np.polyfit(k[:80], b.capacity_ah[:80], 1)
    lin = battery.linear_fade_rul(k, b.capacity_ah, observed_cycles=80)
    assert float(lin.slope) == pytest.approx(slope, rel=1e-9)
    assert float(lin.k_eol) == pytest.approx((1.4 - intercept) / slope, rel=1e-9)
    log_slope, log_intercept = np.polyfit(k[:80], np.log(b.capacity_ah[:80]), 1)
    exp = battery.exp_fade_rul(k, b.capacity_ah, observed_cycles=80)
    assert float(exp.k_eol) == pytest.approx(np.log(np.exp(log_intercept) / 1.4) / -log_slope,
                                             rel=1e-9)
