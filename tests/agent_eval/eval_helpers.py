"""Helpers for the evaluator tests: hand-made trace events and a loopback chat-completions server.

`ChatServer` is a real HTTP server on 127.0.0.1 (stdlib ``ThreadingHTTPServer``) that answers
``POST /v1/chat/completions`` with whatever a test's policy function returns for the request
body. It scripts an LLM deterministically without any network access beyond loopback. The CLI's
health check (one request holding only ``HEALTH_CHECK_PROMPT``) is answered "OK" by the server
itself and counted in ``health_checks``, not passed to the policy nor kept in ``requests``.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from mcp import StdioServerParameters

from sfbench_jax.agent_eval.agents.llm import HEALTH_CHECK_PROMPT
from sfbench_jax.agent_eval.lint import read_manifest
from sfbench_jax.agent_eval.scenario import Scenario, load_scenario
from sfbench_jax.agent_eval.trace import ToolCallEvent

Policy = Callable[[dict[str, Any]], tuple[int, dict[str, Any]]]


def call(seq: int, tool: str, status: str = "ok", arguments: dict[str, Any] | None = None,
         structured: dict[str, Any] | None = None) -> ToolCallEvent:
    """A hand-made tool-call event."""
    return ToolCallEvent(seq=seq, tool=tool, server="", arguments=arguments or {},
                         status=status, error_text="" if status == "ok" else status,
                         structured=structured if status == "ok" else None)


def stdio_params(data_root: Path) -> StdioServerParameters:
    """Launch parameters for ``python -m sfbench_jax.mcp.server`` over stdio."""
    env = {k: v for k, v in os.environ.items() if k != "SFBENCH_DATA_ROOT"}
    env["JAX_PLATFORMS"] = "cpu"
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "sfbench_jax.mcp.server", "--data-root", str(data_root)], env=env)


def completion(message: dict[str, Any], *, prompt_tokens: int = 100,
               completion_tokens: int = 20) -> dict[str, Any]:
    """A chat-completions response body."""
    finish = "tool_calls" if message.get("tool_calls") else "stop"
    return {"id": "chatcmpl-test", "object": "chat.completion", "model": "scripted-test-model",
            "choices": [{"index": 0, "message": {"role": "assistant", **message},
                         "finish_reason": finish}],
            "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens}}


def tool_call(call_id: str, name: str, arguments: dict[str, Any] | str) -> dict[str, Any]:
    """One OpenAI-style tool call (arguments as the JSON text a model emits)."""
    text = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": text}}


class _QuietServer(ThreadingHTTPServer):
    """A client that hangs up (a test's agent timing out, or done) is not an error worth a traceback on stderr, where
    it would land in whichever test of the same worker reads stderr next."""

    def handle_error(self, request: Any, client_address: Any) -> None:
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


class ChatServer:
    """Loopback chat-completions server driven by a policy function."""

    def __init__(self, policy: Policy) -> None:
        self.policy = policy
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.health_checks = 0
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", "0"))
                body = json.loads(self.rfile.read(length) or b"{}")
                if body.get("messages") == [{"role": "user", "content": HEALTH_CHECK_PROMPT}]:
                    server.health_checks += 1
                    self._reply(200, completion({"content": "OK"}))
                    return
                server.requests.append(body)
                server.headers.append(dict(self.headers))
                if self.path != "/v1/chat/completions":
                    status, payload = 404, {"error": f"no route {self.path}"}
                else:
                    status, payload = server.policy(body)
                self._reply(status, payload)

            def _reply(self, status: int, payload: dict[str, Any]) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: Any) -> None:
                del format, args

        self._httpd = _QuietServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:<port>/v1``."""
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    def __enter__(self) -> ChatServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=10)


def tool_results(request: dict[str, Any]) -> list[dict[str, Any]]:
    """Parsed JSON contents of the tool messages in a request (failed calls are skipped)."""
    out = []
    for message in request["messages"]:
        if message["role"] == "tool" and not message["content"].startswith("ERROR"):
            out.append(json.loads(message["content"]))
    return out


def copy_scenario(tmp_path: Path, source: Scenario, raw: dict[str, Any]) -> Scenario:
    """Write ``raw`` as scenario ``source.id`` in tmp_path with its ground truth and manifest entry."""
    (tmp_path / "ground_truth").mkdir(exist_ok=True)
    name = Path(source.ground_truth_ref).name
    shutil.copyfile(source.ground_truth_path, tmp_path / "ground_truth" / name)
    manifest = {"files": {name: read_manifest(source.ground_truth_path.parent)[name]}}
    (tmp_path / "ground_truth" / "MANIFEST.json").write_text(json.dumps(manifest))
    (tmp_path / f"{source.id}.json").write_text(json.dumps(raw))
    return load_scenario(tmp_path / f"{source.id}.json")
