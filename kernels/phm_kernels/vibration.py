"""Vibration severity kernels: ISO 10816 / ISO 20816 zones and unit conversions (phm-reference 3).

What lives here: ISO 10816-1 Annex B zones by machine class (I-IV), ISO 10816-3 Annex A zones by
machine group (1, 2) and foundation (rigid, flexible) with the operational ALARM/TRIP guidance,
single-tone vibration unit conversion (displacement / velocity / acceleration, RMS / peak /
peak-to-peak, SI and imperial units) and the NEMA MG 1 motor vibration figure kept as a labelled
alternative to the ISO zones.

What does not live here: broadband integration of measured spectra (divide each bin by j 2 pi f
and high-pass first; the single-frequency formulas below hold for pure tones only) and bearing
defect frequencies (``bearing.py``).

Edition note: ISO 10816-1:1995 was superseded by ISO 20816-1:2016 and ISO 10816-3:2009 by
ISO 20816-3:2022; the tables below are the 10816 ones, recorded in :data:`ISO10816_EDITIONS`.
"""

from __future__ import annotations

import functools
import math
from typing import Literal, NamedTuple

import jax
import jax.numpy as jnp
from jaxtyping import Array, ArrayLike, Float, Int, Real

from phm_kernels._checks import (
    as_float,
    option_codes,
    option_index,
    require_broadcastable,
    require_finite,
    require_range,
    to_numpy,
)
from phm_kernels._ops import guard
from phm_kernels.errors import DomainError, UnknownOptionError

__all__ = [
    "ISO10816_1_BOUNDS_MM_S",
    "ISO10816_1_CLASSES",
    "ISO10816_3_BOUNDS_DISPLACEMENT_UM",
    "ISO10816_3_BOUNDS_MM_S",
    "ISO10816_3_FOUNDATIONS",
    "ISO10816_3_GROUPS",
    "ISO10816_EDITIONS",
    "ISO_ZONES",
    "NEMA_MG1_VIBRATION_LIMIT_IN_S_PK",
    "NEMA_MG1_VIBRATION_LIMIT_MM_S_RMS",
    "VIB_UNITS",
    "IsoOperationalLimits",
    "IsoZoneResult",
    "iso10816_1_zone",
    "iso10816_1_zone_core",
    "iso10816_3_operational_limits",
    "iso10816_3_operational_limits_core",
    "iso10816_3_table_index",
    "iso10816_3_zone",
    "iso10816_3_zone_core",
    "vib_convert",
    "vib_convert_core",
]

#: Evaluation zones; zone codes 0..3 index this tuple.
IsoZone = Literal["A", "B", "C", "D"]
ISO_ZONES: tuple[IsoZone, ...] = ("A", "B", "C", "D")
#: ISO 10816-1 machine classes (codes 0..3).
ISO10816_1_CLASSES = ("I", "II", "III", "IV")
#: ISO 10816-3 machine groups (codes 0, 1 for group 1, 2).
ISO10816_3_GROUPS = ("1", "2")
#: ISO 10816-3 foundation types (codes 0, 1).
ISO10816_3_FOUNDATIONS = ("rigid", "flexible")
#: Zone boundaries A/B, B/C, C/D (velocity RMS, mm/s) per class I..IV, ISO 10816-1 Annex B.
ISO10816_1_BOUNDS_MM_S = ((0.71, 1.8, 4.5), (1.12, 2.8, 7.1), (1.8, 4.5, 11.2), (2.8, 7.1, 18.0))
#: Zone boundaries (velocity RMS, mm/s), ISO 10816-3 Annex A. Rows: table index
#: ``2 * group_code + foundation_code`` = group 1 rigid, group 1 flexible, group 2 rigid,
#: group 2 flexible.
ISO10816_3_BOUNDS_MM_S = ((2.3, 4.5, 7.1), (3.5, 7.1, 11.0), (1.4, 2.8, 4.5), (2.3, 4.5, 7.1))
#: Displacement RMS boundaries (micrometres) in the same row order, ISO 10816-3 Annex A.
ISO10816_3_BOUNDS_DISPLACEMENT_UM = ((29, 57, 90), (45, 90, 140), (22, 45, 71), (37, 71, 113))
#: Editions of the tables used and their successors.
ISO10816_EDITIONS = {
    "iso10816_1": "ISO 10816-1:1995 Annex B (superseded by ISO 20816-1:2016)",
    "iso10816_3": "ISO 10816-3:2009 Annex A (superseded by ISO 20816-3:2022)",
}
#: NEMA MG 1 unfiltered vibration limit for standard machines, in/s peak [VERIFY clause].
NEMA_MG1_VIBRATION_LIMIT_IN_S_PK = 0.15
#: The same limit as velocity RMS in mm/s (0.15 * 25.4 / sqrt(2)).
NEMA_MG1_VIBRATION_LIMIT_MM_S_RMS = 0.15 * 25.4 / math.sqrt(2.0)

