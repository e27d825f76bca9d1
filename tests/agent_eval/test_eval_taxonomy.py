"""Failure taxonomy: the rules on hand-made traces, and the fault-injecting agent producing each
label through the real server (in-process)."""

from __future__ import annotations

from typing import Any

import pytest
from eval_helpers import call
from mcp.server import MCPServer

from sfbench_jax.agent_eval.agents import EXPECTED_LABEL, FaultInjectingAgent, ScriptedAgent
from sfbench_jax.agent_eval.runner import execute_run
from sfbench_jax.agent_eval.scenario import Scenario
from sfbench_jax.agent_eval.taxonomy import classify_failure
from sfbench_jax.agent_eval.toolbox import connect

TEMPLATE = {"type": "object", "required": ["x"], "properties": {"x": {"type": "number"},
                                                                 "level": {"type": "string"}}}


def label(calls: list[Any], *, answer: Any = None, stop: str = "final",
          success: bool = False) -> dict[str, Any]:
    return classify_failure(success=success, calls=calls, answer={"x": 1} if answer is None
                            else answer, stop_reason=stop, required=["a", "b"],
                            distractors=["d"], precedence=[("a", "b")],
                            handle_args=["h"], output_template=TEMPLATE)


def test_rule_order_on_hand_made_traces() -> None:
    # 1. An invocation failure that is never recovered wins over everything else.
    result = label([call(0, "a"), call(1, "d"), call(2, "b", "invalid_arguments")])
    assert result["primary"] == "tool_invocation"
    assert {"invocation_unrecovered", "distractor_called"} <= set(result["flags"])
    # ... but a recovered one does not count.
    recovered = label([call(0, "a"), call(1, "b", "invalid_arguments"), call(2, "b")])
    assert recovered["primary"] == "orchestration" and "wrong_value" in recovered["flags"]
    assert label([call(0, "a"), call(1, "zz", "unknown_tool"), call(2, "b")])["primary"] == \
        "tool_invocation"
    assert label([call(0, "a"), call(1, "c", "blocked"), call(2, "b")])["primary"] == \
        "tool_invocation"
    # 2. Reasoning: a distractor, stopping with incomplete recall, or a wrongly typed answer.
    assert label([call(0, "a"), call(1, "d"), call(2, "b")])["primary"] == "reasoning"
    early = label([call(0, "a")])
    assert early["primary"] == "reasoning" and "premature_stop" in early["flags"]
    typed = label([call(0, "a"), call(1, "b")], answer={"x": "twelve"})
    assert typed["primary"] == "reasoning" and "wrong_answer_type" in typed["flags"]
    # 3. Orchestration: order, state dependency, the step limit.
    order = label([call(0, "b", "domain_error"), call(1, "a"), call(2, "b")])
    assert order["primary"] == "orchestration" and "precedence_violated" in order["flags"]
    state = label([call(0, "a", structured={"h": "ds:1"}),
                   call(1, "b", arguments={"h": "ds:2"})])
    assert state["primary"] == "orchestration" and "state_dependency" in state["flags"]
    limit = label([call(0, "a")], stop="max_steps")
    assert limit["primary"] == "orchestration" and "stopped_max_steps" in limit["flags"]


def test_successful_runs_get_no_label() -> None:
    assert label([call(0, "a"), call(1, "d"), call(2, "b")], success=True)["primary"] is None


# Scenario and mutation pairs chosen so that each mutation is applicable; every scenario's
# unmutated reference solution passes (checked in the test below).
MUTATION_CASES = [
    ("distractor", "cost_pump_pm_program_roi", {"distractor_called"}),
    ("corrupt_argument", "health_pump_vibration_zone", {"invocation_unrecovered"}),
    ("swap_steps", "health_pump_vibration_zone", {"precedence_violated"}),
    ("stop_early", "cost_pump_pm_program_roi", {"premature_stop", "incomplete_recall"}),
    ("wrong_handle", "fault_cwru_inner_race", {"state_dependency", "wrong_value"}),
]


@pytest.mark.anyio
async def test_fault_injecting_agent_produces_each_label(eval_server: MCPServer,
                                                        scenario_map: dict[str, Scenario]) -> None:
    assert {m for m, _, _ in MUTATION_CASES} == set(EXPECTED_LABEL)
    async with connect(eval_server) as session:
        for mutation, scenario_id, flags in MUTATION_CASES:
            scenario = scenario_map[scenario_id]
            _, clean = await execute_run(scenario, ScriptedAgent([scenario]), session,
                                         mode="tools_provided")
            assert clean["success"] is True, (scenario_id, clean["validator_results"])
            events, record = await execute_run(scenario, FaultInjectingAgent([scenario], mutation),
                                               session, mode="tools_provided")
            assert record["status"] == "scored"
            assert record["success"] is False, (mutation, record["validator_results"])
            assert record["failure"]["primary"] == EXPECTED_LABEL[mutation], (mutation, record)
            assert flags <= set(record["failure"]["flags"]), (mutation, record["failure"])
            assert record["agent"] == f"fault:{mutation}"
            assert any(e["kind"] == "tool_call" for e in events)


def test_unknown_mutation_is_rejected(scenarios: list[Scenario]) -> None:
    with pytest.raises(ValueError, match="unknown mutation"):
        FaultInjectingAgent(scenarios, "cosmic_ray")
