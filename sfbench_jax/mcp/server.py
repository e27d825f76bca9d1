"""The ``sfbench-mcp`` server: assembly from the tool registry, transports and the entry point.

What lives here: `ServerConfig` (frozen), `build_server` (an `MCPServer` holding the selected tool
groups), `tool_groups_of` (tool name -> group, for clients that want PHMForge's server split) and
`main`, the console script: it is the only place that reads ``SFBENCH_DATA_ROOT`` or flags.
What does not: tool logic (``sfbench_jax.mcp.tools``).

Run it::

    sfbench-mcp --data-root ../shared/data                     # stdio (default)
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

from sfbench_jax.mcp.datasets import DataStore
from sfbench_jax.mcp.tools import GROUP_ORDER, PURE, ToolContext, ToolDef, group_builders

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
        data_root: Folder holding ``phm/`` (and ``forecasting/`` for the benchmark tools).
        groups: Tool groups to serve, a subset of `GROUP_ORDER` (default: all of them).
        name: Server name reported to clients.
        warmup: Call every tool's warm-up once while building, so first calls are not compiles.
        log_level: Server log level (logs go to stderr, never to the stdio protocol stream).
    """

    data_root: Path
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


def collect_tools(config: ServerConfig, store: DataStore | None = None) -> list[ToolDef]:
    """Build the tool declarations of the configured groups, in registry order.

    Args:
        config: Server configuration.
        store: Data store to share; a new one on ``config.data_root`` if None.

    Returns:
        Tool declarations.

    Raises:
        ValueError: If two groups declare the same tool name.
    """
    context = ToolContext(store=store or DataStore(config.data_root))
    builders = group_builders()
    tools: list[ToolDef] = []
    seen: dict[str, str] = {}
    for group in GROUP_ORDER:
        if group not in config.groups:
            continue
        for tool in builders[group](context):
            if tool.name in seen:
                raise ValueError(f"tool {tool.name!r} declared by both {seen[tool.name]} "
                                 f"and {group}")
            seen[tool.name] = group
            tools.append(tool)
    return tools


def build_server(config: ServerConfig) -> MCPServer:
    """Assemble an `MCPServer` with one tool per declaration of the selected groups.

    Args:
        config: Server configuration.

    Returns:
        The server, ready for ``run()`` or for an in-process ``mcp.Client(server)``.
    """
    tools = collect_tools(config)
    groups = ", ".join(_GROUP_TITLES[g] for g in config.groups)
    server = MCPServer(
        config.name,
        version=SERVER_VERSION,
        instructions=(
            "Deterministic prognostics and health management (PHM) tools over registered real "
            f"datasets (groups: {groups}). Datasets are opened by registered name only; call "
            "list_phm_datasets to discover them. Tools that load data return short handles "
            "(e.g. ds:cmapss_fd001:test) which later tools accept. Results are small JSON "
            "objects with units and the kernel used."),
        log_level=config.log_level,
    )
    for tool in tools:
        server.add_tool(tool.fn, name=tool.name, annotations=PURE,
                        meta={"group": tool.group, "server": _GROUP_TITLES[tool.group],
                              "offline_stub": tool.is_offline_stub})
        if config.warmup and tool.warmup is not None:
            tool.warmup()
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
                        help="shared data folder; defaults to $SFBENCH_DATA_ROOT")
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
    if data_root is None:
        print("sfbench-mcp: no data root; pass --data-root PATH or set SFBENCH_DATA_ROOT",
              file=sys.stderr)
        return 2
    if not Path(data_root).expanduser().is_dir():
        print(f"sfbench-mcp: data root {data_root} is not a directory; pass --data-root PATH "
              "pointing at the shared data folder", file=sys.stderr)
        return 2
    groups = tuple(dict.fromkeys(args.group or GROUP_ORDER))
    config = ServerConfig(data_root=Path(data_root), groups=groups,
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
