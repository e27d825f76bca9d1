"""Fixtures for the evaluator tests: anyio backend, the packaged scenarios, an in-process server."""

from __future__ import annotations

import os

import pytest
from mcp.server import MCPServer

from sfbench_jax.agent_eval.scenario import Scenario, load_scenarios


@pytest.fixture(scope="session")
def anyio_backend() -> str:
    """Run async tests on asyncio (the anyio pytest plugin reads this)."""
    return "asyncio"


@pytest.fixture(scope="session")
def scenarios() -> list[Scenario]:
    """Every packaged scenario."""
    return load_scenarios()


#: C-MAPSS subsets of which the repository's test data holds units 1-20 only (tests/fixtures/data_root/README.md):
#: the committed answers of their scenarios come from the whole files.
WHOLE_FILE_DATASETS = frozenset({"cmapss_fd002", "cmapss_fd003", "cmapss_fd004"})


@pytest.fixture(scope="session")
def checkable_scenarios(scenarios: list[Scenario]) -> list[Scenario]:
    """The scenarios whose committed answers the session's data gives: every one with the full data
    (SFBENCH_DATA_ROOT set), else all but those on whole C-MAPSS FD002-FD004 files (docs/testing.md, "Data")."""
    if os.environ.get("SFBENCH_DATA_ROOT"):
        return scenarios
    return [s for s in scenarios if s.dataset.get("name") not in WHOLE_FILE_DATASETS]


@pytest.fixture(scope="session")
def scenario_map(scenarios: list[Scenario]) -> dict[str, Scenario]:
    """Scenarios by id."""
    return {s.id: s for s in scenarios}


@pytest.fixture(scope="session")
def eval_server(mcp_server: MCPServer) -> MCPServer:
    """The full sfbench-mcp server, in-process (the session's one, tests/conftest.py, also the MCP tests')."""
    return mcp_server
