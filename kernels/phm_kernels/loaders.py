"""Small validated loaders for the three PHM datasets (the shell beside the kernels).

What lives here: reading NASA C-MAPSS text files (train / test / RUL, ``.txt``, ``.txt.gz`` or
``.txt.xz``),
the NASA PCoE battery parquet exports (per-discharge-cycle features and EIS resistances) and the
CWRU bearing ``.mat`` subset, each from an explicit data root passed by the caller (the library
never reads environment variables). Every loader checks the file contract and raises a
:class:`FileNotFoundError` (missing file, naming the expected path) or a
:class:`~phm_kernels.errors.PHMInputError` subclass (malformed content, naming file and line)
before returning plain NumPy arrays in frozen dataclasses.

What does not live here: any numeric kernel (RUL targets, normalisation, SOH, envelope analysis
are in their families) and any download logic.

Layout expected under the data root (``shared/data``)::

    phm/cmapss/{train,test,rul}_fd00{1..4}.txt.gz   (or .txt.xz, or the original train_FD001.txt)
    phm/nasa_battery/b00{05,06,07,18}_{discharge,impedance}.parquet
    phm/cwru_bearing/cwru_*.mat
"""

from __future__ import annotations

import gzip
import io
import lzma
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from phm_kernels._checks import option_index
from phm_kernels.errors import DomainError, ShapeMismatchError

__all__ = [
    "BATTERY_CELLS",
    "CMAPSS_SENSOR_NAMES",
    "CMAPSS_SETTING_NAMES",
    "CMAPSS_SUBSETS",
    "CWRU_NORMAL_BASELINE_FS_HZ",
    "CWRU_RECORDS",
    "BatteryCell",
    "CmapssData",
    "CmapssSplit",
    "CwruRecord",
    "CwruRecordInfo",
    "load_battery",
    "load_cmapss",
    "load_cwru",
]

#: C-MAPSS sub-datasets.
CMAPSS_SUBSETS = ("FD001", "FD002", "FD003", "FD004")
#: Operational settings (columns 3-5).
CMAPSS_SETTING_NAMES = ("setting1", "setting2", "setting3")
#: Sensors s1..s21 (columns 6-26; Saxena et al. 2008 Table 2).
CMAPSS_SENSOR_NAMES = tuple(f"s{i}" for i in range(1, 22))
#: NASA PCoE cells shipped in the data root.
BATTERY_CELLS = ("B0005", "B0006", "B0007", "B0018")


@dataclass(frozen=True)
class CwruRecordInfo:
    """Static facts about one CWRU record of the subset."""

    file_name: str
    label: str  # one of bearing.BEARING_FAULT_LABELS
    fs_hz: float | None  # None: not recorded, caller must choose (normal baseline)
    description: str


#: The CWRU records of the data root (0 hp, ~1797 r/min, 0.007 in faults, drive end).
CWRU_RECORDS = {
    "normal_97": CwruRecordInfo("cwru_normal_0hp_97.mat", "NORMAL", None,
                                "Normal Baseline 97.mat, 0 hp"),
    "ir007_105": CwruRecordInfo("cwru_12k_de_ir007_0hp_105.mat", "INNER_RACE", 12_000.0,
                                "12k drive end, inner race 0.007 in, 0 hp"),
    "b007_118": CwruRecordInfo("cwru_12k_de_b007_0hp_118.mat", "BALL", 12_000.0,
                               "12k drive end, ball 0.007 in, 0 hp"),
    "or007_130": CwruRecordInfo("cwru_12k_de_or007at6_0hp_130.mat", "OUTER_RACE", 12_000.0,
                                "12k drive end, outer race 0.007 in @ 6 o'clock, 0 hp"),
}
#: Sampling rate assumed for the normal baseline by default. The file does not record it; its
#: raw spectrum (read at 12 kHz) shows a shaft-order family at f_r/4, f_r/2, 3f_r/4, f_r, which
#: is physically the 1x-4x family only if the true rate is 48 kHz. Override with
#: ``normal_baseline_fs_hz`` in :func:`load_cwru`.
CWRU_NORMAL_BASELINE_FS_HZ = 48_000.0


