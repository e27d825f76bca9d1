"""Tests for phm_kernels.vibration: ISO 10816 zones (boundaries pinned), conversions, jit/vmap."""

from __future__ import annotations

import jax
import numpy as np
import pytest
from phm_kernels import vibration
from phm_kernels.errors import DomainError, UnknownOptionError


def _zones(codes):
    return [vibration.ISO_ZONES[c] for c in np.atleast_1d(codes).tolist()]


def test_iso10816_1_class_ii_vector():
    r = vibration.iso10816_1_zone([0.5, 1.12, 2.79, 2.8, 7.1, 10.0], machine_class="II")
    assert _zones(r.zone) == ["A", "B", "B", "C", "D", "D"]
    assert r.zone.tolist() == [0, 1, 1, 2, 3, 3]
    np.testing.assert_allclose(r.ratio_to_cd, np.array([0.5, 1.12, 2.79, 2.8, 7.1, 10.0]) / 7.1)
    assert float(r.margin_to_next[0]) == pytest.approx(1.12 - 0.5)
    assert np.isinf(float(r.margin_to_next[-1]))


@pytest.mark.parametrize("machine_class, bounds", [("I", (0.71, 1.8, 4.5)), ("III", (1.8, 4.5, 11.2)),
                                                   ("IV", (2.8, 7.1, 18.0))])
def test_iso10816_1_other_classes_boundary_in_upper_zone(machine_class, bounds):
    r = vibration.iso10816_1_zone(list(bounds), machine_class=machine_class)
    assert r.zone.tolist() == [1, 2, 3]


def test_iso10816_3_examples_and_tables_not_mixed():
    assert _zones(vibration.iso10816_3_zone(3.0, group=2, foundation="rigid").zone) == ["C"]
    assert _zones(vibration.iso10816_3_zone(3.0, group=1, foundation="flexible").zone) == ["A"]
    # group 1 rigid: 2.3 / 4.5 / 7.1; group 2 flexible shares the same boundaries
    assert vibration.iso10816_3_zone([2.29, 2.3, 4.5, 7.1], group="1",
                                     foundation="rigid").zone.tolist() == [0, 1, 2, 3]
    assert vibration.iso10816_3_zone([1.39, 1.4, 2.8, 4.5], group=2,
                                     foundation="rigid").zone.tolist() == [0, 1, 2, 3]


def test_iso10816_3_operational_limits():
    r = vibration.iso10816_3_operational_limits(1.0, group=2, foundation="rigid")
    assert float(r.alarm_mm_s) == pytest.approx(1.0 + 0.25 * 2.8)
    assert float(r.trip_mm_s) == pytest.approx(1.25 * 4.5)
    high = vibration.iso10816_3_operational_limits(3.0, group=2, foundation="rigid")
    assert float(high.alarm_mm_s) == pytest.approx(1.25 * 2.8)  # capped at 1.25 x B/C


def test_vib_convert_examples():
    assert float(vibration.vib_convert(0.15, from_unit="in/s pk", to_unit="mm/s rms")) == \
        pytest.approx(2.694077, abs=1e-6)
    assert float(vibration.vib_convert(0.30, from_unit="in/s pk", to_unit="mm/s rms")) == \
        pytest.approx(5.388, abs=5e-4)
    assert float(vibration.vib_convert(0.15, from_unit="in/s pk", to_unit="mm/s pk")) == \
        pytest.approx(3.81)
    assert float(vibration.vib_convert(1.0, from_unit="g rms", to_unit="mm/s rms",
                                       freq_hz=100.0)) == pytest.approx(15.608, abs=5e-4)
    assert pytest.approx(2.694077, abs=1e-6) == vibration.NEMA_MG1_VIBRATION_LIMIT_MM_S_RMS


def test_vib_convert_round_trip_and_displacement():
    v = vibration.vib_convert(1.0, from_unit="mil pp", to_unit="mm/s rms", freq_hz=60.0)
    expected = 25.4e-3 / (2 * np.sqrt(2)) * 2 * np.pi * 60.0  # mm rms -> mm/s rms
    assert float(v) == pytest.approx(expected, rel=1e-12)
    back = vibration.vib_convert(v, from_unit="mm/s rms", to_unit="mil pp", freq_hz=60.0)
    assert float(back) == pytest.approx(1.0, rel=1e-12)


@pytest.mark.parametrize("call, error", [
    (lambda: vibration.iso10816_1_zone(-0.1, machine_class="II"), DomainError),
    (lambda: vibration.iso10816_1_zone(1.0, machine_class="V"), UnknownOptionError),
    (lambda: vibration.iso10816_3_zone(1.0, group=3, foundation="rigid"), UnknownOptionError),
    (lambda: vibration.iso10816_3_zone(1.0, group=1, foundation="soft"), UnknownOptionError),
    (lambda: vibration.vib_convert(1.0, from_unit="g rms", to_unit="mm/s rms"), DomainError),
    (lambda: vibration.vib_convert(1.0, from_unit="g rms", to_unit="mm/s rms", freq_hz=0.0),
     DomainError),
    (lambda: vibration.vib_convert(1.0, from_unit="furlong rms", to_unit="mm/s rms"),
     UnknownOptionError),
])
def test_bad_input_raises(call, error):
    with pytest.raises(error):
        call()


def test_jit_vmap_agreement(vmap_check):
    rng = np.random.default_rng(3)
    v = rng.uniform(0, 20, 12)
    vmap_check(vibration.iso10816_1_zone_core, (v, rng.integers(0, 4, 12)))
    vmap_check(vibration.iso10816_3_zone_core, (v, rng.integers(0, 4, 12)))
    vmap_check(vibration.vib_convert_core, (v, rng.uniform(10, 1000, 12)), from_unit="g rms",
               to_unit="mm/s rms")


def test_float32():
    with jax.enable_x64(False):
        r = vibration.iso10816_1_zone([1.12, 2.8, 7.1], machine_class="II")
        c = vibration.vib_convert(0.15, from_unit="in/s pk", to_unit="mm/s rms")
    assert r.zone.tolist() == [1, 2, 3]
    np.testing.assert_allclose(float(c), 2.694077, rtol=1e-5)
