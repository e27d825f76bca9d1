"""Abandoning an evaluation from outside its thread: the caller sets an event, the engine stops at its next chunk.

What lives here: `abandonable` (the context in which an evaluation runs on behalf of a caller that may give up on
it), `stop_if_abandoned` (the engine's check between chunks) and `EvaluationAbandoned` (what the check raises).
The MCP server's time budget is the caller (`mcp/guard.py`): a call past its budget is answered at once, and
its evaluation stops at the next chunk instead of computing on in the background, holding the lock of the
exclusive tools. A compiled chunk itself is never interrupted. Outside `abandonable` the check does nothing.
"""

from __future__ import annotations

import contextlib
import contextvars
import threading
from collections.abc import Iterator

_ABANDONED: contextvars.ContextVar[threading.Event | None] = contextvars.ContextVar("sfbench_abandoned", default=None)


class EvaluationAbandoned(RuntimeError):
    """The caller gave up on this evaluation (its event was set); nothing of it is used."""


@contextlib.contextmanager
def abandonable(abandoned: threading.Event) -> Iterator[None]:
    """Run the evaluations inside the block on behalf of a caller that sets `abandoned` when it gives up."""
    token = _ABANDONED.set(abandoned)
    try:
        yield
    finally:
        _ABANDONED.reset(token)


def stop_if_abandoned() -> None:
    """Raise `EvaluationAbandoned` when the caller of the running evaluation has given up on it."""
    abandoned = _ABANDONED.get()
    if abandoned is not None and abandoned.is_set():
        raise EvaluationAbandoned("the caller gave up on this evaluation; it stopped between two chunks")