def _require_file(path: Path, what: str) -> Path:
    if not path.is_file():
        raise FileNotFoundError(
            f"{what}: expected file {path} does not exist. Pass the shared data root (the "
            "folder holding 'phm/'), e.g. load_cmapss(Path('../shared/data'), 'FD001').")
    return path


def _read_text(path: Path) -> str:
    raw = path.read_bytes()
    if path.suffix == ".gz":
        try:
            raw = gzip.decompress(raw)
        except (OSError, EOFError) as exc:
            raise DomainError(f"{path}: not a valid gzip file ({exc}); re-fetch the data.") from None
    elif path.suffix == ".xz":
        try:
            raw = lzma.decompress(raw)
        except lzma.LZMAError as exc:
            raise DomainError(f"{path}: not a valid xz file ({exc}); re-fetch the data.") from None
    try:
        return raw.decode("ascii")
    except UnicodeDecodeError as exc:
        raise DomainError(f"{path}: not ASCII text (byte {exc.start}); expected the NASA C-MAPSS "
                          "text format.") from None


# ---------------------------------------------------------------------------------------------
# C-MAPSS
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class CmapssSplit:
    """One C-MAPSS file: rows sorted by unit, then cycle.

    Attributes:
        unit: Unit id per row (1-based), shape (N,).
        cycle: Cycle per row (1-based, consecutive within a unit), shape (N,).
        settings: Operational settings, shape (N, 3).
        sensors: Sensors s1..s21, shape (N, 21).
        source: The file read.
    """

    unit: np.ndarray
    cycle: np.ndarray
    settings: np.ndarray
    sensors: np.ndarray
    source: Path

    @property
    def unit_ids(self) -> np.ndarray:
        """Sorted unique unit ids."""
        return np.unique(self.unit)

    @property
    def lengths(self) -> np.ndarray:
        """Number of cycles per unit, in unit order."""
        return np.bincount(np.searchsorted(self.unit_ids, self.unit))

    @property
    def last_cycle(self) -> np.ndarray:
        """Last observed cycle per unit, broadcast to every row, shape (N,)."""
        return np.repeat(self.lengths, self.lengths).astype(np.float64)


@dataclass(frozen=True)
class CmapssData:
    """A C-MAPSS sub-dataset: run-to-failure train units, truncated test units, true test RUL."""

    subset: str
    train: CmapssSplit
    test: CmapssSplit
    test_rul: np.ndarray = field(repr=False)  # true RUL after each test unit's last cycle


def _cmapss_path(root: Path, kind: str, subset: str) -> Path:
    folder = root / "phm" / "cmapss"
    stem = f"{kind}_{subset.lower()}"
    candidates = [folder / f"{stem}.txt.gz", folder / f"{stem}.txt.xz", folder / f"{stem}.txt",
                  folder / f"{kind.upper() if kind == 'rul' else kind}_{subset}.txt"]
    for path in candidates:
        if path.is_file():
            return path
    return _require_file(candidates[0], f"C-MAPSS {kind} file for {subset}")


def _parse_rows(path: Path, n_fields: int) -> np.ndarray:
    text = _read_text(path)
    try:  # fast path (C parser); the slow path below only runs to locate an error
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # an empty file warns; treat it as malformed
            table = np.loadtxt(io.StringIO(text), dtype=np.float64, ndmin=2)
        if table.shape[1] == n_fields and table.shape[0] > 0 and np.all(np.isfinite(table)):
            return table
    except (ValueError, UserWarning):
        pass
    lines = text.splitlines()
    for number, line in enumerate(lines, start=1):
        fields = line.split()
        if not fields:
            if number == len(lines):
                continue
            raise ShapeMismatchError(f"{path.name} line {number}: empty line inside the file.")
        if len(fields) != n_fields:
            raise ShapeMismatchError(f"{path.name} line {number}: expected {n_fields} "
                                     f"space-separated fields, found {len(fields)}.")
        try:
            values = [float(v) for v in fields]
        except ValueError:
            raise DomainError(f"{path.name} line {number}: non-numeric field in {line!r}.") \
                from None
        if not all(np.isfinite(values)):
            raise DomainError(f"{path.name} line {number}: non-finite value in {line!r}.")
    raise ShapeMismatchError(f"{path.name}: the file has no data rows.")


