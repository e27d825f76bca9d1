"""Wheel smoke, MCP part: start an installed `sfbench-mcp` over stdio with the official MCP client, list its
tools and load the bundled C-MAPSS FD001 (so the packaged resources are read), then print one line.

Usage (run with the Python of the environment the wheel was installed into):

    python .ci/mcp_tools_list.py /path/to/venv/bin/sfbench-mcp

The server gets the client's default environment (no SFBENCH_DATA_ROOT), so it serves the bundled data only.
Exits non-zero, naming what is missing, when the round trip fails.
"""

from __future__ import annotations

import sys

import anyio
from mcp import Client, StdioServerParameters

#: Tools that must be listed: one per family that the server registers without a data root.
EXPECTED_TOOLS = frozenset({"load_dataset", "train_rul_model", "predict_rul", "calculate_maintenance_cost",
                            "assess_safety_risk", "calculate_bearing_frequencies", "seasonal_naive_robustness"})


async def round_trip(command: str) -> tuple[list[str], dict]:
    """Tool names from tools/list and the summary of the bundled FD001 test split."""
    async with Client(StdioServerParameters(command=command)) as client:
        names = sorted(tool.name for tool in (await client.list_tools()).tools)
        loaded = await client.call_tool("load_dataset", {"dataset_name": "cmapss_fd001", "split": "test"})
    if loaded.is_error:
        raise SystemExit(f"load_dataset on the bundled cmapss_fd001 failed: {loaded.content[0].text}")
    return names, dict(loaded.structured_content)


def main(argv: list[str]) -> int:
    """Runs the round trip against the `sfbench-mcp` executable named in `argv[0]`."""
    if len(argv) != 1:
        print("usage: python .ci/mcp_tools_list.py PATH/TO/sfbench-mcp", file=sys.stderr)
        return 2
    names, loaded = anyio.run(round_trip, argv[0])
    missing = sorted(EXPECTED_TOOLS - set(names))
    if missing:
        print(f"sfbench-mcp lists {len(names)} tools but not {', '.join(missing)}", file=sys.stderr)
        return 1
    units = loaded["summary"]["n_units"]
    print(f"sfbench-mcp over stdio: tools/list returned {len(names)} tools; bundled cmapss_fd001 test split: "
          f"{units} units")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