Scalar = Float[Array, "*batch"]


class IsoZoneResult(NamedTuple):
    """Zone classification of a velocity RMS value.

    Attributes:
        zone: Code into :data:`ISO_ZONES` (a value exactly on a boundary is in the upper zone).
        ratio_to_cd: ``v / (C/D boundary)``.
        margin_to_next: ``boundary above v - v`` in mm/s; +inf in zone D.
    """

    zone: Int[Array, "*batch"]
    ratio_to_cd: Scalar
    margin_to_next: Scalar


def _zone(velocity, bounds):
    # bounds: (..., 3). Boundaries are the lowest values of the next zone [CONV].
    zone = jnp.sum(velocity[..., None] >= bounds, axis=-1).astype(jnp.int32)
    padded = jnp.concatenate([bounds, jnp.full(bounds.shape[:-1] + (1,), jnp.inf,
                                                bounds.dtype)], axis=-1)
    upper = jnp.take_along_axis(padded, zone[..., None], axis=-1)[..., 0]
    valid = jnp.isfinite(velocity) & (velocity >= 0)
    return IsoZoneResult(guard(valid, zone), guard(valid, velocity / bounds[..., 2]),
                         guard(valid, upper - velocity))


def _validate_velocity(v_rms_mm_s):
    arr = to_numpy("v_rms_mm_s", v_rms_mm_s)
    require_finite("v_rms_mm_s", arr)
    require_range("v_rms_mm_s", arr, lo=0.0, hint="Velocity RMS is a magnitude in mm/s.")
    return arr


@jax.jit
def iso10816_1_zone_core(v_rms_mm_s, class_code) -> IsoZoneResult:
    """Jitted core of :func:`iso10816_1_zone`; ``class_code`` is an int 0..3 (broadcasts)."""
    v = as_float(v_rms_mm_s)
    table = jnp.asarray(ISO10816_1_BOUNDS_MM_S, v.dtype)
    bounds = table[jnp.asarray(class_code, jnp.int32)]
    v, bounds = jnp.broadcast_arrays(v[..., None], bounds)
    return _zone(v[..., 0], bounds)


def iso10816_1_zone(v_rms_mm_s: Real[ArrayLike, "*batch"], *,
                    machine_class: str | int | Int[ArrayLike, "*batch"]) -> IsoZoneResult:
    """ISO 10816-1 Annex B evaluation zone of a broadband velocity RMS (mm/s).

    Boundaries (A/B, B/C, C/D): I 0.71/1.8/4.5, II 1.12/2.8/7.1, III 1.8/4.5/11.2,
    IV 2.8/7.1/18.0. Assess the largest of the bearing-housing readings (10-1000 Hz band).

    Args:
        v_rms_mm_s: Velocity RMS, mm/s (>= 0).
        machine_class: "I".."IV", an int code 0..3, or an array of codes/labels per item.

    Returns:
        IsoZoneResult (zone code into ISO_ZONES, ratio_to_cd, margin_to_next).

    Raises:
        DomainError: Negative velocity. UnknownOptionError: Unknown class.

    Example:
        >>> iso10816_1_zone([0.5, 1.12, 2.79, 2.8, 7.1, 10.0], machine_class="II").zone.tolist()
        [0, 1, 1, 2, 3, 3]
    """
    v = _validate_velocity(v_rms_mm_s)
    codes = option_codes("machine_class", machine_class, ISO10816_1_CLASSES)
    require_broadcastable(v_rms_mm_s=v, machine_class=codes)
    return iso10816_1_zone_core(v_rms_mm_s, codes)


