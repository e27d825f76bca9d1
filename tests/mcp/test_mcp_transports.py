"""The server over every transport with the official client: in-process (auto and legacy
framing), stdio subprocess (module and console script) and streamable HTTP on loopback; plus 100
concurrent tool calls."""

from __future__ import annotations

import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters
from mcp.server import MCPServer
from mcp_helpers import free_port, stdio_params, subprocess_env

from sfbench_jax.mcp.server import main as server_main

pytestmark = pytest.mark.anyio

EXPECTED_TOOLS = {"load_dataset", "calculate_mae", "assess_safety_risk", "check_compliance",
                  "calculate_maintenance_cost", "web_search"}


async def _round_trip(target: Any, *, mode: str = "auto") -> dict[str, Any]:
    async with Client(target, mode=mode) as client:
        names = {t.name for t in (await client.list_tools()).tools}
        assert names >= EXPECTED_TOOLS
        ok = await client.call_tool("assess_safety_risk", {"failure_mode": "seal", "severity": 8,
                                                           "probability": 5, "detectability": 4})
        bad = await client.call_tool("load_dataset", {"dataset_name": "../../etc/passwd"})
        data = await client.call_tool("load_dataset", {"dataset_name": "cmapss_fd001"})
        assert not ok.is_error and bad.is_error and not data.is_error
        assert "[unknown_dataset]" in bad.content[0].text
        return {"protocol": client.protocol_version, "risk": ok.structured_content,
                "data": data.structured_content}


async def test_in_process_auto_and_legacy_agree(server: MCPServer) -> None:
    auto = await _round_trip(server)
    legacy = await _round_trip(server, mode="legacy")
    assert auto["protocol"] != legacy["protocol"]
    assert auto["risk"] == legacy["risk"] and auto["data"] == legacy["data"]
    assert (auto["risk"]["rpn"], auto["risk"]["risk_level"]) == (160, "high")


async def test_stdio_module(data_root: Path) -> None:
    result = await _round_trip(stdio_params(data_root))
    assert result["risk"]["rpn"] == 160 and result["data"]["summary"]["n_units"] == 100


async def test_stdio_console_script_with_group_and_env(data_root: Path) -> None:
    script = shutil.which("sfbench-mcp", path=str(Path(sys.executable).parent))
    assert script, "the sfbench-mcp console script is not installed (pip install -e .)"
    env = subprocess_env() | {"SFBENCH_DATA_ROOT": str(data_root)}
    params = StdioServerParameters(command=script, args=["--group", "maintenance"], env=env)
    async with Client(params) as client:
        names = {t.name for t in (await client.list_tools()).tools}
        cost = await client.call_tool("calculate_maintenance_cost", {
            "preventive_cost": 5000, "frequency_per_year": 4, "downtime_hours": 8,
            "hourly_rate": 1000})
    assert "calculate_maintenance_cost" in names and "load_dataset" not in names
    assert cost.structured_content["annual_cost"] == pytest.approx(52_000.0)


def test_main_refuses_a_data_root_that_is_not_a_folder(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    # Without any data root the server starts and serves the bundled data instead
    # (test_mcp_bundled_data.py runs it that way over stdio).
    monkeypatch.delenv("SFBENCH_DATA_ROOT", raising=False)
    assert server_main(["--data-root", str(tmp_path / "nope")]) == 2
    assert "not a directory" in capsys.readouterr().err
    monkeypatch.setenv("SFBENCH_DATA_ROOT", str(tmp_path / "gone"))
    assert server_main([]) == 2
    assert "not a directory" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        server_main(["--transport", "carrier-pigeon"])
    capsys.readouterr()


def _wait_for_port(port: int, proc: subprocess.Popen[bytes], timeout_s: float = 90.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"HTTP server exited early with code {proc.returncode}")
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.2)
    raise TimeoutError(f"HTTP server did not listen on port {port} within {timeout_s} s")


@pytest.fixture(scope="module")
def http_url(data_root: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A streamable-HTTP server subprocess on an ephemeral loopback port, stopped by its PID."""
    port = free_port()
    log = tmp_path_factory.mktemp("http") / "server.log"
    with log.open("wb") as stderr:
        proc = subprocess.Popen(
            [sys.executable, "-m", "sfbench_jax.mcp.server", "--transport", "streamable-http",
             "--host", "127.0.0.1", "--port", str(port), "--data-root", str(data_root)],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=stderr,
            env=subprocess_env())
        try:
            _wait_for_port(port, proc)
            yield f"http://127.0.0.1:{port}/mcp"
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=20)


async def test_streamable_http(http_url: str) -> None:
    result = await _round_trip(http_url)
    assert result["risk"]["risk_level"] == "high"


async def _hundred_calls(target: Any) -> list[Any]:
    """100 concurrent calls of mixed tools on one client; returns (expected, result) pairs."""
    outcomes: list[Any] = [None] * 100
    async with Client(target) as client:
        await client.list_tools()

        async def one(index: int) -> None:
            kind = index % 4
            if kind == 0:
                result = await client.call_tool("calculate_maintenance_cost", {
                    "preventive_cost": 1000 + index, "frequency_per_year": 2,
                    "downtime_hours": 1, "hourly_rate": 10})
                expected = ("annual_cost", 2 * (1000 + index + 10))
            elif kind == 1:
                severity = 1 + index % 10
                result = await client.call_tool("assess_safety_risk", {
                    "failure_mode": f"m{index}", "severity": severity, "probability": 2,
                    "detectability": 3})
                expected = ("rpn", severity * 6)
            elif kind == 2:
                result = await client.call_tool("calculate_mae", {
                    "ground_truth": [float(index), 0.0], "predictions": [0.0, 0.0]})
                expected = ("value", index / 2)
            else:
                result = await client.call_tool("load_dataset", {"dataset_name": "cmapss_fd003",
                                                                 "split": "test"})
                expected = ("handle", "ds:cmapss_fd003:test")
            outcomes[index] = (expected, result)

        async with anyio.create_task_group() as group:
            for index in range(100):
                group.start_soon(one, index)
    return outcomes


def _check_hundred(outcomes: list[Any]) -> None:
    assert all(o is not None for o in outcomes)
    for (key, value), result in outcomes:
        assert not result.is_error, result.content
        assert result.structured_content[key] == pytest.approx(value)


async def test_hundred_concurrent_calls_in_process(server: MCPServer) -> None:
    _check_hundred(await _hundred_calls(server))


async def test_hundred_concurrent_calls_over_http(http_url: str) -> None:
    _check_hundred(await _hundred_calls(http_url))
