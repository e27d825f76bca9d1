"""The severity-curves tool through the MCP client: SeasonalNaive by dataset name, a stored trained run by its
folder name under the server's runs root (DLinear trained here with `profile=tiny`; the tool never trains), and
clear errors; cost bounds and the per-call time budget (issue 21, defect 7)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from mcp.server import MCPServer
from sfbench_cli import run_in_process

from sfbench_jax.mcp.server import ServerConfig, build_server

pytestmark = pytest.mark.anyio


async def call(server: MCPServer, name: str, **arguments: Any) -> Any:
    async with Client(server) as client:
        return await client.call_tool(name, arguments)


@pytest.fixture(scope="module")
def runs_dir(tmp_path_factory: pytest.TempPathFactory, data_root: Path) -> Path:
    """A runs folder with one stored DLinear run of ETTh1 (`outputs/.../dlinear_tiny`, one candidate trained)."""
    root = tmp_path_factory.mktemp("mcp_runs")
    run_in_process(["model=dlinear", "profile=tiny", "train.candidate_budget=1", "eval.progress=false",
                    f"train.store_dir={root / 'store'}", f"data_root={data_root}"],
                   root / "outputs" / "etth1" / "dlinear_tiny")
    return root / "outputs"


async def test_seasonal_naive_curves(server: MCPServer) -> None:
    result = await call(server, "severity_curves", dataset="etth1", k=300, severities=[0.0, 0.5, 1.0])
    assert not result.is_error, result.content
    curves = result.structured_content["curves"]
    assert curves["severities"] == [0.0, 0.5, 1.0] and curves["k"] == 300
    assert len(curves["scenarios"]) == 8
    for scenario in curves["scenarios"].values():
        assert scenario["d"][0] == 1.0 and len(scenario["d_ci"]) == 3
        assert all(lo <= d <= hi for d, (lo, hi) in zip(scenario["d"], scenario["d_ci"], strict=True))


async def test_stored_run_curves(runs_dir: Path, data_root: Path) -> None:
    server = build_server(ServerConfig(data_root=data_root, groups=("benchmark",), runs_root=runs_dir,
                                       store_roots=(runs_dir.parent / "store",)))
    result = await call(server, "severity_curves", dataset="etth1", run="dlinear_tiny", k=200)
    assert not result.is_error, result.content
    content = result.structured_content
    assert content["run"] == "dlinear_tiny" and content["curves"]["model"] == "dlinear"
    assert len(content["curves"]["severities"]) == 21
    assert all(s["d"][0] == 1.0 for s in content["curves"]["scenarios"].values())
    missing = await call(server, "severity_curves", dataset="etth1", run="gru_paper")
    text = missing.content[0].text
    assert missing.is_error and "[unknown_run]" in text and "dlinear_tiny" not in text and str(runs_dir) not in text
    # the candidate store lies outside the runs root: without it as a store root the rebuild is refused
    confined = build_server(ServerConfig(data_root=data_root, groups=("benchmark",), runs_root=runs_dir))
    refused = await call(confined, "severity_curves", dataset="etth1", run="dlinear_tiny", k=200)
    assert refused.is_error and "[refused]" in refused.content[0].text and "candidate store" in refused.content[0].text


@pytest.mark.parametrize(("arguments", "needle"), [
    ({"dataset": "ettm2"}, "valid names"),
    ({"dataset": "etth1", "run": "../outputs"}, "looks like a file path"),
    ({"dataset": "etth1", "run": "dlinear_tiny"}, "--runs-root"),  # this server has no runs root
    ({"dataset": "etth1", "severities": [0.0, 2.0]}, "Severity must lie in [0, 1]"),
    ({"dataset": "etth1", "k": 20_000, "severities": [0.5] * 22}, "440,000 cells is more than"),
    ({"dataset": "etth1", "k": 20_001}, "less than or equal to 20000"),
])
async def test_curve_tool_errors(server: MCPServer, arguments: dict[str, Any], needle: str) -> None:
    result = await call(server, "severity_curves", **arguments)
    assert result.is_error and needle in result.content[0].text, result.content[0].text


async def test_defect7_a_call_past_the_time_budget_is_a_tagged_error(data_root: Path) -> None:
    # Issue 21, defect 7: severity_curves at its allowed maximum ran 94 s and 2.9 GB with no server-side limit.
    server = build_server(ServerConfig(data_root=data_root, groups=("benchmark",), call_timeout_s=0.5))
    started = time.monotonic()
    result = await call(server, "severity_curves", dataset="etth1", k=20_000)
    assert time.monotonic() - started < 5
    assert result.is_error and "[over_budget]" in result.content[0].text and "0.5 s" in result.content[0].text
