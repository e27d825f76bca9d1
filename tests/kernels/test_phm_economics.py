"""Tests for phm_kernels.economics: phm-reference 6.1-6.5 worked examples, validation, jit/vmap."""

from __future__ import annotations

import jax
import numpy as np
import pytest
from phm_kernels import economics
from phm_kernels.errors import DomainError, NonFiniteInputError, UnknownOptionError
from scipy import integrate, optimize, stats


def test_annual_preventive_cost_example():
    r = economics.annual_preventive_cost(5000, 4, 8, 1000)
    assert float(r.annual_cost) == 52_000.0
    assert float(r.cost_per_event) == 13_000.0


def test_expected_failure_cost_example():
    r = economics.expected_failure_cost(0.3, 50_000, 48, 1000, 20_000)
    assert float(r.expected_cost) == pytest.approx(35_400.0, rel=1e-12)


def test_expected_failure_cost_rate_mode_allows_p_above_one():
    r = economics.expected_failure_cost(2.0, 1000, 0, 0, 0, p_is_rate=True)
    assert float(r.expected_cost) == 2000.0
    with pytest.raises(DomainError, match="p_is_rate"):
        economics.expected_failure_cost(2.0, 1000, 0, 0, 0)


def test_maintenance_roi_example():
    # reactive = 1 failure/yr at the 6.2 cost; residual 5 %.
    r = economics.maintenance_roi(118_000, 52_000, 0.05 * 118_000, 40_000)
    assert float(r.savings) == pytest.approx(60_100.0)
    assert float(r.roi) == pytest.approx(0.5025, abs=1e-12)
    assert float(r.payback_years) == pytest.approx(0.6656, abs=1e-4)
    assert float(r.payback_years) * 12 == pytest.approx(7.99, abs=0.005)


def test_maintenance_roi_discounting_and_no_savings():
    r = economics.maintenance_roi(100.0, 50.0, 0.0, 100.0, years=3, discount_rate=0.1)
    annuity = sum(1.1 ** -y for y in (1, 2, 3))
    assert float(r.annuity_factor) == pytest.approx(annuity, rel=1e-12)
    assert float(r.roi) == pytest.approx((50.0 * annuity - 100.0) / 100.0, rel=1e-12)
    loss = economics.maintenance_roi(10.0, 50.0, 0.0, 100.0)
    assert np.isinf(float(loss.payback_years))


def test_optimal_age_replacement_example():
    r = economics.optimal_age_replacement(2.0, 1000.0, 1.0, 10.0)
    assert float(r.optimal_age) == pytest.approx(336.4, abs=0.5)
    assert float(r.cost_rate) == pytest.approx(0.0060561, rel=1e-4)
    assert float(r.run_to_failure_rate) == pytest.approx(0.0112838, rel=1e-5)
    assert float(r.savings_fraction) == pytest.approx(0.463, abs=1e-3)
    assert economics.AGE_REPLACEMENT_STATUS[int(r.status)] == "optimal"


def test_optimal_age_matches_scipy_reference():
    # Independent reference: numerical quadrature + bounded scalar minimisation.
    def cost(age):
        rel = np.exp(-(age / 1000.0) ** 2)
        area = integrate.quad(lambda t: np.exp(-(t / 1000.0) ** 2), 0, age)[0]
        return (rel + 10.0 * (1 - rel)) / area

    ref = optimize.minimize_scalar(cost, bounds=(10, 3000), method="bounded",
                                   options={"xatol": 1e-8}).x
    r = economics.optimal_age_replacement(2.0, 1000.0, 1.0, 10.0)
    assert float(r.optimal_age) == pytest.approx(ref, abs=0.05)


def test_optimal_age_vmap_over_failure_cost(vmap_check):
    batched = vmap_check(economics.optimal_age_replacement_core,
                         (2.0, 1000.0, 1.0, np.asarray([2.0, 5.0, 10.0, 50.0])),
                         in_axes=(None, None, None, 0),
                         rtol=1e-6)  # argmin of a flat minimum: location is sqrt(eps)-conditioned
    np.testing.assert_allclose(batched.optimal_age, [1090.8, 510.6, 336.4, 143.2], atol=0.5)


def test_age_replacement_no_finite_optimum_for_beta_le_1():
    r = economics.optimal_age_replacement(0.8, 1000.0, 1.0, 10.0)
    assert np.isinf(float(r.optimal_age))
    assert economics.AGE_REPLACEMENT_STATUS[int(r.status)] == "run_to_failure"
    assert float(r.cost_rate) == pytest.approx(float(r.run_to_failure_rate))


def test_age_replacement_cost_rate_matches_quadrature():
    g = economics.age_replacement_cost_rate(500.0, beta=2.5, eta=800.0, preventive_cost=2.0,
                                            failure_cost=7.0)
    rel = np.exp(-(500 / 800) ** 2.5)
    area = integrate.quad(lambda t: np.exp(-(t / 800) ** 2.5), 0, 500)[0]
    assert float(g) == pytest.approx((2 * rel + 7 * (1 - rel)) / area, rel=1e-10)


