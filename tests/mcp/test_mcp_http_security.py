"""The streamable-HTTP transport is safe off loopback (issue 21, defect 5) and the entry point's bad settings are
one line (defect 7), against the real server subprocess on 127.0.0.x and the official client.

* ``--host 127.0.0.2`` (a loopback address the SDK does not protect by default) keeps Host/Origin checking on.
* A non-loopback bind needs ``--allow-remote``, a bearer token from the environment or a file (never the
  command line) and an ``--allowed-host`` list; then a wrong token is 401, a foreign Host 421, a foreign
  Origin 403, and the right token with an allowed Host works through ``mcp.Client``.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp_helpers import free_port, http_server, subprocess_env

from sfbench_jax.mcp import server as mcp_server

pytestmark = pytest.mark.anyio

TOKEN = "3f6a9c1e8b7d4f20a5c6e9d1b2f3a4c5"
INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "probe", "version": "0"}}}
SAFETY_CALL = ("assess_safety_risk", {"failure_mode": "seal", "severity": 8, "probability": 5, "detectability": 4})


def _post(url: str, **headers: str) -> httpx.Response:
    """One raw initialize POST with the given headers (Host and Origin included when given)."""
    base = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    return httpx.post(url, json=INITIALIZE, headers=base | headers, timeout=30)


async def _call_with_token(url: str, token: str) -> dict[str, object]:
    async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"},
                                  timeout=httpx2.Timeout(30, read=300)) as http, \
            Client(streamable_http_client(url, http_client=http)) as client:
        result = await client.call_tool(*SAFETY_CALL)
    assert not result.is_error, result.content
    return result.structured_content


@pytest.fixture(scope="module")
def loopback_two(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The server on 127.0.0.2 with no further option (issue 21's reproduction)."""
    port = free_port()
    log = tmp_path_factory.mktemp("http2") / "server.log"
    with http_server(["--host", "127.0.0.2", "--group", "maintenance"], connect_host="127.0.0.2", port=port,
                     log=log):
        yield f"http://127.0.0.2:{port}/mcp"


def test_defect5_loopback_alias_keeps_host_and_origin_checks(loopback_two: str) -> None:
    # Issue 21, defect 5: `--host 127.0.0.2` answered requests with Host: evil.com and Origin: http://evil.com.
    assert _post(loopback_two, Host="evil.com").status_code == 421
    assert _post(loopback_two, Origin="http://evil.com").status_code == 403
    assert _post(loopback_two).status_code == 200
    assert _post(loopback_two, Origin=loopback_two.removesuffix("/mcp")).status_code == 200


async def test_loopback_alias_serves_the_official_client(loopback_two: str) -> None:
    async with Client(loopback_two) as client:
        result = await client.call_tool(*SAFETY_CALL)
    assert not result.is_error and result.structured_content["rpn"] == 160


@pytest.fixture(scope="module")
def remote(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, int]]:
    """The server bound to 0.0.0.0 with --allow-remote, the token in a file and 127.0.0.3 as the allowed host."""
    folder = tmp_path_factory.mktemp("remote")
    token_file = folder / "token"
    token_file.write_text(TOKEN + "\n")
    token_file.chmod(0o600)
    port = free_port()
    args = ["--host", "0.0.0.0", "--allow-remote", "--token-file", str(token_file),
            "--allowed-host", f"127.0.0.3:{port}", "--allowed-origin", "https://app.example.org",
            "--group", "maintenance"]
    with http_server(args, connect_host="127.0.0.3", port=port, log=folder / "server.log"):
        yield f"http://127.0.0.3:{port}/mcp", port


def test_remote_bind_refuses_missing_and_wrong_tokens(remote: tuple[str, int]) -> None:
    url, _ = remote
    missing = _post(url)
    assert missing.status_code == 401 and missing.headers["www-authenticate"].startswith("Bearer")
    assert _post(url, Authorization="Bearer " + TOKEN[:-1] + "0").status_code == 401
    assert _post(url, Authorization=TOKEN).status_code == 401  # not a bearer credential


