"""Fixtures for the evaluator tests: anyio backend, the packaged scenarios, an in-process server."""

from __future__ import annotations

from pathlib import Path

import pytest
from mcp.server import MCPServer

from sfbench_jax.agent_eval.scenario import Scenario, load_scenarios
from sfbench_jax.mcp.server import ServerConfig, build_server


@pytest.fixture(scope="session")
def anyio_backend() -> str:
    """Run async tests on asyncio (the anyio pytest plugin reads this)."""
    return "asyncio"


@pytest.fixture(scope="session")
def scenarios() -> list[Scenario]:
    """Every packaged scenario."""
    return load_scenarios()


@pytest.fixture(scope="session")
def scenario_map(scenarios: list[Scenario]) -> dict[str, Scenario]:
    """Scenarios by id."""
    return {s.id: s for s in scenarios}


@pytest.fixture(scope="session")
def eval_server(data_root: Path) -> MCPServer:
    """The full sfbench-mcp server, in-process, shared by the evaluator tests."""
    return build_server(ServerConfig(data_root=data_root))
