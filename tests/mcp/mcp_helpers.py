"""Helpers for the MCP tests (launch parameters and loopback utilities)."""

from __future__ import annotations

import os
import socket
import sys
from pathlib import Path

from mcp import StdioServerParameters


def subprocess_env() -> dict[str, str]:
    """Environment for server subprocesses: CPU JAX, no inherited data root."""
    env = {k: v for k, v in os.environ.items() if k != "SFBENCH_DATA_ROOT"}
    env["JAX_PLATFORMS"] = "cpu"
    return env


def stdio_params(data_root: Path, *extra: str) -> StdioServerParameters:
    """Launch parameters for ``python -m sfbench_jax.mcp.server`` over stdio."""
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "sfbench_jax.mcp.server", "--data-root", str(data_root), *extra],
        env=subprocess_env())


def free_port() -> int:
    """An unused TCP port on the loopback interface."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])
