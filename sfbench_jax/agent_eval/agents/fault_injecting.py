"""FaultInjectingAgent: the scripted solution with one deliberate mistake, for taxonomy tests.

What lives here: the five mutations of mcp_agent_eval.md section 6.3 and the agent that applies
one of them to a scenario's reference solution. Each mutation is designed to produce one primary
failure label:

* ``distractor`` -> reasoning: calls the first distractor instead of the last step and answers
  without that step's output.
* ``corrupt_argument`` -> tool_invocation: sends the last step a wrongly typed first argument
  and never retries.
* ``swap_steps`` -> orchestration: calls the later end of a precedence edge first (with a
  placeholder for the missing input), then the whole script.
* ``stop_early`` -> reasoning: stops after the first half of the steps.
* ``wrong_handle`` -> orchestration (state-dependency flag): passes a sibling dataset's handle,
  never returned to it, for a handle argument.

What does not: deciding the label (``taxonomy.py`` does, from the trace alone).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any

from sfbench_jax.agent_eval.agents.base import ZERO_USAGE, AgentResult, AgentTask
from sfbench_jax.agent_eval.agents.scripted import (
    ScriptedAgent,
    project_answer,
    resolve_refs,
    run_steps,
)
from sfbench_jax.agent_eval.scenario import Scenario

__all__ = ["EXPECTED_LABEL", "MUTATIONS", "FaultInjectingAgent", "schema_example"]

EXPECTED_LABEL: dict[str, str] = {
    "distractor": "reasoning",
    "corrupt_argument": "tool_invocation",
    "swap_steps": "orchestration",
    "stop_early": "reasoning",
    "wrong_handle": "orchestration",
}
MUTATIONS = tuple(EXPECTED_LABEL)

# Same-shape sibling datasets: a wrong but well-formed handle still yields an ok call.
_SIBLINGS = {
    "cmapss_fd001": "cmapss_fd003", "cmapss_fd003": "cmapss_fd001",
    "cmapss_fd002": "cmapss_fd004", "cmapss_fd004": "cmapss_fd002",
    "nasa_battery_b0005": "nasa_battery_b0006", "nasa_battery_b0006": "nasa_battery_b0007",
    "nasa_battery_b0007": "nasa_battery_b0005", "nasa_battery_b0018": "nasa_battery_b0005",
    "cwru_bearing_nie": "cwru_bearing_epr", "cwru_bearing_epr": "cwru_bearing_ose",
    "cwru_bearing_ose": "cwru_bearing_nie", "cwru_bearing_vaw": "cwru_bearing_nie",
}


def schema_example(schema: Mapping[str, Any]) -> dict[str, Any]:
    """Schema-valid arguments for a tool: every required parameter set to a plausible value.

    Args:
        schema: The tool's JSON input schema.

    Returns:
        Arguments that pass the schema (they may still be rejected on domain grounds).
    """
    def value_for(prop: Mapping[str, Any]) -> Any:
        if "enum" in prop:
            return prop["enum"][0]
        if "anyOf" in prop:
            return value_for(next(p for p in prop["anyOf"] if p.get("type") != "null"))
        kind = prop.get("type")
        if kind == "integer":
            return int(prop.get("minimum", prop.get("exclusiveMinimum", 0) + 1))
        if kind == "number":
            return float(prop.get("minimum", 1.0))
        if kind == "boolean":
            return False
        if kind == "array":
            return [value_for(prop.get("items", {"type": "number"})) for _ in range(3)]
        return "turbofan maintenance"

    properties = schema.get("properties", {})
    return {name: value_for(properties[name]) for name in schema.get("required", [])}


def _swap_handle(value: str) -> str:
    parts = value.split(":")
    swapped = [_SIBLINGS.get(p, p) for p in parts]
    if swapped == parts:
        raise ValueError(f"no sibling dataset for handle {value!r}")
    return ":".join(swapped)


class FaultInjectingAgent(ScriptedAgent):
    """A ScriptedAgent that makes one scripted mistake (see the module table)."""

    def __init__(self, scenarios: Sequence[Scenario], mutation: str) -> None:
        """Choose the mutation.

        Args:
            scenarios: Scenarios the agent knows.
            mutation: One of `MUTATIONS`.

        Raises:
            ValueError: For an unknown mutation.
        """
        if mutation not in EXPECTED_LABEL:
            raise ValueError(f"unknown mutation {mutation!r}; choose from {list(MUTATIONS)}")
        super().__init__(scenarios)
        self.mutation = mutation
        self.name = f"fault:{mutation}"

    async def run(self, task: AgentTask, tools: Any) -> AgentResult:
        """Run the mutated reference solution.

        Args:
            task: The task.
            tools: The ToolBox.

        Returns:
            The (partial or wrong) final answer.

        Raises:
            ValueError: If the scenario offers nothing to mutate (e.g. no distractor).
        """
        scenario = self.scenario(task.scenario_id)
        steps = [dict(s) for s in copy.deepcopy(list(scenario.reference_solution))]
        saved: dict[str, Any] = {}
        mutate = getattr(self, f"_{self.mutation}")
        await mutate(scenario, steps, tools, saved)
        return AgentResult(final_answer=project_answer(scenario, saved), stop_reason="final",
                           usage=dict(ZERO_USAGE))

    async def _distractor(self, scenario: Scenario, steps: list[dict[str, Any]], tools: Any,
                          saved: dict[str, Any]) -> None:
        if not scenario.distractor_tools:
            raise ValueError(f"{scenario.id} has no distractor tools")
        name = scenario.distractor_tools[0]
        spec = next((s for s in tools.specs() if s.name == name), None)
        arguments = schema_example(spec.input_schema) if spec is not None else {}
        await run_steps(steps[:-1], tools, saved)
        await tools.call(name, arguments)

    async def _corrupt_argument(self, scenario: Scenario, steps: list[dict[str, Any]],
                                tools: Any, saved: dict[str, Any]) -> None:
        last = steps[-1]
        if not last["args"]:
            raise ValueError(f"{scenario.id}: the last step has no argument to corrupt")
        key = next(iter(last["args"]))
        spec = next((s for s in tools.specs() if s.name == last["tool"]), None)
        prop = (spec.input_schema.get("properties", {}).get(key, {}) if spec is not None
                else {})
        kinds = {prop.get("type")} | {p.get("type") for p in prop.get("anyOf", [])}
        # A value of the wrong JSON type for the parameter: text for numbers, a number for text.
        last["args"][key] = "not-a-number" if kinds & {"number", "integer"} else 12345
        await run_steps(steps, tools, saved)

    async def _swap_steps(self, scenario: Scenario, steps: list[dict[str, Any]], tools: Any,
                          saved: dict[str, Any]) -> None:
        order = [s["tool"] for s in steps]
        for first, second in scenario.precedence:
            if first in order and second in order and order.index(first) < order.index(second):
                premature = steps[order.index(second)]
                await run_steps([{"tool": premature["tool"], "args": premature["args"]}],
                                tools, saved)
                await run_steps(steps, tools, saved)
                return
        raise ValueError(f"{scenario.id}: no precedence edge to violate")

    async def _stop_early(self, scenario: Scenario, steps: list[dict[str, Any]], tools: Any,
                          saved: dict[str, Any]) -> None:
        if len(steps) < 2:
            raise ValueError(f"{scenario.id}: a one-step solution cannot stop early")
        await run_steps(steps[: len(steps) // 2], tools, saved)

    async def _wrong_handle(self, scenario: Scenario, steps: list[dict[str, Any]], tools: Any,
                            saved: dict[str, Any]) -> None:
        for index, step in enumerate(steps):
            for key in scenario.handle_args:
                if key in step["args"] and isinstance(step["args"][key], Mapping):
                    await run_steps(steps[:index], tools, saved)
                    resolved = resolve_refs(step["args"][key], saved, strict=True)
                    step["args"][key] = _swap_handle(str(resolved))
                    await run_steps(steps[index:], tools, saved)
                    return
        raise ValueError(f"{scenario.id}: no handle argument to replace")
