"""The call guard's time budget around SDK tools (`sfbench_jax/mcp/guard.py`): an abandoned evaluation stops at its
next chunk and frees the exclusive lock; a call that cannot get the lock within its budget is refused."""

from __future__ import annotations

import threading
import time

import anyio
import pytest
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.tools import Tool

from sfbench_jax.evaluation.abandon import EvaluationAbandoned, stop_if_abandoned
from sfbench_jax.mcp.guard import CallGuard, guarded_tool

pytestmark = pytest.mark.anyio


def chunked_work(chunks: int, ended: list[str]) -> Tool:
    """A tool whose work is `chunks` chunks of 10 ms with the engine's check before each (as `run_chunks` has)."""
    def work() -> int:
        try:
            for _ in range(chunks):
                stop_if_abandoned()
                time.sleep(0.01)
        except EvaluationAbandoned:
            ended.append("abandoned")
            raise
        ended.append("finished")
        return chunks

    return Tool.from_function(work, name="chunked_work")


async def test_a_call_past_its_budget_stops_at_its_next_chunk_and_frees_the_lock() -> None:
    guard, ended = CallGuard(call_timeout_s=0.3), []
    slow = guarded_tool(chunked_work(3000, ended), guard, exclusive=True)  # 30 s of work
    with pytest.raises(ToolError, match=r"\[over_budget\] chunked_work ran past the server's time budget of 0.3 s"):
        await slow.fn()
    with anyio.fail_after(5):
        while not ended:
            await anyio.sleep(0.01)
    assert ended == ["abandoned"]
    assert guard.exclusive.acquire(timeout=1)  # released by the abandoned call
    guard.exclusive.release()
    quick = guarded_tool(chunked_work(3, ended), guard, exclusive=True)
    assert await quick.fn() == 3 and ended == ["abandoned", "finished"]


async def test_an_exclusive_call_that_cannot_start_within_its_budget_is_refused() -> None:
    guard, held, release = CallGuard(call_timeout_s=0.3), threading.Event(), threading.Event()

    def hold() -> None:  # another exclusive computation holds the lock (not an evaluation: it does not stop)
        with guard.exclusive:
            held.set()
            release.wait(30)

    busy = threading.Thread(target=hold)
    busy.start()
    try:
        assert held.wait(5)
        waiting = guarded_tool(chunked_work(3, []), guard, exclusive=True)
        with pytest.raises(ToolError, match="chunked_work could not start within the server's time budget"):
            await waiting.fn()
    finally:
        release.set()
        busy.join()
