"""Rolling-element bearing kernels: defect frequencies and envelope analysis (phm-reference 4).

What lives here: characteristic defect frequencies (FTF, BPFO, BPFI, BSF and 2 x BSF) from the
bearing geometry, the CWRU drive-end and fan-end geometries, the FFT-based envelope spectrum
(band-pass by zeroing bins, analytic signal built by hand since ``jax.scipy.signal`` has no
``hilbert``), harmonic peak matching against a local median floor, and the composite
:func:`diagnose_bearing` that labels a record NORMAL / OUTER_RACE / INNER_RACE / BALL.

What does not live here: reading CWRU ``.mat`` files (``loaders.py``), choosing the resonance band
automatically (a kurtogram is future work; the band is an argument) and ISO severity zones
(``vibration.py``).

Reference: R. B. Randall, J. Antoni, "Rolling element bearing diagnostics - a tutorial",
MSSP 25 (2011); CWRU Bearing Data Center for the geometry.
"""

# jaxtyping shape strings (e.g. "n", "batch time") are not forward references:
# ruff: noqa: F821, UP037

from __future__ import annotations

import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, ArrayLike, Bool, Float, Int, Real

from phm_kernels._checks import (
    as_float,
    finite_arrays,
    option_index,
    require_broadcastable,
    require_finite,
    require_integer_valued,
    require_range,
    to_numpy,
)
from phm_kernels._ops import guard, masked_median
from phm_kernels.errors import DomainError, InsufficientDataError, ShapeMismatchError

__all__ = [
    "BALL_TARGETS",
    "BEARING_FAULT_LABELS",
    "CWRU_DRIVE_END",
    "CWRU_FAN_END",
    "BearingDiagnosis",
    "BearingFrequencies",
    "BearingGeometry",
    "EnvelopeSpectrum",
    "PeakMatch",
    "averaged_envelope_spectrum",
    "averaged_envelope_spectrum_core",
    "bearing_fault_frequencies",
    "bearing_fault_frequencies_core",
    "diagnose_bearing",
    "diagnose_bearing_core",
    "envelope_spectrum",
    "envelope_spectrum_core",
    "match_fault_peaks",
    "match_fault_peaks_core",
    "validate_bearing_geometry",
    "validate_envelope_spectrum",
]

#: Labels of :func:`diagnose_bearing` (code 0 = no detected target).
BEARING_FAULT_LABELS = ("NORMAL", "OUTER_RACE", "INNER_RACE", "BALL")
#: Which ball frequency :func:`diagnose_bearing` matches for BALL: BSF or 2 x BSF (CWRU lists
#: 2 x BSF, the rate at which a ball defect strikes either race).
BALL_TARGETS = ("bsf2", "bsf")


class BearingGeometry(NamedTuple):
    """Bearing geometry; diameters share any length unit.

    Attributes:
        n_balls: Number of rolling elements.
        ball_diameter: d.
        pitch_diameter: D.
        contact_angle_deg: phi in degrees (0 for deep-groove ball bearings under radial load).
    """

    n_balls: int
    ball_diameter: float
    pitch_diameter: float
    contact_angle_deg: float = 0.0


#: CWRU drive end, SKF 6205-2RS JEM (inches).
CWRU_DRIVE_END = BearingGeometry(9, 0.3126, 1.537, 0.0)
#: CWRU fan end, SKF 6203-2RS JEM (inches).
CWRU_FAN_END = BearingGeometry(8, 0.2656, 1.122, 0.0)


class BearingFrequencies(NamedTuple):
    """Characteristic frequencies in Hz (inner race rotating, outer race fixed).

    Attributes:
        shaft_hz: f_r = rpm / 60.
        ftf: Cage frequency (f_r / 2)(1 - rho).
        bpfo: Outer-race ball pass (n f_r / 2)(1 - rho).
        bpfi: Inner-race ball pass (n f_r / 2)(1 + rho).
        bsf: Ball spin (D / 2d) f_r (1 - rho^2).
        bsf2: 2 x BSF, the rate at which a ball defect strikes either race.
    """

    shaft_hz: Float[Array, "*batch"]
    ftf: Float[Array, "*batch"]
    bpfo: Float[Array, "*batch"]
    bpfi: Float[Array, "*batch"]
    bsf: Float[Array, "*batch"]
    bsf2: Float[Array, "*batch"]


