"""LLMAgent: a tool-calling loop over any OpenAI-compatible chat-completions endpoint.

What lives here: `LLMConfig` (frozen; from a TOML file), the `ChatBackend` protocol and its plain
``httpx`` implementation `HttpChatBackend`, `extract_json_object`, the `LLMAgent` loop and
`preflight` (one request with a trivial ``echo`` tool that must come back as a structured tool
call, so a misconfigured endpoint fails loudly instead of scoring zero) and `health_check` (one
real chat request that must come back as a chat completion in time, sent before the first
scenario so a dead, unreachable or stalled endpoint stops the command at once). What does not: reading
the API key from the environment (the CLI does that and passes the key in), any vendor SDK,
parsing tool calls written as text (``tool_text.py``).

The loop, per turn: one request; the reply's structured ``tool_calls`` (or, failing those, calls
the model wrote into its text, see ``tool_text.py``) run through the ToolBox; a reply without
calls must hold the JSON answer (one correction request if it does not; a reply cut at the
token limit gets its own correction). A reply whose JSON is itself a tool call is never taken as
the answer. When the turn budget (the scenario's, see ``runner.turn_budget``, unless
``max_llm_turns`` overrides it) or the tool budget runs out, one last request without tools asks
for the answer (``force_final``). An LLM request that times out raises `ChatTimeoutError` (a
``TimeoutError``: the runner makes the run a harness error, never the model's failure), as does
any other endpoint failure; one the endpoint refuses for exceeding the context window ends the
run with ``context_exceeded`` (a scored failure). Every turn is recorded as ``llm_request`` /
``llm_response`` events with the call format, tokens, latency and the response message itself, so a
trace replays offline (``replay.RecordedChatBackend``).

No default points at a real host: ``base_url`` is required.
"""

from __future__ import annotations

import html
import json
import re
import time
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, NamedTuple, Protocol

import httpx

from sfbench_jax.agent_eval.agents.base import AgentResult, AgentTask
from sfbench_jax.agent_eval.agents.tool_text import parse_content_tool_calls
from sfbench_jax.agent_eval.toolbox import ToolBudgetError, ToolSpec

__all__ = ["HEALTH_CHECK_PROMPT", "REPLY_FORMATS", "ChatBackend", "ChatBackendError", "ChatTimeoutError",
           "ContextLengthError", "HealthCheckError",
           "HttpChatBackend", "LLMAgent", "LLMConfig", "PreflightError", "extract_json_object",
           "health_check", "preflight", "reply_schema", "tool_schema"]


#: How a reply is constrained (`LLMConfig.reply_format`).
REPLY_FORMATS = ("free", "json_schema")