def test_remote_bind_checks_host_and_origin_against_the_allow_list(remote: tuple[str, int]) -> None:
    url, port = remote
    bearer = f"Bearer {TOKEN}"
    assert _post(url, Authorization=bearer, Host=f"evil.com:{port}").status_code == 421
    assert _post(url, Authorization=bearer, Host=f"127.0.0.1:{port}").status_code == 421  # not on the list
    assert _post(url, Authorization=bearer, Origin="http://evil.com").status_code == 403
    assert _post(url, Authorization=bearer, Origin="https://app.example.org").status_code == 200
    assert _post(url, Authorization=bearer).status_code == 200


async def test_remote_bind_serves_the_right_token_and_host(remote: tuple[str, int]) -> None:
    url, _ = remote
    assert (await _call_with_token(url, TOKEN))["risk_level"] == "high"


def _one_line_failure(args: list[str]) -> str:
    """The one line of a refused `sfbench-mcp ARGS`, run as the console script (no traceback, exit status 2)."""
    script = shutil.which("sfbench-mcp", path=str(Path(sys.executable).parent))
    assert script, "the sfbench-mcp console script is not installed (pip install -e .)"
    completed = subprocess.run([script, *args], capture_output=True, text=True, timeout=120,
                               env=subprocess_env(), stdin=subprocess.DEVNULL, check=False)
    lines = completed.stderr.strip().splitlines()
    assert completed.returncode == 2 and len(lines) == 1 and lines[0].startswith("sfbench-mcp: "), \
        (completed.returncode, completed.stderr)
    assert "Traceback" not in completed.stderr
    return lines[0]


def _refused_in_process(args: list[str], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
                        token: str | None = None) -> str:
    """The one line of a refused `sfbench-mcp ARGS`, through its entry point in this process: every refusal ends
    before the server is built, so a new process adds nothing (the console script's own: the bad-port test)."""
    for name in ("SFBENCH_DATA_ROOT", "SFBENCH_RUNS_DIR", "SFBENCH_MCP_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    if token is not None:
        monkeypatch.setenv("SFBENCH_MCP_TOKEN", token)
    assert mcp_server.main(args) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("sfbench-mcp: "), lines
    return lines[0]


def test_defect7_bad_port_is_one_line() -> None:
    # Issue 21, defect 7: `sfbench-mcp --port 99999` printed a traceback.
    assert "--port 99999 is outside 1-65535" in _one_line_failure(["--transport", "streamable-http",
                                                                   "--port", "99999"])


@pytest.mark.parametrize(("args", "needle"), [
    (["--host", "0.0.0.0"], "--allow-remote"),
    (["--host", "0.0.0.0", "--allow-remote"], "needs a bearer token"),
    (["--host", "0.0.0.0", "--allow-remote", "--token", TOKEN], "never a command-line argument"),
    (["--host", "0.0.0.0", "--allow-remote", "--token-file", "/nonexistent/token"], "cannot read the token"),
    (["--call-timeout", "0"], "call timeout"),
    (["--runs-root", "/nonexistent/runs"], "--runs-root /nonexistent/runs is not a directory"),
])
def test_unsafe_or_bad_settings_are_refused_in_one_line(args: list[str], needle: str,
                                                        capsys: pytest.CaptureFixture[str],
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    assert needle in _refused_in_process(["--transport", "streamable-http", "--port", str(free_port()), *args],
                                         capsys, monkeypatch)


def test_remote_bind_needs_an_allow_list_and_a_long_token(capsys: pytest.CaptureFixture[str],
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    base = ["--transport", "streamable-http", "--port", str(free_port()), "--host", "0.0.0.0", "--allow-remote"]
    assert "--allowed-host" in _refused_in_process(base, capsys, monkeypatch, token=TOKEN)
    assert "at least 24 characters" in _refused_in_process([*base, "--allowed-host", "example.org"], capsys,
                                                           monkeypatch, token="secret")