def validate_bearing_geometry(rpm, n_balls, ball_diameter, pitch_diameter,
                              contact_angle_deg=0.0) -> None:
    """Checks rpm > 0, integer n >= 3, 0 < d < D and 0 <= phi < 90 degrees."""
    arrays = finite_arrays({"rpm": rpm, "n_balls": n_balls, "ball_diameter": ball_diameter,
                            "pitch_diameter": pitch_diameter,
                            "contact_angle_deg": contact_angle_deg})
    require_range("rpm", arrays["rpm"], lo=0.0, lo_open=True)
    require_integer_valued("n_balls", arrays["n_balls"])
    require_range("n_balls", arrays["n_balls"], lo=3)
    require_range("ball_diameter", arrays["ball_diameter"], lo=0.0, lo_open=True)
    d, big_d = np.broadcast_arrays(arrays["ball_diameter"], arrays["pitch_diameter"])
    if np.any(d >= big_d):
        raise DomainError(f"ball_diameter must be smaller than pitch_diameter; got d="
                          f"{d[d >= big_d].ravel()[0]:g} >= D={big_d[d >= big_d].ravel()[0]:g}. "
                          "Check that the two arguments are not swapped.")
    require_range("contact_angle_deg", arrays["contact_angle_deg"], lo=0.0, hi=90.0,
                  hi_open=True, hint="The contact angle is in degrees.")
    require_broadcastable(**arrays)


@jax.jit
def bearing_fault_frequencies_core(rpm, n_balls, ball_diameter, pitch_diameter,
                                   contact_angle_deg=0.0) -> BearingFrequencies:
    """Jitted core of :func:`bearing_fault_frequencies` (elementwise; vmap over rpm)."""
    shaft = as_float(rpm) / 60.0
    n = as_float(n_balls)
    d, big_d = as_float(ball_diameter), as_float(pitch_diameter)
    rho = d / big_d * jnp.cos(jnp.deg2rad(as_float(contact_angle_deg)))
    bsf = big_d / (2.0 * d) * shaft * (1.0 - rho**2)
    valid = (shaft > 0) & (n >= 3) & (d > 0) & (d < big_d) & (rho >= 0)
    return BearingFrequencies(*(guard(valid, f) for f in (
        shaft, 0.5 * shaft * (1.0 - rho), 0.5 * n * shaft * (1.0 - rho),
        0.5 * n * shaft * (1.0 + rho), bsf, 2.0 * bsf)))


def bearing_fault_frequencies(rpm: Real[ArrayLike, "*batch"], *, n_balls: Real[ArrayLike, "*batch"],
                              ball_diameter: Real[ArrayLike, "*batch"],
                              pitch_diameter: Real[ArrayLike, "*batch"],
                              contact_angle_deg: Real[ArrayLike, "*batch"] = 0.0
                              ) -> BearingFrequencies:
    """Bearing defect frequencies with ``rho = (d / D) cos(phi)`` and ``f_r = rpm / 60``.

    Real peaks sit 1-2 % off these values because of slip, so match them with a tolerance.

    Args:
        rpm: Shaft speed, rev/min (> 0).
        n_balls: Number of rolling elements (integer >= 3).
        ball_diameter: d (same unit as D).
        pitch_diameter: D (> d).
        contact_angle_deg: phi in degrees, 0 <= phi < 90.

    Returns:
        BearingFrequencies (shaft_hz, ftf, bpfo, bpfi, bsf, bsf2) in Hz.

    Example:
        >>> f = bearing_fault_frequencies(1797, **CWRU_DRIVE_END._asdict())
        >>> round(float(f.bpfo), 3)
        107.364
    """
    validate_bearing_geometry(rpm, n_balls, ball_diameter, pitch_diameter, contact_angle_deg)
    return bearing_fault_frequencies_core(rpm, n_balls, ball_diameter, pitch_diameter,
                                          contact_angle_deg)