@dataclass(frozen=True)
class LLMConfig:
    """How to reach and drive the model.

    Attributes:
        base_url: Endpoint root, e.g. ``http://127.0.0.1:8000/v1`` (``/chat/completions`` is
            appended).
        model: Model name sent in each request.
        api_key_env: Name of the environment variable that holds the API key (read by the CLI).
        temperature: Sampling temperature.
        seed: Sent when set (servers that support it become more repeatable).
        max_tokens: Completion cap per request, if set.
        timeout_s: HTTP timeout per request.
        tool_choice: ``auto``, ``required`` or ``none``.
        parallel_tool_calls: Sent when not None.
        max_llm_turns: One turn budget for every scenario, overriding each scenario's own
            (``runner.turn_budget``: reference calls + 1 + slack); None keeps the scenario's.
        force_final: When the turn or tool budget runs out, spend the last turn on one request
            without tools that asks for the JSON answer.
        strip_schema_titles: Remove ``title`` keys from tool schemas (for strict servers).
        extra_body: Extra request fields (e.g. reasoning effort), recorded in run records.
        reply_format: ``free`` (the default: the endpoint's own tool calling, nothing constrains the reply) or
            ``json_schema``: every request carries a ``response_format`` JSON Schema (`reply_schema`) that
            admits exactly one call of an offered tool, ``{"name": ..., "arguments": ...}`` with the tool's own
            argument schema, or the answer in the scenario's answer schema; a turn without tools (the forced
            final turn, rag mode) admits the answer only. A server with structured outputs (llama.cpp's
            turns the schema into a grammar) then cannot emit prose or a malformed call.
    """

    base_url: str
    model: str
    api_key_env: str | None = None
    temperature: float = 0.0
    seed: int | None = None
    max_tokens: int | None = None
    timeout_s: float = 120.0
    tool_choice: str = "auto"
    parallel_tool_calls: bool | None = False
    max_llm_turns: int | None = None
    force_final: bool = True
    strip_schema_titles: bool = False
    extra_body: Mapping[str, Any] = field(default_factory=dict)
    reply_format: str = "free"

    def __post_init__(self) -> None:
        if self.reply_format not in REPLY_FORMATS:
            raise ValueError(f"reply_format {self.reply_format!r}; use one of {', '.join(REPLY_FORMATS)}")
        if not re.match(r"^https?://", self.base_url):
            raise ValueError(f"base_url {self.base_url!r} must start with http:// or https://")
        if not self.model:
            raise ValueError("model must be set (the name the endpoint serves)")
        if self.tool_choice not in {"auto", "required", "none"}:
            raise ValueError(f"tool_choice {self.tool_choice!r}; use auto, required or none")
        if (self.max_llm_turns is not None and self.max_llm_turns < 1) or self.timeout_s <= 0:
            raise ValueError("max_llm_turns must be >= 1 and timeout_s > 0")
        if self.max_tokens is not None and self.max_tokens < 1:
            raise ValueError(f"max_tokens must be >= 1 (or unset), got {self.max_tokens}")

    @classmethod
    def from_mapping(cls, values: Mapping[str, Any]) -> LLMConfig:
        """Build from a mapping, rejecting unknown keys by name.

        Args:
            values: Configuration values.

        Returns:
            The config.

        Raises:
            ValueError: For unknown keys or missing required ones.
        """
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(values) - known)
        if unknown:
            raise ValueError(f"unknown LLM config key(s) {unknown}; valid keys: {sorted(known)}")
        missing = [k for k in ("base_url", "model") if k not in values]
        if missing:
            raise ValueError(f"LLM config lacks required key(s) {missing}")
        return cls(**dict(values))

    @classmethod
    def from_toml(cls, path: Path) -> LLMConfig:
        """Read the ``[llm]`` table (or the top level) of a TOML file.

        Args:
            path: The file.

        Returns:
            The config.
        """
        data = tomllib.loads(Path(path).read_text(encoding="utf-8"))
        return cls.from_mapping(data.get("llm", data))

    @property
    def sampling(self) -> dict[str, Any]:
        """Sampling settings for run records."""
        return {"temperature": self.temperature, "seed": self.seed, "max_tokens": self.max_tokens,
                "tool_choice": self.tool_choice, "parallel_tool_calls": self.parallel_tool_calls,
                "extra_body": dict(self.extra_body), "reply_format": self.reply_format}


class ChatBackendError(RuntimeError):
    """The endpoint answered with an HTTP error or something that is not a chat completion. ``usage``: the turns
    and tokens the run had spent when it was raised (set by the agent, read by the runner)."""

    usage: dict[str, int] | None = None


class ChatTimeoutError(ChatBackendError, TimeoutError):
    """One request got no answer within ``timeout_s`` (a harness error: the endpoint stalled, not the model)."""


class ContextLengthError(ChatBackendError):
    """The endpoint refused the request because the conversation exceeds its context window."""


#: How vLLM, llama.cpp's server, OpenAI and TGI word a context-window refusal.
_CONTEXT_WORDS = re.compile(r"context (window|length)|maximum context|exceed.{0,40}context|"
                            r"too many tokens|prompt is too long|input_too_long", re.IGNORECASE)


class PreflightError(RuntimeError):
    """The endpoint does not return structured tool calls."""


#: The one user message of `health_check`'s request.
HEALTH_CHECK_PROMPT = "Reply with the word OK."


class HealthCheckError(RuntimeError):
    """The endpoint did not answer a plain chat request with a chat completion (one line: what and why)."""


