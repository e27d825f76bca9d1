"""The generic-tools MCP server of the no_domain_tools mode: raw data and a calculator.

What lives here: `build_generic_server` (an official-SDK `MCPServer` with three tools that hold no
PHM algorithm: ``list_raw_datasets``, ``read_raw_data`` and ``calculator``) and `main`, so the same
server can run as a stdio subprocess (``python -m sfbench_jax.agent_eval.generic_server``). What
does not: domain tools (``sfbench_jax.mcp``), the calculator's grammar (``calculator.py``).

PHMForge v2's "without domain tools" ablation lets the agent fall back on native execution. Here
the fallback is explicit and bounded: the agent may read the registered datasets' raw rows (the
numbers the domain tools would read: C-MAPSS cycles and sensors, battery per-cycle features and
EIS records, CWRU acceleration samples) page by page, and evaluate arithmetic over them. Ground
truth (true C-MAPSS RUL, CWRU condition labels) is never served, as on the domain server. Data is
opened only through registered names (`sfbench_jax.mcp.datasets`), never by path.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Any

import numpy as np
from mcp.server import MCPServer
from mcp.server.mcpserver.tools import Tool
from mcp.types import ToolAnnotations
from pydantic import BaseModel, Field

from sfbench_jax.agent_eval.calculator import CalculatorError, evaluate_expression
from sfbench_jax.agent_eval.modes import GENERIC_SERVER
from sfbench_jax.mcp.datasets import PHM_DATASETS, DataStore, resolve_dataset
from sfbench_jax.mcp.errors import DomainToolError, InvalidArgumentsError
from sfbench_jax.mcp.strict import strict_tool

__all__ = ["MAX_ROWS", "build_generic_server", "main"]

MAX_ROWS = 2_000
_KELVIN = 273.15
_PURE = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True,
                        open_world_hint=False)
_SPLITS = {"cmapss": ("train", "test"), "nasa_battery": ("discharge", "impedance"),
           "cwru_bearing": ("signal",)}
_CMAPSS_COLUMNS = ("cycle", "setting1", "setting2", "setting3", *(f"s{i}" for i in range(1, 22)))
_BATTERY_COLUMNS = ("cycle", "capacity_ah", "max_temperature_c", "avg_temperature_c",
                    "min_voltage_v", "duration_s")


class RawDatasetInfo(BaseModel):
    """One registered dataset as the raw reader sees it."""

    name: str
    asset_class: str
    splits: list[str]
    description: str


class RawDatasetList(BaseModel):
    """Datasets ``read_raw_data`` can read."""

    datasets: list[RawDatasetInfo]
    note: str


class RawTable(BaseModel):
    """One page of raw rows."""

    dataset: str
    split: str
    columns: list[str]
    rows: list[list[float]]
    start_row: int
    n_rows_total: int
    next_start_row: int | None = Field(description="pass as start_row for the next page; None "
                                                   "at the end")
    info: dict[str, Any]


class CalculatorResult(BaseModel):
    """The value of an expression."""

    expression: str
    result: float | bool | list[Any]


def _page(dataset: str, split: str, columns: Sequence[str], table: np.ndarray, start_row: int,
          max_rows: int, info: dict[str, Any]) -> RawTable:
    total = int(table.shape[0])
    if start_row >= max(total, 1):
        raise DomainToolError(f"start_row={start_row} is past the last row ({total} rows)")
    stop = min(total, start_row + max_rows)
    rows = np.asarray(table[start_row:stop], dtype=np.float64).reshape(stop - start_row, -1)
    return RawTable(dataset=dataset, split=split, columns=list(columns),
                    rows=[[round(float(v), 6) for v in row] for row in rows], start_row=start_row,
                    n_rows_total=total, next_start_row=stop if stop < total else None, info=info)


def _cmapss_table(store: DataStore, name: str, split: str, unit_id: int | None
                  ) -> tuple[list[str], np.ndarray, dict[str, Any]]:
    table = getattr(store.cmapss(name), split)
    full = np.column_stack([table.cycle, table.settings, table.sensors]).astype(np.float64)
    units = table.unit.astype(int)
    if unit_id is None:
        last = np.flatnonzero(np.r_[units[1:] != units[:-1], True])
        return (["unit", *_CMAPSS_COLUMNS], np.column_stack([units[last], full[last]]),
                {"rows": "last observed cycle of each unit", "n_units": int(last.size)})
    rows = units == unit_id
    if not np.any(rows):
        raise DomainToolError(f"unit_id={unit_id} is not in {name}/{split} (units "
                              f"{units.min()}..{units.max()})")
    return list(_CMAPSS_COLUMNS), full[rows], {"unit_id": unit_id}


def _battery_table(store: DataStore, name: str, split: str
                   ) -> tuple[list[str], np.ndarray, dict[str, Any]]:
    cell = store.battery(name)
    if split == "impedance":
        index = np.arange(1, cell.re_ohm.shape[0] + 1, dtype=float)
        return (["record", "re_ohm", "rct_ohm"], np.column_stack([index, cell.re_ohm,
                                                                  cell.rct_ohm]),
                {"battery_id": cell.cell})
    table = np.column_stack([cell.cycle, cell.capacity_ah, cell.max_temperature_k - _KELVIN,
                             cell.avg_temperature_k - _KELVIN, cell.min_voltage_v,
                             cell.duration_s])
    return list(_BATTERY_COLUMNS), table, {"battery_id": cell.cell, "rated_capacity_ah": 2.0}


def _read_raw(store: DataStore, dataset_name: str, split: str | None, unit_id: int | None, start_row: int,
              max_rows: int) -> RawTable:
    """The `read_raw_data` tool: one page of a registered dataset's raw rows."""
    dataset = resolve_dataset(dataset_name)
    valid = _SPLITS[dataset.family]
    chosen = split or valid[-1 if dataset.family == "cmapss" else 0]
    if chosen not in valid:
        raise InvalidArgumentsError(f"split={split!r} is not a split of {dataset.name}; "
                                    f"choose from {list(valid)}")
    if unit_id is not None and dataset.family != "cmapss":
        raise InvalidArgumentsError("unit_id applies to C-MAPSS datasets only")
    if dataset.family == "cmapss":
        columns, table, info = _cmapss_table(store, dataset.name, chosen, unit_id)
    elif dataset.family == "nasa_battery":
        columns, table, info = _battery_table(store, dataset.name, chosen)
    else:
        record = store.cwru(dataset.name)
        columns, table = ["acceleration_g"], record.drive_end.reshape(-1, 1)
        info = {"sampling_rate_hz": record.fs_hz, "rpm": record.rpm,
                "bearing": dataset.info.get("bearing", "")}
    return _page(dataset.name, chosen, columns, table, start_row, max_rows, info)


