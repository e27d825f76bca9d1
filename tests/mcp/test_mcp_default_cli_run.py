"""The MCP stored-run tools on a run the `sfbench` command wrote with its default settings (issue 30, defect 11):
the default candidate store ($SFBENCH_STORE_DIR, else ~/.cache/sfbench-jax/candidates) lies outside the server's
runs root, and a SeasonalNaive run reads no store, so `severity_curves` answers without `--store-root`; the
server's `--help` names that default store. Real server over stdio, real run made by the CLI."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from mcp import Client, StdioServerParameters
from mcp_helpers import subprocess_env

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module")
def runs_root(tmp_path_factory: pytest.TempPathFactory, data_root: Path) -> Path:
    """runs/etth1_sn: `sfbench model=seasonal_naive eval=quick`, nothing else set (the CLI's default store)."""
    base = tmp_path_factory.mktemp("default_run")
    environment = {key: value for key, value in os.environ.items() if key != "SFBENCH_STORE_DIR"}
    completed = subprocess.run(
        [str(Path(sys.executable).parent / "sfbench"), "model=seasonal_naive", "eval=quick", "eval.progress=false",
         "figures=false", f"hydra.run.dir={base / 'runs' / 'etth1_sn'}"],
        capture_output=True, text=True, env={**environment, "SFBENCH_DATA_ROOT": str(data_root)}, timeout=900,
        check=False)
    assert completed.returncode == 0, completed.stderr[-3000:]
    return base / "runs"


@pytest.mark.slow  # one real run by the CLI and a server start (about 30 s on 2 cores)
async def test_severity_curves_on_a_default_cli_run(runs_root: Path, data_root: Path) -> None:
    params = StdioServerParameters(command=sys.executable, args=[
        "-m", "sfbench_jax.mcp.server", "--data-root", str(data_root), "--group", "benchmark",
        "--runs-root", str(runs_root)], env=subprocess_env())
    async with Client(params) as client:
        result = await client.call_tool("severity_curves", {"dataset": "etth1", "run": "etth1_sn", "k": 200,
                                                            "severities": [0.0, 1.0]})
    assert not result.is_error, result.content
    curves = result.structured_content["curves"]
    assert curves["model"] == "seasonal_naive" and curves["run"] == "etth1_sn" and curves["severities"] == [0.0, 1.0]


def test_help_names_the_default_store() -> None:
    completed = subprocess.run([sys.executable, "-m", "sfbench_jax.mcp.server", "--help"], capture_output=True,
                               text=True, env={**subprocess_env(), "COLUMNS": "200"}, timeout=120, check=True)
    text = " ".join(completed.stdout.split())
    assert "$SFBENCH_STORE_DIR, else ~/.cache/sfbench-jax/candidates" in text, completed.stdout
