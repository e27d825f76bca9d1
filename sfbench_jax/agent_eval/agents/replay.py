"""ReplayAgent: re-issues a recorded trace's tool calls against the current servers.

What lives here: `ReplayAgent`, the re-execute half of replay (a regression test for the tools:
same calls, fresh results, the recorded final answer). The re-score-only half needs no agent:
``sfbench_jax.agent_eval.runner.score_trace`` scores a saved trace offline.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from sfbench_jax.agent_eval.agents.base import ZERO_USAGE, AgentResult, AgentTask

__all__ = ["ReplayAgent"]


class ReplayAgent:
    """Replays recorded traces by scenario id (one trace per scenario)."""

    name = "replay"
    model = "recorded_trace"
    sampling: Mapping[str, Any] = {}

    def __init__(self, traces: Sequence[Sequence[Mapping[str, Any]]]) -> None:
        """Index traces by their scenario id.

        Args:
            traces: Recorded traces (lists of events), e.g. from ``read_trace``.

        Raises:
            ValueError: If a trace has no ``final`` event or two traces share a scenario.
        """
        self._traces: dict[str, Sequence[Mapping[str, Any]]] = {}
        for events in traces:
            finals = [e for e in events if e.get("kind") == "final"]
            if not finals:
                raise ValueError("a replayable trace needs a 'final' event")
            scenario_id = str(finals[-1]["scenario_id"])
            if scenario_id in self._traces:
                raise ValueError(f"two traces for scenario {scenario_id!r}; replay one at a time")
            self._traces[scenario_id] = events

    async def run(self, task: AgentTask, tools: Any) -> AgentResult:
        """Re-issue the recorded calls in order and return the recorded answer.

        Args:
            task: The task (its scenario id selects the trace).
            tools: The ToolBox.

        Returns:
            The recorded final answer, stop reason and usage.

        Raises:
            KeyError: If no trace was recorded for the scenario.
        """
        if task.scenario_id not in self._traces:
            raise KeyError(f"no recorded trace for scenario {task.scenario_id!r}")
        events = self._traces[task.scenario_id]
        for event in events:
            if event.get("kind") != "tool_call":
                continue
            raw = event.get("arguments_raw")
            await tools.call(str(event["tool"]), raw if raw is not None else event.get("arguments"))
        final = [e for e in events if e.get("kind") == "final"][-1]
        return AgentResult(final_answer=final.get("final_answer"),
                           stop_reason=str(final.get("stop_reason", "final")),
                           usage=dict(final.get("usage") or ZERO_USAGE))
