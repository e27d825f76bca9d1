"""Battery-prognostics-server tools (NASA PCoE Li-ion cells)."""

from __future__ import annotations

from sfbench_jax.mcp.tools import ToolContext, ToolDef

__all__ = ["build"]


def build(context: ToolContext) -> list[ToolDef]:
    """Declare the battery tools."""
    del context
    return []