def build_generic_server(data_root: Path | None) -> MCPServer:
    """Assemble the generic-tools server.

    Args:
        data_root: The shared data folder (``phm/`` inside); None serves only what the package
            bundles (C-MAPSS FD001), and ``read_raw_data`` answers ``[unavailable]`` for the rest.

    Returns:
        The server, for ``mcp.Client(server)`` in-process or ``run()`` over stdio.
    """
    store = DataStore(data_root)

    def list_raw_datasets() -> RawDatasetList:
        """List the registered datasets whose raw rows read_raw_data returns."""
        return RawDatasetList(
            datasets=[RawDatasetInfo(name=d.name, asset_class=d.asset_class,
                                     splits=list(_SPLITS[d.family]), description=d.description)
                      for d in PHM_DATASETS.values()],
            note="ground truth (true RUL, fault labels) is not served")

    def read_raw_data(
            dataset_name: Annotated[str, Field(description="registered name, e.g. cmapss_fd001, "
                                                           "nasa_battery_b0005, cwru_bearing_nie")],
            split: Annotated[str | None, Field(description="cmapss: train/test (default test); "
                                                           "battery: discharge/impedance; "
                                                           "cwru: signal")] = None,
            unit_id: Annotated[int | None, Field(ge=1, description="C-MAPSS unit; omit for "
                                                                   "each unit's last cycle")] = None,
            start_row: Annotated[int, Field(ge=0)] = 0,
            max_rows: Annotated[int, Field(ge=1, le=MAX_ROWS)] = 200,
    ) -> RawTable:
        """Raw rows of a registered dataset, one page at a time (no processing)."""
        return _read_raw(store, dataset_name, split, unit_id, start_row, max_rows)

    def calculator(
            expression: Annotated[str, Field(description="one arithmetic expression, e.g. "
                                                         "'polyfit(t, y, 1)[0]' or 'mean(x)'")],
            variables: Annotated[dict[str, float | list[float]] | None, Field(
                description="name -> number or list of numbers used in the expression")] = None,
    ) -> CalculatorResult:
        """Evaluate arithmetic over numbers and lists (NumPy functions such as mean, std,
        polyfit, percentile, sqrt, log, exp, interp, norm_cdf are available)."""
        try:
            value = evaluate_expression(expression, variables)
        except CalculatorError as exc:
            raise DomainToolError(f"{exc}. Fix the expression and call again.") from exc
        return CalculatorResult(expression=expression, result=value)

    meta = {"server": GENERIC_SERVER, "group": "generic", "offline_stub": False}
    # Strict like the domain server: an undeclared argument is an [invalid_arguments] error.
    tools = [strict_tool(Tool.from_function(fn, name=fn.__name__, annotations=_PURE, meta=meta))
             for fn in (list_raw_datasets, read_raw_data, calculator)]
    return MCPServer("sfbench-generic-tools", log_level="WARNING", tools=tools, instructions=(
        "Generic tools without any PHM algorithm: read raw rows of the registered datasets "
        "page by page, and evaluate arithmetic expressions over numbers and lists."))


def main(argv: Sequence[str] | None = None) -> int:
    """Serve the generic tools over stdio.

    Args:
        argv: ``--data-root PATH`` (optional).

    Returns:
        Exit status.
    """
    parser = argparse.ArgumentParser(prog="python -m sfbench_jax.agent_eval.generic_server",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--data-root", default=None, help="the shared data folder")
    args = parser.parse_args(argv)
    root = Path(args.data_root).expanduser().resolve() if args.data_root else None
    build_generic_server(root).run()
    return 0


if __name__ == "__main__":
    sys.exit(main())