def iso10816_3_table_index(group, foundation):
    """Row of :data:`ISO10816_3_BOUNDS_MM_S` for a group (1, 2) and a foundation label.

    Raises:
        UnknownOptionError: Group not 1/2 or foundation not rigid/flexible.
    """
    group_s = str(group).strip()
    if group_s not in ISO10816_3_GROUPS:
        raise UnknownOptionError(f"group={group!r} is not valid; ISO 10816-3 has groups 1 "
                                 "(> 300 kW) and 2 (15-300 kW).")
    return 2 * ISO10816_3_GROUPS.index(group_s) + option_index(
        "foundation", foundation, ISO10816_3_FOUNDATIONS)


@jax.jit
def iso10816_3_zone_core(v_rms_mm_s, table_index) -> IsoZoneResult:
    """Jitted core of :func:`iso10816_3_zone`; ``table_index = 2 * group_code + foundation``."""
    v = as_float(v_rms_mm_s)
    bounds = jnp.asarray(ISO10816_3_BOUNDS_MM_S, v.dtype)[jnp.asarray(table_index, jnp.int32)]
    v, bounds = jnp.broadcast_arrays(v[..., None], bounds)
    return _zone(v[..., 0], bounds)


def iso10816_3_zone(v_rms_mm_s: Real[ArrayLike, "*batch"], *, group: int | str,
                    foundation: str) -> IsoZoneResult:
    """ISO 10816-3 Annex A evaluation zone (industrial machines > 15 kW, 120-15 000 r/min).

    Boundaries (A/B, B/C, C/D, mm/s RMS): group 1 rigid 2.3/4.5/7.1, group 1 flexible
    3.5/7.1/11.0, group 2 rigid 1.4/2.8/4.5, group 2 flexible 2.3/4.5/7.1. Group 1: > 300 kW up
    to 50 MW (or shaft height >= 315 mm); group 2: 15-300 kW (160 mm <= H < 315 mm). A foundation
    is rigid when the lowest natural frequency is >= 25 % above the main excitation frequency.

    Args:
        v_rms_mm_s: Velocity RMS, mm/s (>= 0).
        group: 1 or 2.
        foundation: "rigid" or "flexible".

    Returns:
        IsoZoneResult.

    Example:
        >>> ISO_ZONES[int(iso10816_3_zone(3.0, group=2, foundation="rigid").zone)]
        'C'
    """
    _validate_velocity(v_rms_mm_s)
    return iso10816_3_zone_core(v_rms_mm_s, iso10816_3_table_index(group, foundation))


class IsoOperationalLimits(NamedTuple):
    """ISO 10816-3 operational limits [VERIFY]: ALARM and TRIP levels in mm/s RMS."""

    alarm_mm_s: Scalar
    trip_mm_s: Scalar


@jax.jit
def iso10816_3_operational_limits_core(baseline_mm_s, table_index) -> IsoOperationalLimits:
    """Jitted core of :func:`iso10816_3_operational_limits`."""
    base = as_float(baseline_mm_s)
    bounds = jnp.asarray(ISO10816_3_BOUNDS_MM_S, base.dtype)[jnp.asarray(table_index, jnp.int32)]
    b_c, c_d = bounds[..., 1], bounds[..., 2]
    return IsoOperationalLimits(jnp.minimum(base + 0.25 * b_c, 1.25 * b_c), 1.25 * c_d)


def iso10816_3_operational_limits(baseline_mm_s: Real[ArrayLike, "*batch"], *, group: int | str,
                                  foundation: str) -> IsoOperationalLimits:
    """ALARM = min(baseline + 0.25 x B/C, 1.25 x B/C); TRIP = 1.25 x C/D (10816-3 guidance).

    Args:
        baseline_mm_s: The machine's normal steady-state velocity RMS, mm/s.
        group: 1 or 2.
        foundation: "rigid" or "flexible".

    Returns:
        IsoOperationalLimits (alarm_mm_s, trip_mm_s).
    """
    _validate_velocity(baseline_mm_s)
    return iso10816_3_operational_limits_core(baseline_mm_s,
                                              iso10816_3_table_index(group, foundation))


# ---------------------------------------------------------------------------------------------
# Unit conversion
# ---------------------------------------------------------------------------------------------

