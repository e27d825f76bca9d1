"""Strict tool arguments: an argument name a tool does not declare is a tool error that names the
tool's arguments (an agent's misspelled optional argument must not pass silently), and every
published input schema says ``additionalProperties: false``. One tool of every group is called
with a realistic misspelling; every group the server serves is also probed generically."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from mcp.server import MCPServer

from sfbench_jax.mcp.errors import ERROR_CODE_STATUS, error_code_of
from sfbench_jax.mcp.server import ServerConfig, tool_groups_of

pytestmark = pytest.mark.anyio

# group -> (tool, arguments with one misspelled optional argument, the misspelling, the intended
# argument, the tool's declared arguments)
MISSPELLED = {
    "prognostics": ("calculate_bearing_frequencies", {"rpm": 1797, "contact_angle": 5.0},
                    "contact_angle", "contact_angle_deg",
                    ["rpm", "bearing", "n_balls", "ball_diameter", "pitch_diameter",
                     "contact_angle_deg"]),
    "maintenance": ("optimize_maintenance_schedule",
                    {"rul_estimate": 100, "rul_std": 20, "preventive_cost": 1,
                     "failure_cost": 10, "safety_margins": 0.3},
                    "safety_margins", "safety_margin",
                    ["rul_estimate", "rul_std", "preventive_cost", "failure_cost",
                     "safety_margin", "lead_time", "distribution"]),
    "battery": ("anomaly_detector", {"battery_id": "B0005", "treshold": 2.5}, "treshold",
                "threshold", ["battery_id", "threshold", "min_persistence", "window"]),
    "benchmark": ("seasonal_naive_robustness", {"dataset": "etth1", "k": 50, "eval-seed": 3},
                  "eval-seed", "eval_seed", ["dataset", "k", "eval_seed", "rng_mode"]),
}


async def _call(server: MCPServer, name: str, arguments: dict[str, Any]) -> Any:
    async with Client(server) as client:
        return await client.call_tool(name, arguments)


def test_every_group_has_a_misspelling_case(data_root: Path) -> None:
    assert set(tool_groups_of(ServerConfig(data_root=data_root)).values()) == set(MISSPELLED)


@pytest.mark.parametrize("group", sorted(MISSPELLED))
async def test_misspelled_argument_is_a_tool_error_naming_the_valid_ones(
        server: MCPServer, group: str) -> None:
    name, arguments, wrong, intended, declared = MISSPELLED[group]
    result = await _call(server, name, arguments)
    assert result.is_error
    text = result.content[0].text
    assert f"{name} has no argument {wrong!r}" in text
    assert f"did you mean {intended!r}?" in text
    assert f"its arguments are {', '.join(declared)}." in text
    assert ERROR_CODE_STATUS[error_code_of(text)] == "invalid_arguments"
    corrected = dict(arguments)
    corrected[intended] = corrected.pop(wrong)
    fixed = await _call(server, name, corrected)
    assert not fixed.is_error, fixed.content


async def test_every_served_tool_rejects_an_undeclared_argument(server: MCPServer) -> None:
    async with Client(server) as client:
        tools = (await client.list_tools()).tools
        first_of_group: dict[str, Any] = {}
        for tool in tools:
            assert tool.input_schema.get("additionalProperties") is False, tool.name
            first_of_group.setdefault(tool.meta["group"], tool)
        assert set(first_of_group) >= set(MISSPELLED)
        for tool in first_of_group.values():
            result = await client.call_tool(tool.name, {"not_an_argument": 1})
            text = result.content[0].text
            declared = ", ".join(tool.input_schema["properties"]) or "none"
            assert result.is_error and "[invalid_arguments]" in text, (tool.name, text)
            assert f"its arguments are {declared}." in text, (tool.name, text)


async def test_several_undeclared_arguments_are_named_together(server: MCPServer) -> None:
    result = await _call(server, "assess_safety_risk", {
        "failure_mode": "seal", "severity": 8, "probability": 5, "detectability": 4,
        "occurrence": 5, "detection": 4})
    text = result.content[0].text
    assert result.is_error and "has no arguments 'occurrence', 'detection'" in text
    assert "failure_mode, severity, probability, detectability" in text
