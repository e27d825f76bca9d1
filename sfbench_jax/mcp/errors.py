"""Tool-error vocabulary shared by the MCP server and the agent evaluator.

What lives here: the tagged `ToolError` subclasses the adapter raises for anticipated bad input,
the context manager that turns `phm_kernels` input errors into them, and the parser the client
side uses to read a tag back out of an error text. What does not: any numeric work.

Every anticipated error message reads ``[<code>] <what is wrong>. <how to fix it>``. The SDK
prefixes it with ``Error executing tool <name>: `` on the wire, so a client (the evaluator's
ToolBox, or a human) can classify the failure without guessing. Unanticipated exceptions are left
to the SDK, which hides their text from the caller and logs the traceback.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator

from mcp.server.mcpserver.exceptions import ToolError

__all__ = [
    "ERROR_CODE_STATUS",
    "DomainToolError",
    "InvalidArgumentsError",
    "OverBudgetError",
    "RefusedToolError",
    "UnavailableToolError",
    "UnknownDatasetError",
    "UnknownHandleError",
    "UnknownRunError",
    "error_code_of",
    "kernel_errors",
]

# Error code -> call status used by the evaluator's taxonomy (mcp_agent_eval.md section 3.5).
ERROR_CODE_STATUS: dict[str, str] = {
    "invalid_arguments": "invalid_arguments",
    "unknown_dataset": "invalid_arguments",
    "unknown_run": "invalid_arguments",
    "domain_error": "domain_error",
    "unknown_handle": "domain_error",
    "unavailable": "domain_error",
    "refused": "domain_error",
    "over_budget": "domain_error",
}

_TAG_RE = re.compile(r"\[(?P<code>[a-z_]+)\]")


class _TaggedToolError(ToolError):
    """A ToolError whose message starts with a machine-readable ``[code]`` tag."""

    code = "domain_error"

    def __init__(self, message: str) -> None:
        super().__init__(f"[{self.code}] {message}")


class InvalidArgumentsError(_TaggedToolError):
    """An argument has the wrong type or form (e.g. a list that is not valid JSON)."""

    code = "invalid_arguments"


class UnknownDatasetError(_TaggedToolError):
    """A dataset name that is not registered, or that looks like a filesystem path."""

    code = "unknown_dataset"


class UnknownHandleError(_TaggedToolError):
    """A handle that does not follow the handle grammar or names an unknown object."""

    code = "unknown_handle"


class UnknownRunError(_TaggedToolError):
    """A stored-run name that names no run of the dataset under the server's runs root."""

    code = "unknown_run"


class RefusedToolError(_TaggedToolError):
    """A request the server refuses on principle: a file or folder outside its roots (a symbolic link), a stored
    run that would make it import code or read files its manifest names."""

    code = "refused"


class OverBudgetError(_TaggedToolError):
    """A call that would exceed, or did exceed, the server's per-call cost or time budget."""

    code = "over_budget"


class DomainToolError(_TaggedToolError):
    """A well-formed argument whose value is outside its physical or defined domain."""

    code = "domain_error"


class UnavailableToolError(_TaggedToolError):
    """A tool whose backing component is not installed in this environment."""

    code = "unavailable"


@contextlib.contextmanager
def kernel_errors() -> Iterator[None]:
    """Re-raise `phm_kernels` input errors as tagged tool errors.

    `PHMInputError` (and its subclasses) carry a message naming the argument and the bad value;
    the agent must see it, so it becomes a `DomainToolError`. Anything else propagates unchanged
    and is reported by the SDK as an opaque crash.

    Yields:
        Nothing; wrap the kernel call in the ``with`` block.

    Raises:
        DomainToolError: If the wrapped code raised `phm_kernels.errors.PHMInputError`.
    """
    from phm_kernels.errors import PHMInputError  # local: the kernels import JAX

    try:
        yield
    except PHMInputError as exc:
        raise DomainToolError(f"{type(exc).__name__}: {exc}") from exc


def error_code_of(text: str) -> str | None:
    """Return the ``[code]`` tag found in a tool-error text, or None if there is none.

    Args:
        text: The text content of a failed tool result.

    Returns:
        The tag (e.g. ``"unknown_dataset"``) when it is a known code, else None.
    """
    for match in _TAG_RE.finditer(text):
        if match.group("code") in ERROR_CODE_STATUS:
            return match.group("code")
    return None
