"""Fixtures for the MCP server tests: the anyio backend and one in-process server per session."""

from __future__ import annotations

import pytest
from mcp.server import MCPServer


@pytest.fixture(scope="session")
def anyio_backend() -> str:
    """Run async tests on asyncio (the anyio pytest plugin reads this)."""
    return "asyncio"


@pytest.fixture(scope="session")
def server(mcp_server: MCPServer) -> MCPServer:
    """The full sfbench-mcp server over the real data root, in-process (the session's one, tests/conftest.py)."""
    return mcp_server

