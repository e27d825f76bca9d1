"""Client-side run traces: events, the recorder and JSONL (de)serialisation.

What lives here: `TraceRecorder`, which the ToolBox (never the agent) fills with one event per
tool call, plus the run header, LLM turn events and the final answer; `ToolCallEvent`, a typed
view of a ``tool_call`` event; JSONL read/write. What does not: scoring (``runner.py``).

Event kinds: ``run_start`` (scenario, mode, agent, model, seed, versions), ``tool_call`` (tool,
server, arguments, arguments_raw, status, is_error, error_text, structured, latency_ms),
``llm_request`` / ``llm_response`` (tokens_in, tokens_out), ``final`` (final_answer,
stop_reason, usage). Every event carries run_id, scenario_id, seq and t_ms; t_ms and latency_ms
are timing and are never used by the scorer, so re-scoring a saved trace is byte-identical.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["CALL_STATUSES", "ToolCallEvent", "TraceRecorder", "read_trace", "tool_calls",
           "write_trace"]

CALL_STATUSES = ("ok", "invalid_arguments", "unknown_tool", "domain_error", "tool_crash",
                 "timeout", "blocked")
TIMING_KEYS = ("t_ms", "latency_ms")


class TraceRecorder:
    """Append-only list of trace events for one run."""

    def __init__(self, *, run_id: str, scenario_id: str) -> None:
        """Start an empty trace.

        Args:
            run_id: Deterministic run id.
            scenario_id: Scenario the run belongs to.
        """
        self.run_id = run_id
        self.scenario_id = scenario_id
        self.events: list[dict[str, Any]] = []
        self._t0 = time.perf_counter()

    def record(self, kind: str, **fields: Any) -> dict[str, Any]:
        """Append one event.

        Args:
            kind: Event kind.
            **fields: Event payload (JSON-able).

        Returns:
            The stored event.
        """
        event = {"run_id": self.run_id, "scenario_id": self.scenario_id, "seq": len(self.events),
                 "t_ms": round((time.perf_counter() - self._t0) * 1000.0, 3), "kind": kind,
                 **fields}
        self.events.append(event)
        return event


@dataclass(frozen=True)
class ToolCallEvent:
    """Typed view of one ``tool_call`` event.

    Attributes:
        seq: Position in the trace.
        tool: Tool name as the agent called it.
        server: Server (group) that owns the tool, or "" when unknown.
        arguments: Parsed arguments (None if they could not be parsed).
        status: One of `CALL_STATUSES`.
        error_text: Error text for failed calls, else "".
        structured: Structured result of ok calls, else None.
    """

    seq: int
    tool: str
    server: str
    arguments: Mapping[str, Any] | None
    status: str
    error_text: str
    structured: Mapping[str, Any] | None

    @property
    def ok(self) -> bool:
        """Whether the call succeeded."""
        return self.status == "ok"


def tool_calls(events: Iterable[Mapping[str, Any]]) -> list[ToolCallEvent]:
    """The tool-call events of a trace, in order.

    Args:
        events: Trace events.

    Returns:
        Typed call views.
    """
    return [ToolCallEvent(seq=int(e["seq"]), tool=str(e["tool"]), server=str(e.get("server", "")),
                          arguments=e.get("arguments"), status=str(e["status"]),
                          error_text=str(e.get("error_text", "")),
                          structured=e.get("structured"))
            for e in events if e.get("kind") == "tool_call"]


def write_trace(path: Path, events: Iterable[Mapping[str, Any]]) -> None:
    """Write events as JSONL (one event per line, keys sorted).

    Args:
        path: Output file (parents are created).
        events: Trace events.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as handle:
        for event in events:
            handle.write(json.dumps(event, sort_keys=True, ensure_ascii=True) + "\n")


def read_trace(path: Path) -> list[dict[str, Any]]:
    """Read a JSONL trace.

    Args:
        path: A file written by `write_trace`.

    Returns:
        The events.

    Raises:
        ValueError: If a line is not a JSON object; the message names the line.
    """
    events: list[dict[str, Any]] = []
    with Path(path).open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                event = json.loads(line)
            except json.JSONDecodeError as exc:
                raise ValueError(f"{path}:{number}: not JSON ({exc.msg})") from exc
            if not isinstance(event, dict) or "kind" not in event:
                raise ValueError(f"{path}:{number}: a trace line must be an object with 'kind'")
            events.append(event)
    return events
