"""Bad input is a tool error that names the problem; never a crash, never a read outside the root.

File access is observed with a Python audit hook (every ``open`` in the process, including the
worker threads the SDK runs tools in), so the "no file outside the data root" claim is checked on
what the server actually opened, not on its own bookkeeping.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from mcp.server import MCPServer

from sfbench_jax.mcp.datasets import DataStore, PHMDataset, resolve_dataset
from sfbench_jax.mcp.errors import RefusedToolError, UnknownDatasetError

pytestmark = pytest.mark.anyio

_OPENED: list[str] = []
_RECORDING = threading.Event()


def _audit(event: str, args: tuple[Any, ...]) -> None:
    if _RECORDING.is_set() and event == "open" and args and isinstance(args[0], str | bytes | Path):
        _OPENED.append(os.fsdecode(args[0]))


sys.addaudithook(_audit)


@pytest.fixture
def opened_files() -> Iterator[list[str]]:
    """Paths opened by this process while the test body runs."""
    _OPENED.clear()
    _RECORDING.set()
    try:
        yield _OPENED
    finally:
        _RECORDING.clear()


async def error_text(server: MCPServer, name: str, arguments: dict[str, Any]) -> str:
    async with Client(server) as client:
        result = await client.call_tool(name, arguments)
    assert result.is_error, f"{name}({arguments}) unexpectedly succeeded"
    return result.content[0].text


@pytest.mark.parametrize(("name", "arguments", "needle"), [
    ("assess_safety_risk", {"failure_mode": "x", "severity": 11, "probability": 2,
                            "detectability": 2}, "severity"),
    ("assess_safety_risk", {"failure_mode": "x", "severity": "high", "probability": 2,
                            "detectability": 2}, "severity"),
    ("calculate_maintenance_cost", {"preventive_cost": 5000}, "frequency_per_year"),
    ("calculate_maintenance_cost", {"preventive_cost": -1, "frequency_per_year": 4,
                                    "downtime_hours": 8, "hourly_rate": 1000}, "preventive_cost"),
    ("calculate_mae", {"ground_truth": "[1, 2,", "predictions": [1.0]}, "ground_truth"),
    ("calculate_mae", {"ground_truth": [1, 2, 3], "predictions": [1, 2]}, "[domain_error]"),
    ("calculate_mae", {"ground_truth": [1, "x"], "predictions": [1, 2]}, "ground_truth"),
    ("check_compliance", {"standard": "IEC61508", "target_level": "SIL 9",
                          "failure_measure": 1e-3}, "[invalid_arguments]"),
    ("check_compliance", {"standard": "IEC62061", "target_level": "2",
                          "failure_measure": 1e-3}, "standard"),
    ("check_voltage_unbalance", {"line_voltages": [460, 461]}, "exactly 3"),
    ("optimize_replacement_age", {"weibull_shape": 2, "weibull_scale": 1000,
                                  "preventive_cost": 10, "failure_cost": 5}, "[domain_error]"),
    ("convert_vibration_units", {"value": 1, "from_unit": "furlongs", "to_unit": "mm/s rms"},
     "furlongs"),
    ("detect_degradation_trend", {}, "exactly one of"),
    ("detect_degradation_trend", {"dataset_handle": "ds:cmapss_fd001:train", "unit_id": 999,
                                  "sensor": "s11"}, "unit_id=999"),
    ("load_dataset", {"dataset_name": "cmapss_fd001", "split": "validation"}, "split"),
    ("predict_rul", {"model_handle": "model:cmapss_fd001:oracle",
                     "dataset_handle": "ds:cmapss_fd001:test"}, "[unknown_handle]"),
])
async def test_malformed_arguments_are_tool_errors(server: MCPServer, name: str,
                                                   arguments: dict[str, Any],
                                                   needle: str) -> None:
    text = await error_text(server, name, arguments)
    assert needle in text
    # Anticipated errors explain themselves; only real bugs show the bare SDK crash text.
    assert text != f"Error executing tool {name}"


async def test_unknown_tool(server: MCPServer) -> None:
    assert (await error_text(server, "delete_everything", {})).startswith("Unknown tool:")


@pytest.mark.parametrize("name", ["cmapss_fd009", "ETTh1", "battery_b0099", ""])
async def test_unknown_dataset_lists_valid_names(server: MCPServer, name: str) -> None:
    text = await error_text(server, "load_dataset", {"dataset_name": name})
    assert "[unknown_dataset]" in text and "cmapss_fd001" in text


PATH_LIKE = ["../../etc/passwd", "/etc/passwd", "phm/cmapss/train_fd001.txt.gz",
             "cmapss_fd001/../../secret", "..", "~/.ssh/id_rsa", "C:\\Windows\\win.ini",
             "file:///etc/passwd", "..%2f..%2fetc%2fpasswd", ".hidden", "cmapss_fd001\x00"]


@pytest.mark.parametrize("name", PATH_LIKE)
async def test_path_like_dataset_names_never_open_files(server: MCPServer, name: str,
                                                        data_root: Path,
                                                        opened_files: list[str]) -> None:
    texts = [await error_text(server, "load_dataset", {"dataset_name": name}),
             await error_text(server, "load_ground_truth", {"dataset_name": name}),
             await error_text(server, "seasonal_naive_robustness", {"dataset": name})]
    for text in texts:
        assert "[unknown_dataset]" in text or "[unavailable]" in text
    handle_text = await error_text(server, "diagnose_bearing_fault",
                                   {"dataset_handle": f"ds:{name}:signal"})
    assert "[unknown_handle]" in handle_text or "[unknown_dataset]" in handle_text
    outside = [p for p in opened_files
               if not Path(p).resolve().is_relative_to(data_root)
               and ("passwd" in p or "ssh" in p or "win.ini" in p or "secret" in p)]
    assert outside == []


async def test_data_files_come_only_from_the_root(server: MCPServer, data_root: Path,
                                                  opened_files: list[str]) -> None:
    async with Client(server) as client:
        result = await client.call_tool("load_dataset", {"dataset_name": "cwru_bearing_epr",
                                                         "split": "signal"})
    assert not result.is_error
    data_files = [p for p in opened_files if p.endswith((".mat", ".txt.gz", ".parquet"))]
    for path in data_files:
        assert Path(path).resolve().is_relative_to(data_root), path


def test_registry_rejects_paths_and_resolves_aliases() -> None:
    assert resolve_dataset("FD002").name == "cmapss_fd002"
    assert resolve_dataset(" B0018 ", argument="battery_id").name == "nasa_battery_b0018"
    for name in PATH_LIKE:
        with pytest.raises(UnknownDatasetError):
            resolve_dataset(name)
    with pytest.raises(UnknownDatasetError, match="needs a cmapss dataset"):
        resolve_dataset("cwru_bearing_nie", family="cmapss")


def test_store_refuses_symlinks_out_of_the_root(tmp_path: Path) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_text("secret")
    root = tmp_path / "root"
    (root / "phm").mkdir(parents=True)
    (root / "phm" / "escape.txt").symlink_to(outside)
    store = DataStore(root)
    rogue = PHMDataset(name="rogue", family="cmapss", asset_class="x", description="x",
                       files={"train": "phm/escape.txt"})
    with pytest.raises(RefusedToolError, match=r"^\[refused\] .*outside the server's data root") as refused:
        store.path(rogue, "train")
    assert str(tmp_path) not in str(refused.value)
    with pytest.raises(FileNotFoundError, match="not a directory"):
        DataStore(tmp_path / "missing")