class ChatBackend(Protocol):
    """Anything that turns a chat-completions request body into a response body."""

    async def complete(self, request: Mapping[str, Any]) -> dict[str, Any]:
        """POST one request and return the parsed JSON response."""
        ...


class HttpChatBackend:
    """``POST {base_url}/chat/completions`` over plain httpx."""

    def __init__(self, base_url: str, *, api_key: str | None, timeout_s: float = 120.0,
                 transport: httpx.AsyncBaseTransport | None = None) -> None:
        """Configure the backend (the HTTP client is opened per request; no leaked sockets).

        Args:
            base_url: Endpoint root.
            api_key: Bearer token, or None for endpoints without auth.
            timeout_s: Per-request timeout.
            transport: Optional httpx transport (tests may inject one).
        """
        self.url = base_url.rstrip("/") + "/chat/completions"
        self._headers = {"Content-Type": "application/json"}
        if api_key:
            self._headers["Authorization"] = f"Bearer {api_key}"
        self._timeout = timeout_s
        self._transport = transport

    async def complete(self, request: Mapping[str, Any]) -> dict[str, Any]:
        """POST the request.

        Args:
            request: Chat-completions body.

        Returns:
            The parsed response.

        Raises:
            ChatTimeoutError: If no answer came within the timeout.
            ContextLengthError: On a 4xx answer that names the context window.
            ChatBackendError: On connection errors, other non-2xx answers or non-JSON bodies.
        """
        try:
            async with httpx.AsyncClient(timeout=self._timeout, transport=self._transport) as http:
                response = await http.post(self.url, json=dict(request), headers=self._headers)
        except httpx.TimeoutException as exc:
            raise ChatTimeoutError(f"POST {self.url} got no answer within {self._timeout} s") \
                from exc
        except httpx.ConnectError as exc:
            raise ChatBackendError(f"POST {self.url}: cannot connect ({exc}); is the server running?") from exc
        except httpx.HTTPError as exc:  # e.g. the server died mid-request
            raise ChatBackendError(f"POST {self.url} failed: {exc!r}") from exc
        if response.status_code // 100 == 4 and _CONTEXT_WORDS.search(response.text):
            raise ContextLengthError(f"POST {self.url} returned HTTP {response.status_code}: "
                                     f"{response.text[:300]}")
        if response.status_code // 100 != 2:
            raise ChatBackendError(f"POST {self.url} returned HTTP {response.status_code}: "
                                   f"{response.text[:500]}")
        try:
            body = response.json()
        except ValueError as exc:
            raise ChatBackendError(f"POST {self.url} returned non-JSON: {response.text[:200]}") \
                from exc
        if not isinstance(body, dict) or not body.get("choices"):
            raise ChatBackendError(f"POST {self.url} returned no 'choices': {str(body)[:300]}")
        return body


def _strip_titles(schema: Any) -> Any:
    if isinstance(schema, Mapping):
        return {k: _strip_titles(v) for k, v in schema.items() if k != "title"}
    if isinstance(schema, list):
        return [_strip_titles(v) for v in schema]
    return schema


def tool_schema(spec: ToolSpec, *, strip_titles: bool = False) -> dict[str, Any]:
    """An MCP tool as an OpenAI ``tools`` entry.

    Args:
        spec: The tool.
        strip_titles: Drop ``title`` keys from the parameter schema.

    Returns:
        ``{"type": "function", "function": {name, description, parameters}}``.
    """
    parameters = _strip_titles(spec.input_schema) if strip_titles else dict(spec.input_schema)
    return {"type": "function",
            "function": {"name": spec.name, "description": spec.description,
                         "parameters": parameters}}


def reply_schema(tools: list[dict[str, Any]], answer_schema: Mapping[str, Any]) -> dict[str, Any]:
    """The JSON Schema of one constrained reply: a call of one offered tool, or the answer.

    Args:
        tools: OpenAI ``tools`` entries (`tool_schema`); empty on a turn that admits only the answer.
        answer_schema: The scenario's answer schema (its output template).

    Returns:
        ``answer_schema`` itself when ``tools`` is empty, else ``{"anyOf": [call of tool 1, ..., answer]}`` where
        a call is ``{"name": <the tool's name>, "arguments": <its parameter schema>}`` and nothing else.
    """
    answer = dict(answer_schema)
    if not tools:
        return answer
    calls = [{"type": "object", "additionalProperties": False, "required": ["name", "arguments"],
              "properties": {"name": {"const": t["function"]["name"]},
                             "arguments": t["function"].get("parameters") or {"type": "object"}}}
             for t in tools]
    return {"anyOf": [*calls, answer]}


