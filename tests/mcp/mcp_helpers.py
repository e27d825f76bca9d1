"""Helpers for the MCP tests (launch parameters and loopback utilities)."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

from mcp import StdioServerParameters


def subprocess_env() -> dict[str, str]:
    """Environment for server subprocesses: CPU JAX, no inherited data root."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("SFBENCH_DATA_ROOT", "SFBENCH_RUNS_DIR", "SFBENCH_MCP_TOKEN")}
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


def wait_for_port(host: str, port: int, proc: subprocess.Popen[bytes], timeout_s: float = 90.0) -> None:
    """Wait until ``proc`` listens on ``host:port`` (raises if it exits first or never listens)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"HTTP server exited early with code {proc.returncode}")
        with socket.socket() as sock:
            if sock.connect_ex((host, port)) == 0:
                return
        time.sleep(0.2)
    raise TimeoutError(f"HTTP server did not listen on {host}:{port} within {timeout_s} s")


@contextlib.contextmanager
def http_server(args: list[str], *, connect_host: str, port: int, log: Path,
                env: dict[str, str] | None = None) -> Iterator[subprocess.Popen[bytes]]:
    """A ``python -m sfbench_jax.mcp.server --transport streamable-http`` subprocess, stopped by its PID."""
    with log.open("wb") as stderr:
        proc = subprocess.Popen(
            [sys.executable, "-m", "sfbench_jax.mcp.server", "--transport", "streamable-http",
             "--port", str(port), *args],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=stderr,
            env=env or subprocess_env())
        try:
            wait_for_port(connect_host, port, proc)
            yield proc
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=20)
