"""Tests for phm_kernels.safety: phm-reference 7 worked examples, band directions, validation, jit/vmap."""

from __future__ import annotations

import jax
import numpy as np
import pytest
from phm_kernels import safety
from phm_kernels.errors import DomainError, ShapeMismatchError, UnknownOptionError


def _levels(codes):
    return [safety.RISK_LEVELS[c] for c in np.atleast_1d(codes).tolist()]


def test_fmea_worked_examples():
    r = safety.fmea_rpn([8, 9, 10, 3], [5, 2, 5, 3], [4, 2, 5, 3])
    assert r.rpn.tolist() == [160, 36, 250, 27]
    assert _levels(r.risk_level) == ["high", "high", "critical", "low"]
    assert _levels(r.rpn_band) == ["high", "low", "critical", "low"]
    assert r.override_applied.tolist() == [False, True, False, False]


def test_fmea_band_edges_and_priority_order():
    r = safety.fmea_rpn([1, 2, 4, 5, 1], [7, 5, 5, 5, 1], [7, 5, 5, 8, 1])
    assert r.rpn.tolist() == [49, 50, 100, 200, 1]
    assert _levels(r.risk_level) == ["low", "medium", "high", "critical", "low"]
    assert r.priority_order.tolist() == [3, 2, 1, 0, 4]
    # equal RPN: higher severity first
    tie = safety.fmea_rpn([2, 5], [5, 2], [5, 5])
    assert tie.priority_order.tolist() == [1, 0]
    assert tie.rank.tolist() == [1, 0]


def test_fmea_single_mode_scalar():
    r = safety.fmea_rpn(8, 5, 4)
    assert int(r.rpn) == 160 and safety.RISK_LEVELS[int(r.risk_level)] == "high"


@pytest.mark.parametrize("s, o, d, error", [
    (0, 5, 4, DomainError), (11, 5, 4, DomainError), (8.5, 5, 4, DomainError),
    (8, 5, [4, 4], ShapeMismatchError)])
def test_fmea_rejects_bad_ratings(s, o, d, error):
    with pytest.raises(error, match="severity|occurrence|detection"):
        safety.fmea_rpn(s, o, d)


def test_sil_from_pfd_direction_and_edges():
    r = safety.sil_from_pfd([8.76e-3, 0.1, 0.0999, 1e-2, 1e-3, 1e-4, 1e-5, 9e-6])
    # SIL 4 is the *smallest* PFD; a value on a band edge belongs to the band above it.
    assert r.sil.tolist() == [2, 0, 1, 1, 2, 3, 4, 4]
    assert r.beyond_table.tolist() == [False] * 7 + [True]


def test_sil_from_pfh_bands():
    assert safety.sil_from_pfh([5e-9, 5e-8, 5e-7, 5e-6, 5e-5]).sil.tolist() == [4, 3, 2, 1, 0]


def test_pfd_formulas_and_compliance():
    r1 = safety.pfd_avg_1oo1(2e-6, 8760)
    assert float(r1.pfd_avg) == pytest.approx(8.76e-3, rel=1e-12)
    assert int(r1.sil) == 2
    assert bool(safety.check_sil_compliance(8.76e-3, target_sil=2).compliant)
    assert not bool(safety.check_sil_compliance(8.76e-3, target_sil=3).compliant)
    r2 = safety.pfd_avg_1oo2(2e-6, 8760, 0.1)
    assert float(r2.pfd_avg) == pytest.approx(9.589e-4, rel=1e-3)
    assert int(r2.sil) == 3


def test_pl_from_pfh():
    r = safety.pl_from_pfh([2e-6, 5e-5, 5e-6, 5e-7, 5e-8, 2e-4, 5e-9])
    assert [safety.PL_LEVELS[c] for c in r.pl.tolist()] == ["c", "a", "b", "d", "e", "none", "e"]
    assert r.corresponding_sil.tolist() == [1, 0, 1, 2, 3, 0, 3]
    assert r.beyond_table.tolist()[-1]
    assert bool(safety.check_pl_compliance(2e-6, required_pl="c").compliant)
    assert not bool(safety.check_pl_compliance(2e-6, required_pl="d").compliant)


def test_supporting_bands():
    assert safety.mttfd_band([2.0, 3.0, 10.0, 29.9, 30.0, 150.0]).tolist() == [0, 1, 2, 2, 3, 3]
    assert safety.dc_band([0.5, 0.6, 0.9, 0.99]).tolist() == [0, 1, 2, 3]


def test_osha_noise_dose_example():
    r = safety.osha_noise_dose([95.0], [6.0])
    assert float(r.allowed_hours[0]) == pytest.approx(4.0)
    assert float(r.dose_pct) == pytest.approx(150.0)
    assert float(r.twa_dba) == pytest.approx(92.92, abs=0.005)
    assert bool(r.over_pel) and bool(r.over_action_level)
    at_action = safety.osha_noise_dose([85.0], [8.0])
    assert float(at_action.dose_pct) == pytest.approx(50.0)
    assert bool(at_action.over_action_level) and not bool(at_action.over_pel)
    quiet = safety.osha_noise_dose([75.0, 90.0], [4.0, 4.0])
    assert float(quiet.dose_pct) == pytest.approx(50.0)  # below 80 dBA is not integrated