def _cmapss_split(path: Path) -> CmapssSplit:
    table = _parse_rows(path, 26)
    unit, cycle = table[:, 0], table[:, 1]
    for name, col in (("unit", unit), ("cycle", cycle)):
        bad = (col != np.round(col)) | (col < 1)
        if np.any(bad):
            raise DomainError(f"{path.name} line {int(np.argmax(bad)) + 1}: {name} must be a "
                              f"positive integer, got {col[bad][0]:g}.")
    # Within a unit, cycles start at 1 and increase by 1; units appear in contiguous blocks.
    starts = np.r_[True, unit[1:] != unit[:-1]]
    expected = np.where(starts, 1.0, np.r_[0.0, cycle[:-1]] + 1.0)
    bad = cycle != expected
    if np.any(bad):
        line = int(np.argmax(bad)) + 1
        raise DomainError(f"{path.name} line {line}: unit {int(unit[line - 1])} has cycle "
                          f"{int(cycle[line - 1])}, expected {int(expected[line - 1])} (cycles "
                          "must start at 1 and increase by 1 with no gaps).")
    block_units = unit[starts]
    if np.unique(block_units).size != block_units.size:
        raise DomainError(f"{path.name}: a unit's rows are split into several blocks; the file "
                          "must list each unit's cycles contiguously.")
    order = np.argsort(unit, kind="stable")
    return CmapssSplit(unit[order].astype(np.int64), cycle[order].astype(np.int64),
                       table[order, 2:5], table[order, 5:26], path)


def load_cmapss(data_root: str | Path, subset: str) -> CmapssData:
    """Loads one C-MAPSS sub-dataset (train, test and RUL files) with contract checks.

    Rows must have 26 finite numeric fields (trailing whitespace allowed); unit ids are
    positive integers; within a unit cycles start at 1 and increase by 1; the RUL file has one
    non-negative integer per test unit.

    Args:
        data_root: The shared data folder (holding ``phm/cmapss``).
        subset: "FD001".."FD004" (case-insensitive).

    Returns:
        CmapssData.

    Raises:
        FileNotFoundError: A file is missing (the message gives the expected path).
        UnknownOptionError: Unknown subset.
        ShapeMismatchError / DomainError: Malformed content (file name and line number).
    """
    subset = CMAPSS_SUBSETS[option_index("subset", subset, CMAPSS_SUBSETS)]
    root = Path(data_root)
    train = _cmapss_split(_cmapss_path(root, "train", subset))
    test = _cmapss_split(_cmapss_path(root, "test", subset))
    rul_path = _cmapss_path(root, "rul", subset)
    rul = _parse_rows(rul_path, 1)[:, 0]
    if rul.shape[0] != test.unit_ids.size:
        raise ShapeMismatchError(f"{rul_path.name}: {rul.shape[0]} RUL lines but "
                                 f"{test.unit_ids.size} test units in {test.source.name}.")
    bad = (rul < 0) | (rul != np.round(rul))
    if np.any(bad):
        raise DomainError(f"{rul_path.name} line {int(np.argmax(bad)) + 1}: RUL must be a "
                          "non-negative integer.")
    if not np.array_equal(test.unit_ids, np.arange(1, test.unit_ids.size + 1)):
        raise DomainError(f"{test.source.name}: test unit ids must be 1..{test.unit_ids.size} so "
                          "they align with the RUL file's line order.")
    return CmapssData(subset, train, test, rul)


