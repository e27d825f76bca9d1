"""Registered PHM datasets and the read-only data layer behind the MCP tools.

What lives here: the registry of PHM dataset names the server will open (C-MAPSS FD001-FD004,
NASA PCoE battery cells B0005/6/7/18, four CWRU drive-end recordings under neutral names that do
not reveal their record numbers, `CWRU_NEUTRAL_NAMES`), the name check that
rejects unknown and path-like names, and `DataStore`, a thread-safe cache of datasets read with
the kernel library's validated loaders (`phm_kernels.loaders`) from the data root or, without
one, from the copy bundled with the package (``bundled.py``). What does not: file parsing and
any PHM computation (both `phm_kernels`), and any file outside the registry: a tool can only
name a dataset, never a path; each registered file is checked to resolve inside the data root
before its loader runs.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, TypeVar

from sfbench_jax.mcp.bundled import BUNDLED_FILES, bundled_root, is_bundled
from sfbench_jax.mcp.errors import (
    InvalidArgumentsError,
    RefusedToolError,
    UnavailableToolError,
    UnknownDatasetError,
)

__all__ = [
    "BATTERY_IDS",
    "CWRU_CONDITIONS",
    "CWRU_NEUTRAL_NAMES",
    "PHM_DATASETS",
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
              "fault_modes": modes, "time_unit": "cycles", "loader_key": f"FD00{k}"},
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
              "eol_capacity_ah": 1.4, "ambient_temperature_c": 24.0, "loader_key": cell},
    )


#: Agent-facing name of each CWRU recording, by CWRU record number. The published CWRU table maps
#: record numbers to fault classes (97 normal, 105 inner race, 118 ball, 130 outer race), so a
#: name that carried the number would let an agent answer from memory without a tool call. Each
#: name is ``cwru_bearing_`` plus three letters: sha256 of ``sfbench-jax/cwru/v1:<record>`` as an
#: integer, written little-end first in base 26 (a-z). Letters only, so no name contains a
#: record number, and their alphabetical order is not the records' order. The table is fixed
#: here (a test re-derives it); the loader still reads each file by its record number.
CWRU_NEUTRAL_NAMES: dict[int, str] = {
    97: "cwru_bearing_vaw",
    105: "cwru_bearing_nie",
    118: "cwru_bearing_epr",
    130: "cwru_bearing_ose",
}


def _cwru(record: int, file: str, key: str, fs_hz: float, note: str = "") -> PHMDataset:
    info: dict[str, Any] = {"record": record, "sampling_rate_hz": fs_hz, "motor_load_hp": 0,
                            "bearing": "SKF 6205-2RS JEM (drive end)", "signal_unit": "g",
                            "channel": "drive-end accelerometer", "loader_key": key}
    if note:
        info["note"] = note
    return PHMDataset(
        name=CWRU_NEUTRAL_NAMES[record],
        family="cwru_bearing",
        asset_class="rolling_bearing",
        description=(
            f"CWRU bearing test rig drive-end accelerometer recording (g) of a 2 hp motor at 0 hp "
            f"load, sampled at {fs_hz / 1000:g} kHz; bearing condition unknown to the analyst "
            f"(labels via load_ground_truth)."
        ),
        files={"signal": f"phm/cwru_bearing/{file}"},
        info=info,
    )


def _cwru_recordings() -> tuple[PHMDataset, ...]:
    """The four drive-end recordings, listed in the order of their agent-facing names."""
    recordings = (
        _cwru(97, "cwru_normal_0hp_97.mat", "normal_97", 48_000.0,
              "sampling rate not stored in the file; taken as 48 kHz"),
        _cwru(105, "cwru_12k_de_ir007_0hp_105.mat", "ir007_105", 12_000.0),
        _cwru(118, "cwru_12k_de_b007_0hp_118.mat", "b007_118", 12_000.0),
        _cwru(130, "cwru_12k_de_or007at6_0hp_130.mat", "or007_130", 12_000.0),
    )
    return tuple(sorted(recordings, key=lambda ds: ds.name))


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
        *_cwru_recordings(),
    )
}

BATTERY_IDS: tuple[str, ...] = ("B0005", "B0006", "B0007", "B0018")


def _cwru_conditions() -> dict[str, str]:
    from phm_kernels.loaders import CWRU_RECORDS

    return {name: CWRU_RECORDS[str(ds.info["loader_key"])].label.lower()
            for name, ds in PHM_DATASETS.items() if ds.family == "cwru_bearing"}


# Bearing condition per CWRU record (the recording's published test condition), lower case.
CWRU_CONDITIONS: dict[str, str] = _cwru_conditions()

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


_T = TypeVar("_T")


class DataStore:
    """Thread-safe, lazily filled cache of parsed registered datasets.

    Datasets are read from the data root when it holds their files, else from the copy bundled
    with the package (C-MAPSS FD001, see ``bundled.py``); any other dataset without files is a
    tool error naming it and ``--data-root``. Tools run in worker threads, so each entry is built
    under a per-key lock: concurrent first calls parse a file once. Entries are immutable and
    never evicted (the registry is small).
    """

    def __init__(self, data_root: Path | None, *, runs: Any = None) -> None:
        """Create an empty store.

        Args:
            data_root: The shared data folder (with ``phm/`` inside), or None to serve the
                bundled datasets only.
            runs: The server's stored runs (`sfbench_jax.mcp.runs.StoredRuns`), or None: tools that
                read stored runs then say how to give the server a runs root.

        Raises:
            FileNotFoundError: If ``data_root`` is given and is not a directory.
        """
        root = None if data_root is None else Path(data_root).expanduser().resolve()
        if root is not None and not root.is_dir():
            raise FileNotFoundError(
                f"data root {root} is not a directory; pass --data-root or set SFBENCH_DATA_ROOT "
                "to the shared data folder (the one holding phm/)")
        self.data_root = root
        self.runs = runs
        self._entries: dict[tuple[str, ...], Any] = {}
        self._locks: dict[tuple[str, ...], threading.Lock] = {}
        self._guard = threading.Lock()

    def path(self, dataset: PHMDataset, role: str) -> Path:
        """Absolute path of one registered file under the data root, which it may not escape.

        Args:
            dataset: A registered dataset.
            role: A key of ``dataset.files``.

        Returns:
            The resolved path (which may not exist: see `root_holding`).

        Raises:
            UnavailableToolError: If the store has no data root.
            RefusedToolError: If the resolved path escapes the data root (a symbolic link).
        """
        if self.data_root is None:
            raise UnavailableToolError(_unavailable_message(dataset, None))
        candidate = (self.data_root / dataset.files[role]).resolve()
        if not candidate.is_relative_to(self.data_root):
            raise RefusedToolError(
                f"the {role} file of {dataset.name} ({_shown_files(dataset)}) resolves outside the server's "
                "data root (a symbolic link); the server reads only files inside its data root. Ask the "
                "operator to replace the link with the file")
        return candidate

    def root_holding(self, dataset: PHMDataset) -> Path:
        """The folder to read a dataset from: the data root if it holds every file, else the
        bundled copy.

        Args:
            dataset: A registered dataset.

        Returns:
            The data root or the bundle's folder (laid out alike).

        Raises:
            UnavailableToolError: If neither has the dataset (the message names ``--data-root``).
        """
        if self.data_root is not None:
            missing = [relative for role, relative in dataset.files.items()
                       if not self.path(dataset, role).is_file()]
            if not missing:
                return self.data_root
        if is_bundled(dataset.name):
            return bundled_root(dataset.name)
        raise UnavailableToolError(_unavailable_message(dataset, self.data_root))

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

    def cmapss(self, name: str) -> Any:
        """A C-MAPSS sub-dataset (``phm_kernels.loaders.CmapssData``).

        Args:
            name: Registered name, e.g. ``cmapss_fd001``.

        Returns:
            The loaded train/test splits and true test RUL.
        """
        from phm_kernels.loaders import load_cmapss

        dataset = resolve_dataset(name, family="cmapss")
        return self.cached(("cmapss", dataset.name), lambda: load_cmapss(
            self.root_holding(dataset), str(dataset.info["loader_key"])))

    def battery(self, battery_id: str) -> Any:
        """Per-cycle features and EIS records of a cell (``phm_kernels.loaders.BatteryCell``).

        Args:
            battery_id: ``B0005``-style id or registered name.

        Returns:
            The loaded cell (temperatures in kelvin).
        """
        from phm_kernels.loaders import load_battery

        dataset = resolve_dataset(battery_id, argument="battery_id", family="nasa_battery")
        return self.cached(("battery", dataset.name), lambda: load_battery(
            self.root_holding(dataset), str(dataset.info["loader_key"])))

    def cwru(self, name: str) -> Any:
        """One CWRU recording (``phm_kernels.loaders.CwruRecord``).

        Args:
            name: Registered name, e.g. ``cwru_bearing_nie``.

        Returns:
            The loaded recording; the normal baseline uses the registry's sampling rate.
        """
        from phm_kernels.loaders import load_cwru

        dataset = resolve_dataset(name, family="cwru_bearing")
        fs = float(dataset.info["sampling_rate_hz"])
        return self.cached(("cwru", dataset.name), lambda: load_cwru(
            self.root_holding(dataset), str(dataset.info["loader_key"]),
            normal_baseline_fs_hz=fs))


def _shown_files(dataset: PHMDataset) -> str:
    """The dataset's files as tool messages name them: a CWRU file name carries the record number
    and the fault class, so those messages name the folder only."""
    if dataset.family == "cwru_bearing":
        return "the CWRU recordings in phm/cwru_bearing/"
    return ", ".join(dataset.files.values())


def _unavailable_message(dataset: PHMDataset, data_root: Path | None) -> str:
    files = _shown_files(dataset)
    bundled = ", ".join(sorted(BUNDLED_FILES))
    if data_root is None:
        return (f"{dataset.name} is not available: this server was started without a data root. "
                f"Restart it with --data-root PATH, the shared data folder holding {files}; "
                f"without one it serves {bundled} (bundled) and the tools that need no data")
    return (f"{dataset.name} is not available: the server's data root does not hold {files}. "
            "Restart the server with --data-root PATH pointing at the shared data folder (see "
            "its README)")
