"""What every tool call passes through on the server side: a time budget, one-at-a-time heavy work, answers
checked against the tool's output schema, and error texts without server paths.

What lives here: `CallGuard` (the server's per-call settings: time budget, the lock of the exclusive tools, the
server folders to hide), `guarded_tool` (an SDK `Tool` whose function runs under the guard), `check_answer`
(an answer that is not finite or breaks the output schema becomes an ``[domain_error]``) and `redact` (server
paths in an error text replaced by placeholders). What does not: argument strictness (``strict.py``) and the
tools themselves.

A call past its budget is answered with ``[over_budget]`` at once. Its worker thread cannot be killed: an
evaluation in it stops at its next chunk (`sfbench_jax.api.abandon`; a chunk or a compilation already started runs
to its end), other work finishes in the background. That is why the cost of every argument is bounded before work
starts (each tool) and the exclusive tools (the forecasting evaluations: seconds and up to a GB each) compute one at
a time: a call that cannot start within its budget is answered ``[over_budget]`` too.

Fairness: an exclusive call waits for the lock in the event loop, not on a worker thread, so waiting calls never
take the threads a cheap call needs (the SDK runs every tool on a worker thread of a pool of 40); and each client
(an HTTP session, else an HTTP peer address; the one client of a stdio server) may have at most
`CallGuard.client_computations` exclusive calls running or waiting: one more is answered ``[over_budget]`` at once,
so one client's burst cannot hold the others' calls for its whole budget.
"""

from __future__ import annotations

import contextlib
import functools
import math
import re
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import jsonschema
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.tools import Tool
from pydantic import BaseModel

from sfbench_jax.api.abandon import abandonable
from sfbench_jax.mcp.errors import DomainToolError, OverBudgetError

__all__ = ["DEFAULT_CALL_TIMEOUT_S", "DEFAULT_CLIENT_COMPUTATIONS", "MAX_CALL_TIMEOUT_S", "CallGuard", "check_answer",
           "guarded_tool", "redact"]

#: Default per-call time budget: several times what the costliest allowed call (severity_curves at its
#: cost bound on a SeasonalNaive) took on CI's CPU (docs/speed.md "Measured constants"); a stored trained model
#: may take longer.
DEFAULT_CALL_TIMEOUT_S = 120.0
#: Largest per-call budget the server accepts (an hour: beyond it, use the CLI, which has none).
MAX_CALL_TIMEOUT_S = 3600.0
#: Exclusive calls one client may have running or waiting at once (one computing, the next ones queued).
DEFAULT_CLIENT_COMPUTATIONS = 4
#: The keyword under which the SDK hands a guarded tool its request context (never a tool argument: the strict
#: argument check refuses undeclared names before it).
_CONTEXT_KWARG = "_sfbench_request_context"
#: Longest pause between two tries of the exclusive lock by a waiting call, in seconds.
_LOCK_POLL_S = 0.05

# An absolute POSIX path of two or more parts that is not part of a word (units such as mm/s stay).
_PATH_PART = r"[^\s/'\"`,;:()\[\]{}<>]"
_ABSOLUTE_PATH = re.compile(rf"(?<![\w.~/-])/(?:{_PATH_PART}+/)+{_PATH_PART}*")
_PATH_TAIL = rf"(?:/{_PATH_PART}*)*"


@dataclass(frozen=True)
class CallGuard:
    """Per-call settings of a server.

    Attributes:
        call_timeout_s: Time budget of one call, in seconds (waiting for the exclusive lock included).
        hidden_paths: Server folders replaced in error texts by their label, e.g. ``{"<runs root>": path}``.
        exclusive: Lock shared by the exclusive tools (one computes at a time).
        client_computations: Exclusive calls one client (`_client_of`) may have running or waiting at once.
    """

    call_timeout_s: float = DEFAULT_CALL_TIMEOUT_S
    hidden_paths: Mapping[str, Path] = field(default_factory=dict)
    exclusive: threading.Lock = field(default_factory=threading.Lock, compare=False)
    client_computations: int = DEFAULT_CLIENT_COMPUTATIONS
    _in_flight: dict[str, int] = field(default_factory=dict, compare=False, repr=False)
    _counting: threading.Lock = field(default_factory=threading.Lock, compare=False, repr=False)

    def __post_init__(self) -> None:
        if not (isinstance(self.call_timeout_s, int | float) and 0 < self.call_timeout_s <= MAX_CALL_TIMEOUT_S):
            raise ValueError(f"call timeout {self.call_timeout_s!r} s is outside (0, {MAX_CALL_TIMEOUT_S:g}]; a "
                             "call must end, and longer work belongs in the CLI, which has no time budget")
        if not (isinstance(self.client_computations, int) and self.client_computations >= 1):
            raise ValueError(f"client computations {self.client_computations!r} must be a whole number >= 1 (the "
                             "forecasting computations one client may have running or waiting)")

    @contextlib.contextmanager
    def client_share(self, client: str | None, tool: str) -> Iterator[None]:
        """Hold one of `client`'s `client_computations` places for an exclusive call (None: no client known).

        Raises:
            OverBudgetError: the client has all its places taken (at once, before any waiting).
        """
        if client is None:
            yield
            return
        with self._counting:
            taken = self._in_flight.get(client, 0)
            if taken >= self.client_computations:
                raise OverBudgetError(
                    f"{tool} refused: this client already has {taken} forecasting computations running or waiting "
                    f"(at most {self.client_computations} per client; they run one at a time). Wait for one to "
                    "answer before sending the next")
            self._in_flight[client] = taken + 1
        try:
            yield
        finally:
            with self._counting:
                left = self._in_flight.pop(client) - 1
                if left:
                    self._in_flight[client] = left


