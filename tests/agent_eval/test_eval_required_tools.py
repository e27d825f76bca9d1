"""Every scenario's pass depends on calling its required tools (issue 44): a reference run whose answer is right
fails once any required tool's calls are turned into errors or removed (`lint.required_tool_dependence`).

Here one scenario of each task type, in-process; the slow stdio gate (test_eval_reference_stdio.py) runs the same
check over all 104 scenarios inside `lint.check_reference_solutions`."""

from __future__ import annotations

import pytest
from mcp.server import MCPServer

from sfbench_jax.agent_eval.agents.scripted import ScriptedAgent
from sfbench_jax.agent_eval.lint import required_tool_dependence
from sfbench_jax.agent_eval.runner import execute_run
from sfbench_jax.agent_eval.scenario import TASK_TYPES, Scenario
from sfbench_jax.agent_eval.toolbox import connect

#: One quick scenario per task type, each with two or more required tools where the type has one.
SAMPLE = ("cost_compressor_pm_roi", "fault_motor_bearing_outer_race", "health_pump_vibration_zone",
          "rul_motor_vibration_trend", "safety_sis_sil_verification")


def test_every_scenario_declares_the_tools_its_reference_calls(scenarios: list[Scenario]) -> None:
    for scenario in scenarios:
        assert scenario.required_tools, scenario.id
        assert set(scenario.required_tools) == {step["tool"] for step in scenario.reference_solution}, scenario.id


@pytest.mark.anyio
async def test_a_pass_needs_every_required_tool(scenario_map: dict[str, Scenario], eval_server: MCPServer) -> None:
    sample = [scenario_map[sid] for sid in SAMPLE]
    assert {s.task_type for s in sample} == set(TASK_TYPES)
    async with connect(eval_server) as session:
        runs = [await execute_run(s, ScriptedAgent(sample), session, mode="tools_provided") for s in sample]
    surviving = {}
    for scenario, (events, record) in zip(sample, runs, strict=True):
        assert record["success"], scenario.id
        survivors = required_tool_dependence(scenario, events)
        if survivors:
            surviving[scenario.id] = survivors
    assert surviving == {}
    # the check can report: where the process rule does not apply (rag withholds the domain tools), the answer
    # alone passes and every required tool is listed
    scenario, (events, _) = sample[0], runs[0]
    as_rag = [{**e, "mode": "rag"} if e.get("kind") == "run_start" else e for e in events]
    assert required_tool_dependence(scenario, as_rag) == [
        f"{tool} {how}" for tool in scenario.required_tools for how in ("failed", "not called")]