# ---------------------------------------------------------------------------------------------
# NASA PCoE battery
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class BatteryCell:
    """Per-discharge-cycle features and EIS resistances of one NASA PCoE cell.

    The first five feature arrays are PHMForge's standard features per discharge cycle.

    Attributes:
        cell: Cell id, e.g. "B0005".
        cycle: Discharge cycle index (1-based), shape (T,).
        capacity_ah: Discharge capacity, Ah.
        max_temperature_k: Max measured cell temperature, K.
        avg_temperature_k: Mean measured cell temperature, K.
        min_voltage_v: Min measured voltage, V.
        duration_s: Discharge duration (last time stamp), s.
        ambient_temperature_k: Ambient temperature, K.
        eis_index: Impedance measurement index (1-based), shape (E,).
        re_ohm: Electrolyte resistance Re per EIS measurement, ohm.
        rct_ohm: Charge-transfer resistance Rct per EIS measurement, ohm.
    """

    cell: str
    cycle: np.ndarray
    capacity_ah: np.ndarray
    max_temperature_k: np.ndarray
    avg_temperature_k: np.ndarray
    min_voltage_v: np.ndarray
    duration_s: np.ndarray
    ambient_temperature_k: float
    eis_index: np.ndarray
    re_ohm: np.ndarray
    rct_ohm: np.ndarray

    def features(self) -> np.ndarray:
        """The 5 standard features as a (T, 5) array: capacity, max T, avg T, min V, duration."""
        return np.stack([self.capacity_ah, self.max_temperature_k, self.avg_temperature_k,
                         self.min_voltage_v, self.duration_s], axis=1)


_DISCHARGE_COLUMNS = ("cycle_num", "ambient_temperature", "Capacity", "Voltage_measured",
                      "Temperature_measured", "Time")
_IMPEDANCE_COLUMNS = ("cycle_num", "Re", "Rct")


def _read_parquet(path: Path, columns: tuple[str, ...]):
    import pandas as pd  # local: only the loaders need pandas

    try:
        frame = pd.read_parquet(path)
    except (OSError, ValueError, TypeError) as exc:  # pyarrow's errors derive from these
        raise DomainError(f"{path}: cannot be read as parquet ({type(exc).__name__}: {exc}).") \
            from None
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise ShapeMismatchError(f"{path.name}: missing columns {missing}; found "
                                 f"{list(frame.columns)}.")
    if frame.empty:
        raise ShapeMismatchError(f"{path.name}: no rows.")
    return frame


def load_battery(data_root: str | Path, cell: str) -> BatteryCell:
    """Loads one NASA PCoE cell: per-discharge-cycle features and EIS Re / Rct.

    Args:
        data_root: The shared data folder (holding ``phm/nasa_battery``).
        cell: "B0005", "B0006", "B0007" or "B0018" (case-insensitive).

    Returns:
        BatteryCell (temperatures converted from degC to K).

    Raises:
        FileNotFoundError: Missing parquet file.
        ShapeMismatchError / DomainError: Missing columns, non-consecutive cycles, non-finite or
            non-positive capacities.
    """
    cell = BATTERY_CELLS[option_index("cell", cell, BATTERY_CELLS)]
    folder = Path(data_root) / "phm" / "nasa_battery"
    d_path = _require_file(folder / f"{cell.lower()}_discharge.parquet", f"battery {cell}")
    i_path = _require_file(folder / f"{cell.lower()}_impedance.parquet", f"battery {cell}")
    discharge = _read_parquet(d_path, _DISCHARGE_COLUMNS)
    grouped = discharge.groupby("cycle_num", sort=True)
    cycles = np.asarray(list(grouped.groups), dtype=np.int64)
    if not np.array_equal(cycles, np.arange(1, cycles.size + 1)):
        raise DomainError(f"{d_path.name}: cycle_num must run 1..{cycles.size} without gaps.")
    capacity = grouped["Capacity"].first().to_numpy(np.float64)
    if not np.all(np.isfinite(capacity)) or np.any(capacity <= 0):
        bad = int(np.argmax(~np.isfinite(capacity) | (capacity <= 0)))
        raise DomainError(f"{d_path.name}: cycle {bad + 1} has capacity {capacity[bad]!r}; "
                          "capacities must be finite and > 0 Ah.")
    temp = grouped["Temperature_measured"]
    impedance = _read_parquet(i_path, _IMPEDANCE_COLUMNS)
    eis = impedance.groupby("cycle_num", sort=True)[["Re", "Rct"]].first()
    re_ohm = eis["Re"].to_numpy(np.float64)
    rct_ohm = eis["Rct"].to_numpy(np.float64)
    if not (np.all(np.isfinite(re_ohm)) and np.all(np.isfinite(rct_ohm))):
        raise DomainError(f"{i_path.name}: Re/Rct contain non-finite values.")
    return BatteryCell(
        cell=cell, cycle=cycles, capacity_ah=capacity,
        max_temperature_k=temp.max().to_numpy(np.float64) + 273.15,
        avg_temperature_k=temp.mean().to_numpy(np.float64) + 273.15,
        min_voltage_v=grouped["Voltage_measured"].min().to_numpy(np.float64),
        duration_s=grouped["Time"].max().to_numpy(np.float64),
        ambient_temperature_k=float(discharge["ambient_temperature"].median()) + 273.15,
        eis_index=eis.index.to_numpy(np.int64), re_ohm=re_ohm, rct_ohm=rct_ohm)


