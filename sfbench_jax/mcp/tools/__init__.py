"""Registry of the MCP tools: one module per tool family, grouped like PHMForge's servers.

What lives here: `GROUP_ORDER` (prognostics, maintenance, battery, benchmark), `PURE` (the
annotations every tool carries), `tool_families()` (the registry: the family modules in catalogue
order), `declared_tools()` (their tools) and `served_function` (a tool with the data store
bound, as the server registers it). Each family module is a thin adapter that declares
``TOOLS: tuple[ToolDef, ...]`` of module-level functions: typed parameters in, a `phm_kernels`
or engine call, a small pydantic result out; a tool that reads data takes the `DataStore` as its
first parameter, ``store``. What does not live here: transports, argument strictness and server
assembly (``server.py``, ``strict.py``), shared post-processing (``_common.py``).

To add a family: write the module with its ``TOOLS`` and list it in `tool_families`.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from types import ModuleType
from typing import Any

from mcp.types import ToolAnnotations

from sfbench_jax.mcp.datasets import DataStore
from sfbench_jax.mcp.tools._common import ToolDef

__all__ = ["GROUP_ORDER", "PURE", "ToolDef", "declared_tools", "served_function",
           "tool_families"]

PURE = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True,
                       open_world_hint=False)

GROUP_ORDER: tuple[str, ...] = ("prognostics", "maintenance", "battery", "benchmark")


def tool_families() -> tuple[ModuleType, ...]:
    """The tool-family modules in catalogue order (imported here: importing them loads JAX)."""
    from sfbench_jax.mcp.tools import (
        battery,
        battery_diagnostics,
        benchmark,
        data,
        distractors,
        economics,
        rul,
        rul_metrics,
        safety,
        sensor_trends,
        turbofan,
        vibration,
    )

    return (data, rul, rul_metrics, sensor_trends, turbofan, vibration,  # prognostics
            economics, safety, distractors,  # maintenance
            battery, battery_diagnostics,  # battery
            benchmark)  # benchmark


def declared_tools() -> list[ToolDef]:
    """Every tool of every family, in catalogue order.

    Raises:
        ValueError: If a tool names a group outside `GROUP_ORDER`.
    """
    tools = [tool for family in tool_families() for tool in family.TOOLS]
    strays = sorted({f"{tool.name} ({tool.group})" for tool in tools
                     if tool.group not in GROUP_ORDER})
    if strays:
        raise ValueError(f"tools in unknown groups: {strays}; groups are {list(GROUP_ORDER)}")
    return tools


def served_function(tool: ToolDef, store: DataStore) -> Callable[..., Any]:
    """The function the server registers for a tool: ``tool.fn`` with the store bound.

    The store parameter is dropped from the signature the SDK reads, so it never reaches the
    input schema; everything else (name, docstring, parameters, return model) is the tool's.

    Args:
        tool: The declaration.
        store: The server's data store.

    Returns:
        ``tool.fn`` itself when it takes no store, else a wrapper calling it with ``store``.
    """
    if not tool.takes_store:
        return tool.fn
    signature = inspect.signature(tool.fn, eval_str=True)
    parameters = list(signature.parameters.values())[1:]

    @functools.wraps(tool.fn)
    def bound(**arguments: Any) -> Any:
        return tool.fn(store, **arguments)

    bound.__signature__ = signature.replace(parameters=parameters)  # type: ignore[attr-defined]
    bound.__annotations__ = {p.name: p.annotation for p in parameters} | {
        "return": signature.return_annotation}
    del bound.__wrapped__  # the SDK must read the bound signature, not the original's
    return bound
