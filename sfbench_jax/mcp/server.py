"""The ``sfbench-mcp`` server: assembly from the tool registry, transports and the entry point.

What lives here: `ServerConfig` (frozen), `build_server` (an `MCPServer` holding the selected tool
groups, each tool bound to the data store, with strict arguments and run under the call guard: time
budget, one costly computation at a time, answers checked against their output schema, no server path
in an error), `tool_groups_of` (tool name -> group, for clients that want PHMForge's server split) and
`main`, the console script: it is the only place that reads ``SFBENCH_DATA_ROOT``, ``SFBENCH_RUNS_DIR``,
``SFBENCH_MCP_TOKEN`` or flags. What does not: tool logic (``sfbench_jax.mcp.tools``), argument
strictness (``strict.py``), the call guard (``guard.py``) and the HTTP rules (``http.py``).

With no data root the server still starts: it serves every tool that needs no data, the
forecasting benchmark on the bundled ETTh1 and the RUL tools on the bundled C-MAPSS FD001; a tool
on any other dataset answers with a tool error naming the dataset and ``--data-root``. Stored runs
are opened only under an explicit runs root (``--runs-root``); without one the tool says how to set it.

Run it::

    sfbench-mcp                                                # stdio, bundled data only
    sfbench-mcp --data-root ../shared/data --runs-root outputs # stdio, every dataset and stored runs
    sfbench-mcp --transport streamable-http --port 8765        # http://127.0.0.1:8765/mcp
    SFBENCH_MCP_TOKEN=... sfbench-mcp --transport streamable-http --host 0.0.0.0 --allow-remote \
        --allowed-host mcp.example.org:8765                    # off loopback: opt-in, token, Host list
    python -m sfbench_jax.mcp.server --group maintenance       # one PHMForge-style server
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from mcp.server import MCPServer
from mcp.server.mcpserver.tools import Tool

from sfbench_jax.mcp.datasets import DataStore
from sfbench_jax.mcp.guard import (
    DEFAULT_CALL_TIMEOUT_S,
    DEFAULT_CLIENT_COMPUTATIONS,
    MAX_CALL_TIMEOUT_S,
    CallGuard,
    guarded_tool,
)
from sfbench_jax.mcp.http import TOKEN_VARIABLE, HttpSettings, read_token, serve_http
from sfbench_jax.mcp.runs import RUNS_ROOT_VARIABLE, StoredRuns
from sfbench_jax.mcp.strict import strict_tool
from sfbench_jax.mcp.tools import GROUP_ORDER, PURE, ToolDef, declared_tools, served_function

__all__ = ["SERVER_VERSION", "ServerConfig", "build_server", "collect_tools", "main",
           "tool_groups_of"]

SERVER_VERSION = "0.1.0"
LogLevel = Literal["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"]

_GROUP_TITLES = {
    "prognostics": "prognostics-server",
    "maintenance": "maintenance-server",
    "battery": "battery-prognostics-server",
    "benchmark": "forecasting-benchmark",
}


@dataclass(frozen=True)
class ServerConfig:
    """How to assemble a server.

    Attributes:
        data_root: Folder holding ``phm/`` (and ``forecasting/`` for the benchmark tools), or
            None to serve the bundled datasets only (C-MAPSS FD001, ETTh1).
        groups: Tool groups to serve, a subset of `GROUP_ORDER` (default: all of them).
        name: Server name reported to clients.
        warmup: Call every tool's warm-up once while building, so first calls are not compiles.
        log_level: Server log level (logs go to stderr, never to the stdio protocol stream).
        runs_root: Folder holding the stored sfbench runs the benchmark tools may open by folder
            name, or None (a tool asked for a stored run then says how to set it).
        store_roots: Further folders where a run's candidate store may lie (``train.store_dir``);
            no folder outside the runs root and these is ever read for a stored run.
        allow_host_models: Rebuild stored runs of host models (``external`` imports the code its
            manifest names, ``chronos2`` reads the folder it names): only for a trusted runs root.
        call_timeout_s: Per-call time budget in seconds; a call past it is a tool error.
        client_computations: Forecasting computations (the exclusive tools) one client may have running or
            waiting at once; one more is refused at once (`guard.CallGuard`).
    """

    data_root: Path | None = None
    groups: tuple[str, ...] = GROUP_ORDER
    name: str = "sfbench-mcp"
    warmup: bool = False
    log_level: LogLevel = "WARNING"
    runs_root: Path | None = None
    store_roots: tuple[Path, ...] = ()
    allow_host_models: bool = False
    call_timeout_s: float = DEFAULT_CALL_TIMEOUT_S
    client_computations: int = DEFAULT_CLIENT_COMPUTATIONS

    def __post_init__(self) -> None:
        unknown = [g for g in self.groups if g not in GROUP_ORDER]
        if unknown or not self.groups:
            raise ValueError(f"unknown or empty tool groups {unknown or list(self.groups)}; "
                             f"choose from {list(GROUP_ORDER)}")
        if len(set(self.groups)) != len(self.groups):
            raise ValueError(f"tool groups repeat: {list(self.groups)}")
        if self.store_roots and self.runs_root is None:
            raise ValueError("--store-root needs --runs-root: store roots serve the stored runs")
        CallGuard(call_timeout_s=self.call_timeout_s,
                  client_computations=self.client_computations)  # validates the budget and the share


def collect_tools(config: ServerConfig) -> list[ToolDef]:
    """The tool declarations of the configured groups, in registry order.

    Args:
        config: Server configuration.

    Returns:
        Tool declarations.

    Raises:
        ValueError: If two tools share a name.
    """
    tools: list[ToolDef] = []
    seen: dict[str, str] = {}
    for tool in declared_tools():
        if tool.group not in config.groups:
            continue
        if tool.name in seen:
            raise ValueError(f"tool {tool.name!r} declared by both {seen[tool.name]} "
                             f"and {tool.group}")
        seen[tool.name] = tool.group
        tools.append(tool)
    return tools


def _instructions(config: ServerConfig) -> str:
    groups = ", ".join(_GROUP_TITLES[g] for g in config.groups)
    data = ("" if config.data_root is not None else
            " This server runs without a data root: C-MAPSS FD001 and ETTh1 are bundled; a tool "
            "on another dataset returns an error naming --data-root.")
    return ("Deterministic prognostics and health management (PHM) tools over registered real "
            f"datasets (groups: {groups}). Datasets are opened by registered name only; call "
            "list_phm_datasets to discover them. Tools that load data return short handles "
            "(e.g. ds:cmapss_fd001:test) which later tools accept. Results are small JSON "
            "objects with units and the kernel used. Arguments a tool does not declare are "
            f"errors. Stored forecasting runs are opened by folder name only, under the runs root "
            f"the operator set.{data}")


def build_server(config: ServerConfig) -> MCPServer:
    """Assemble an `MCPServer` with one tool per declaration of the selected groups.

    Each tool gets the shared data store bound and strict arguments (an undeclared argument
    name is a tool error listing the valid ones).

    Args:
        config: Server configuration.

    Returns:
        The server, ready for ``run()`` or for an in-process ``mcp.Client(server)``.
    """
    runs = None if config.runs_root is None else StoredRuns(
        Path(config.runs_root), tuple(Path(p) for p in config.store_roots), config.allow_host_models)
    store = DataStore(config.data_root, runs=runs)
    guard = CallGuard(call_timeout_s=config.call_timeout_s, hidden_paths=_hidden_paths(config),
                      client_computations=config.client_computations)
    declarations = collect_tools(config)
    tools = [guarded_tool(strict_tool(Tool.from_function(
        served_function(tool, store), name=tool.name, annotations=PURE,
        meta={"group": tool.group, "server": _GROUP_TITLES[tool.group],
              "offline_stub": tool.is_offline_stub})), guard, exclusive=tool.is_exclusive)
        for tool in declarations]
    server = MCPServer(config.name, version=SERVER_VERSION, instructions=_instructions(config),
                       log_level=config.log_level, tools=tools)
    if config.warmup:
        for tool in declarations:
            if tool.warmup is not None:
                tool.warmup(store)
    return server


def _hidden_paths(config: ServerConfig) -> dict[str, Path]:
    """Server folders an error text may name, by the label shown instead (the longest is replaced first)."""
    hidden = {"<data root>": config.data_root, "<runs root>": config.runs_root, "<working folder>": Path.cwd(),
              "<home>": Path.home(), "<python>": Path(sys.prefix)}
    hidden |= {f"<store root {index + 1}>": root for index, root in enumerate(config.store_roots)}
    return {label: Path(path) for label, path in hidden.items() if path is not None}


def tool_groups_of(config: ServerConfig) -> dict[str, str]:
    """Map each served tool name to its group, without building a server.

    Args:
        config: Server configuration.

    Returns:
        Tool name -> group.
    """
    return {tool.name: tool.group for tool in collect_tools(config)}


def _parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="sfbench-mcp", allow_abbrev=False,
        description="Serve the sfbench PHM kernels and benchmark tools over MCP.")
    parser.add_argument("--transport", choices=("stdio", "streamable-http"), default="stdio",
                        help="stdio (default; for a client that spawns this process) or "
                             "streamable-http")
    parser.add_argument("--host", default="127.0.0.1",
                        help="HTTP bind address (default loopback; any other needs --allow-remote)")
    parser.add_argument("--port", type=int, default=8765, help="HTTP port, 1-65535 (default 8765)")
    parser.add_argument("--path", default="/mcp", help="HTTP endpoint path (default /mcp)")
    parser.add_argument("--allow-remote", action="store_true",
                        help="allow a non-loopback --host; then a bearer token (SFBENCH_MCP_TOKEN "
                             "or --token-file) and --allowed-host are required")
    parser.add_argument("--token-file", type=Path, default=None,
                        help=f"file holding the HTTP bearer token (or set {TOKEN_VARIABLE}); the "
                             "token itself is never a command-line argument")
    parser.add_argument("--allowed-host", action="append", default=None, metavar="NAME[:PORT]",
                        help="Host header value clients use (repeatable; NAME:* for any port)")
    parser.add_argument("--allowed-origin", action="append", default=None, metavar="ORIGIN",
                        help="extra Origin header value accepted (repeatable), e.g. https://app.example.org")
    parser.add_argument("--data-root", type=Path, default=None,
                        help="shared data folder (defaults to $SFBENCH_DATA_ROOT); without one "
                             "the server serves the bundled C-MAPSS FD001 and ETTh1 and every "
                             "tool that needs no data")
    parser.add_argument("--runs-root", type=Path, default=None,
                        help=f"folder of stored sfbench runs severity_curves may open by name "
                             f"(defaults to ${RUNS_ROOT_VARIABLE}; none: no stored runs)")
    parser.add_argument("--store-root", type=Path, action="append", default=None,
                        help="folder where stored runs' candidate stores may lie besides the runs "
                             "root (repeatable); runs of trained models need it, e.g. the sfbench "
                             "command's default store $SFBENCH_STORE_DIR, else "
                             "~/.cache/sfbench-jax/candidates (untrained models such as SeasonalNaive "
                             "read no store)")
    parser.add_argument("--allow-host-models", action="store_true",
                        help="also rebuild stored runs of host models (external imports the code "
                             "their manifest names): only for a runs root you trust")
    parser.add_argument("--call-timeout", type=float, default=DEFAULT_CALL_TIMEOUT_S,
                        metavar="SECONDS", help=f"per-call time budget (default "
                        f"{DEFAULT_CALL_TIMEOUT_S:g}, at most {MAX_CALL_TIMEOUT_S:g})")
    parser.add_argument("--client-computations", type=int, default=DEFAULT_CLIENT_COMPUTATIONS, metavar="N",
                        help="forecasting computations one client may have running or waiting at once; one "
                             f"more is refused at once (default {DEFAULT_CLIENT_COMPUTATIONS})")
    parser.add_argument("--group", action="append", choices=GROUP_ORDER, default=None,
                        help="serve only this tool group (repeatable; default: all groups)")
    parser.add_argument("--warmup", action="store_true",
                        help="compile every kernel once at start-up")
    parser.add_argument("--log-level", default="WARNING",
                        choices=("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"))
    return parser.parse_args(argv)


def _folder(flag: str, value: Path | None, variable: str | None = None) -> Path | None:
    """A folder flag (else its environment variable, if any), checked to be a directory."""
    source = flag
    if value is None and variable and os.environ.get(variable):
        value, source = Path(os.environ[variable]), f"${variable}"
    if value is not None and not Path(value).expanduser().is_dir():
        raise ValueError(f"{source} {value} is not a directory; pass an existing folder (see --help)")
    return None if value is None else Path(value).expanduser()


def _configs(args: argparse.Namespace) -> tuple[ServerConfig, HttpSettings | None]:
    """The server and HTTP settings from the flags and environment (every check before any work).

    Raises:
        ValueError: a bad flag value, in one line naming the flag and the fix.
    """
    try:
        data_root = _folder("--data-root", args.data_root, "SFBENCH_DATA_ROOT")
    except ValueError as error:
        raise ValueError(f"{error}; or nothing, to serve the bundled data only") from None
    runs_root = _folder("--runs-root", args.runs_root, RUNS_ROOT_VARIABLE)
    store_roots = tuple(Path(_folder("--store-root", root) or root) for root in args.store_root or ())
    config = ServerConfig(data_root=data_root, groups=tuple(dict.fromkeys(args.group or GROUP_ORDER)),
                          warmup=args.warmup, log_level=args.log_level, runs_root=runs_root,
                          store_roots=store_roots, allow_host_models=args.allow_host_models,
                          call_timeout_s=args.call_timeout, client_computations=args.client_computations)
    http = HttpSettings(host=args.host, port=args.port, path=args.path, allow_remote=args.allow_remote,
                        token=read_token(args.token_file, os.environ),
                        allowed_hosts=tuple(dict.fromkeys(args.allowed_host or ())),
                        allowed_origins=tuple(dict.fromkeys(args.allowed_origin or ())))
    if args.transport == "stdio":
        return config, None
    http.check_port_free()
    return config, http


def main(argv: Sequence[str] | None = None) -> int:
    """Console entry point ``sfbench-mcp``.

    Args:
        argv: Command-line arguments (``sys.argv[1:]`` if None).

    Returns:
        Process exit status: 0, or 2 after a one-line error on stderr for a bad setting.
    """
    arguments = list(sys.argv[1:] if argv is None else argv)
    if any(a.startswith("--token") and not a.startswith("--token-file") for a in arguments):
        print(f"sfbench-mcp: the bearer token is never a command-line argument (other users can read "
              f"it there); set {TOKEN_VARIABLE} or pass --token-file PATH", file=sys.stderr)
        return 2
    args = _parse_args(arguments)
    try:
        config, http = _configs(args)
    except ValueError as error:
        print(f"sfbench-mcp: {error}", file=sys.stderr)
        return 2
    server = build_server(config)
    if http is None:
        server.run("stdio")
    else:
        serve_http(server, http, log_level=args.log_level)
    return 0


if __name__ == "__main__":
    sys.exit(main())
