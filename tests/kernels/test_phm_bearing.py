"""Tests for phm_kernels.bearing: CWRU frequencies, synthetic OR envelope example, jit/vmap."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from phm_kernels import bearing
from phm_kernels.errors import DomainError, InsufficientDataError, ShapeMismatchError

FS = 12_000.0
BPFO_1797 = 107.364


def synthetic_outer_race(seed: int = 0) -> np.ndarray:
    """Spec 4.3 test signal: impacts at BPFO exciting a 3 kHz resonance (decay 800/s) + noise."""
    t = np.arange(int(FS)) / FS
    x = np.zeros_like(t)
    for t0 in np.arange(0.0, 1.0, 1.0 / BPFO_1797):
        after = t >= t0
        x[after] += np.exp(-800.0 * (t[after] - t0)) * np.sin(2 * np.pi * 3000.0 * (t[after] - t0))
    noise = np.asarray(jax.random.normal(jax.random.key(seed), (t.size,), dtype=jnp.float64))
    return x + 0.5 * noise


def test_cwru_drive_end_frequencies_at_1797_rpm():
    f = bearing.bearing_fault_frequencies(1797.0, **bearing.CWRU_DRIVE_END._asdict())
    assert float(f.shaft_hz) == pytest.approx(29.95)
    assert float(f.ftf) == pytest.approx(11.929, abs=5e-4)
    assert float(f.bpfo) == pytest.approx(107.364, abs=5e-4)
    assert float(f.bpfi) == pytest.approx(162.186, abs=5e-4)
    assert float(f.bsf) == pytest.approx(70.584, abs=5e-4)
    assert float(f.bsf2) == pytest.approx(141.168, abs=5e-4)


def test_cwru_orders_match_published_lists():
    de = bearing.bearing_fault_frequencies(60.0, **bearing.CWRU_DRIVE_END._asdict())
    np.testing.assert_allclose([de.ftf, de.bpfo, de.bpfi, de.bsf, de.bsf2],
                               [0.398308, 3.584776, 5.415224, 2.356722, 4.713443], atol=1e-6)
    fe = bearing.bearing_fault_frequencies(60.0, **bearing.CWRU_FAN_END._asdict())
    np.testing.assert_allclose([fe.ftf, fe.bpfo, fe.bpfi, fe.bsf2],
                               [0.381640, 3.053119, 4.946881, 3.987677], atol=1e-6)


def test_bpfo_vmapped_over_cwru_loads(vmap_check):
    rpm = jnp.asarray([1772.0, 1750.0, 1730.0])
    out = jax.vmap(lambda r: bearing.bearing_fault_frequencies_core(r, *bearing.CWRU_DRIVE_END))(rpm)
    np.testing.assert_allclose(out.bpfo, [105.870, 104.556, 103.361], atol=5e-4)
    vmap_check(bearing.bearing_fault_frequencies_core, (np.asarray(rpm), 9, 0.3126, 1.537, 0.0),
               in_axes=(0, None, None, None, None))


def test_synthetic_outer_race_envelope_and_match():
    x = synthetic_outer_race()
    env = bearing.envelope_spectrum(x, fs=FS, f_lo=2000.0, f_hi=4000.0)
    assert env.freqs.shape == (6001,)
    band = (env.freqs >= 5.0) & (env.freqs <= 500.0)
    amp = np.where(band, np.asarray(env.amplitude), -1.0)
    peak = float(env.freqs[np.argmax(amp)])
    assert peak == pytest.approx(107.0)
    assert abs(peak - BPFO_1797) / BPFO_1797 <= 0.02
    top = np.sort(np.asarray(env.freqs)[np.argsort(amp)[::-1][:6]])
    for harmonic in (215.0, 322.0, 429.0):
        assert np.min(np.abs(top - harmonic)) <= 1.0
    f = bearing.bearing_fault_frequencies(1797.0, **bearing.CWRU_DRIVE_END._asdict())
    match = bearing.match_fault_peaks(env.freqs, env.amplitude, [f.bpfo, f.bpfi, f.bsf2])
    assert bool(match.detected[0])
    assert int(match.best_target) == 0
    assert float(match.peak_freq[0, 0]) == pytest.approx(107.0)


def test_diagnose_bearing_labels_synthetic_outer_race():
    d = bearing.diagnose_bearing(synthetic_outer_race(), fs=FS, rpm=1797.0, f_lo=2000.0,
                                 f_hi=4000.0)
    assert bearing.BEARING_FAULT_LABELS[int(d.label)] == "OUTER_RACE"


def test_diagnose_bearing_noise_only_is_normal():
    noise = np.asarray(jax.random.normal(jax.random.key(7), (5 * int(FS),), dtype=jnp.float64))
    d = bearing.diagnose_bearing(noise, fs=FS, rpm=1797.0, f_lo=2000.0, f_hi=4000.0)
    assert bearing.BEARING_FAULT_LABELS[int(d.label)] == "NORMAL"


def test_envelope_of_pure_am_tone_recovers_modulation_depth():
    # x = (1 + m cos(2 pi fm t)) cos(2 pi fc t): envelope line at fm with amplitude m.
    t = np.arange(12_000) / FS
    x = (1 + 0.5 * np.cos(2 * np.pi * 50.0 * t)) * np.cos(2 * np.pi * 3000.0 * t)
    env = bearing.envelope_spectrum(x, fs=FS, f_lo=2500.0, f_hi=3500.0)
    assert float(env.amplitude[50]) == pytest.approx(0.5, rel=1e-6)


@pytest.mark.parametrize("call, error", [
    (lambda: bearing.bearing_fault_frequencies(-1.0, **bearing.CWRU_DRIVE_END._asdict()),
     DomainError),
    (lambda: bearing.bearing_fault_frequencies(1797.0, n_balls=9, ball_diameter=1.6,
                                               pitch_diameter=1.5), DomainError),
    (lambda: bearing.bearing_fault_frequencies(1797.0, n_balls=2.5, ball_diameter=0.3,
                                               pitch_diameter=1.5), DomainError),
    (lambda: bearing.bearing_fault_frequencies(1797.0, n_balls=9, ball_diameter=0.3,
                                               pitch_diameter=1.5, contact_angle_deg=90.0),
     DomainError),
    (lambda: bearing.envelope_spectrum(np.zeros(100), fs=FS, f_lo=2000.0, f_hi=4000.0,
                                       min_freq_hz=100.0), InsufficientDataError),
    (lambda: bearing.envelope_spectrum(np.zeros(8), fs=FS, f_lo=2000.0, f_hi=4000.0),
     InsufficientDataError),
    (lambda: bearing.envelope_spectrum(np.zeros(12_000), fs=FS, f_lo=4000.0, f_hi=2000.0),
     DomainError),
    (lambda: bearing.envelope_spectrum(np.zeros(12_000), fs=FS, f_lo=2000.0, f_hi=7000.0),
     DomainError),
    (lambda: bearing.envelope_spectrum(np.zeros((2, 12_000)), fs=FS, f_lo=2000.0, f_hi=4000.0),
     ShapeMismatchError),
    (lambda: bearing.match_fault_peaks([1.0, 2.0], [1.0], [1.0]), ShapeMismatchError),
])
def test_bad_input_raises(call, error):
    with pytest.raises(error):
        call()


def test_jit_vmap_agreement(vmap_check):
    signals = np.stack([synthetic_outer_race(seed) for seed in range(3)])
    vmap_check(bearing.envelope_spectrum_core, (signals, FS, 2000.0, 4000.0),
               in_axes=(0, None, None, None), rtol=1e-9, atol=1e-12)
    env = jax.vmap(bearing.envelope_spectrum_core, in_axes=(0, None, None, None))(
        signals, FS, 2000.0, 4000.0)
    targets = np.tile([107.364, 162.186, 141.168], (3, 1))
    vmap_check(bearing.match_fault_peaks_core, (env.freqs, env.amplitude, targets), n_harm=3,
               rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("record, expected", [("or007_130", "OUTER_RACE"),
                                              ("ir007_105", "INNER_RACE"),
                                              ("normal_97", "NORMAL")])
def test_cwru_records_diagnosed(data_root, record, expected):
    from phm_kernels import loaders

    r = loaders.load_cwru(data_root, record)
    d = bearing.diagnose_bearing(r.drive_end, fs=r.fs_hz, rpm=r.rpm, f_lo=2000.0, f_hi=4000.0)
    assert bearing.BEARING_FAULT_LABELS[int(d.label)] == expected


def test_cwru_normal_baseline_is_normal_under_either_rate_assumption(data_root):
    from phm_kernels import loaders

    r = loaders.load_cwru(data_root, "normal_97", normal_baseline_fs_hz=12_000.0)
    d = bearing.diagnose_bearing(r.drive_end, fs=r.fs_hz, rpm=r.rpm, f_lo=2000.0, f_hi=4000.0)
    assert bearing.BEARING_FAULT_LABELS[int(d.label)] == "NORMAL"


def test_cwru_subset_accuracy(data_root):
    from phm_kernels import loaders, metrics

    truth, pred = [], []
    for name in loaders.CWRU_RECORDS:
        r = loaders.load_cwru(data_root, name)
        d = bearing.diagnose_bearing(r.drive_end, fs=r.fs_hz, rpm=r.rpm, f_lo=2000.0,
                                     f_hi=4000.0)
        truth.append(bearing.BEARING_FAULT_LABELS.index(r.label))
        pred.append(int(d.label))
    m = metrics.classification_metrics(np.array(truth), np.array(pred), n_classes=4)
    # OR, IR and normal are found; the 0.007 in ball fault (118) is a known hard CWRU case that
    # the envelope method at this band does not detect (documented in docs/phm_kernels.md).
    assert float(m.accuracy) >= 0.75
