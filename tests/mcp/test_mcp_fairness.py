"""Fairness and isolation of the MCP server (issue 43, item 16), through the real MCP SDK's client and server over
its in-memory transport (the 2026 protocol has no session: the server's clients share one share there, as a
stdio server's one client does; over HTTP each session or peer has its own):

* one client's burst of costly (exclusive) calls held a cheap call of any client for seconds (45 concurrent
  `severity_curves` calls held `list_models` 6.4 s, up to the whole 120 s budget): every call waiting for the
  exclusive lock took one of the SDK's 40 worker threads. Now waiting takes no thread and each client has at most
  `client_computations` costly calls running or waiting; one more is refused at once with `[over_budget]`;
* a plug-in method whose `applicable` raises made `list_methods` fail for everyone with an opaque error; now the
  others are listed and the broken one is named.

The costly tool of the first test is the real guard around a tool that works 0.5 s in 10 ms chunks (the real
`severity_curves` costs seconds per call; the guard is what is tested)."""

from __future__ import annotations

import dataclasses
import time
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.server import MCPServer
from mcp.server.mcpserver.tools import Tool

from sfbench_jax.mcp.guard import DEFAULT_CLIENT_COMPUTATIONS, CallGuard, guarded_tool
from sfbench_jax.methods.registry import METHODS

pytestmark = pytest.mark.anyio

BURST = 45


def costly() -> int:
    """Work 0.5 s in chunks (an evaluation's shape)."""
    for _ in range(50):
        time.sleep(0.01)
    return 1


def cheap() -> int:
    """Answer at once (a listing)."""
    return 2


def fair_server() -> MCPServer:
    guard = CallGuard(call_timeout_s=60)
    tools = [guarded_tool(Tool.from_function(costly, name="costly"), guard, exclusive=True),
             guarded_tool(Tool.from_function(cheap, name="cheap"), guard)]
    return MCPServer("fairness", tools=tools)


async def test_a_burst_of_costly_calls_from_one_client_leaves_cheap_calls_quick() -> None:
    server = fair_server()
    burst: list[Any] = []
    async with Client(server) as greedy, Client(server) as other:
        async def one_costly() -> None:
            burst.append(await greedy.call_tool("costly", {}))

        async with anyio.create_task_group() as group:
            for _ in range(BURST):
                group.start_soon(one_costly)
            await anyio.sleep(0.2)  # the burst is in: refused, running or waiting
            started = time.monotonic()
            answer = await other.call_tool("cheap", {})
            cheap_s = time.monotonic() - started
            started = time.monotonic()
            own = await greedy.call_tool("cheap", {})
            own_cheap_s = time.monotonic() - started
        again = await greedy.call_tool("costly", {})  # the burst has answered: its places are free again
    assert not answer.is_error and not own.is_error and not again.is_error
    assert cheap_s < 1.0 and own_cheap_s < 1.0, (cheap_s, own_cheap_s)
    refused = [result for result in burst if result.is_error]
    assert len(refused) == BURST - DEFAULT_CLIENT_COMPUTATIONS
    assert all(not result.is_error for result in burst if result not in refused)
    text = refused[0].content[0].text
    assert "[over_budget] costly refused: this client already has 4 forecasting computations running or waiting" \
        in text and "at most 4 per client" in text, text


async def test_list_methods_names_a_method_whose_applicable_raises_and_lists_the_rest(
        mcp_server: MCPServer, monkeypatch: pytest.MonkeyPatch) -> None:
    def applicable(model: Any) -> bool:
        raise RuntimeError("the plug-in's predicate is broken")

    broken = dataclasses.replace(METHODS["adversarial_training"], applicable=applicable)
    monkeypatch.setitem(METHODS, "adversarial_training", broken)
    async with Client(mcp_server) as client:
        result = await client.call_tool("list_methods", {})
    assert not result.is_error, result.content
    methods = {method["name"]: method for method in result.structured_content["methods"]}
    assert set(methods) == set(METHODS)
    problem = methods["adversarial_training"]["problem"]
    assert "method 'adversarial_training'" in problem and "its `applicable` raised RuntimeError" in problem
    assert "the plug-in's predicate is broken" in problem and methods["adversarial_training"]["applies_to"] == []
    assert "dlinear" in methods["ensemble"]["applies_to"] and "problem" not in methods["ensemble"]
