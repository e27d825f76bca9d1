"""Tool calls that a model wrote into its message text instead of the structured ``tool_calls`` field.

What lives here: `parse_content_tool_calls`, which recognises the fallbacks small open-weight
models emit when a server does not turn their output into structured calls, and `CALL_FORMATS`,
the names the LLM agent records for each turn in the trace:

* ``structured``: the server returned OpenAI ``tool_calls`` (the normal case);
* ``content_tagged``: tagged text such as ``<tool_call>{"name": ..., "arguments": {...}}</tool_call>``
  (Hermes, Qwen, SmolLM2), ``<function_call>...``, Mistral's ``[TOOL_CALLS] [...]`` or
  llama-cpp-python's ``functions.NAME:\n{...}``;
* ``content_json``: a bare or fenced JSON object (or list of objects) with a ``name`` and an
  ``arguments`` / ``parameters`` member;
* ``unparsed_tagged``: a tool-call tag whose body is not a parseable call (classified, never run);
* ``none``: plain text (the final answer, or prose).

What does not: running the calls (the ToolBox does) or deciding what a final answer is
(``llm.extract_json_object``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection
from typing import Any, NamedTuple

__all__ = ["CALL_FORMATS", "ContentCall", "parse_content_tool_calls"]

CALL_FORMATS = ("structured", "content_tagged", "content_json", "unparsed_tagged", "none")

_TAGGED = re.compile(r"<(tool_call|function_call|functioncall)>\s*(.*?)\s*(?:</\1>|$)",
                     re.DOTALL | re.IGNORECASE)
_MISTRAL = re.compile(r"\[TOOL_CALLS\]\s*(.*)$", re.DOTALL)
# llama-cpp-python's chatml-function-calling syntax, written as text when the tools are withheld
_FUNCTIONS = re.compile(r"^\s*functions?\.([A-Za-z0-9_.-]+):\s*(\{.*)$", re.DOTALL)
_FENCE = re.compile(r"```(?:json)?\s*(.*?)\s*```", re.DOTALL)
_NAME_KEYS = ("name", "tool", "tool_name", "function")
_ARGUMENT_KEYS = ("arguments", "parameters", "args", "input")


class ContentCall(NamedTuple):
    """One call recovered from message text.

    Attributes:
        name: Tool name as written.
        arguments: Argument object, or the raw text when it is not an object (the ToolBox then
            records ``invalid_arguments``).
    """

    name: str
    arguments: dict[str, Any] | str


def _as_call(value: Any) -> ContentCall | None:
    if not isinstance(value, dict):
        return None
    if isinstance(value.get("function"), dict):  # {"type": "function", "function": {...}}
        value = value["function"]
    name = next((value[k] for k in _NAME_KEYS if isinstance(value.get(k), str)), None)
    key = next((k for k in _ARGUMENT_KEYS if k in value), None)
    if name is None or key is None:
        return None
    arguments = value[key]
    if isinstance(arguments, str):
        try:
            decoded = json.loads(arguments)
        except json.JSONDecodeError:
            decoded = arguments
        arguments = decoded if isinstance(decoded, dict) else arguments
    elif not isinstance(arguments, dict):
        arguments = json.dumps(arguments)
    return ContentCall(name=name, arguments=arguments)


def _calls_in(text: str) -> list[ContentCall] | None:
    """Calls in one JSON text (an object or a list of objects), or None if it is not that."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError:
        return None
    items = value if isinstance(value, list) else [value]
    calls = [_as_call(item) for item in items]
    if not calls or any(c is None for c in calls):
        return None
    return [c for c in calls if c is not None]


def _json_candidates(text: str) -> list[str]:
    stripped = text.strip()
    out = [stripped, *(m.group(1) for m in _FENCE.finditer(text))]
    for opener, closer in (("{", "}"), ("[", "]")):
        if opener in text and closer in text:
            out.append(text[text.index(opener): text.rindex(closer) + 1])
    return out


def parse_content_tool_calls(content: str | None,
                             tool_names: Collection[str] = ()) -> tuple[list[ContentCall], str]:
    """Tool calls written in a message's text, and the format they were written in.

    Args:
        content: The assistant message's ``content``.
        tool_names: Names of the offered tools. A bare JSON object counts as a call only if its
            name is one of them or it carries an arguments member (so a final answer with a
            ``name`` field is not mistaken for a call).

    Returns:
        ``(calls, format)`` with format one of `CALL_FORMATS` other than ``structured``.
    """
    text = content or ""
    named = _FUNCTIONS.match(text)
    if named:
        body = next((c for c in _json_candidates(named.group(2)) if _is_object(c)), None)
        if body is None:
            return [], "unparsed_tagged"
        return [ContentCall(named.group(1), json.loads(body))], "content_tagged"
    bodies = [m.group(2) for m in _TAGGED.finditer(text)]
    mistral = _MISTRAL.search(text)
    if mistral:
        bodies.append(mistral.group(1))
    if bodies:
        calls: list[ContentCall] = []
        for body in bodies:
            parsed = next((c for c in map(_calls_in, _json_candidates(body)) if c), None)
            if parsed is None:
                return [], "unparsed_tagged"
            calls.extend(parsed)
        return calls, "content_tagged"
    for candidate in _json_candidates(text):
        found = _calls_in(candidate)
        if found and (len(found) > 1 or found[0].name in tool_names or _looks_like_call(candidate)):
            return found, "content_json"
    return [], "none"


def _is_object(text: str) -> bool:
    try:
        return isinstance(json.loads(text), dict)
    except json.JSONDecodeError:
        return False


def _looks_like_call(text: str) -> bool:
    """A single JSON object whose only members are a name and its arguments."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError:
        return False
    if isinstance(value, dict) and isinstance(value.get("function"), dict):
        value = value["function"]
    return isinstance(value, dict) and len(value) <= 3 and any(k in value for k in _ARGUMENT_KEYS)
