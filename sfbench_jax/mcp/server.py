"""The ``sfbench-mcp`` server: assembly from the tool registry, transports and the entry point.

What lives here: `ServerConfig` (frozen), `build_server` (an `MCPServer` holding the selected tool
groups, each tool bound to the data store and with strict arguments), `tool_groups_of` (tool
name -> group, for clients that want PHMForge's server split) and `main`, the console script: it
is the only place that reads ``SFBENCH_DATA_ROOT`` or flags. What does not: tool logic
(``sfbench_jax.mcp.tools``) and argument strictness (``sfbench_jax.mcp.strict``).

With no data root the server still starts: it serves every tool that needs no data, the
forecasting benchmark on the bundled ETTh1 and the RUL tools on the bundled C-MAPSS FD001; a tool
on any other dataset answers with a tool error naming the dataset and ``--data-root``.

Run it::

    sfbench-mcp                                                # stdio, bundled data only
    sfbench-mcp --data-root ../shared/data                     # stdio, every dataset
    sfbench-mcp --transport streamable-http --port 8765        # http://127.0.0.1:8765/mcp
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
    """

    data_root: Path | None = None
    groups: tuple[str, ...] = GROUP_ORDER
    name: str = "sfbench-mcp"
    warmup: bool = False
    log_level: LogLevel = "WARNING"

    def __post_init__(self) -> None:
        unknown = [g for g in self.groups if g not in GROUP_ORDER]
        if unknown or not self.groups:
            raise ValueError(f"unknown or empty tool groups {unknown or list(self.groups)}; "
                             f"choose from {list(GROUP_ORDER)}")
        if len(set(self.groups)) != len(self.groups):
            raise ValueError(f"tool groups repeat: {list(self.groups)}")


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
            f"errors.{data}")


def build_server(config: ServerConfig) -> MCPServer:
    """Assemble an `MCPServer` with one tool per declaration of the selected groups.

    Each tool gets the shared data store bound and strict arguments (an undeclared argument
    name is a tool error listing the valid ones).

    Args:
        config: Server configuration.

    Returns:
        The server, ready for ``run()`` or for an in-process ``mcp.Client(server)``.
    """
    store = DataStore(config.data_root)
    declarations = collect_tools(config)
    tools = [strict_tool(Tool.from_function(
        served_function(tool, store), name=tool.name, annotations=PURE,
        meta={"group": tool.group, "server": _GROUP_TITLES[tool.group],
              "offline_stub": tool.is_offline_stub})) for tool in declarations]
    server = MCPServer(config.name, version=SERVER_VERSION, instructions=_instructions(config),
                       log_level=config.log_level, tools=tools)
    if config.warmup:
        for tool in declarations:
            if tool.warmup is not None:
                tool.warmup(store)
    return server


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
        prog="sfbench-mcp",
        description="Serve the sfbench PHM kernels and benchmark tools over MCP.")
    parser.add_argument("--transport", choices=("stdio", "streamable-http"), default="stdio",
                        help="stdio (default; for a client that spawns this process) or "
                             "streamable-http")
    parser.add_argument("--host", default="127.0.0.1", help="HTTP bind address (default loopback)")
    parser.add_argument("--port", type=int, default=8765, help="HTTP port (default 8765)")
    parser.add_argument("--path", default="/mcp", help="HTTP endpoint path (default /mcp)")
    parser.add_argument("--data-root", type=Path, default=None,
                        help="shared data folder (defaults to $SFBENCH_DATA_ROOT); without one "
                             "the server serves the bundled C-MAPSS FD001 and ETTh1 and every "
                             "tool that needs no data")
    parser.add_argument("--group", action="append", choices=GROUP_ORDER, default=None,
                        help="serve only this tool group (repeatable; default: all groups)")
    parser.add_argument("--warmup", action="store_true",
                        help="compile every kernel once at start-up")
    parser.add_argument("--log-level", default="WARNING",
                        choices=("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"))
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    """Console entry point ``sfbench-mcp``.

    Args:
        argv: Command-line arguments (``sys.argv[1:]`` if None).

    Returns:
        Process exit status.
    """
    args = _parse_args(argv)
    data_root = args.data_root or (Path(os.environ["SFBENCH_DATA_ROOT"])
                                   if os.environ.get("SFBENCH_DATA_ROOT") else None)
    if data_root is not None and not Path(data_root).expanduser().is_dir():
        print(f"sfbench-mcp: data root {data_root} is not a directory; pass --data-root PATH "
              "pointing at the shared data folder, or nothing to serve the bundled data only",
              file=sys.stderr)
        return 2
    groups = tuple(dict.fromkeys(args.group or GROUP_ORDER))
    config = ServerConfig(data_root=data_root, groups=groups,
                          warmup=args.warmup, log_level=args.log_level)
    server = build_server(config)
    if args.transport == "stdio":
        server.run("stdio")
    else:
        server.run("streamable-http", host=args.host, port=args.port,
                   streamable_http_path=args.path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
