"""Offline distractor tools (maintenance server): PHMForge's ``web_search`` and
``weather_data_loader``.

What lives here: two stubs that scenarios offer as distractors; they never touch the network and
always return "no results", so calling one is observable as a reasoning slip, never a data leak.
What does not: any real search or data access.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from sfbench_jax.mcp.tools._common import ToolDef, ToolResult

__all__ = ["TOOLS", "weather_data_loader", "web_search"]


class SearchResult(ToolResult):
    """Offline search stub result."""

    query: str
    results: list[str]
    note: str


def web_search(query: Annotated[str, Field(max_length=500)],
               count: Annotated[int, Field(ge=1, le=20)] = 5) -> SearchResult:
    """Search the web for domain information (offline in this deployment: no results)."""
    del count
    return SearchResult(query=query, results=[], note="offline: this server has no network access",
                        kernel="none (offline stub)")


def weather_data_loader(location: Annotated[str, Field(max_length=200)],
                        days: Annotated[int, Field(ge=1, le=31)] = 7) -> SearchResult:
    """Load recent weather observations for a site (offline in this deployment: no data)."""
    del days
    return SearchResult(query=location, results=[],
                        note="offline: no weather data source is configured",
                        kernel="none (offline stub)")


TOOLS = (
    ToolDef(web_search, "maintenance", is_offline_stub=True),
    ToolDef(weather_data_loader, "maintenance", is_offline_stub=True),
)