_FENCE = re.compile(r"```(?:json)?\s*(\{.*?\})\s*```", re.DOTALL)


def extract_json_object(text: str) -> dict[str, Any] | None:
    """The JSON object in a reply: the whole text, a fenced block, or the outermost braces.

    Args:
        text: The assistant's content.

    Returns:
        The object, or None if none parses.
    """
    candidates = [text.strip()]
    candidates += [m.group(1) for m in _FENCE.finditer(text)]
    if "{" in text and "}" in text:
        candidates.append(text[text.index("{"): text.rindex("}") + 1])
    for candidate in candidates:
        try:
            value = json.loads(candidate)
        except json.JSONDecodeError:
            continue
        if isinstance(value, dict):
            return value
    return None


_SYSTEM = (
    "You are a prognostics and health management (PHM) analyst with access to tools. Use the "
    "tools to compute every number and label you report; do not invent values. When you are "
    "done, reply with exactly one JSON object and nothing else. It must satisfy this JSON "
    "Schema:\n{schema}"
)
_RAG_SYSTEM = (
    "You are a prognostics and health management (PHM) analyst. You have no tools. Answer from "
    "the numbered context passages retrieved for this question (telemetry rows and standards "
    "notes) and from your own arithmetic; do not invent values. Reply with exactly one JSON "
    "object and nothing else. It must satisfy this JSON Schema:\n{schema}"
)
_CORRECTION = ("Your last reply did not contain a JSON object. Reply again with only the JSON "
               "object that satisfies the schema.")
_UNPARSED = ("Your last reply looks like a tool call that could not be parsed. Call a tool with "
             'a JSON object {"name": ..., "arguments": {...}}, or reply with only the JSON '
             "answer.")
_TRUNCATED = ("Your last reply was cut off at the token limit before its tool call or answer was complete. "
              "Reply again, shorter: one tool call, or only the JSON answer.")
_FORCE_FINAL = ("The step budget is spent: no more tool calls. Reply now with only the JSON "
                "object that satisfies the schema, from the tool results you have.")
_RECORDED_CHARS = 8000  # response text kept in the trace per turn


class _Turn(NamedTuple):
    """One model reply: its text, the calls to run as ``(id, name, arguments)``, their format."""

    content: str
    calls: list[tuple[str, str, Any]]
    call_format: str
    structured: list[dict[str, Any]]


class _RunState:
    """Per-run conversation, offered tools, recorder and usage counters."""

    def __init__(self, messages: list[dict[str, Any]], tool_list: list[dict[str, Any]],
                 tools: Any) -> None:
        self.messages = messages
        self.tool_list = tool_list
        self.tool_names = frozenset(t["function"]["name"] for t in tool_list)
        self.tools = tools
        self.recorder = getattr(tools, "recorder", None)
        self.usage = {"llm_turns": 0, "tokens_in": 0, "tokens_out": 0}

    def record(self, kind: str, **fields: Any) -> None:
        if self.recorder is not None:
            self.recorder.record(kind, **fields)

    def result(self, answer: Any, stop_reason: str) -> AgentResult:
        return AgentResult(final_answer=answer, stop_reason=stop_reason, usage=dict(self.usage))


def _recorded_message(message: Mapping[str, Any]) -> dict[str, Any]:
    """The response message as kept in the trace (long text capped, marked ``truncated``)."""
    out = {k: message.get(k) for k in ("role", "content", "tool_calls") if k in message}
    content = out.get("content")
    if isinstance(content, str) and len(content) > _RECORDED_CHARS:
        out["content"] = content[:_RECORDED_CHARS]
        out["truncated"] = True
    return json.loads(json.dumps(out, default=str))


