"""Data-access tools (prognostics server): the dataset catalogue, loaded splits and ground truth.

What lives here: ``list_phm_datasets``, ``load_dataset`` and ``load_ground_truth``, which return
handles (``ds:``, ``gt:``) and small summaries, never raw arrays; and `cmapss_split`, which the
other families use to turn a ``ds:`` handle into a C-MAPSS split. What does not: any computation
on the data (the RUL, metric, trend and bearing families) and ground-truth values
(``load_ground_truth`` returns a handle and a summary, so an agent cannot copy the truth into its
predictions).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field

from sfbench_jax.mcp import handles as hdl
from sfbench_jax.mcp.datasets import PHM_DATASETS, DataStore, PHMDataset, resolve_dataset
from sfbench_jax.mcp.errors import DomainToolError, InvalidArgumentsError, UnknownHandleError
from sfbench_jax.mcp.tools._common import ToolDef, ToolResult

__all__ = ["BEARING_LABELS", "CMAPSS_SENSORS", "TOOLS", "cmapss_split", "list_phm_datasets",
           "load_dataset", "load_ground_truth"]

BEARING_LABELS: tuple[Literal["normal", "outer_race", "inner_race", "ball"], ...] = (
    "normal", "outer_race", "inner_race", "ball")
CMAPSS_SENSORS = tuple(f"s{i}" for i in range(1, 22))
CMAPSS_COLUMNS = ("unit", "cycle", "setting1", "setting2", "setting3", *CMAPSS_SENSORS)
CMAPSS_SPLITS = ("train", "test")


class DatasetInfo(BaseModel):
    """One registered dataset."""

    name: str
    family: str
    asset_class: str
    description: str
    splits: list[str]


class DatasetList(ToolResult):
    """Registered PHM datasets."""

    datasets: list[DatasetInfo]


class LoadedDataset(ToolResult):
    """A loaded dataset split (a handle plus a summary)."""

    handle: str
    dataset: str
    split: str
    summary: dict[str, Any]


class GroundTruth(ToolResult):
    """A ground-truth handle and what it holds (values stay on the server)."""

    handle: str
    dataset: str
    kind: str
    n_items: int
    note: str


def _splits(dataset: PHMDataset) -> list[str]:
    if dataset.family == "cmapss":
        return list(CMAPSS_SPLITS)
    return ["discharge"] if dataset.family == "nasa_battery" else ["signal"]


def cmapss_split(store: DataStore, handle: hdl.Handle, *, argument: str) -> Any:
    """The C-MAPSS split a ``ds:`` (or ``pred:``) handle names.

    Args:
        store: The server's data store.
        handle: A parsed handle whose ``dataset`` (``target`` for ``pred:``) is C-MAPSS.
        argument: Argument name, for messages.

    Returns:
        The split (``phm_kernels.loaders.CmapssSplit``).

    Raises:
        UnknownDatasetError: If the dataset is not a registered C-MAPSS set.
        UnknownHandleError: If the split is not train or test.
    """
    dataset = resolve_dataset(handle.target or handle.dataset, argument=argument,
                              family="cmapss")
    if handle.split not in CMAPSS_SPLITS:
        raise UnknownHandleError(f"split {handle.split!r} in {argument}; C-MAPSS handles name "
                                 "the train or test split")
    return getattr(store.cmapss(dataset.name), handle.split)


def list_phm_datasets() -> DatasetList:
    """List the registered PHM datasets (names to pass to load_dataset and other tools)."""
    return DatasetList(
        datasets=[DatasetInfo(name=d.name, family=d.family, asset_class=d.asset_class,
                              description=d.description, splits=_splits(d))
                  for d in PHM_DATASETS.values()],
        kernel="none (registry)")


def _summary(store: DataStore, dataset: PHMDataset, split: str) -> dict[str, Any]:
    if dataset.family == "cmapss":
        table = getattr(store.cmapss(dataset.name), split)
        units, lengths = table.unit_ids, table.lengths
        return {"n_units": int(units.shape[0]), "n_rows": int(table.unit.shape[0]),
                "unit_ids": [int(units[0]), int(units[-1])],
                "cycles_per_unit": {"min": int(lengths.min()), "max": int(lengths.max())},
                "columns": list(CMAPSS_COLUMNS)}
    if dataset.family == "nasa_battery":
        cell = store.battery(dataset.name)
        return {"battery_id": cell.cell, "n_cycles": int(cell.cycle.shape[0]),
                "features": ["capacity_ah", "max_temperature_c", "avg_temperature_c",
                             "min_voltage_v", "duration_s"],
                "n_impedance_records": int(cell.eis_index.shape[0])}
    record = store.cwru(dataset.name)
    return {"n_samples": int(record.drive_end.shape[0]), "sampling_rate_hz": record.fs_hz,
            "rpm": record.rpm, "duration_s": record.drive_end.shape[0] / record.fs_hz,
            **{k: v for k, v in dataset.info.items() if k in {"bearing", "note"}}}


def load_dataset(
        store: DataStore,
        dataset_name: Annotated[str, Field(description="registered dataset name, e.g. "
                                                       "cmapss_fd001 (see list_phm_datasets)")],
        split: Annotated[str, Field(description="train or test for C-MAPSS; discharge for "
                                                "batteries; signal for CWRU")] = "test",
) -> LoadedDataset:
    """Load a registered dataset split and return a handle plus a small summary."""
    dataset = resolve_dataset(dataset_name)
    valid = _splits(dataset)
    if dataset.family != "cmapss" and split == "test":
        split = valid[0]
    if split not in valid:
        raise InvalidArgumentsError(f"split={split!r} is not a split of {dataset.name}; "
                                    f"choose from {valid}")
    return LoadedDataset(handle=hdl.dataset_handle(dataset.name, split), dataset=dataset.name,
                         split=split, summary=_summary(store, dataset, split),
                         kernel="none (data access)",
                         units={"cycles_per_unit": "cycles"} if dataset.family == "cmapss"
                         else {})


def load_ground_truth(
        store: DataStore,
        dataset_name: Annotated[str, Field(description="registered dataset name")],
) -> GroundTruth:
    """Return a handle to a dataset's ground truth (C-MAPSS test RUL, CWRU condition label).

    Pass the handle to calculate_mae / calculate_rmse / verify_ground_truth /
    calculate_accuracy; the values themselves stay on the server.
    """
    dataset = resolve_dataset(dataset_name)
    if dataset.family == "cmapss":
        n, kind = int(store.cmapss(dataset.name).test_rul.shape[0]), "rul_after_last_test_cycle"
        note = "true RUL of each test unit after its last observed cycle, in unit order"
    elif dataset.family == "cwru_bearing":
        n, kind = 1, "bearing_condition_label"
        note = f"one label from {list(BEARING_LABELS)}"
    else:
        raise DomainToolError(f"{dataset.name} has no separate ground-truth file: its "
                              "capacity history is the data itself (use the battery tools)")
    return GroundTruth(handle=hdl.ground_truth_handle(dataset.name), dataset=dataset.name,
                       kind=kind, n_items=n, note=note, kernel="none (data access)",
                       units={"values": "cycles"} if dataset.family == "cmapss" else {})


TOOLS = (
    ToolDef(list_phm_datasets, "prognostics"),
    ToolDef(load_dataset, "prognostics"),
    ToolDef(load_ground_truth, "prognostics"),
)
