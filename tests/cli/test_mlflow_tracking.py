"""`tracking=mlflow` against a real `mlflow server` on 127.0.0.1 (its own SQLite store and artifact folder in a
temporary folder), read back through MLflow's client: a 2-job multirun is a parent run with both jobs as children,
each with its config as params, its summary numbers as metrics, its files as artifacts and its run key and code
revision as tags; `sfbench-report mlflow` logs nothing twice; with the server stopped a run still completes and
says so in one line. Slow: the server alone takes 10-90 s to start on a shared 2-core machine."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest

pytestmark = pytest.mark.slow  # a real MLflow server (10-90 s to start) and three sfbench processes


def require_mlflow() -> None:
    try:
        import mlflow  # noqa: F401
    except ImportError:
        if os.environ.get("SFBENCH_REQUIRE_EXTRAS") == "1":
            pytest.fail("mlflow is not installed (pip install -e '.[mlflow]'); CI must run these tests")
        pytest.skip("mlflow is not installed (pip install -e '.[mlflow]')")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def healthy(uri: str) -> bool:
    try:
        with urllib.request.urlopen(f"{uri}/health", timeout=2) as response:
            return response.status == 200
    except OSError:
        return False


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, subprocess.Popen]]:
    require_mlflow()
    store = tmp_path_factory.mktemp("mlflow")
    port = free_port()
    uri = f"http://127.0.0.1:{port}"
    log = (store / "server.log").open("w")
    process = subprocess.Popen(
        [str(Path(sys.executable).parent / "mlflow"), "server", "--host", "127.0.0.1", "--port", str(port),
         "--workers", "1", "--backend-store-uri", f"sqlite:///{store / 'mlflow.db'}",
         "--artifacts-destination", str(store / "artifacts")], stdout=log, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 300
    while not healthy(uri):
        if process.poll() is not None or time.monotonic() > deadline:
            process.kill()
            pytest.fail("mlflow server did not start: " + (store / "server.log").read_text()[-2000:])
        time.sleep(1)
    yield uri, process
    process.terminate()
    process.wait(timeout=60)
    log.close()


def sfbench(*overrides: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    environment = {**os.environ, **(env or {})}
    environment.pop("MLFLOW_TRACKING_URI", None)
    return subprocess.run([str(Path(sys.executable).parent / "sfbench"), *overrides], capture_output=True,
                          text=True, env=environment, timeout=1200, check=False)


def test_multirun_is_a_parent_with_its_jobs_and_a_stopped_server_costs_one_line(
        server: tuple[str, subprocess.Popen], tmp_path: Path) -> None:
    from mlflow.tracking import MlflowClient

    uri, process = server
    sweep = tmp_path / "sweep"
    completed = sfbench("-m", "model=seasonal_naive", "eval.seed=0,1", "profile=tiny", "tracking=mlflow",
                        f"tracking.uri={uri}", f"hydra.sweep.dir={sweep}")
    assert completed.returncode == 0, completed.stderr[-3000:]
    assert "logged to MLflow: 2 job run(s) under one parent run (2 new)" in completed.stderr

    client = MlflowClient(tracking_uri=uri)
    experiment = client.get_experiment_by_name("sfbench")
    runs = client.search_runs([experiment.experiment_id])
    parents = [r for r in runs if r.data.tags.get("sfbench.sweep_dir") == str(sweep.resolve())]
    assert len(parents) == 1 and len(runs) == 3
    children = [r for r in runs if r.data.tags.get("mlflow.parentRunId") == parents[0].info.run_id]
    jobs = sorted(p for p in sweep.iterdir() if (p / "run_record.json").is_file())
    assert len(jobs) == 2 and sorted(r.info.run_name for r in children) == [job.name for job in jobs]
    for child in children:
        job = sweep / child.info.run_name
        row = pd.read_csv(job / "summary.csv").iloc[0]
        manifest = json.loads((job / "manifest.json").read_text())
        for name in ("d_w", "mse_c", "mse_w", "d_w_ci_lo", "d_w_ci_hi", "mpc"):
            assert child.data.metrics[name] == pytest.approx(float(row[name]), rel=1e-12, abs=0.0)
        assert child.data.params["eval.k"] == "200" and child.data.params["model.name"] == "seasonal_naive"
        assert child.data.params["eval.seed"] == str(manifest["config"]["eval"]["seed"])
        assert child.data.tags["sfbench.code_revision"] == str(manifest["code_revision"])
        assert len(child.data.tags["sfbench.run_key"]) == 64
        artifacts = {item.path for item in client.list_artifacts(child.info.run_id)}
        assert {"summary.csv", "manifest.json", "per_window.parquet", "run_record.json"} <= artifacts
    assert len({c.data.tags["sfbench.run_key"] for c in children}) == 2

    again = subprocess.run([sys.executable, "-m", "sfbench_jax.cli.sfbench_report", "mlflow", "--runs", str(sweep)],
                           capture_output=True, text=True, env={**os.environ, "MLFLOW_TRACKING_URI": uri},
                           timeout=600, check=False)
    assert again.returncode == 0, again.stderr[-2000:]
    assert "2 run(s); 0 logged now, 2 already logged" in again.stdout
    assert len(client.search_runs([experiment.experiment_id])) == 3  # nothing logged twice

    process.terminate()
    process.wait(timeout=60)
    single = tmp_path / "single"
    stopped = sfbench("model=seasonal_naive", "profile=tiny", "tracking=mlflow", f"tracking.uri={uri}",
                      f"hydra.run.dir={single}")
    assert stopped.returncode == 0, stopped.stderr[-3000:]
    assert (single / "run_record.json").is_file() and (single / "summary.csv").is_file()
    warnings = [line for line in stopped.stderr.splitlines() if "tracking failed" in line]
    assert len(warnings) == 1 and "cannot be reached" in warnings[0] and str(single) in warnings[0], stopped.stderr