def _turn_of(message: Mapping[str, Any], tool_names: frozenset[str], turn: int,
             finish_reason: Any = None) -> _Turn:
    """The calls in one reply (structured, or written in its text) and their format; a reply cut at the token
    limit (``finish_reason: length``) with no complete call or JSON object in it is ``truncated``."""
    content = str(message.get("content") or "")
    if "&#34;" in content or "&quot;" in content:  # llama-cpp-python's chatml-function-calling
        content = html.unescape(content)           # escapes the prompt; models copy the entities
    structured = [dict(c) for c in (message.get("tool_calls") or []) if isinstance(c, Mapping)]
    if structured:
        calls = []
        for index, call in enumerate(structured):
            function = call.get("function") or {}
            calls.append((str(call.get("id") or f"call_{turn}_{index}"),
                          str(function.get("name", "")), function.get("arguments") or "{}"))
        return _Turn(content, calls, "structured", structured)
    found, call_format = parse_content_tool_calls(content, tool_names)
    if finish_reason == "length" and not found and extract_json_object(content) is None:
        call_format = "truncated"
    calls = [(f"content_{turn}_{i}", c.name, c.arguments) for i, c in enumerate(found)]
    synthesized = [{"id": cid, "type": "function",
                    "function": {"name": name, "arguments": args if isinstance(args, str)
                                 else json.dumps(args)}} for cid, name, args in calls]
    return _Turn(content, calls, call_format, synthesized)


def _response_format(tools: list[dict[str, Any]], task: AgentTask) -> dict[str, Any]:
    """The request's ``response_format`` (OpenAI structured outputs; llama.cpp's server compiles it to a grammar)."""
    schema = reply_schema(tools, task.output_template)
    return {"type": "json_schema", "json_schema": {"name": "reply", "schema": schema}}


