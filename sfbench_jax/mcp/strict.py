"""Strict tool arguments: an argument name a tool does not declare is a tool error, not ignored.

What lives here: `strict_tool`, which gives an SDK `Tool` an argument model that forbids
undeclared names (so its published input schema says ``additionalProperties: false``) and rejects
them with an ``[invalid_arguments]`` message naming the tool's arguments and the likely intended
one; and `undeclared_argument_message`, that message. Without it the SDK silently drops an
unknown name, so an agent's misspelled optional argument would pass unnoticed instead of
counting as a tool-invocation error. What does not: value validation (the typed signatures and
the kernels do that).
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from typing import Any

from mcp.server.mcpserver.tools import Tool
from pydantic import BaseModel, ConfigDict, model_validator
from pydantic_core import PydanticCustomError

from sfbench_jax.mcp.errors import InvalidArgumentsError

__all__ = ["strict_tool", "undeclared_argument_message"]


def undeclared_argument_message(tool: str, undeclared: Sequence[str],
                                declared: Sequence[str]) -> str:
    """The tool-error text for arguments a tool does not declare.

    Args:
        tool: Tool name.
        undeclared: The names the caller passed that the tool does not declare.
        declared: The tool's argument names, in declaration order.

    Returns:
        ``[invalid_arguments] <tool> has no argument 'x' ...; its arguments are ...``.
    """
    shown = ", ".join(repr(name) for name in undeclared)
    noun = "argument" if len(undeclared) == 1 else "arguments"
    matches = {name: close[0] for name in undeclared
               if (close := difflib.get_close_matches(name, declared, n=1, cutoff=0.6))}
    if len(undeclared) == 1 and matches:
        hint = f" (did you mean {next(iter(matches.values()))!r}?)"
    elif matches:
        hint = " (did you mean " + ", ".join(f"{m!r} for {n!r}" for n, m in matches.items()) + "?)"
    else:
        hint = ""
    valid = ", ".join(declared) if declared else "none"
    return (f"[{InvalidArgumentsError.code}] {tool} has no {noun} {shown}{hint}; its arguments "
            f"are {valid}. Remove or rename the undeclared {noun}")


def _strict_arguments(arguments: type[BaseModel], tool: str) -> type[BaseModel]:
    declared = tuple(field.alias or name for name, field in arguments.model_fields.items())

    class StrictArguments(arguments):  # type: ignore[misc, valid-type]
        model_config = ConfigDict(extra="forbid", title=arguments.__name__)

        @model_validator(mode="before")
        @classmethod
        def reject_undeclared_arguments(cls, data: Any) -> Any:
            if isinstance(data, dict):
                undeclared = [str(name) for name in data if name not in declared]
                if undeclared:
                    # A pydantic error is what the SDK reports to the caller with its text.
                    raise PydanticCustomError("undeclared_argument", "{message}", {
                        "message": undeclared_argument_message(tool, undeclared, declared)})
            return data

    return StrictArguments


def strict_tool(tool: Tool) -> Tool:
    """A copy of an SDK tool whose arguments are strict (see the module docstring).

    Args:
        tool: A tool as built by ``Tool.from_function``.

    Returns:
        The same tool with a strict argument model and the matching input schema.
    """
    arguments = _strict_arguments(tool.fn_metadata.arg_model, tool.name)
    metadata = tool.fn_metadata.model_copy(update={"arg_model": arguments})
    return tool.model_copy(update={"fn_metadata": metadata,
                                   "parameters": arguments.model_json_schema(by_alias=True)})
