"""The evaluator's MCP client harness: connections, the tool catalogue and the recording ToolBox.

What lives here: `connect` (open official `mcp.Client` sessions to one or more servers, given as
in-process `MCPServer` objects, `StdioServerParameters` or streamable-HTTP URLs), `ToolSpec` /
`ToolOutcome`, `classify_result` (CallToolResult -> call status), and `ToolBox`, the only way an
agent reaches a tool: it applies the mode's allow-list, enforces the call budget and records
every call on the client side. What does not: agents, scoring.

Modes (mcp_agent_eval.md section 3.2): ``tools_provided`` exposes required + distractor tools
only and answers any other catalogued tool with status ``blocked`` (never reaching the server);
``unknown_tools`` exposes the whole catalogue.
"""

from __future__ import annotations

import contextlib
import json
import re
import time
from collections.abc import AsyncIterator, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import anyio
from mcp import Client, MCPError, StdioServerParameters
from mcp.server import MCPServer
from mcp.types import CallToolResult

from sfbench_jax.agent_eval.trace import TraceRecorder
from sfbench_jax.mcp.errors import ERROR_CODE_STATUS, error_code_of

__all__ = ["ServerTarget", "Session", "ToolBox", "ToolBudgetError", "ToolOutcome", "ToolSpec",
           "classify_result", "connect", "error_status"]

ServerTarget = MCPServer | StdioServerParameters | str


class ToolSpec(NamedTuple):
    """What an agent may see of a tool."""

    name: str
    description: str
    input_schema: dict[str, Any]
    server: str


class ToolOutcome(NamedTuple):
    """What an agent gets back from a call."""

    ok: bool
    status: str
    structured: dict[str, Any] | None
    text: str


class ToolBudgetError(RuntimeError):
    """The scenario's ``max_tool_calls`` budget is spent."""


def classify_result(result: CallToolResult) -> tuple[str, str]:
    """Map a CallToolResult to a call status and its text.

    Args:
        result: The SDK result.

    Returns:
        ``(status, text)`` with status in ``ok``, ``unknown_tool``, ``invalid_arguments``,
        ``domain_error``, ``tool_crash``.
    """
    text = "\n".join(getattr(item, "text", "") for item in result.content).strip()
    return ("ok" if not result.is_error else error_status(text)), text


def error_status(text: str) -> str:
    """The call status of a tool error's text: the server's tag, the SDK's argument validation ("1 validation
    error for ..." or "2 validation errors for ...": invalid arguments), else a crash of the tool."""
    if text.startswith("Unknown tool:"):
        return "unknown_tool"
    code = error_code_of(text)
    if code is not None:
        return ERROR_CODE_STATUS[code]
    if re.search(r"\bvalidation errors? for ", text):
        return "invalid_arguments"
    return "tool_crash"


@dataclass
class _Route:
    client: Client
    remote_name: str
    spec: ToolSpec


class Session:
    """Open clients plus the merged tool catalogue (name clashes get a ``server__`` prefix)."""

    def __init__(self, clients: Sequence[tuple[Client, list[Any]]]) -> None:
        """Merge the catalogues of already-connected clients.

        Args:
            clients: ``(client, listed tools)`` pairs.
        """
        owners: dict[str, int] = {}
        for _client, tools in clients:
            for tool in tools:
                owners[tool.name] = owners.get(tool.name, 0) + 1
        self._routes: dict[str, _Route] = {}
        for index, (client, tools) in enumerate(clients):
            for tool in tools:
                meta = tool.meta or {}
                server = str(meta.get("server") or meta.get("group") or f"server{index}")
                name = tool.name if owners[tool.name] == 1 else f"{server}__{tool.name}"
                if name in self._routes:  # two connections with the same server label
                    name = f"{server}{index}__{tool.name}"
                spec = ToolSpec(name=name, description=tool.description or "",
                                input_schema=dict(tool.input_schema), server=server)
                self._routes[name] = _Route(client=client, remote_name=tool.name, spec=spec)
        self.default_client = clients[0][0]

    @property
    def catalog(self) -> list[ToolSpec]:
        """Every tool of every connected server, in listing order."""
        return [route.spec for route in self._routes.values()]

    def route(self, name: str) -> _Route | None:
        """The route of a catalogued tool, or None."""
        return self._routes.get(name)

    def toolbox(self, *, allowed: Iterable[str] | None, recorder: TraceRecorder,
                max_tool_calls: int | None = None, call_timeout_s: float = 120.0) -> ToolBox:
        """A ToolBox for one run.

        Args:
            allowed: Allow-list (tools_provided) or None for the whole catalogue.
            recorder: The run's trace recorder.
            max_tool_calls: Call budget (None: unlimited).
            call_timeout_s: Per-call timeout.

        Returns:
            The ToolBox.
        """
        return ToolBox(self, allowed=allowed, recorder=recorder, max_tool_calls=max_tool_calls,
                       call_timeout_s=call_timeout_s)