def redact(text: str, hidden_paths: Mapping[str, Path]) -> str:
    """``text`` with every server folder replaced by its label and any other absolute path by ``<server path>``.

    Args:
        text: An error text.
        hidden_paths: Label -> folder (each also hidden in its resolved form).

    Returns:
        The text a client may see.
    """
    forms = sorted(((str(form), label) for label, path in hidden_paths.items()
                    for form in {Path(path), Path(path).expanduser().resolve()} if str(form) not in ("/", ".")),
                   key=lambda pair: -len(pair[0]))
    for form, label in forms:  # the folder and whatever path follows it inside
        text = re.sub(re.escape(form) + r"(?![\w.-])" + _PATH_TAIL, functools.partial(_as_label, label), text)
    return _ABSOLUTE_PATH.sub("<server path>", text)


def _as_label(label: str, match: re.Match[str]) -> str:
    """A hidden path's replacement: its label as written (a function, so `re.sub` reads no escapes in it)."""
    del match
    return label


def _non_finite(value: Any, where: str) -> str | None:
    """The dotted place of the first non-finite float in a nested answer, or None."""
    if isinstance(value, float):
        return None if math.isfinite(value) else where or "the answer"
    if isinstance(value, Mapping):
        items: Sequence[tuple[str, Any]] = [(f"{where}.{key}" if where else str(key), item)
                                            for key, item in value.items()]
    elif isinstance(value, list | tuple):
        items = [(f"{where}[{index}]", item) for index, item in enumerate(value)]
    else:
        return None
    for place, item in items:
        found = _non_finite(item, place)
        if found is not None:
            return found
    return None


def check_answer(tool: str, answer: Any, output_schema: Mapping[str, Any] | jsonschema.protocols.Validator | None
                 ) -> None:
    """Refuse an answer with a non-finite number or one that breaks the tool's output schema.

    JSON has no infinity or NaN (the SDK would send ``null`` where the schema promises a number, and the client
    would reject the whole response as a protocol error), so such an answer becomes a tool error instead.

    Args:
        tool: Tool name, for the message.
        answer: What the tool function returned (a pydantic model, usually).
        output_schema: The tool's published output schema (or a validator of it), or None.

    Raises:
        DomainToolError: The answer holds a non-finite number or does not match the schema.
    """
    python = answer.model_dump(mode="python") if isinstance(answer, BaseModel) else answer
    place = _non_finite(python, "")
    if place is not None:
        raise DomainToolError(f"{tool} computed a non-finite number ({place}) for these arguments: they lie "
                              "outside the range where the result is representable. Use values of a physically "
                              "meaningful size")
    if output_schema is None or not isinstance(answer, BaseModel):
        return
    wire = answer.model_dump(mode="json", by_alias=True)
    validator = (output_schema if isinstance(output_schema, jsonschema.protocols.Validator)
                 else jsonschema.Draft202012Validator(output_schema))
    error = jsonschema.exceptions.best_match(validator.iter_errors(wire))
    if error is not None:
        where = ".".join(str(part) for part in error.absolute_path) or "the answer"
        raise DomainToolError(f"{tool} produced an answer that breaks its output schema at {where} "
                              f"({error.message[:200]}) for these arguments. Use values of a physically "
                              "meaningful size")