class LLMAgent:
    """Drives a chat-completions model through the ToolBox until it emits a JSON answer."""

    name = "llm"

    def __init__(self, config: LLMConfig, backend: ChatBackend) -> None:
        """Bind a config and a backend.

        Args:
            config: Model and sampling settings.
            backend: Where requests go (e.g. `HttpChatBackend`).
        """
        self.config = config
        self.backend = backend
        self.model = config.model
        self.sampling = config.sampling

    def _request(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]],
                 task: AgentTask) -> dict[str, Any]:
        cfg = self.config
        request: dict[str, Any] = {"model": cfg.model, "messages": list(messages),
                                   "temperature": cfg.temperature}
        if tools:
            request["tools"] = tools
            request["tool_choice"] = cfg.tool_choice
            if cfg.parallel_tool_calls is not None:
                request["parallel_tool_calls"] = cfg.parallel_tool_calls
        if cfg.seed is not None:
            request["seed"] = cfg.seed + task.run_index
        if cfg.max_tokens is not None:
            request["max_tokens"] = cfg.max_tokens
        request.update(cfg.extra_body)
        if cfg.reply_format == "json_schema":
            request["response_format"] = _response_format(tools, task)
        return request

    @staticmethod
    def _opening_messages(task: AgentTask) -> list[dict[str, Any]]:
        schema = json.dumps(dict(task.output_template), sort_keys=True)
        user = task.query if not task.dataset_context else \
            f"{task.query}\n\nDataset context: {task.dataset_context}"
        system = _SYSTEM
        if task.mode == "rag":
            system = _RAG_SYSTEM
            passages = "\n\n".join(f"[{i}] {text}" for i, text in enumerate(task.evidence, 1))
            user = f"{user}\n\nContext passages:\n{passages or '(no passage matched)'}"
        return [{"role": "system", "content": system.format(schema=schema)},
                {"role": "user", "content": user}]

    async def _turn(self, state: _RunState, task: AgentTask, *, forced: bool = False) -> _Turn:
        """One request and its recorded reply (tokens, latency, call format, message).

        A forced turn still lists the tools but with ``tool_choice: none`` (a server that renders
        the tools the same way keeps its prompt cache).
        """
        turn = state.usage["llm_turns"]
        request = self._request(state.messages, state.tool_list, task)
        if forced:
            request["tool_choice"] = "none"
            if self.config.reply_format == "json_schema":
                request["response_format"] = _response_format([], task)
        state.record("llm_request", turn=turn, n_messages=len(state.messages),
                     n_tools=len(request.get("tools", [])), forced_final=forced)
        started = time.perf_counter()
        try:
            response = await self.backend.complete(request)
        finally:
            state.usage["llm_turns"] += 1
        latency_ms = round((time.perf_counter() - started) * 1000.0, 3)
        reported = response.get("usage") or {}
        tokens_in = int(reported.get("prompt_tokens", 0) or 0)
        tokens_out = int(reported.get("completion_tokens", 0) or 0)
        state.usage["tokens_in"] += tokens_in
        state.usage["tokens_out"] += tokens_out
        choice = response["choices"][0]
        message = dict(choice.get("message") or {})
        parsed = _turn_of(message, state.tool_names, turn, choice.get("finish_reason"))
        state.record("llm_response", turn=turn, tokens_in=tokens_in, tokens_out=tokens_out,
                     latency_ms=latency_ms, finish_reason=choice.get("finish_reason"),
                     call_format=parsed.call_format, n_tool_calls=len(parsed.calls),
                     forced_final=forced, message=_recorded_message(message))
        return parsed

    async def _run_calls(self, state: _RunState, turn: _Turn) -> bool:
        """Run a turn's calls; False when the tool budget ran out (the rest answer an error)."""
        # content is "" rather than null: llama.cpp's server rejects a null assistant content
        content = turn.content if turn.call_format == "structured" else ""
        state.messages.append({"role": "assistant", "content": content,
                               "tool_calls": turn.structured})
        spent = False
        for call_id, name, arguments in turn.calls:
            if spent:
                content = "ERROR (budget): the tool-call budget is spent"
            else:
                try:
                    outcome = await state.tools.call(name, arguments)
                    content = (json.dumps(outcome.structured, sort_keys=True) if outcome.ok
                               else f"ERROR ({outcome.status}): {outcome.text}")
                except ToolBudgetError:
                    spent = True
                    content = "ERROR (budget): the tool-call budget is spent"
            state.messages.append({"role": "tool", "tool_call_id": call_id, "content": content})
        return not spent

    async def _forced_final(self, state: _RunState, task: AgentTask) -> AgentResult:
        """The budget is spent: one request without tools for the answer (``force_final``)."""
        if not (self.config.force_final and state.tool_list):
            return state.result(None, "max_steps")
        state.messages.append({"role": "user", "content": _FORCE_FINAL})
        turn = await self._turn(state, task, forced=True)
        answer = None if turn.calls else extract_json_object(turn.content)
        return state.result(answer, "max_steps")

    async def _loop(self, state: _RunState, task: AgentTask) -> AgentResult:
        max_turns = self.config.max_llm_turns or int(task.limits.get("max_llm_turns", 16))
        reserve = 1 if self.config.force_final and state.tool_list and max_turns > 1 else 0
        corrected = False
        while state.usage["llm_turns"] < max_turns - reserve:
            turn = await self._turn(state, task)
            if turn.calls:
                if not await self._run_calls(state, turn):
                    return await self._forced_final(state, task)
                continue
            answer = extract_json_object(turn.content)
            if answer is not None and turn.call_format == "none":
                return state.result(answer, "final")
            if corrected:
                return state.result(answer if answer is not None else turn.content or None,
                                    "final")
            corrected = True
            state.messages.append({"role": "assistant", "content": turn.content})
            correction = {"unparsed_tagged": _UNPARSED, "truncated": _TRUNCATED}.get(turn.call_format, _CORRECTION)
            state.messages.append({"role": "user", "content": correction})
        return await self._forced_final(state, task)

    async def run(self, task: AgentTask, tools: Any) -> AgentResult:
        """Run the tool-calling loop (in rag mode: one answer from the retrieved passages).

        Args:
            task: The task.
            tools: The ToolBox (its recorder also receives llm_request/llm_response events).

        Returns:
            The answer; stop reason ``final``, ``max_steps`` (budget spent; the forced answer,
            if any, is still scored) or ``context_exceeded`` (the endpoint refused the
            conversation's length).

        Raises:
            ChatTimeoutError: A request got no answer in time (recorded as an ``llm_error`` event
                first; the runner makes the run a harness error).
            ChatBackendError: The endpoint failed otherwise (unreachable, died, HTTP 5xx).
        """
        tool_list = [tool_schema(s, strip_titles=self.config.strip_schema_titles)
                     for s in tools.specs()]
        state = _RunState(self._opening_messages(task), tool_list, tools)
        try:
            return await self._loop(state, task)
        except ChatTimeoutError as exc:
            state.record("llm_error", error=str(exc), stop_reason="timeout")
            exc.usage = dict(state.usage)  # the runner keeps the turns and tokens spent so far
            raise
        except ContextLengthError as exc:
            state.record("llm_error", error=str(exc), stop_reason="context_exceeded")
            return state.result(None, "context_exceeded")
        except ChatBackendError as exc:
            exc.usage = dict(state.usage)
            raise


