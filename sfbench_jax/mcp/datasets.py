"""Registered PHM datasets and the read-only data layer behind the MCP tools.

What lives here: the registry of PHM dataset names the server will open (C-MAPSS FD001-FD004,
NASA PCoE battery cells B0005/6/7/18, four CWRU drive-end recordings), the name check that
rejects unknown and path-like names, and `DataStore`, a thread-safe cache of parsed files. What
does not: any PHM computation (that is `phm_kernels`), and any file outside the registry: a tool
can only name a dataset, never a path, and every path is built here from a constant relative path
and checked to stay inside the data root.
"""

from __future__ import annotations

import gzip
import re
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, TypeVar

import numpy as np

from sfbench_jax.mcp.errors import InvalidArgumentsError, UnknownDatasetError

__all__ = [
    "BATTERY_IDS",
    "PHM_DATASETS",
    "BatteryCell",
    "CmapssSet",
    "CwruRecord",
    "DataStore",
    "PHMDataset",
    "reject_path_like",
    "resolve_battery_id",
    "resolve_dataset",
]

Family = Literal["cmapss", "nasa_battery", "cwru_bearing"]


@dataclass(frozen=True)
class PHMDataset:
    """One registered PHM dataset.

    Attributes:
        name: Registry key, lower-case ``[a-z0-9_]``.
        family: Which loader reads it.
        asset_class: The asset the data describes (turbofan, li_ion_cell, rolling_bearing).
        description: One line shown to agents by ``list_phm_datasets``.
        files: Role -> path relative to the data root.
        info: Small static facts (sampling rate, shaft speed, units, caveats).
    """

    name: str
    family: Family
    asset_class: str
    description: str
    files: Mapping[str, str]
    info: Mapping[str, Any] = field(default_factory=dict)


def _cmapss(k: int, units: tuple[int, int], conditions: int, modes: str) -> PHMDataset:
    return PHMDataset(
        name=f"cmapss_fd00{k}",
        family="cmapss",
        asset_class="turbofan",
        description=(
            f"NASA C-MAPSS FD00{k}: simulated turbofan run-to-failure fleet; {units[0]} training "
            f"units, {units[1]} test units, {conditions} operating condition(s), fault mode(s): "
            f"{modes}. Splits: train (run to failure), test (truncated; true RUL on file)."
        ),
        files={
            "train": f"phm/cmapss/train_fd00{k}.txt.gz",
            "test": f"phm/cmapss/test_fd00{k}.txt.gz",
            "rul": f"phm/cmapss/rul_fd00{k}.txt.gz",
        },
        info={"train_units": units[0], "test_units": units[1], "operating_conditions": conditions,
              "fault_modes": modes, "time_unit": "cycles"},
    )


def _battery(cell: str, cutoff_v: float) -> PHMDataset:
    return PHMDataset(
        name=f"nasa_battery_{cell.lower()}",
        family="nasa_battery",
        asset_class="li_ion_cell",
        description=(
            f"NASA PCoE Li-ion 18650 cell {cell}: 2.0 Ah rated, 2 A constant-current discharge to "
            f"{cutoff_v} V at 24 degC; per-cycle capacity, temperature, voltage and EIS (Re, Rct)."
        ),
        files={
            "discharge": f"phm/nasa_battery/{cell.lower()}_discharge.parquet",
            "impedance": f"phm/nasa_battery/{cell.lower()}_impedance.parquet",
        },
        info={"battery_id": cell, "rated_capacity_ah": 2.0, "discharge_cutoff_v": cutoff_v,
              "eol_capacity_ah": 1.4, "ambient_temperature_c": 24.0},
    )


def _cwru(record: int, file: str, fs_hz: float, note: str = "") -> PHMDataset:
    info: dict[str, Any] = {"record": record, "sampling_rate_hz": fs_hz, "motor_load_hp": 0,
                            "bearing": "SKF 6205-2RS JEM (drive end)", "signal_unit": "g",
                            "channel": "drive-end accelerometer"}
    if note:
        info["note"] = note
    return PHMDataset(
        name=f"cwru_rec_{record:03d}",
        family="cwru_bearing",
        asset_class="rolling_bearing",
        description=(
            f"CWRU bearing test rig recording {record:03d}: drive-end accelerometer (g) of a 2 hp "
            f"motor at 0 hp load, sampled at {fs_hz / 1000:g} kHz; bearing condition unknown "
            f"to the analyst (labels via load_ground_truth)."
        ),
        files={"signal": f"phm/cwru_bearing/{file}"},
        info=info,
    )