@contextlib.asynccontextmanager
async def connect(targets: ServerTarget | Sequence[ServerTarget], *,
                  mode: str = "auto") -> AsyncIterator[Session]:
    """Connect the official MCP client to one or more servers and list their tools.

    Args:
        targets: In-process server(s), stdio launch parameters or streamable-HTTP URL(s).
        mode: The client's protocol mode (``auto`` or ``legacy``).

    Yields:
        The session.
    """
    if isinstance(targets, MCPServer | StdioServerParameters | str):
        targets = [targets]
    async with contextlib.AsyncExitStack() as stack:
        pairs: list[tuple[Client, list[Any]]] = []
        for target in targets:
            client = await stack.enter_async_context(Client(target, mode=mode))
            listing = await client.list_tools()
            pairs.append((client, list(listing.tools)))
        yield Session(pairs)


def _jsonable(value: Any) -> Any:
    try:
        return json.loads(json.dumps(value))
    except (TypeError, ValueError):
        return repr(value)


class ToolBox:
    """An agent's only door to the tools: allow-list, call budget and client-side trace."""

    def __init__(self, session: Session, *, allowed: Iterable[str] | None,
                 recorder: TraceRecorder, max_tool_calls: int | None,
                 call_timeout_s: float) -> None:
        """See `Session.toolbox`."""
        self._session = session
        self._allowed = None if allowed is None else frozenset(allowed)
        self.recorder = recorder
        self.max_tool_calls = max_tool_calls
        self.call_timeout_s = call_timeout_s
        self.calls_made = 0

    def specs(self) -> list[ToolSpec]:
        """The tools visible in this mode."""
        return [s for s in self._session.catalog
                if self._allowed is None or s.name in self._allowed]

    async def call(self, name: str, arguments: Mapping[str, Any] | str | None) -> ToolOutcome:
        """Call a tool and record the call.

        Args:
            name: Tool name as shown by `specs`.
            arguments: An argument object, or the model's raw JSON text for it.

        Returns:
            The outcome; failures are outcomes too, never exceptions.

        Raises:
            ToolBudgetError: If the call budget is already spent (nothing is recorded).
        """
        if self.max_tool_calls is not None and self.calls_made >= self.max_tool_calls:
            raise ToolBudgetError(f"tool-call budget of {self.max_tool_calls} spent")
        self.calls_made += 1
        raw = arguments if isinstance(arguments, str) else None
        parsed: dict[str, Any] | None
        parse_error = ""
        if isinstance(arguments, str):
            try:
                candidate = json.loads(arguments) if arguments.strip() else {}
            except json.JSONDecodeError as exc:
                candidate, parse_error = None, f"arguments are not valid JSON: {exc.msg}"
            if candidate is not None and not isinstance(candidate, dict):
                candidate, parse_error = None, "arguments must be a JSON object"
            parsed = candidate
        else:
            parsed = dict(arguments or {})
        route = self._session.route(name)
        server = route.spec.server if route is not None else ""
        started = time.perf_counter()
        structured: dict[str, Any] | None = None
        if parsed is None:
            status, text = "invalid_arguments", parse_error
        elif route is not None and self._allowed is not None and name not in self._allowed:
            status, text = "blocked", f"tool {name!r} is not available in this task"
        else:
            status, text, structured = await self._forward(route, name, parsed)
        latency_ms = round((time.perf_counter() - started) * 1000.0, 3)
        self.recorder.record(
            "tool_call", tool=name, server=server, arguments=_jsonable(parsed),
            arguments_raw=raw, status=status, is_error=status != "ok",
            error_text="" if status == "ok" else text,
            structured=_jsonable(structured) if structured is not None else None,
            latency_ms=latency_ms)
        return ToolOutcome(ok=status == "ok", status=status, structured=structured, text=text)

    async def _forward(self, route: _Route | None, name: str,
                       arguments: dict[str, Any]) -> tuple[str, str, dict[str, Any] | None]:
        client = route.client if route is not None else self._session.default_client
        remote = route.remote_name if route is not None else name
        try:
            with anyio.fail_after(self.call_timeout_s):
                result = await client.call_tool(remote, arguments)
        except TimeoutError:
            return "timeout", f"tool {name!r} did not answer within {self.call_timeout_s} s", None
        except MCPError as exc:
            return "tool_crash", f"protocol error: {exc}", None
        status, text = classify_result(result)
        structured = dict(result.structured_content) if (
            status == "ok" and result.structured_content is not None) else None
        if status == "ok" and structured is None:
            structured = {"text": text}
        return status, text, structured