async def health_check(config: LLMConfig, backend: ChatBackend) -> dict[str, Any]:
    """One real chat request ("reply OK", 8 tokens): the endpoint must answer it with a chat completion in time.

    Sent before the first scenario, so an endpoint that is unreachable, dead, stalled or failing stops the
    command with one line instead of turning every run into a harness error.

    Args:
        config: Model settings (``model``, ``timeout_s`` through the backend).
        backend: The backend to probe.

    Returns:
        ``{"ok": True, "model": ..., "latency_s": ..., "reply": first 80 characters}``.

    Raises:
        HealthCheckError: With the endpoint, the model and the cause.
    """
    request = {"model": config.model, "temperature": 0.0, "max_tokens": 8,
               "messages": [{"role": "user", "content": HEALTH_CHECK_PROMPT}]}
    started = time.perf_counter()
    try:
        response = await backend.complete(request)
    except ChatBackendError as exc:
        raise HealthCheckError(f"health check of {config.base_url} (model {config.model}) failed: {exc}") from exc
    message = (response["choices"][0] or {}).get("message") or {}
    if not isinstance(message, Mapping) or (message.get("content") is None and not message.get("tool_calls")):
        raise HealthCheckError(f"health check of {config.base_url} (model {config.model}): the completion holds "
                               f"no message: {json.dumps(response)[:200]}")
    return {"ok": True, "model": config.model, "latency_s": round(time.perf_counter() - started, 3),
            "reply": str(message.get("content") or "")[:80]}


async def preflight(config: LLMConfig, backend: ChatBackend) -> dict[str, Any]:
    """Check that the endpoint returns a structured tool call for a trivial ``echo`` tool.

    Args:
        config: Model settings.
        backend: The backend to probe.

    Returns:
        ``{"ok": True, "model": ..., "tool_call": {...}}``.

    Raises:
        PreflightError: If no structured ``echo`` tool call comes back.
    """
    echo = ToolSpec(name="echo", description="Return the given text unchanged.",
                    input_schema={"type": "object", "properties": {"text": {"type": "string"}},
                                  "required": ["text"]}, server="preflight")
    request = {"model": config.model, "temperature": 0.0,
               "messages": [{"role": "user",
                             "content": "Call the echo tool with text 'ping'. Do not answer in "
                                        "prose."}],
               "tools": [tool_schema(echo)], "tool_choice": "auto", **dict(config.extra_body)}
    response = await backend.complete(request)
    message = response["choices"][0].get("message") or {}
    calls = message.get("tool_calls") or []
    if not calls or (calls[0].get("function") or {}).get("name") != "echo":
        raise PreflightError(
            f"{config.base_url} (model {config.model}) did not return a structured tool call "
            f"to 'echo'; got message {json.dumps(message)[:300]}. The endpoint must support "
            "OpenAI-style `tools` / `tool_calls` (e.g. vLLM needs --enable-auto-tool-choice).")
    arguments = calls[0]["function"].get("arguments") or "{}"
    try:
        parsed = json.loads(arguments)
    except json.JSONDecodeError as exc:
        raise PreflightError(f"echo arguments are not JSON: {arguments[:200]!r}") from exc
    return {"ok": True, "model": config.model, "tool_call": {"name": "echo", "arguments": parsed}}
