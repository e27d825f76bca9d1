"""Fixtures for the MCP server tests: the anyio backend and one in-process server per session."""

from __future__ import annotations

from pathlib import Path

import pytest
from mcp.server import MCPServer

from sfbench_jax.mcp.server import ServerConfig, build_server


@pytest.fixture(scope="session")
def anyio_backend() -> str:
    """Run async tests on asyncio (the anyio pytest plugin reads this)."""
    return "asyncio"


@pytest.fixture(scope="session")
def server(data_root: Path) -> MCPServer:
    """The full sfbench-mcp server over the real data root, in-process."""
    return build_server(ServerConfig(data_root=data_root))

