"""Tool calls that a model wrote into its message text instead of the structured ``tool_calls`` field.

What lives here: `parse_content_tool_calls`, which recognises the fallbacks small open-weight
models emit when a server does not turn their output into structured calls, and `CALL_FORMATS`,
the names the LLM agent records for each turn in the trace:

* ``structured``: the server returned OpenAI ``tool_calls`` (the normal case);
* ``content_tagged``: tagged text such as ``<tool_call>{"name": ..., "arguments": {...}}</tool_call>``
  (Hermes, Qwen, SmolLM2), ``<function_call>...``, Mistral's ``[TOOL_CALLS] [...]`` or
  llama-cpp-python's ``functions.NAME:\n{...}``;
* ``content_json``: a bare or fenced JSON object (or list of objects) with a ``name`` and an
  ``arguments`` / ``parameters`` member, or several such objects one after another (newline-separated,
  in one fence or several): every complete one is a call, in order;
* ``unparsed_tagged``: a tool-call tag whose body is not a parseable call (classified, never run);
* ``truncated``: a reply cut at the token limit before any call or answer in it was complete (set by the
  agent, which knows the finish reason; the complete calls of a cut reply still run);
* ``none``: plain text (the final answer, or prose).

What does not: running the calls (the ToolBox does) or deciding what a final answer is
(``llm.extract_json_object``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection
from typing import Any, NamedTuple

__all__ = ["CALL_FORMATS", "ContentCall", "json_values", "parse_content_tool_calls"]

CALL_FORMATS = ("structured", "content_tagged", "content_json", "unparsed_tagged", "truncated", "none")

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


def json_values(text: str) -> list[Any]:
    """Every complete top-level JSON object or array in a text, in order (prose, fences and a cut tail skipped).

    Args:
        text: Message text.

    Returns:
        The decoded values; an object or array cut short (a truncated reply) is not among them.
    """
    decoder = json.JSONDecoder()
    values: list[Any] = []
    index = 0
    while True:
        starts = [i for i in (text.find("{", index), text.find("[", index)) if i >= 0]
        if not starts:
            return values
        start = min(starts)
        try:
            value, end = decoder.raw_decode(text, start)
        except json.JSONDecodeError:
            index = start + 1
            continue
        if isinstance(value, (dict, list)):
            values.append(value)
        index = end


def _call_values(text: str, tool_names: Collection[str]) -> list[ContentCall]:
    """The calls among a text's JSON values: objects naming an offered tool, or shaped as a call (name and an
    argument object), or lists of such objects."""
    calls: list[ContentCall] = []
    for value in json_values(text):
        items = value if isinstance(value, list) else [value]
        found = [_as_call(item) for item in items]
        if not found or any(c is None for c in found):
            continue
        if len(found) > 1 or any(_is_call_object(item, tool_names) for item in items):
            calls.extend(c for c in found if c is not None)
    return calls


def _is_call_object(value: Any, tool_names: Collection[str]) -> bool:
    """A name plus arguments that name an offered tool, carry an argument object, or are all the object holds."""
    if isinstance(value, dict) and isinstance(value.get("function"), dict):
        value = value["function"]
    if not isinstance(value, dict):
        return False
    name = next((value[k] for k in _NAME_KEYS if isinstance(value.get(k), str)), None)
    arguments = next((value[k] for k in _ARGUMENT_KEYS if k in value), None)
    return name in tool_names or isinstance(arguments, dict) or _looks_like_call(json.dumps(value))


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
            calls.extend(parsed if parsed is not None else _call_values(body, tool_names))
        return (calls, "content_tagged") if calls else ([], "unparsed_tagged")
    calls = _call_values(text, tool_names)
    return (calls, "content_json") if calls else ([], "none")


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
