"""ScriptedAgent: executes a scenario's reference solution, the SME's end-to-end run.

What lives here: `resolve_refs` (``{"$ref": "save_as/json-pointer"}`` leaves resolved against
the structured results of earlier steps), `ScriptedAgent` and the step executor that the
fault-injecting agent reuses. What does not: scoring.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from sfbench_jax.agent_eval.agents.base import ZERO_USAGE, AgentResult, AgentTask
from sfbench_jax.agent_eval.answer_ops import evaluate_leaf
from sfbench_jax.agent_eval.scenario import Scenario, resolve_pointer

__all__ = ["UNRESOLVED_PREFIX", "ScriptedAgent", "project_answer", "resolve_refs", "run_steps"]

UNRESOLVED_PREFIX = "<unresolved "


def _resolve_one(reference: str, saved: Mapping[str, Any]) -> Any:
    name, _, pointer = reference.partition("/")
    if name not in saved:
        raise KeyError(reference)
    return resolve_pointer(saved[name], f"/{pointer}" if pointer else "")


def resolve_refs(value: Any, saved: Mapping[str, Any], *, strict: bool) -> Any:
    """Replace ``{"$ref": "name/pointer"}`` leaves with values from saved step results.

    Args:
        value: Arguments or answer projection (nested dicts/lists).
        saved: ``save_as`` name -> structured result of that step.
        strict: Raise on an unresolvable reference; otherwise substitute a placeholder string
            ``"<unresolved name/pointer>"`` (what an agent that lost track of state would send).

    Returns:
        The resolved value.

    Raises:
        KeyError: In strict mode, for an unresolvable reference.
    """
    if isinstance(value, Mapping):
        if set(value) == {"$ref"}:
            try:
                return _resolve_one(str(value["$ref"]), saved)
            except KeyError:
                if strict:
                    raise
                return f"{UNRESOLVED_PREFIX}{value['$ref']}>"
        return {k: resolve_refs(v, saved, strict=strict) for k, v in value.items()}
    if isinstance(value, list):
        return [resolve_refs(v, saved, strict=strict) for v in value]
    return value


async def run_steps(steps: Sequence[Mapping[str, Any]], tools: Any,
                    saved: dict[str, Any]) -> None:
    """Execute steps in order, saving each ok result under its ``save_as`` name.

    Args:
        steps: Reference-solution steps (possibly mutated).
        tools: The ToolBox.
        saved: Results so far (updated in place).
    """
    for step in steps:
        arguments = resolve_refs(step["args"], saved, strict=False)
        outcome = await tools.call(step["tool"], arguments)
        if outcome.ok and step.get("save_as"):
            saved[step["save_as"]] = outcome.structured


def project_answer(scenario: Scenario, saved: Mapping[str, Any]) -> dict[str, Any]:
    """Build the final answer from ``reference_answer``; unresolvable leaves become null.

    Leaves may be literals, ``{"$ref": "name/pointer"}``, or the arithmetic and comparisons an
    analyst does on tool outputs (``answer_ops.OPERATORS``: ``$sum``, ``$sub``, ``$argmin``,
    ``$nearest``, ``$count_in``, ...; null if an operand is).

    Args:
        scenario: The scenario.
        saved: Saved step results.

    Returns:
        The answer object.
    """
    def resolve(reference: str) -> Any:
        return _resolve_one(reference, saved)

    return {key: evaluate_leaf(value, resolve) for key, value in scenario.reference_answer.items()}


class ScriptedAgent:
    """Runs each scenario's ``reference_solution`` and answers with ``reference_answer``."""

    name = "scripted"
    model = "reference_solution"
    sampling: Mapping[str, Any] = {}

    def __init__(self, scenarios: Sequence[Scenario]) -> None:
        """Index the scenarios the agent may be asked about.

        Args:
            scenarios: Scenarios (the agent is the SME: it knows their reference solutions).
        """
        self._scenarios = {s.id: s for s in scenarios}

    def scenario(self, scenario_id: str) -> Scenario:
        """The scenario behind a task id."""
        if scenario_id not in self._scenarios:
            raise KeyError(f"{self.name} agent has no reference solution for {scenario_id!r}")
        return self._scenarios[scenario_id]

    async def run(self, task: AgentTask, tools: Any) -> AgentResult:
        """Execute the reference solution and project the answer.

        Args:
            task: The task.
            tools: The ToolBox.

        Returns:
            The final answer with stop reason ``final``.
        """
        scenario = self.scenario(task.scenario_id)
        saved: dict[str, Any] = {}
        await run_steps(scenario.reference_solution, tools, saved)
        return AgentResult(final_answer=project_answer(scenario, saved), stop_reason="final",
                           usage=dict(ZERO_USAGE))