# (quantity, SI scale): quantity 0 = displacement [m], 1 = velocity [m/s], 2 = acceleration.
_LINEAR_UNITS = {
    "m": (0, 1.0), "mm": (0, 1e-3), "um": (0, 1e-6), "mil": (0, 25.4e-6), "in": (0, 0.0254),
    "m/s": (1, 1.0), "mm/s": (1, 1e-3), "in/s": (1, 0.0254),
    "m/s2": (2, 1.0), "mm/s2": (2, 1e-3), "g": (2, 9.80665),
}
# Amplitude measure -> factor relative to RMS for a single sinusoid.
_MEASURES = {"rms": 1.0, "pk": math.sqrt(2.0), "pp": 2.0 * math.sqrt(2.0)}
#: Accepted unit strings: "<unit> <measure>", e.g. "in/s pk", "mm/s rms", "g rms", "um pp".
VIB_UNITS = tuple(f"{u} {m}" for u in _LINEAR_UNITS for m in _MEASURES)


def _parse_unit(name: str, unit: str) -> tuple[int, float]:
    key = " ".join(str(unit).strip().lower().replace("µm", "um").split())
    if key not in VIB_UNITS:
        raise UnknownOptionError(
            f"{name}={unit!r} is not a known vibration unit; use '<unit> <measure>' with unit in "
            f"{list(_LINEAR_UNITS)} and measure in {list(_MEASURES)} (e.g. 'in/s pk').")
    lin, measure = key.split(" ")
    quantity, scale = _LINEAR_UNITS[lin]
    return quantity, scale / _MEASURES[measure]


@functools.partial(jax.jit, static_argnames=("from_unit", "to_unit"))
def vib_convert_core(value, freq_hz=1.0, *, from_unit: str, to_unit: str) -> Scalar:
    """Jitted core of :func:`vib_convert` (units static; elementwise)."""
    q_from, s_from = _parse_unit("from_unit", from_unit)
    q_to, s_to = _parse_unit("to_unit", to_unit)
    rms_si = as_float(value) * s_from
    omega = 2.0 * jnp.pi * as_float(freq_hz)
    # Each step up (displacement -> velocity -> acceleration) multiplies by 2 pi f.
    return rms_si * omega ** (q_to - q_from) / s_to


def vib_convert(value: Real[ArrayLike, "*batch"], *, from_unit: str, to_unit: str,
                freq_hz: Real[ArrayLike, "*batch"] | None = None) -> Scalar:
    """Converts a single-tone vibration amplitude between units and measures.

    peak = sqrt(2) RMS, peak-to-peak = 2 sqrt(2) RMS; v = 2 pi f x and a = 2 pi f v (same
    measure on both sides). 1 in/s = 25.4 mm/s, 1 g = 9.80665 m/s^2, 1 mil = 25.4 um. Only
    correct for a pure tone: integrate broadband spectra bin by bin instead.

    Args:
        value: Amplitude in ``from_unit``.
        from_unit: One of :data:`VIB_UNITS`, e.g. "in/s pk".
        to_unit: One of :data:`VIB_UNITS`, e.g. "mm/s rms".
        freq_hz: Tone frequency (> 0); required when the quantity changes.

    Returns:
        The amplitude in ``to_unit``.

    Raises:
        UnknownOptionError: Unknown unit string. DomainError: Missing or non-positive frequency.

    Example:
        >>> round(float(vib_convert(0.15, from_unit="in/s pk", to_unit="mm/s rms")), 6)
        2.694077
    """
    q_from, _ = _parse_unit("from_unit", from_unit)
    q_to, _ = _parse_unit("to_unit", to_unit)
    arr = to_numpy("value", value)
    require_finite("value", arr)
    if q_from != q_to:
        if freq_hz is None:
            raise DomainError(f"converting {from_unit!r} to {to_unit!r} changes the quantity and "
                              "needs freq_hz (> 0), the tone frequency in Hz.")
        freq = to_numpy("freq_hz", freq_hz)
        require_finite("freq_hz", freq)
        require_range("freq_hz", freq, lo=0.0, lo_open=True)
        require_broadcastable(value=arr, freq_hz=freq)
    canon_from = " ".join(str(from_unit).strip().lower().replace("µm", "um").split())
    canon_to = " ".join(str(to_unit).strip().lower().replace("µm", "um").split())
    return vib_convert_core(value, 1.0 if freq_hz is None else freq_hz, from_unit=canon_from,
                            to_unit=canon_to)