PHM_DATASETS: dict[str, PHMDataset] = {
    ds.name: ds
    for ds in (
        _cmapss(1, (100, 100), 1, "HPC degradation"),
        _cmapss(2, (260, 259), 6, "HPC degradation"),
        _cmapss(3, (100, 100), 1, "HPC degradation, fan degradation"),
        _cmapss(4, (249, 248), 6, "HPC degradation, fan degradation"),
        _battery("B0005", 2.7),
        _battery("B0006", 2.5),
        _battery("B0007", 2.2),
        _battery("B0018", 2.5),
        _cwru(97, "cwru_normal_0hp_97.mat", 48_000.0,
              "CWRU normal-baseline file; its sampling rate is not stored in the file and is "
              "taken as 48 kHz, as most analyses of this file do"),
        _cwru(105, "cwru_12k_de_ir007_0hp_105.mat", 12_000.0),
        _cwru(118, "cwru_12k_de_b007_0hp_118.mat", 12_000.0),
        _cwru(130, "cwru_12k_de_or007at6_0hp_130.mat", 12_000.0),
    )
}

BATTERY_IDS: tuple[str, ...] = ("B0005", "B0006", "B0007", "B0018")

# Ground-truth bearing condition per CWRU record (the recording's published test condition).
CWRU_CONDITIONS: dict[str, str] = {
    "cwru_rec_097": "normal",
    "cwru_rec_105": "inner_race",
    "cwru_rec_118": "ball",
    "cwru_rec_130": "outer_race",
}

_NAME_RE = re.compile(r"^[a-z0-9_]{1,64}$")
_PATH_MARKERS = ("/", "\\", "..", "~", ":", "\x00", "%2f", "%5c")


def reject_path_like(value: str, argument: str) -> None:
    lowered = value.lower()
    if any(marker in lowered for marker in _PATH_MARKERS) or lowered.startswith("."):
        raise UnknownDatasetError(
            f"{argument}={value!r} looks like a file path; this server only opens registered "
            "datasets by name (call list_phm_datasets for the names), never paths"
        )


def _aliases() -> dict[str, str]:
    table: dict[str, str] = {}
    for name, ds in PHM_DATASETS.items():
        if ds.family == "cmapss":
            table[name.removeprefix("cmapss_")] = name  # "fd001"
        if ds.family == "nasa_battery":
            table[name.removeprefix("nasa_battery_")] = name  # "b0005"
    return table


_ALIASES = _aliases()


def resolve_dataset(name: object, *, argument: str = "dataset_name",
                    family: Family | None = None) -> PHMDataset:
    """Look a dataset up by registered name (case-insensitive; ``FD001``/``B0005`` aliases).

    Args:
        name: The name the caller passed.
        argument: The argument name, for the error message.
        family: If given, the dataset must belong to this family.

    Returns:
        The registered dataset.

    Raises:
        InvalidArgumentsError: If ``name`` is not a string.
        UnknownDatasetError: If it looks like a path, is not registered, or is of another family.
    """
    if not isinstance(name, str):
        raise InvalidArgumentsError(f"{argument} must be a string dataset name, got "
                                    f"{type(name).__name__}")
    reject_path_like(name, argument)
    key = name.strip().lower()
    key = _ALIASES.get(key, key)
    if not _NAME_RE.match(key) or key not in PHM_DATASETS:
        valid = sorted(n for n, d in PHM_DATASETS.items() if family is None or d.family == family)
        raise UnknownDatasetError(
            f"{argument}={name!r} is not a registered dataset; valid names: {', '.join(valid)}"
        )
    dataset = PHM_DATASETS[key]
    if family is not None and dataset.family != family:
        valid = sorted(n for n, d in PHM_DATASETS.items() if d.family == family)
        raise UnknownDatasetError(
            f"{argument}={name!r} is a {dataset.family} dataset but this tool needs a {family} "
            f"dataset; valid names: {', '.join(valid)}"
        )
    return dataset


def resolve_battery_id(battery_id: object) -> str:
    """Normalise a battery id (``B0005``, ``b0005`` or ``nasa_battery_b0005``) to ``B0005``.

    Args:
        battery_id: The id the caller passed.

    Returns:
        The canonical id, one of `BATTERY_IDS`.

    Raises:
        InvalidArgumentsError: If it is not a string.
        UnknownDatasetError: If it is path-like or not one of the registered cells.
    """
    dataset = resolve_dataset(battery_id, argument="battery_id", family="nasa_battery")
    return str(dataset.info["battery_id"])


