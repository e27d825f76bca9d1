"""Forecasting-benchmark tools through the MCP client: registries and a SeasonalNaive robustness
score on the real ETTh1 file (checked against relations that hold by definition of the scores)."""

from __future__ import annotations

from typing import Any

import pytest
from mcp import Client
from mcp.server import MCPServer

pytestmark = pytest.mark.anyio


async def call(server: MCPServer, name: str, **arguments: Any) -> Any:
    async with Client(server) as client:
        return await client.call_tool(name, arguments)


async def test_registries(server: MCPServer) -> None:
    datasets = (await call(server, "list_forecasting_datasets")).structured_content["datasets"]
    etth1 = next(d for d in datasets if d["name"] == "etth1")
    assert etth1["rows"] == 17420 and etth1["channels"] == 7  # the ETT-small file: 7 series
    scenarios = (await call(server, "list_fault_scenarios")).structured_content["scenarios"]
    paper = [s for s in scenarios if not s["extra"]]
    assert len(paper) == 8 and [s["index"] for s in paper] == list(range(8)) and scenarios[:8] == paper


async def test_seasonal_naive_robustness_on_etth1(server: MCPServer) -> None:
    result = await call(server, "seasonal_naive_robustness", dataset="etth1", k=200, eval_seed=3)
    assert not result.is_error, result.content
    summary = result.structured_content["summary"]
    assert (summary["dataset"], summary["k"], summary["eval_seed"]) == ("etth1", 200, 3)
    assert summary["mse_w"] >= summary["mse_c"] > 0
    assert summary["d_w"] == pytest.approx(summary["mse_w"] / summary["mse_c"], rel=1e-4)
    degradation = summary["degradation"]
    assert len(degradation) == 8
    assert summary["worst_scenario"] == max(degradation, key=degradation.get)
    assert degradation[summary["worst_scenario"]] == pytest.approx(summary["d_w"], rel=1e-5)


@pytest.mark.parametrize(("arguments", "needle"), [
    ({"dataset": "../forecasting/etth1.csv"}, "[unknown_dataset]"),
    ({"dataset": "ettm2"}, "valid names"),
    ({"dataset": "etth1", "k": 0}, "greater than or equal to 1"),
    ({"dataset": "traffic", "k": 10}, "traffic_synthetic"),
])
async def test_benchmark_tool_errors(server: MCPServer, arguments: dict[str, Any],
                                     needle: str) -> None:
    result = await call(server, "seasonal_naive_robustness", **arguments)
    assert result.is_error and needle in result.content[0].text
