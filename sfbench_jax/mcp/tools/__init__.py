"""Registry of MCP tool groups (PHMForge's three servers plus the forecasting benchmark).

What lives here: `ToolDef` (one tool: its function, group, name, annotations, optional warm-up),
`ToolContext` (what a group builder may use: the data store) and `group_builders()`, the
registry of group builders by name. Each group module (``prognostics``, ``maintenance``,
``battery``, ``benchmark``) is a thin adapter: typed parameters in, a `phm_kernels` or engine
call, a small pydantic result out. What does not live here: transports and server assembly
(``server.py``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from mcp.types import ToolAnnotations

from sfbench_jax.mcp.datasets import DataStore

__all__ = ["GROUP_ORDER", "PURE", "ToolContext", "ToolDef", "group_builders"]

PURE = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True,
                       open_world_hint=False)


@dataclass(frozen=True)
class ToolContext:
    """What tool builders may close over.

    Attributes:
        store: Cache of parsed registered datasets under the server's data root.
    """

    store: DataStore


@dataclass(frozen=True)
class ToolDef:
    """One tool declaration.

    Attributes:
        fn: The typed function; its signature becomes the input schema, its return annotation
            (a pydantic model) the output schema, its docstring the description.
        group: Server group (``prognostics``, ``maintenance``, ``battery``, ``benchmark``).
        warmup: Optional zero-argument call that compiles the kernels behind the tool.
        is_offline_stub: True for distractor tools that never do real work (e.g. web_search).
    """

    fn: Callable[..., Any]
    group: str
    warmup: Callable[[], object] | None = None
    is_offline_stub: bool = False

    @property
    def name(self) -> str:
        """Tool name (the function's name)."""
        return self.fn.__name__


GROUP_ORDER: tuple[str, ...] = ("prognostics", "maintenance", "battery", "benchmark")


def group_builders() -> dict[str, Callable[[ToolContext], list[ToolDef]]]:
    """Group name -> builder, imported lazily so that importing the registry stays cheap."""
    from sfbench_jax.mcp.tools import battery, benchmark, maintenance, prognostics

    return {
        "prognostics": prognostics.build,
        "maintenance": maintenance.build,
        "battery": battery.build,
        "benchmark": benchmark.build,
    }