# ---------------------------------------------------------------------------------------------
# Envelope spectrum
# ---------------------------------------------------------------------------------------------


class EnvelopeSpectrum(NamedTuple):
    """Single-sided amplitude spectrum of the band-passed envelope.

    Attributes:
        freqs: Bin frequencies ``k fs / N``, k = 0..N/2, Hz.
        amplitude: ``|rfft(envelope - mean)| * 2 / N``.
    """

    freqs: Float[Array, "*batch bins"]
    amplitude: Float[Array, "*batch bins"]


def validate_envelope_spectrum(x, *, fs, f_lo, f_hi, min_freq_hz=None) -> np.ndarray:
    """Checks the signal and band: 1-D finite x, fs > 0, 0 < f_lo < f_hi < fs / 2, N >= 2 fs / f_min.

    ``f_min`` is ``min_freq_hz`` when given (the lowest frequency to resolve), else ``f_lo``.
    Leading batch axes are allowed (the checks apply to every row).
    """
    arr = to_numpy("x", x, min_ndim=1)
    require_finite("x", arr)
    fs_a, lo, hi = (to_numpy(n, v, ndim=0) for n, v in (("fs", fs), ("f_lo", f_lo),
                                                          ("f_hi", f_hi)))
    for name, val in (("fs", fs_a), ("f_lo", lo), ("f_hi", hi)):
        require_finite(name, val)
    require_range("fs", fs_a, lo=0.0, lo_open=True, hint="fs is the sampling rate in Hz.")
    if not 0.0 < float(lo) < float(hi) < float(fs_a) / 2.0:
        raise DomainError(f"the band must satisfy 0 < f_lo < f_hi < fs/2; got f_lo={float(lo):g}, "
                          f"f_hi={float(hi):g}, fs/2={float(fs_a) / 2:g} Hz.")
    f_min = float(lo) if min_freq_hz is None else float(min_freq_hz)
    if f_min <= 0:
        raise DomainError(f"min_freq_hz must be > 0; got {f_min:g}.")
    needed = int(np.ceil(2.0 * float(fs_a) / f_min))
    if arr.shape[-1] < max(needed, 16):
        raise InsufficientDataError(
            f"x has {arr.shape[-1]} samples; resolving {f_min:g} Hz at fs={float(fs_a):g} Hz "
            f"needs at least {max(needed, 16)} (2 fs / f_min). Pass a longer record.")
    return arr