# ----------------------------------------------------------------------------------------------
# Parsed containers


@dataclass(frozen=True)
class CmapssSet:
    """One C-MAPSS sub-dataset as float64 arrays (columns as in the NASA readme).

    Attributes:
        train: ``(rows, 26)`` run-to-failure trajectories.
        test: ``(rows, 26)`` truncated trajectories.
        rul: ``(test_units,)`` true RUL after each test unit's last cycle.
    """

    train: np.ndarray
    test: np.ndarray
    rul: np.ndarray


@dataclass(frozen=True)
class BatteryCell:
    """Per-discharge-cycle features and EIS records of one NASA PCoE cell.

    Attributes:
        battery_id: Canonical id, e.g. ``B0005``.
        cycle: ``(C,)`` 1-based discharge-cycle index.
        capacity_ah: ``(C,)`` discharge capacity.
        max_temperature_c: ``(C,)`` maximum measured cell temperature.
        avg_temperature_c: ``(C,)`` mean measured cell temperature.
        min_voltage_v: ``(C,)`` minimum measured terminal voltage.
        duration_s: ``(C,)`` discharge duration.
        impedance_cycle: ``(E,)`` 1-based EIS record index.
        re_ohm: ``(E,)`` electrolyte resistance.
        rct_ohm: ``(E,)`` charge-transfer resistance.
    """

    battery_id: str
    cycle: np.ndarray
    capacity_ah: np.ndarray
    max_temperature_c: np.ndarray
    avg_temperature_c: np.ndarray
    min_voltage_v: np.ndarray
    duration_s: np.ndarray
    impedance_cycle: np.ndarray
    re_ohm: np.ndarray
    rct_ohm: np.ndarray

    FEATURES = ("capacity_ah", "max_temperature_c", "avg_temperature_c", "min_voltage_v",
                "duration_s")


@dataclass(frozen=True)
class CwruRecord:
    """One CWRU recording: the drive-end acceleration and its acquisition facts.

    Attributes:
        name: Registry name.
        signal_g: ``(N,)`` drive-end acceleration in g.
        sampling_rate_hz: Samples per second.
        rpm: Shaft speed stored in the file.
    """

    name: str
    signal_g: np.ndarray
    sampling_rate_hz: float
    rpm: float


# ----------------------------------------------------------------------------------------------
# Readers (I/O only)


def _read_table(path: Path) -> np.ndarray:
    with gzip.open(path, "rt", encoding="ascii") as handle:
        rows = [line.split() for line in handle if line.strip()]
    return np.asarray(rows, dtype=np.float64)


def _read_cmapss(paths: Mapping[str, Path]) -> CmapssSet:
    train = _read_table(paths["train"])
    test = _read_table(paths["test"])
    rul = _read_table(paths["rul"]).reshape(-1)
    for role, table in (("train", train), ("test", test)):
        if table.ndim != 2 or table.shape[1] != 26:
            raise ValueError(f"{paths[role]}: expected 26 columns, got shape {table.shape}")
    if rul.shape[0] != np.unique(test[:, 0]).shape[0]:
        raise ValueError(f"{paths['rul']}: {rul.shape[0]} RUL rows but "
                         f"{np.unique(test[:, 0]).shape[0]} test units")
    return CmapssSet(train=train, test=test, rul=rul)


def _read_battery(battery_id: str, paths: Mapping[str, Path]) -> BatteryCell:
    import pandas as pd

    discharge = pd.read_parquet(paths["discharge"])
    grouped = discharge.groupby("cycle_num", sort=True)
    impedance = pd.read_parquet(paths["impedance"], columns=["cycle_num", "Re", "Rct"])
    eis = impedance.groupby("cycle_num", sort=True).first()
    return BatteryCell(
        battery_id=battery_id,
        cycle=grouped.size().index.to_numpy(np.int64),
        capacity_ah=grouped["Capacity"].first().to_numpy(np.float64),
        max_temperature_c=grouped["Temperature_measured"].max().to_numpy(np.float64),
        avg_temperature_c=grouped["Temperature_measured"].mean().to_numpy(np.float64),
        min_voltage_v=grouped["Voltage_measured"].min().to_numpy(np.float64),
        duration_s=(grouped["Time"].max() - grouped["Time"].min()).to_numpy(np.float64),
        impedance_cycle=eis.index.to_numpy(np.int64),
        re_ohm=eis["Re"].to_numpy(np.float64),
        rct_ohm=eis["Rct"].to_numpy(np.float64),
    )


