"""The agent interface shared by every agent kind.

What lives here: `AgentTask` (what an agent is told), `AgentResult` (what it answers), the
`ToolBoxLike` protocol it acts through, and the `Agent` protocol. What does not: any agent.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple, Protocol

from sfbench_jax.agent_eval.toolbox import ToolOutcome, ToolSpec

__all__ = ["STOP_REASONS", "ZERO_USAGE", "Agent", "AgentResult", "AgentTask", "ToolBoxLike"]

STOP_REASONS = ("final", "max_steps", "timeout", "context_exceeded", "error")


class AgentTask(NamedTuple):
    """What an agent is told about a scenario (never its ground truth or reference solution).

    Attributes:
        scenario_id: Scenario id.
        run_index: Repeat index (0-based).
        query: The stakeholder's question.
        output_template: JSON Schema of the expected final answer.
        dataset_context: Inline dataset context, or None in unknown_tools mode.
        limits: ``max_tool_calls``, ``max_llm_turns``, ``timeout_s``.
        seed: Seed for agents that sample.
        mode: The evaluation mode (see ``agent_eval.modes``).
        evidence: Retrieved text chunks (rag mode only; empty otherwise).
    """

    scenario_id: str
    run_index: int
    query: str
    output_template: Mapping[str, Any]
    dataset_context: str | None
    limits: Mapping[str, Any]
    seed: int
    mode: str = "tools_provided"
    evidence: tuple[str, ...] = ()


class AgentResult(NamedTuple):
    """An agent's final word.

    Attributes:
        final_answer: Parsed JSON answer, raw text if it could not be parsed, or None.
        stop_reason: One of `STOP_REASONS`.
        usage: ``llm_turns``, ``tokens_in``, ``tokens_out`` (zeros for scripted agents).
    """

    final_answer: Any
    stop_reason: str
    usage: Mapping[str, int]


class ToolBoxLike(Protocol):
    """What an agent may do with tools (implemented by `sfbench_jax.agent_eval.toolbox.ToolBox`)."""

    def specs(self) -> list[ToolSpec]:
        """Visible tools."""
        ...

    async def call(self, name: str, arguments: Mapping[str, Any] | str | None) -> ToolOutcome:
        """Call a tool (recorded by the toolbox)."""
        ...


class Agent(Protocol):
    """An agent: a name, an optional model description, and an async ``run``."""

    name: str
    model: str
    sampling: Mapping[str, Any]

    async def run(self, task: AgentTask, tools: Any) -> AgentResult:
        """Solve one task through ``tools`` (a ToolBox) and return the final answer."""
        ...


ZERO_USAGE: Mapping[str, int] = {"llm_turns": 0, "tokens_in": 0, "tokens_out": 0}