def test_osha_pel_counts_only_levels_from_90_dba():
    # 1910.95(b)(2) sums C/T over Table G-16, which starts at 90 dBA: 4 h at 95 dBA is the whole
    # permitted time, the 4 h at 85 dBA add nothing to the PEL but do count for the action level.
    r = safety.osha_noise_dose([95.0, 85.0], [4.0, 4.0])
    assert float(r.dose_pct) == pytest.approx(125.0) and float(r.twa_dba) == pytest.approx(91.61, abs=0.005)
    assert float(r.pel_dose_pct) == pytest.approx(100.0)
    assert not bool(r.over_pel) and bool(r.over_action_level)
    above = safety.osha_noise_dose([95.0, 85.0], [4.5, 3.5])
    assert float(above.pel_dose_pct) == pytest.approx(112.5) and bool(above.over_pel)
    with pytest.raises(DomainError):
        safety.osha_noise_dose([95.0], [1.0], threshold_dba=92.0)


def test_eu_vibration_a8_example():
    r = safety.vibration_exposure_a8([4.0], [2.0])
    assert float(r.a8) == pytest.approx(2.0)
    assert not bool(r.over_action_value)
    wb = safety.vibration_exposure_a8([0.8], [8.0], kind="whole_body")
    assert bool(wb.over_action_value) and not bool(wb.over_limit_value)


def test_nema_unbalance_uses_max_deviation_definition():
    r = safety.nema_voltage_unbalance([462, 463, 455])
    assert float(r.unbalance_pct) == pytest.approx(1.087, abs=5e-4)
    assert bool(r.derating_required) and not bool(r.not_recommended)
    # the (Vmax - Vmin)/Vavg error would give 1.739 %
    assert float(r.unbalance_pct) < 1.5


def test_faa_91_409():
    r = safety.faa_91_409_status([99.0, 100.0, 105.0, 111.0, 150.0], [11.0, 12.0, 3.0, 3.0, 3.0],
                                 for_hire=np.array([True, True, True, True, False]))
    assert r.annual_due.tolist() == [False, True, False, False, False]
    assert r.hundred_hour_due.tolist() == [False, True, True, True, False]
    assert r.within_10h_ferry_allowance.tolist() == [False, False, True, False, False]
    assert r.hundred_hour_overdue.tolist() == [False, False, False, True, False]


@pytest.mark.parametrize("call, error", [
    (lambda: safety.sil_from_pfd(0.0), DomainError),
    (lambda: safety.sil_from_pfd(1.5), DomainError),
    (lambda: safety.check_sil_compliance(1e-3, target_sil=5), DomainError),
    (lambda: safety.check_sil_compliance(1e-3, target_sil=2, mode="sometimes"),
     UnknownOptionError),
    (lambda: safety.check_pl_compliance(1e-6, required_pl="f"), UnknownOptionError),
    (lambda: safety.pfd_avg_1oo2(2e-6, 8760, 1.5), DomainError),
    (lambda: safety.osha_noise_dose([95.0], [30.0]), DomainError),
    (lambda: safety.nema_voltage_unbalance([462, 463]), DomainError),
    (lambda: safety.vibration_exposure_a8([1.0], [1.0], kind="foot"), UnknownOptionError),
    (lambda: safety.dc_band(95.0), DomainError),
])
def test_bad_input_raises(call, error):
    with pytest.raises(error):
        call()


def test_jit_vmap_agreement(vmap_check):
    rng = np.random.default_rng(2)
    ratings = rng.integers(1, 11, (3, 5, 6))
    vmap_check(safety.fmea_rpn_core, tuple(ratings))
    vmap_check(safety.sil_from_pfd_core, (10.0 ** rng.uniform(-6, -0.5, 7),))
    vmap_check(safety.pl_from_pfh_core, (10.0 ** rng.uniform(-9, -3, 7),))
    vmap_check(safety.osha_noise_dose_core, (rng.uniform(80, 100, (4, 3)), rng.uniform(0, 2, (4, 3))))
    vmap_check(safety.nema_voltage_unbalance_core, (rng.uniform(440, 480, (5, 3)),))
    vmap_check(safety.vibration_exposure_a8_core, (rng.uniform(0, 5, (4, 2)), rng.uniform(0, 4, (4, 2))),
               kind="hand_arm")
    vmap_check(safety.check_sil_compliance_core, (10.0 ** rng.uniform(-6, -1, 5),
                                                   rng.integers(1, 5, 5)), mode="low_demand")


def test_float32_bands():
    with jax.enable_x64(False):
        assert safety.sil_from_pfd([8.76e-3, 1e-3, 1e-4]).sil.tolist() == [2, 2, 3]
        assert int(safety.pl_from_pfh(2e-6).pl) == 3
        np.testing.assert_allclose(float(safety.osha_noise_dose([95.0], [6.0]).twa_dba), 92.925,
                                   rtol=1e-5)
