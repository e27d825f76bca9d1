"""Vibration and bearing tools (prognostics server): ISO 10816 zones, unit conversion, bearing
defect frequencies and envelope-spectrum diagnosis of a CWRU recording.

What lives here: ``assess_vibration_severity``, ``convert_vibration_units``,
``calculate_bearing_frequencies`` and ``diagnose_bearing_fault``. What does not: the zone tables,
the conversions and the envelope analysis (`phm_kernels.vibration`, `phm_kernels.bearing`).
"""

from __future__ import annotations

from typing import Annotated, Literal

import numpy as np
from phm_kernels import bearing as bearing_kernels  # the name `bearing` is a tool argument
from phm_kernels import vibration
from pydantic import Field

from sfbench_jax.mcp import handles as hdl
from sfbench_jax.mcp.datasets import DataStore, resolve_dataset
from sfbench_jax.mcp.errors import InvalidArgumentsError, UnknownHandleError, kernel_errors
from sfbench_jax.mcp.tools._common import (
    ToolDef,
    ToolResult,
    code_label,
    kernel_label,
    maybe_finite,
    scalar,
)
from sfbench_jax.mcp.tools.data import BEARING_LABELS

__all__ = ["TOOLS", "assess_vibration_severity", "calculate_bearing_frequencies",
           "convert_vibration_units", "diagnose_bearing_fault"]

_ZONE_MEANING = {
    "A": "newly commissioned condition",
    "B": "acceptable for unrestricted long-term operation",
    "C": "unsatisfactory for long-term continuous operation; plan remedial action",
    "D": "severe enough to cause damage",
}
_DEFECT_TARGETS = ("outer_race", "inner_race", "ball")


class VibrationZone(ToolResult):
    """ISO 10816 evaluation zone of a velocity RMS."""

    zone: Literal["A", "B", "C", "D"]
    zone_meaning: str
    velocity_rms_mm_s: float
    ratio_to_cd_boundary: float
    margin_to_next_zone_mm_s: float | None
    standard_edition: str


class ConversionResult(ToolResult):
    """A converted single-tone vibration amplitude."""

    value: float
    from_unit: str
    to_unit: str
    note: str


class BearingFrequencies(ToolResult):
    """Bearing defect frequencies."""

    shaft_hz: float
    ftf_hz: float
    bpfo_hz: float
    bpfi_hz: float
    bsf_hz: float
    bsf2_hz: float


class BearingDiagnosisResult(ToolResult):
    """Envelope-spectrum bearing diagnosis of one recording."""

    dataset: str
    fault_label: Literal["normal", "outer_race", "inner_race", "ball"]
    detected: dict[str, bool]
    harmonic_snr_sum_db: dict[str, float]
    peak_freq_hz: dict[str, float]
    defect_frequencies_hz: dict[str, float]
    band_hz: list[float]


def assess_vibration_severity(
        velocity_rms_mm_s: Annotated[float, Field(ge=0, description="broadband velocity "
                                                                   "RMS, mm/s")],
        standard: Literal["ISO10816-1", "ISO10816-3"] = "ISO10816-1",
        machine_class: Literal["I", "II", "III", "IV"] = "II",
        group: Literal[1, 2] = 2,
        foundation: Literal["rigid", "flexible"] = "rigid",
) -> VibrationZone:
    """ISO 10816 (now ISO 20816) evaluation zone A-D of a vibration velocity.

    ISO10816-1 uses machine_class I-IV; ISO10816-3 uses group 1/2 and foundation.
    """
    with kernel_errors():
        if standard == "ISO10816-1":
            kernel = kernel_label(vibration.iso10816_1_zone)
            result = vibration.iso10816_1_zone(velocity_rms_mm_s, machine_class=machine_class)
            edition = vibration.ISO10816_EDITIONS["iso10816_1"]
        else:
            kernel = kernel_label(vibration.iso10816_3_zone)
            result = vibration.iso10816_3_zone(velocity_rms_mm_s, group=group, foundation=foundation)
            edition = vibration.ISO10816_EDITIONS["iso10816_3"]
    zone = code_label(result.zone, vibration.ISO_ZONES)
    return VibrationZone(zone=zone, zone_meaning=_ZONE_MEANING[zone],
                         velocity_rms_mm_s=velocity_rms_mm_s,
                         ratio_to_cd_boundary=scalar(result.ratio_to_cd),
                         margin_to_next_zone_mm_s=maybe_finite(result.margin_to_next),
                         standard_edition=edition, kernel=kernel,
                         units={"velocity_rms_mm_s": "mm/s RMS"})


def convert_vibration_units(
        value: float,
        from_unit: Annotated[str, Field(description="'<unit> <measure>', e.g. 'in/s pk'")],
        to_unit: Annotated[str, Field(description="e.g. 'mm/s rms'")],
        frequency_hz: Annotated[float | None, Field(
            gt=0, description="tone frequency; needed between displacement, velocity and "
                              "acceleration")] = None,
) -> ConversionResult:
    """Convert a single-tone vibration amplitude between units (in/s, mm/s, g, um) and
    measures (rms, pk, pp)."""
    with kernel_errors():
        result = vibration.vib_convert(value, from_unit=from_unit, to_unit=to_unit,
                                       freq_hz=frequency_hz)
    return ConversionResult(value=scalar(result), from_unit=from_unit, to_unit=to_unit,
                            note="exact for a pure tone only; integrate broadband spectra bin "
                                 "by bin", kernel=kernel_label(vibration.vib_convert),
                            units={"value": to_unit})