def test_rul_threshold_schedule_examples():
    r = economics.rul_threshold_schedule(100.0, 20.0, 1.0, 10.0)
    assert float(r.maintain_in) == pytest.approx(58.0, abs=0.5)
    assert float(r.rul_threshold) == pytest.approx(42.0, abs=0.5)
    assert float(r.p_fail_before) == pytest.approx(0.018, abs=0.001)
    r = economics.rul_threshold_schedule(100.0, 10.0, 1.0, 10.0)
    assert float(r.maintain_in) == pytest.approx(74.5, abs=0.5)
    assert float(r.p_fail_before) == pytest.approx(0.0054, abs=0.0005)


def test_rul_threshold_schedule_matches_scipy_reference():
    dist = stats.truncnorm(-5.0, np.inf, loc=100.0, scale=20.0)

    def rate(t):
        area = integrate.quad(dist.sf, 0, t)[0]
        return (dist.sf(t) + 10.0 * dist.cdf(t)) / area

    ref = optimize.minimize_scalar(rate, bounds=(1, 200), method="bounded").x
    r = economics.rul_threshold_schedule(100.0, 20.0, 1.0, 10.0)
    assert float(r.maintain_in) == pytest.approx(ref, abs=0.5)


def test_rul_schedule_lead_time_and_margin_mode():
    r = economics.rul_threshold_schedule(100.0, 20.0, 1.0, 10.0, lead_time=70.0)
    assert float(r.maintain_in) >= 70.0
    m = economics.rul_threshold_schedule(100.0, 20.0, 1.0, 10.0, safety_margin=0.2)
    assert float(m.maintain_in) == pytest.approx(80.0)
    assert float(m.p_fail_before) == pytest.approx(
        (stats.norm.cdf(-1.0) - stats.norm.cdf(-5.0)) / stats.norm.sf(-5.0), rel=1e-6)
    assert float(m.expected_cost) == pytest.approx(1.0 + 9.0 * float(m.p_fail_before))
    lognormal = economics.rul_threshold_schedule(100.0, 20.0, 1.0, 10.0,
                                                 distribution="lognormal")
    assert 0.0 < float(lognormal.maintain_in) < 100.0


@pytest.mark.parametrize("call, error", [
    (lambda: economics.annual_preventive_cost(-1, 4, 8, 1000), DomainError),
    (lambda: economics.annual_preventive_cost(1, 2.5, 8, 1000), DomainError),
    (lambda: economics.annual_preventive_cost(1, np.inf, 8, 1000), NonFiniteInputError),
    (lambda: economics.expected_failure_cost(1.3, 1, 1, 1, 1), DomainError),
    (lambda: economics.maintenance_roi(1, 1, 1, 0), DomainError),
    (lambda: economics.optimal_age_replacement(2.0, 1000.0, 10.0, 10.0), DomainError),
    (lambda: economics.optimal_age_replacement(2.0, -1.0, 1.0, 10.0), DomainError),
    (lambda: economics.rul_threshold_schedule(100.0, 0.0, 1.0, 10.0), DomainError),
    (lambda: economics.rul_threshold_schedule(100.0, 5.0, 1.0, 10.0, safety_margin=1.0),
     DomainError),
    (lambda: economics.rul_threshold_schedule(100.0, 5.0, 1.0, 10.0, distribution="weibull"),
     UnknownOptionError),
])
def test_bad_input_raises(call, error):
    with pytest.raises(error):
        call()


def test_failure_cost_error_names_both_costs():
    with pytest.raises(DomainError, match="failure_cost must exceed preventive_cost"):
        economics.optimal_age_replacement(2.0, 1000.0, 10.0, 5.0)


def test_jit_vmap_agreement(vmap_check):
    rng = np.random.default_rng(1)
    vmap_check(economics.annual_preventive_cost_core, tuple(rng.uniform(0, 10, (4, 6))))
    vmap_check(economics.expected_failure_cost_core, tuple(rng.uniform(0, 1, (5, 6))))
    vmap_check(economics.maintenance_roi_core, (rng.uniform(50, 100, 6), rng.uniform(0, 30, 6),
                                                 rng.uniform(0, 5, 6), rng.uniform(1, 50, 6)))
    vmap_check(economics.rul_threshold_schedule_core,
               (rng.uniform(50, 150, 4), rng.uniform(5, 30, 4), np.ones(4), np.full(4, 10.0)),
               distribution="normal", grid_size=1001)
    vmap_check(economics.rul_margin_schedule_core,
               (rng.uniform(50, 150, 4), rng.uniform(5, 30, 4), np.ones(4), np.full(4, 10.0),
                np.full(4, 0.2)), distribution="lognormal", grid_size=501)


def test_float32_tolerance():
    with jax.enable_x64(False):
        r = economics.optimal_age_replacement(2.0, 1000.0, 1.0, 10.0)
        roi = economics.maintenance_roi(118_000, 52_000, 5_900, 40_000)
    assert r.optimal_age.dtype == np.float32
    assert float(r.optimal_age) == pytest.approx(336.45, abs=0.5)
    np.testing.assert_allclose(float(r.cost_rate), 0.0060561, rtol=1e-4)
    np.testing.assert_allclose(float(roi.roi), 0.5025, rtol=1e-5)
