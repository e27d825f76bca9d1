"""Tests for phm_kernels.turbofan: component health bands and efficiency/flow signature."""

from __future__ import annotations

import numpy as np
import pytest
from phm_kernels import turbofan
from phm_kernels.errors import DomainError, UnknownOptionError


def test_component_health_examples():
    hpc = turbofan.component_health("HPC", -0.021, -0.008)
    assert turbofan.HEALTH_BANDS[int(hpc.band)] == "DEGRADED"
    assert float(hpc.magnitude) == pytest.approx(0.021)
    assert float(hpc.margin_to_next) == pytest.approx(0.009)
    hpt = turbofan.component_health("HPT", -0.004, 0.002)
    assert turbofan.HEALTH_BANDS[int(hpt.band)] == "HEALTHY"
    assert turbofan.PHMFORGE_HEALTH_LABELS[int(hpt.band)] == "Operating Normally"


def test_component_health_band_edges_and_custom_thresholds():
    r = turbofan.component_health(["FAN", "LPC", "HPC", "HPT", "LPT"],
                                  [-0.0099, -0.01, -0.03, 0.05, 0.0],
                                  [0.0, 0.0, 0.0, 0.0, -0.2])
    assert r.band.tolist() == [0, 1, 2, 3, 3]
    assert np.isinf(float(r.margin_to_next[-1]))
    table = np.array([[0.01, 0.03, 0.05]] * 5)
    table[2] = [0.02, 0.04, 0.06]  # a more tolerant HPC
    assert int(turbofan.component_health("HPC", -0.021, 0.0, thresholds=table).band) == 1
    assert int(turbofan.component_health("HPC", -0.019, 0.0, thresholds=table).band) == 0


def test_signature_examples():
    r = turbofan.efficiency_flow_signature("HPC", -0.010, -0.030)
    assert turbofan.SIGNATURE_CLASSES[int(r.signature)] == "FLOW_DOMINANT"
    assert float(r.ratio) == pytest.approx(3.0)
    assert turbofan.MECHANISM_HINTS[int(r.mechanism_hint)] == "fouling"
    r = turbofan.efficiency_flow_signature("HPC", -0.020, -0.004)
    assert turbofan.SIGNATURE_CLASSES[int(r.signature)] == "EFFICIENCY_DOMINANT"
    assert float(r.ratio) == pytest.approx(0.2)
    assert turbofan.MECHANISM_HINTS[int(r.mechanism_hint)] == "erosion_or_clearance"


def test_signature_none_coupled_and_turbine_hints():
    r = turbofan.efficiency_flow_signature(["LPC", "HPC", "HPT", "LPT"],
                                           [0.001, -0.02, -0.02, -0.01],
                                           [-0.004, -0.02, 0.015, -0.03])
    assert [turbofan.SIGNATURE_CLASSES[c] for c in r.signature.tolist()] == [
        "NONE", "COUPLED", "COUPLED", "FLOW_DOMINANT"]
    assert [turbofan.MECHANISM_HINTS[c] for c in r.mechanism_hint.tolist()] == [
        "indeterminate", "fouling", "turbine_erosion", "turbine_fouling"]


@pytest.mark.parametrize("call, error", [
    (lambda: turbofan.component_health("HPX", -0.01, 0.0), UnknownOptionError),
    (lambda: turbofan.component_health("HPC", -2.1, 0.0), DomainError),  # percent, not fraction
    (lambda: turbofan.component_health("HPC", np.nan, 0.0), ValueError),
    (lambda: turbofan.component_health("HPC", -0.01, 0.0, thresholds=np.ones((5, 3))),
     DomainError),
    (lambda: turbofan.efficiency_flow_signature("HPC", -0.01, 0.0, eff_ratio=2.0), DomainError),
])
def test_bad_input_raises(call, error):
    with pytest.raises(error):
        call()


def test_percent_error_message_names_fix():
    with pytest.raises(DomainError, match="fractions"):
        turbofan.component_health("HPC", -2.1, 0.0)


def test_jit_vmap_agreement(vmap_check):
    rng = np.random.default_rng(9)
    comp = rng.integers(0, 5, 10)
    eff = rng.uniform(-0.08, 0.02, 10)
    flow = rng.uniform(-0.08, 0.04, 10)
    vmap_check(turbofan.component_health_core, (comp, eff, flow))
    vmap_check(turbofan.efficiency_flow_signature_core, (comp, eff, flow))