def _read_cwru(dataset: PHMDataset, path: Path) -> CwruRecord:
    import scipy.io

    contents = scipy.io.loadmat(path)
    record = int(dataset.info["record"])
    signal = np.asarray(contents[f"X{record:03d}_DE_time"], dtype=np.float64).reshape(-1)
    rpm = float(np.asarray(contents[f"X{record:03d}RPM"]).reshape(-1)[0])
    return CwruRecord(name=dataset.name, signal_g=signal,
                      sampling_rate_hz=float(dataset.info["sampling_rate_hz"]), rpm=rpm)


_T = TypeVar("_T")


class DataStore:
    """Thread-safe, lazily filled cache of parsed registered datasets under one data root.

    Tools run in worker threads, so each entry is built under a per-key lock: concurrent first
    calls parse a file once. Entries are immutable and never evicted (the registry is small).
    """

    def __init__(self, data_root: Path) -> None:
        """Create an empty store.

        Args:
            data_root: The shared data folder (with ``phm/`` inside).

        Raises:
            FileNotFoundError: If ``data_root`` is not a directory.
        """
        root = Path(data_root).expanduser().resolve()
        if not root.is_dir():
            raise FileNotFoundError(
                f"data root {root} is not a directory; pass --data-root or set SFBENCH_DATA_ROOT "
                "to the shared data folder (the one holding phm/)")
        self.data_root = root
        self._entries: dict[tuple[str, ...], Any] = {}
        self._locks: dict[tuple[str, ...], threading.Lock] = {}
        self._guard = threading.Lock()

    def path(self, dataset: PHMDataset, role: str) -> Path:
        """Absolute path of one registered file, guaranteed to lie inside the data root.

        Args:
            dataset: A registered dataset.
            role: A key of ``dataset.files``.

        Returns:
            The resolved path.

        Raises:
            FileNotFoundError: If the file is missing (the data root is incomplete).
            PermissionError: If the resolved path escapes the data root (a symlink).
        """
        candidate = (self.data_root / dataset.files[role]).resolve()
        if not candidate.is_relative_to(self.data_root):
            raise PermissionError(f"{dataset.name}/{role} resolves outside the data root")
        if not candidate.is_file():
            raise FileNotFoundError(
                f"{candidate} is missing; the data root {self.data_root} does not hold the "
                f"{dataset.name} files (see the shared data README)")
        return candidate

    def cached(self, key: tuple[str, ...], build: Callable[[], _T]) -> _T:
        """Return the entry for ``key``, building it once under a per-key lock.

        Args:
            key: Cache key (strings only).
            build: Zero-argument function producing the entry.

        Returns:
            The cached entry.
        """
        entry = self._entries.get(key)
        if entry is not None:
            return entry
        with self._guard:
            lock = self._locks.setdefault(key, threading.Lock())
        with lock:
            if key not in self._entries:
                self._entries[key] = build()
            return self._entries[key]

    def cmapss(self, name: str) -> CmapssSet:
        """Parsed train/test/RUL tables of a C-MAPSS sub-dataset.

        Args:
            name: Registered name, e.g. ``cmapss_fd001``.

        Returns:
            The parsed set.
        """
        dataset = resolve_dataset(name, family="cmapss")
        return self.cached(("cmapss", dataset.name), lambda: _read_cmapss(
            {role: self.path(dataset, role) for role in dataset.files}))

    def battery(self, battery_id: str) -> BatteryCell:
        """Per-cycle features and EIS records of one NASA PCoE cell.

        Args:
            battery_id: ``B0005``-style id or registered name.

        Returns:
            The parsed cell.
        """
        dataset = resolve_dataset(battery_id, argument="battery_id", family="nasa_battery")
        cell = str(dataset.info["battery_id"])
        return self.cached(("battery", cell), lambda: _read_battery(
            cell, {role: self.path(dataset, role) for role in dataset.files}))

    def cwru(self, name: str) -> CwruRecord:
        """Drive-end signal of one CWRU recording.

        Args:
            name: Registered name, e.g. ``cwru_rec_105``.

        Returns:
            The parsed recording.
        """
        dataset = resolve_dataset(name, family="cwru_bearing")
        return self.cached(("cwru", dataset.name),
                           lambda: _read_cwru(dataset, self.path(dataset, "signal")))