# ---------------------------------------------------------------------------------------------
# CWRU bearing
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class CwruRecord:
    """One CWRU record.

    Attributes:
        name: Key into :data:`CWRU_RECORDS`.
        label: Ground-truth label (a :data:`~phm_kernels.bearing.BEARING_FAULT_LABELS` entry).
        drive_end: Drive-end accelerometer signal.
        fan_end: Fan-end accelerometer signal.
        fs_hz: Sampling rate used (stated by the caller for the normal baseline).
        rpm: Shaft speed recorded in the file.
        fs_assumed: True when the rate is not recorded in the file (normal baseline).
    """

    name: str
    label: str
    drive_end: np.ndarray = field(repr=False)
    fan_end: np.ndarray = field(repr=False)
    fs_hz: float
    rpm: float
    fs_assumed: bool


def load_cwru(data_root: str | Path, record: str, *,
              normal_baseline_fs_hz: float = CWRU_NORMAL_BASELINE_FS_HZ) -> CwruRecord:
    """Loads one CWRU ``.mat`` record of the subset (drive-end and fan-end signals, rpm).

    Args:
        data_root: The shared data folder (holding ``phm/cwru_bearing``).
        record: One of :data:`CWRU_RECORDS` ("normal_97", "ir007_105", "b007_118",
            "or007_130").
        normal_baseline_fs_hz: Sampling rate to assume for the normal baseline, whose file does
            not record it (12 000 or 48 000; default 48 000, see
            :data:`CWRU_NORMAL_BASELINE_FS_HZ`).

    Returns:
        CwruRecord.

    Raises:
        FileNotFoundError: Missing file. ShapeMismatchError / DomainError: Missing variables,
        non-finite samples or a bad sampling rate.
    """
    import scipy.io  # local: only this loader needs scipy.io

    names = tuple(CWRU_RECORDS)
    key = names[option_index("record", record, names)]
    info = CWRU_RECORDS[key]
    path = _require_file(Path(data_root) / "phm" / "cwru_bearing" / info.file_name,
                         f"CWRU record {key}")
    try:
        mat = scipy.io.loadmat(path)
    except (OSError, ValueError, TypeError) as exc:  # corrupt or non-MAT file
        raise DomainError(f"{path}: cannot be read as a MAT file ({exc}).") from None
    variables = {k: v for k, v in mat.items() if not k.startswith("__")}

    def pick(suffix: str) -> np.ndarray:
        hits = [k for k in variables if k.endswith(suffix)]
        if len(hits) != 1:
            raise ShapeMismatchError(f"{path.name}: expected one variable ending in {suffix!r}, "
                                     f"found {hits}; variables are {sorted(variables)}.")
        return np.asarray(variables[hits[0]], dtype=np.float64).ravel()

    drive_end, fan_end = pick("_DE_time"), pick("_FE_time")
    rpm = float(pick("RPM")[0])
    for name, signal in (("drive end", drive_end), ("fan end", fan_end)):
        if signal.size < 1000 or not np.all(np.isfinite(signal)):
            raise DomainError(f"{path.name}: {name} signal is too short or not finite.")
    if not 100.0 < rpm < 10_000.0:
        raise DomainError(f"{path.name}: implausible rpm {rpm:g}.")
    fs_assumed = info.fs_hz is None
    fs = float(normal_baseline_fs_hz) if info.fs_hz is None else float(info.fs_hz)
    if fs not in (12_000.0, 48_000.0):
        raise DomainError(f"normal_baseline_fs_hz must be 12000 or 48000 (CWRU rates); got {fs:g}.")
    return CwruRecord(key, info.label, drive_end, fan_end, fs, rpm, fs_assumed)