async def _take_exclusive(lock: threading.Lock, deadline: float, tool: str) -> None:
    """Take the exclusive lock, waiting in the event loop (no worker thread) until the call's deadline.

    Raises:
        OverBudgetError: the lock did not come free within the call's budget.
    """
    pause = 0.002
    while not lock.acquire(blocking=False):
        if time.monotonic() >= deadline:
            raise OverBudgetError(f"{tool} could not start within the server's time budget: another "
                                  "forecasting computation is running (they run one at a time). Retry later, or "
                                  "with fewer windows or severities")
        await anyio.sleep(min(pause, max(0.0, deadline - time.monotonic())))
        pause = min(2 * pause, _LOCK_POLL_S)


def _run_checked(tool: Tool, fn: Callable[..., Any], arguments: dict[str, Any], *, exclusive: threading.Lock | None,
                 started: threading.Lock, validator: jsonschema.protocols.Validator | None,
                 abandoned: threading.Event) -> Any:
    """The tool function on a worker thread (holding the exclusive lock if any, which it releases when the function
    ends: an abandoned evaluation stops at its next chunk once `abandoned` is set), then the answer's check.
    `started` is taken first: a call given up before its thread started leaves the lock to its caller."""
    if not started.acquire(blocking=False):
        raise OverBudgetError(f"{tool.name} was given up before it started")
    try:
        with abandonable(abandoned):
            answer = fn(**arguments)
    finally:
        if exclusive is not None:
            exclusive.release()
    check_answer(tool.name, answer, validator)
    return answer


def _client_of(context: Any) -> str | None:
    """Who a call came from, as far as the transport tells: its HTTP session (``mcp-session-id``), else its HTTP
    peer's address, else the one client of a stdio or in-process server (None: no request context, a direct call).
    The 2026 protocol has no session of its own: every request is on its own."""
    if context is None:
        return None
    try:
        headers = context.headers or {}
        session = headers.get("mcp-session-id")
        if session:
            return f"session {session}"
        peer = getattr(getattr(context.request_context, "request", None), "client", None)
        if peer is not None and getattr(peer, "host", None):
            return f"peer {peer.host}"
    except Exception:  # noqa: BLE001 - a transport without these: the one client
        return "the client"
    return "the client"


def guarded_tool(tool: Tool, guard: CallGuard, *, exclusive: bool = False) -> Tool:
    """A copy of an SDK tool whose function runs under ``guard`` (see the module docstring).

    Args:
        tool: A synchronous tool as built by ``Tool.from_function`` (and `strict_tool`), without a context argument.
        guard: The server's per-call settings.
        exclusive: Compute one call at a time with the other exclusive tools, at most `guard.client_computations`
            of them per client at once.

    Returns:
        The same tool with an asynchronous function: budget, client share, lock, answer check, redacted errors.
    """
    fn, lock, budget = tool.fn, guard.exclusive if exclusive else None, guard.call_timeout_s
    validator = None if tool.output_schema is None else jsonschema.Draft202012Validator(tool.output_schema)

    async def guarded(**arguments: Any) -> Any:
        client = _client_of(arguments.pop(_CONTEXT_KWARG, None))
        abandoned, started = threading.Event(), threading.Lock()
        deadline = time.monotonic() + budget
        work = functools.partial(_run_checked, tool, fn, arguments, exclusive=lock, started=started,
                                 validator=validator, abandoned=abandoned)
        try:
            with guard.client_share(client if lock is not None else None, tool.name):
                if lock is not None:
                    await _take_exclusive(lock, deadline, tool.name)  # refused in its own words at the deadline
                try:
                    with anyio.fail_after(max(0.0, deadline - time.monotonic())):
                        return await anyio.to_thread.run_sync(work, abandon_on_cancel=True)
                finally:
                    if lock is not None and started.acquire(blocking=False):  # its thread never started
                        lock.release()
        except TimeoutError:
            abandoned.set()  # its evaluation stops at the next chunk and frees the exclusive lock
            raise OverBudgetError(f"{tool.name} ran past the server's time budget of {budget:g} s and was "
                                  "abandoned. Ask for less work (fewer windows or severities), or ask the "
                                  "operator for a larger --call-timeout") from None
        except ToolError as error:
            raise ToolError(redact(str(error), guard.hidden_paths)) from error
        except (ArithmeticError, RuntimeWarning) as error:
            # numeric overflow (a RuntimeWarning where warnings are errors, as in the test suite)
            raise DomainToolError(f"{tool.name} overflowed for these arguments ({type(error).__name__}); use "
                                  "values of a physically meaningful size") from error

    guarded.__name__ = tool.name
    return tool.model_copy(update={"fn": guarded, "is_async": True, "context_kwarg": _CONTEXT_KWARG})
