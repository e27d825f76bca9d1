"""The server without a data root: it starts, serves the bundled C-MAPSS FD001 and ETTh1 and the
tools that need no data, and answers a tool on an absent dataset with an error naming
``--data-root``. A data root, when given, takes precedence and adds the other datasets.

The no-argument test runs the installed ``sfbench-mcp`` console script over stdio with the
official client, in an emptied environment (``env -i``: PATH and a fresh HOME only) and a scratch
working directory, so nothing (SFBENCH_DATA_ROOT, the repository) is inherited.
"""

from __future__ import annotations

import lzma
import os
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters
from mcp.server import MCPServer

from sfbench_jax.mcp.bundled import BUNDLED_FILES, bundled_root, verified_folder
from sfbench_jax.mcp.datasets import PHM_DATASETS, DataStore
from sfbench_jax.mcp.errors import UnavailableToolError

pytestmark = pytest.mark.anyio


def _bare_console_script(home: Path) -> StdioServerParameters:
    script = shutil.which("sfbench-mcp", path=str(Path(sys.executable).parent))
    assert script, "the sfbench-mcp console script is not installed (pip install -e .)"
    env_tool = shutil.which("env")
    assert env_tool, "no env(1) on PATH"
    return StdioServerParameters(command=env_tool, cwd=home, args=[
        "-i", f"PATH={os.environ['PATH']}", f"HOME={home}", script])


async def _ok(client: Client, name: str, **arguments: Any) -> dict[str, Any]:
    result = await client.call_tool(name, arguments)
    assert not result.is_error, result.content
    return dict(result.structured_content)


async def _error(client: Client, name: str, **arguments: Any) -> str:
    result = await client.call_tool(name, arguments)
    assert result.is_error, f"{name}({arguments}) unexpectedly succeeded"
    return result.content[0].text


async def _fd001_predictions(client: Client) -> dict[str, Any]:
    data = await _ok(client, "load_dataset", dataset_name="cmapss_fd001", split="test")
    model = await _ok(client, "train_rul_model", dataset_name="cmapss_fd001")
    return await _ok(client, "predict_rul", model_handle=model["handle"],
                     dataset_handle=data["handle"])


async def test_no_arguments_serves_bundled_data_over_stdio(tmp_path: Path,
                                                           server: MCPServer) -> None:
    async with Client(_bare_console_script(tmp_path)) as client:
        names = {t.name for t in (await client.list_tools()).tools}
        predictions = await _fd001_predictions(client)
        mae = await _ok(client, "calculate_mae", ground_truth="gt:cmapss_fd001",
                        predictions=predictions["handle"])
        absent = await _error(client, "load_dataset", dataset_name="cmapss_fd002")
        absent_cell = await _error(client, "capacity_soh_calculator", battery_id="B0005",
                                   cycle=10)
        cost = await _ok(client, "calculate_maintenance_cost", preventive_cost=5000,
                         frequency_per_year=4, downtime_hours=8, hourly_rate=1000)
        robustness = await _ok(client, "seasonal_naive_robustness", dataset="etth1", k=50,
                               eval_seed=1)
    assert {"predict_rul", "train_rul_model", "load_dataset", "assess_safety_risk",
            "calculate_bearing_frequencies", "seasonal_naive_robustness",
            "capacity_soh_calculator"} <= names
    assert predictions["n_units"] == 100 and len(predictions["predicted_rul"]) == 100
    for text, dataset in ((absent, "cmapss_fd002"), (absent_cell, "nasa_battery_b0005")):
        assert "[unavailable]" in text and dataset in text and "--data-root" in text
    assert cost["annual_cost"] == pytest.approx(52_000.0)
    assert robustness["summary"]["dataset"] == "etth1" and robustness["summary"]["k"] == 50
    # The bundle is the NASA text byte for byte, so it predicts exactly what the data root does.
    async with Client(server) as client:
        from_root = await _fd001_predictions(client)
        root_mae = await _ok(client, "calculate_mae", ground_truth="gt:cmapss_fd001",
                             predictions=from_root["handle"])
    assert predictions["predicted_rul"] == from_root["predicted_rul"]
    assert mae["value"] == pytest.approx(root_mae["value"], rel=1e-12)


def test_data_root_takes_precedence_and_the_bundle_fills_in(data_root: Path,
                                                            tmp_path: Path) -> None:
    fd001, fd002 = PHM_DATASETS["cmapss_fd001"], PHM_DATASETS["cmapss_fd002"]
    assert DataStore(data_root).root_holding(fd001) == data_root
    assert DataStore(data_root).root_holding(fd002) == data_root
    assert DataStore(None).root_holding(fd001) == bundled_root("cmapss_fd001")
    empty = tmp_path / "empty_root"
    empty.mkdir()
    assert DataStore(empty).root_holding(fd001) == bundled_root("cmapss_fd001")
    with pytest.raises(UnavailableToolError, match="--data-root") as caught:
        DataStore(empty).root_holding(fd002)
    # names the dataset and the fix, not the server's folder (issue 21: errors reveal no server path)
    assert str(empty) not in str(caught.value) and "cmapss_fd002" in str(caught.value)
    with pytest.raises(UnavailableToolError, match="without a data root"):
        DataStore(None).root_holding(PHM_DATASETS["cwru_bearing_nie"])


def test_bundled_files_are_checked_against_their_checksums(tmp_path: Path) -> None:
    files = BUNDLED_FILES["cmapss_fd001"]
    source = bundled_root("cmapss_fd001")
    for relative, _ in files.values():
        (tmp_path / relative).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source / relative, tmp_path / relative)
    assert verified_folder(tmp_path, files, dataset="cmapss_fd001") == tmp_path
    rul = tmp_path / files["rul"][0]
    rul.write_bytes(rul.read_bytes()[:-8])  # truncated: not valid xz any more
    with pytest.raises(UnavailableToolError, match="cannot be read"):
        verified_folder(tmp_path, files, dataset="cmapss_fd001")
    rul.write_bytes(lzma.compress(b"112\n"))  # valid xz, wrong content
    with pytest.raises(UnavailableToolError, match="corrupted"):
        verified_folder(tmp_path, files, dataset="cmapss_fd001")