def calculate_bearing_frequencies(
        rpm: Annotated[float, Field(gt=0)],
        bearing: Literal["cwru_drive_end", "cwru_fan_end", "custom"] = "cwru_drive_end",
        n_balls: Annotated[int | None, Field(ge=3)] = None,
        ball_diameter: Annotated[float | None, Field(gt=0)] = None,
        pitch_diameter: Annotated[float | None, Field(gt=0)] = None,
        contact_angle_deg: Annotated[float, Field(ge=0, lt=90)] = 0.0,
) -> BearingFrequencies:
    """Bearing defect frequencies (FTF, BPFO, BPFI, BSF, 2xBSF) for a shaft speed.

    Use bearing='custom' with n_balls, ball_diameter and pitch_diameter for other bearings.
    """
    if bearing == "custom":
        if n_balls is None or ball_diameter is None or pitch_diameter is None:
            raise InvalidArgumentsError("bearing='custom' needs n_balls, ball_diameter and "
                                        "pitch_diameter")
        geometry = bearing_kernels.BearingGeometry(n_balls, ball_diameter, pitch_diameter,
                                                   contact_angle_deg)
    else:
        geometry = (bearing_kernels.CWRU_DRIVE_END if bearing == "cwru_drive_end"
                    else bearing_kernels.CWRU_FAN_END)
    with kernel_errors():
        result = bearing_kernels.bearing_fault_frequencies(rpm, **geometry._asdict())
    return BearingFrequencies(shaft_hz=scalar(result.shaft_hz), ftf_hz=scalar(result.ftf),
                              bpfo_hz=scalar(result.bpfo), bpfi_hz=scalar(result.bpfi),
                              bsf_hz=scalar(result.bsf), bsf2_hz=scalar(result.bsf2),
                              kernel=kernel_label(bearing_kernels.bearing_fault_frequencies),
                              units={"*_hz": "Hz"})


def diagnose_bearing_fault(
        store: DataStore,
        dataset_handle: Annotated[str, Field(description="ds: handle of a CWRU recording")],
        band_low_hz: Annotated[float, Field(gt=0)] = 2000.0,
        band_high_hz: Annotated[float, Field(gt=0)] = 4000.0,
) -> BearingDiagnosisResult:
    """Envelope-spectrum diagnosis of a drive-end recording: normal, outer_race, inner_race
    or ball, with per-target detection and SNR."""
    handle = hdl.parse_handle(dataset_handle, argument="dataset_handle", kinds=("ds",))
    dataset = resolve_dataset(handle.dataset, argument="dataset_handle")
    if dataset.family != "cwru_bearing":
        raise UnknownHandleError(f"{dataset_handle!r} is not a bearing recording; load a "
                                 "cwru_bearing_* dataset")
    record = store.cwru(dataset.name)
    # The kernel averages whole 1-second segments and ignores the remainder; trimming it here
    # gives the same result and lets recordings of similar length share one compile.
    segment = round(float(record.fs_hz))
    signal = record.drive_end[: (record.drive_end.shape[0] // segment) * segment]
    with kernel_errors():
        result = bearing_kernels.diagnose_bearing(signal, fs=record.fs_hz, rpm=record.rpm,
                                          f_lo=band_low_hz, f_hi=band_high_hz)
    match = result.match
    detected = np.asarray(match.detected).reshape(-1).tolist()
    snr = np.asarray(match.score).reshape(-1).tolist()
    peaks = np.asarray(match.peak_freq)
    peak_first = peaks[:, 0] if peaks.ndim == 2 else peaks
    freqs = result.frequencies
    return BearingDiagnosisResult(
        dataset=dataset.name, fault_label=BEARING_LABELS[int(scalar(result.label))],
        detected={t: bool(d) for t, d in zip(_DEFECT_TARGETS, detected, strict=True)},
        harmonic_snr_sum_db={t: float(s) for t, s in zip(_DEFECT_TARGETS, snr, strict=True)},
        peak_freq_hz={t: float(p) for t, p in zip(_DEFECT_TARGETS, peak_first.tolist(),
                                                  strict=True)},
        defect_frequencies_hz={"bpfo": scalar(freqs.bpfo), "bpfi": scalar(freqs.bpfi),
                               "bsf2": scalar(freqs.bsf2), "shaft": scalar(freqs.shaft_hz)},
        band_hz=[band_low_hz, band_high_hz], kernel=kernel_label(bearing_kernels.diagnose_bearing),
        units={"harmonic_snr_sum_db": "dB (sum of positive harmonic SNRs)", "*_hz": "Hz"})


def _warm_up(store: DataStore) -> None:
    del store
    assess_vibration_severity(2.0)
    assess_vibration_severity(3.0, standard="ISO10816-3")
    calculate_bearing_frequencies(1797.0)


TOOLS = (
    ToolDef(assess_vibration_severity, "prognostics", warmup=_warm_up),
    ToolDef(convert_vibration_units, "prognostics"),
    ToolDef(calculate_bearing_frequencies, "prognostics"),
    ToolDef(diagnose_bearing_fault, "prognostics"),
)
