"""Replaying recorded traces: the tool calls (`ReplayAgent`) or the model's replies (`RecordedChatBackend`).

What lives here: `ReplayAgent`, the re-execute half of replay (a regression test for the tools:
same calls, fresh results, the recorded final answer), and `RecordedChatBackend`, a chat backend
that answers the LLM agent's requests with the responses recorded in an LLM trace's
``llm_response`` events (and re-raises a recorded timeout or context refusal), so a real model's
run is re-driven offline through the current agent code, parser and tools. The re-score-only half
needs neither: ``sfbench_jax.agent_eval.runner.score_trace`` scores a saved trace offline.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from sfbench_jax.agent_eval.agents.base import ZERO_USAGE, AgentResult, AgentTask

__all__ = ["RecordedChatBackend", "ReplayAgent"]


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


class RecordedChatBackend:
    """A `ChatBackend` that plays back one LLM trace's recorded responses, in order."""

    def __init__(self, events: Sequence[Mapping[str, Any]]) -> None:
        """Collect the recorded turns.

        Args:
            events: One run's trace events (``llm_response`` events hold ``message``,
                ``finish_reason`` and token counts; an ``llm_error`` event ends the run).

        Raises:
            ValueError: If the trace holds no recorded response message (not an LLM trace, or
                one recorded before messages were kept).
        """
        self._turns: list[Mapping[str, Any]] = [
            e for e in events if e.get("kind") in {"llm_response", "llm_error"}]
        if not self._turns or any(e.get("kind") == "llm_response" and "message" not in e
                                  for e in self._turns):
            raise ValueError("the trace holds no recorded LLM responses ('llm_response' events "
                             "with a 'message'); record it with the current llm agent")
        self.requests: list[dict[str, Any]] = []

    async def complete(self, request: Mapping[str, Any]) -> dict[str, Any]:
        """Answer the next request with the next recorded response.

        Args:
            request: The agent's chat-completions body (kept in ``requests``).

        Returns:
            The recorded response body.

        Raises:
            ChatTimeoutError: Where the recording timed out.
            ContextLengthError: Where the recording was refused for its length.
            ChatBackendError: If the agent asks for more turns than were recorded.
        """
        from sfbench_jax.agent_eval.agents.llm import (
            ChatBackendError,
            ChatTimeoutError,
            ContextLengthError,
        )

        self.requests.append(dict(request))
        if len(self.requests) > len(self._turns):
            raise ChatBackendError(f"replay asked for turn {len(self.requests)} but only "
                                   f"{len(self._turns)} were recorded")
        event = self._turns[len(self.requests) - 1]
        if event.get("kind") == "llm_error":
            error = ContextLengthError if event.get("stop_reason") == "context_exceeded" \
                else ChatTimeoutError
            raise error(str(event.get("error", "recorded error")))
        return {"choices": [{"index": 0, "message": dict(event["message"]),
                             "finish_reason": event.get("finish_reason")}],
                "usage": {"prompt_tokens": int(event.get("tokens_in", 0)),
                          "completion_tokens": int(event.get("tokens_out", 0))}}