@jax.jit
def envelope_spectrum_core(x, fs, f_lo, f_hi) -> EnvelopeSpectrum:
    """Jitted core of :func:`envelope_spectrum` for one 1-D signal (vmap over records)."""
    x = as_float(x)
    n = x.shape[-1]
    fs, f_lo, f_hi = as_float(fs), as_float(f_lo), as_float(f_hi)
    spectrum = jnp.fft.fft(x - jnp.mean(x))
    k = jnp.arange(n)
    bin_hz = k * fs / n
    positive = (k > 0) & (2 * k < n)
    in_band = positive & (bin_hz >= f_lo) & (bin_hz <= f_hi)
    # Analytic signal of the band-passed signal: positive bins doubled, the rest zeroed (DC and
    # Nyquist lie outside the band because 0 < f_lo < f_hi < fs/2).
    analytic = jnp.fft.ifft(jnp.where(in_band, 2.0 * spectrum, 0.0))
    envelope = jnp.abs(analytic)
    amplitude = jnp.abs(jnp.fft.rfft(envelope - jnp.mean(envelope))) * 2.0 / n
    freqs = jnp.arange(n // 2 + 1) * fs / n
    return EnvelopeSpectrum(freqs.astype(amplitude.dtype), amplitude)


def envelope_spectrum(x: Real[ArrayLike, "samples"], *, fs: float, f_lo: float,
                      f_hi: float, min_freq_hz: float | None = None) -> EnvelopeSpectrum:
    """Envelope spectrum of a vibration signal (Randall & Antoni 2011).

    Steps: remove the mean; band-pass by zeroing FFT bins outside [f_lo, f_hi] (pick a
    resonance band excited by the impacts); form the analytic signal (positive bins x 2,
    negative bins zeroed); envelope = magnitude, mean removed; single-sided amplitude spectrum.

    Args:
        x: Signal samples (1-D).
        fs: Sampling rate, Hz.
        f_lo: Lower band edge, Hz (> 0).
        f_hi: Upper band edge, Hz (< fs / 2).
        min_freq_hz: Lowest frequency that must be resolved (e.g. the smallest fault
            frequency); the record needs ``N >= 2 fs / min_freq_hz`` samples. None: f_lo.

    Returns:
        EnvelopeSpectrum (freqs, amplitude), N // 2 + 1 bins at resolution fs / N.

    Raises:
        ShapeMismatchError: x not 1-D. DomainError: bad band. InsufficientDataError: too short.
    """
    arr = validate_envelope_spectrum(x, fs=fs, f_lo=f_lo, f_hi=f_hi, min_freq_hz=min_freq_hz)
    if arr.ndim != 1:
        raise ShapeMismatchError(f"x must be 1-D; got shape {arr.shape}. vmap "
                                 "envelope_spectrum_core for batches.")
    return envelope_spectrum_core(x, fs, f_lo, f_hi)


@functools.partial(jax.jit, static_argnames=("segment_length",))
def averaged_envelope_spectrum_core(x, fs, f_lo, f_hi, *, segment_length: int
                                    ) -> EnvelopeSpectrum:
    """Jitted core of :func:`averaged_envelope_spectrum` for one 1-D signal."""
    n_segments = x.shape[-1] // segment_length
    segments = jnp.reshape(jnp.asarray(x)[: n_segments * segment_length],
                           (n_segments, segment_length))
    spectra = jax.vmap(envelope_spectrum_core, in_axes=(0, None, None, None))(segments, fs,
                                                                               f_lo, f_hi)
    return EnvelopeSpectrum(spectra.freqs[0], jnp.mean(spectra.amplitude, axis=0))


def averaged_envelope_spectrum(x: Real[ArrayLike, "samples"], *, fs: float, f_lo: float,
                               f_hi: float, segment_length: int) -> EnvelopeSpectrum:
    """Envelope spectrum averaged over non-overlapping segments (Welch-style, no window).

    Averaging the amplitude spectra of ``len(x) // segment_length`` segments keeps the
    resolution at ``fs / segment_length`` and shrinks the bin-to-bin noise, so harmonic peaks
    stand out against the local floor. Trailing samples that do not fill a segment are unused.

    Args:
        x: Signal samples (1-D).
        fs: Sampling rate, Hz.
        f_lo: Lower band edge, Hz.
        f_hi: Upper band edge, Hz.
        segment_length: Samples per segment (static; ``round(fs)`` gives 1 Hz resolution).

    Returns:
        EnvelopeSpectrum with ``segment_length // 2 + 1`` bins.
    """
    arr = to_numpy("x", x, ndim=1)
    if not isinstance(segment_length, (int, np.integer)) or segment_length < 16:
        raise DomainError(f"segment_length must be an int >= 16; got {segment_length!r}.")
    if arr.shape[0] < segment_length:
        raise InsufficientDataError(f"x has {arr.shape[0]} samples, fewer than one segment of "
                                    f"{segment_length}.")
    validate_envelope_spectrum(arr[:segment_length], fs=fs, f_lo=f_lo, f_hi=f_hi)
    require_finite("x", arr)
    return averaged_envelope_spectrum_core(x, fs, f_lo, f_hi, segment_length=int(segment_length))


# ---------------------------------------------------------------------------------------------
# Peak matching
# ---------------------------------------------------------------------------------------------


class PeakMatch(NamedTuple):
    """Result of :func:`match_fault_peaks` for K targets and H harmonics.

    Attributes:
        detected: At least ``min_harmonics`` of the first 3 harmonics exceed the floor by snr_db.
        peak_freq: Frequency of the largest bin within +/- tol of k f, shape (K, H).
        peak_amp: Its amplitude, shape (K, H).
        snr_db: ``20 log10(peak / local median floor)``, shape (K, H); -inf if no bin in range.
        score: Sum of positive harmonic SNRs (dB) per target, shape (K,).
        best_target: Index of the detected target with the largest score; -1 if none.
    """

    detected: Bool[Array, "*batch targets"]
    peak_freq: Float[Array, "*batch targets harmonics"]
    peak_amp: Float[Array, "*batch targets harmonics"]
    snr_db: Float[Array, "*batch targets harmonics"]
    score: Float[Array, "*batch targets"]
    best_target: Int[Array, "*batch"]


@functools.partial(jax.jit, static_argnames=("n_harm", "floor_halfwidth_bins", "exclusion_bins",
                                             "min_harmonics", "require_fundamental"))
def match_fault_peaks_core(freqs, amp, f_targets, tol_rel=0.02, snr_db=6.0, *, n_harm: int = 3,
                           floor_halfwidth_bins: int = 50, exclusion_bins: int = 5,
                           min_harmonics: int = 2, require_fundamental: bool = False
                           ) -> PeakMatch:
    """Jitted core of :func:`match_fault_peaks` for one spectrum (vmap over spectra)."""
    freqs, amp, targets = as_float(freqs), as_float(amp), as_float(f_targets)
    n_bins = freqs.shape[0]
    centers = targets[:, None] * jnp.arange(1, n_harm + 1, dtype=freqs.dtype)[None, :]
    in_window = jnp.abs(freqs[None, None, :] - centers[..., None]) <= (
        as_float(tol_rel) * centers)[..., None]
    has_bin = jnp.any(in_window, axis=-1)
    peak_idx = jnp.argmax(jnp.where(in_window, amp[None, None, :], -jnp.inf), axis=-1)
    peak_amp = amp[peak_idx]
    offsets = np.arange(-floor_halfwidth_bins, floor_halfwidth_bins + 1)  # static
    offsets = offsets[np.abs(offsets) > exclusion_bins]
    neighbours = peak_idx[..., None] + offsets
    valid = (neighbours >= 0) & (neighbours < n_bins)
    floor = masked_median(amp[jnp.clip(neighbours, 0, n_bins - 1)], valid, axis=-1)
    tiny = jnp.finfo(amp.dtype).tiny
    snr = 20.0 * jnp.log10(jnp.maximum(peak_amp, tiny) / jnp.maximum(floor, tiny))
    snr = jnp.where(has_bin, snr, -jnp.inf)
    first = min(3, n_harm)
    hits = jnp.sum(snr[:, :first] >= as_float(snr_db), axis=-1)
    detected = hits >= min(min_harmonics, first)
    if require_fundamental:
        detected = detected & (snr[:, 0] >= as_float(snr_db))
    score = jnp.sum(jnp.where(snr > 0, snr, 0.0), axis=-1)
    best = jnp.argmax(jnp.where(detected, score, -jnp.inf))
    best = jnp.where(jnp.any(detected), best, -1).astype(jnp.int32)
    return PeakMatch(detected, freqs[peak_idx], peak_amp, snr, score, best)


def match_fault_peaks(freqs: Real[ArrayLike, "bins"], amp: Real[ArrayLike, "bins"],
                      f_targets: Real[ArrayLike, "targets"], *, tol_rel: float = 0.02,
                      n_harm: int = 3, snr_db: float = 6.0, floor_halfwidth_bins: int = 50,
                      exclusion_bins: int = 5, min_harmonics: int = 2,
                      require_fundamental: bool = False) -> PeakMatch:
    """Matches envelope-spectrum peaks to fault frequencies and their harmonics.

    For each target f and harmonic k = 1..n_harm, the largest bin within +/- tol_rel k f is
    compared with the median of the bins within +/- ``floor_halfwidth_bins`` of it, excluding
    +/- ``exclusion_bins``. A target is detected if at least ``min_harmonics`` (default 2) of
    its first 3 harmonics exceed that floor by ``snr_db``. Sidebands (+/- f_r around BPFI,
    +/- FTF around ball tones) are extra evidence only and are not scored here.

    Args:
        freqs: Spectrum bin frequencies, Hz (increasing).
        amp: Amplitudes, same length.
        f_targets: Target frequencies, Hz (e.g. BPFO, BPFI, 2 x BSF).
        tol_rel: Relative tolerance (default 2 % [CONV], covers slip).
        n_harm: Harmonics examined per target.
        snr_db: Detection threshold, dB over the local floor.
        floor_halfwidth_bins: Half width of the floor neighbourhood, bins.
        exclusion_bins: Half width excluded around the peak, bins.
        min_harmonics: Harmonics among the first 3 that must exceed the threshold.
        require_fundamental: Also require the first harmonic itself to exceed the threshold
            (guards against shaft-order lines falling into the wider high-harmonic windows).

    Returns:
        PeakMatch (detected, peak_freq, peak_amp, snr_db, score, best_target).
    """
    f = to_numpy("freqs", freqs, ndim=1)
    a = to_numpy("amp", amp, ndim=1)
    t = to_numpy("f_targets", f_targets, ndim=1)
    for name, arr in (("freqs", f), ("amp", a), ("f_targets", t)):
        require_finite(name, arr)
    if f.shape != a.shape:
        raise ShapeMismatchError(f"freqs and amp must have the same length; got {f.shape[0]} and "
                                 f"{a.shape[0]}.")
    require_range("f_targets", t, lo=0.0, lo_open=True)
    require_range("amp", a, lo=0.0)
    if f.shape[0] > 1 and np.any(np.diff(f) <= 0):
        raise DomainError("freqs must be strictly increasing.")
    if not 0 < tol_rel < 0.5:
        raise DomainError(f"tol_rel must lie in (0, 0.5); got {tol_rel:g}.")
    if n_harm < 1 or min_harmonics < 1 or exclusion_bins < 0 or \
            floor_halfwidth_bins <= exclusion_bins:
        raise DomainError("need n_harm >= 1, min_harmonics >= 1, exclusion_bins >= 0 and "
                          "floor_halfwidth_bins > exclusion_bins.")
    return match_fault_peaks_core(freqs, amp, f_targets, tol_rel, snr_db, n_harm=n_harm,
                                  floor_halfwidth_bins=floor_halfwidth_bins,
                                  exclusion_bins=exclusion_bins, min_harmonics=min_harmonics,
                                  require_fundamental=require_fundamental)


# ---------------------------------------------------------------------------------------------
# Composite diagnosis
# ---------------------------------------------------------------------------------------------


class BearingDiagnosis(NamedTuple):
    """Result of :func:`diagnose_bearing`.

    Attributes:
        label: Code into :data:`BEARING_FAULT_LABELS`.
        frequencies: The defect frequencies used.
        match: Peak matching for targets (BPFO, BPFI, ball) in that order.
        envelope: The envelope spectrum.
    """

    label: Int[Array, "*batch"]
    frequencies: BearingFrequencies
    match: PeakMatch
    envelope: EnvelopeSpectrum


@functools.partial(jax.jit, static_argnames=("segment_length", "ball_target", "n_harm",
                                             "floor_halfwidth_bins", "exclusion_bins",
                                             "min_harmonics", "require_fundamental"))
def diagnose_bearing_core(x, fs, rpm, f_lo, f_hi, geometry: BearingGeometry = CWRU_DRIVE_END,
                          tol_rel=0.02, snr_db=10.0, *, segment_length: int,
                          ball_target: str = "bsf2", n_harm: int = 3,
                          floor_halfwidth_bins: int = 50, exclusion_bins: int = 5,
                          min_harmonics: int = 2, require_fundamental: bool = True
                          ) -> BearingDiagnosis:
    """Jitted core of :func:`diagnose_bearing` for one record (vmap over records)."""
    freqs = bearing_fault_frequencies_core(rpm, *geometry)
    ball = freqs.bsf2 if ball_target == "bsf2" else freqs.bsf
    env = averaged_envelope_spectrum_core(x, fs, f_lo, f_hi, segment_length=segment_length)
    targets = jnp.stack([freqs.bpfo, freqs.bpfi, ball])
    match = match_fault_peaks_core(env.freqs, env.amplitude, targets, tol_rel, snr_db,
                                   n_harm=n_harm, floor_halfwidth_bins=floor_halfwidth_bins,
                                   exclusion_bins=exclusion_bins, min_harmonics=min_harmonics,
                                   require_fundamental=require_fundamental)
    return BearingDiagnosis(match.best_target + 1, freqs, match, env)


def diagnose_bearing(x: Real[ArrayLike, "samples"], *, fs: float, rpm: float, f_lo: float,
                     f_hi: float, geometry: BearingGeometry = CWRU_DRIVE_END,
                     segment_length: int | None = None, tol_rel: float = 0.02,
                     snr_db: float = 10.0, ball_target: str = "bsf2", n_harm: int = 3,
                     floor_halfwidth_bins: int = 50, exclusion_bins: int = 5,
                     min_harmonics: int = 2, require_fundamental: bool = True
                     ) -> BearingDiagnosis:
    """Envelope-spectrum bearing diagnosis: NORMAL, OUTER_RACE, INNER_RACE or BALL.

    Computes the defect frequencies for ``rpm`` and ``geometry``, the envelope spectrum in the
    band [f_lo, f_hi] averaged over segments of ``segment_length`` samples (default
    ``round(fs)``: 1 Hz bins) and matches BPFO, BPFI and the ball tone (2 x BSF by default). The label
    is the detected target with the largest summed harmonic SNR; NORMAL when none is detected.

    Args:
        x: Acceleration signal (1-D).
        fs: Sampling rate, Hz (state it explicitly: CWRU's normal baseline rate is disputed).
        rpm: Shaft speed, rev/min.
        f_lo: Lower edge of the resonance band, Hz.
        f_hi: Upper edge, Hz.
        geometry: Bearing geometry (default CWRU drive end).
        segment_length: Samples per averaged segment (static); None means ``round(fs)``.
        tol_rel: Peak matching tolerance.
        snr_db: Detection threshold, dB (10 dB here, stricter than match_fault_peaks' 6 dB).
        ball_target: "bsf2" (2 x BSF, CWRU convention) or "bsf".
        n_harm: Harmonics per target.
        floor_halfwidth_bins: Floor neighbourhood half width, bins.
        exclusion_bins: Bins excluded around each peak.
        min_harmonics: Harmonics (of the first 3) needed for a detection.
        require_fundamental: The first harmonic must itself exceed the threshold.

    Returns:
        BearingDiagnosis (label code, frequencies, match, envelope).
    """
    ball_target = BALL_TARGETS[option_index("ball_target", ball_target, BALL_TARGETS)]
    geometry = BearingGeometry(*geometry)
    validate_bearing_geometry(rpm, *geometry)
    freqs = bearing_fault_frequencies_core(np.float64(rpm), *geometry)
    f_min = float(min(freqs.bpfo, freqs.bpfi, freqs.bsf2 if ball_target == "bsf2" else freqs.bsf))
    arr = to_numpy("x", x, ndim=1)
    segment_length = round(float(fs)) if segment_length is None else segment_length
    if not isinstance(segment_length, (int, np.integer)) or segment_length < 16:
        raise DomainError(f"segment_length must be an int >= 16; got {segment_length!r}.")
    if arr.shape[0] < segment_length:
        raise InsufficientDataError(f"x has {arr.shape[0]} samples, fewer than one segment of "
                                    f"{segment_length}; pass a longer record or a shorter "
                                    "segment_length.")
    validate_envelope_spectrum(arr[:segment_length], fs=fs, f_lo=f_lo, f_hi=f_hi,
                               min_freq_hz=f_min)
    require_finite("x", arr)
    return diagnose_bearing_core(x, fs, rpm, f_lo, f_hi, geometry, tol_rel, snr_db,
                                 segment_length=int(segment_length), ball_target=ball_target, n_harm=n_harm,
                                 floor_halfwidth_bins=floor_halfwidth_bins,
                                 exclusion_bins=exclusion_bins, min_harmonics=min_harmonics,
                                 require_fundamental=require_fundamental)
