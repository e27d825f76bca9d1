"""`tracking=mlflow` against a real `mlflow server` on 127.0.0.1 (its own SQLite store and artifact folder in a
temporary folder, one per module), read back through MLflow's client: a 2-job multirun in a folder whose path has an
apostrophe is a parent run with both jobs as children, each with its config as params, its summary numbers as
metrics, its recorded files as artifacts and its run key and code revision as tags; `sfbench-report mlflow` logs
nothing twice; with no server a run still completes and says so in one line.

Issue 43 items 13-15 against the same server, on one real stored run (SeasonalNaive, `eval=quick`, its job run in
the test's process) copied per test, each test in an experiment of its own: only the files the run's record covers
are uploaded, never a link or an unrecorded file (14); two runs of the same settings with other numbers are two
MLflow runs, and numbers changed on the server are refused in one line (13); a server answering 500 or dropping
the connection mid-way, and two loggers at once, cost one line (15). Slow: the server alone takes 10-90 s to start
on a shared 2-core machine."""

from __future__ import annotations

import http.server
import json
import os
import shutil
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest
from report.summaries import rewrite_consistently
from sfbench_cli import run_in_process

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

    uri, _ = server
    sweep = tmp_path / "Bob's sweep"  # an apostrophe: once never loggable (issue 43, item 15)
    completed = sfbench("-m", "model=seasonal_naive", "eval.seed=0,1", "profile=tiny", "tracking=mlflow",
                        f"tracking.uri={uri}", f'hydra.sweep.dir="{sweep}"')
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

    nobody = f"http://127.0.0.1:{free_port()}"  # no server there (the module's server stays for the other tests)
    single = tmp_path / "single"
    stopped = sfbench("model=seasonal_naive", "profile=tiny", "tracking=mlflow", f"tracking.uri={nobody}",
                      f"hydra.run.dir={single}")
    assert stopped.returncode == 0, stopped.stderr[-3000:]
    assert (single / "run_record.json").is_file() and (single / "summary.csv").is_file()
    warnings = [line for line in stopped.stderr.splitlines() if "tracking failed" in line]
    assert len(warnings) == 1 and "cannot be reached" in warnings[0] and str(single) in warnings[0], stopped.stderr


#: The cheap real run of the issue-43 tests (SeasonalNaive on ETTh1, 1,000 windows).
COMMON = ["model=seasonal_naive", "eval=quick", "dataset=etth1", "eval.bootstrap_draws=200", "figures=false"]


@pytest.fixture(scope="module")
def stored_run(tmp_path_factory: pytest.TempPathFactory, session_cache_dir: Path) -> Path:
    """One real completed run (its job in this process), copied by each test that changes it."""
    folder = tmp_path_factory.mktemp("stored") / "run"
    run_in_process([*COMMON, f"cache_dir={session_cache_dir}"], folder)
    (folder / "run.log").unlink()  # the helper's copy of the log: not a file of a run folder
    return folder


def copy_run(stored_run: Path, target: Path) -> Path:
    shutil.copytree(stored_run, target)
    return target


def report_mlflow(uri: str, experiment: str, *folders: Path) -> subprocess.CompletedProcess:
    """`sfbench-report mlflow --runs FOLDER...` through its entry point in this process, into `experiment`."""
    import contextlib
    import io

    from sfbench_jax.cli.sfbench_report import main

    out, err = io.StringIO(), io.StringIO()
    saved = {name: os.environ.get(name) for name in ("MLFLOW_TRACKING_URI", "MLFLOW_EXPERIMENT_NAME")}
    os.environ.update(MLFLOW_TRACKING_URI=uri, MLFLOW_EXPERIMENT_NAME=experiment)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            status = main(["mlflow", "--runs", *map(str, folders)])
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
    return subprocess.CompletedProcess(["sfbench-report", "mlflow"], status, out.getvalue(), err.getvalue())


def logged_runs(uri: str, experiment: str) -> list:
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=uri)
    found = client.get_experiment_by_name(experiment)
    return [] if found is None else list(client.search_runs([found.experiment_id]))


def test_only_the_recorded_files_are_uploaded_never_a_link_or_an_unrecorded_file(
        server: tuple[str, subprocess.Popen], stored_run: Path, tmp_path: Path) -> None:
    """Issue 43 item 14: a planted link to a private key and an unrecorded file are not uploaded; a recorded file
    replaced by a link refuses the run in one line."""
    from mlflow.tracking import MlflowClient

    uri, _ = server
    secret = tmp_path / "id_ed25519"
    secret.write_text("PRIVATE KEY 0123456789")
    run = copy_run(stored_run, tmp_path / "run")
    (run / "notes.txt").symlink_to(secret)
    (run / "big.bin").write_bytes(b"\0" * 4096)  # stands in for a 300 MB file no record covers
    (run / ".hydra").mkdir(exist_ok=True)
    (run / ".hydra" / "secret.yaml").symlink_to(secret)
    completed = report_mlflow(uri, "item14", run)
    assert completed.returncode == 0, completed.stderr
    (logged,) = logged_runs(uri, "item14")
    client = MlflowClient(tracking_uri=uri)
    uploaded = {item.path for item in client.list_artifacts(logged.info.run_id)}
    recorded = set(json.loads((run / "run_record.json").read_text())["files"])
    assert uploaded == recorded | {"run_record.json"}
    downloaded = Path(client.download_artifacts(logged.info.run_id, "", str(tmp_path / "down")))
    files = [path for path in downloaded.rglob("*") if path.is_file()]
    assert files and all("PRIVATE KEY" not in path.read_text(errors="replace") for path in files)

    linked = copy_run(stored_run, tmp_path / "linked")
    outside = tmp_path / "summary_outside.csv"
    shutil.move(linked / "summary.csv", outside)
    (linked / "summary.csv").symlink_to(outside)  # same bytes: the record verifies, the upload must not follow it
    refused = report_mlflow(uri, "item14-link", linked)
    assert refused.returncode == 1 and len(refused.stderr.strip().splitlines()) == 1, refused.stderr
    assert "summary.csv is a symbolic link" in refused.stderr and "Traceback" not in refused.stderr
    assert all(r.data.tags.get("sfbench.logged") != "complete" for r in logged_runs(uri, "item14-link"))


def test_two_runs_of_the_same_settings_are_two_mlflow_runs_and_changed_numbers_are_refused(
        server: tuple[str, subprocess.Popen], stored_run: Path, tmp_path: Path) -> None:
    """Issue 43 item 13: a second run of the same settings with other numbers was reported "already logged" and
    MLflow kept the first's numbers; numbers changed on the server under a run's key were kept silently."""
    from mlflow.tracking import MlflowClient

    uri, _ = server
    first = copy_run(stored_run, tmp_path / "first")
    second = copy_run(stored_run, tmp_path / "second")
    rewrite_consistently(second, scale=1.5)  # the same settings, other numbers that agree with each other
    assert report_mlflow(uri, "item13", first).stdout.strip().endswith("1 logged now, 0 already logged")
    again = report_mlflow(uri, "item13", second)
    assert again.returncode == 0 and "1 logged now, 0 already logged" in again.stdout, again.stdout + again.stderr
    by_folder = {r.data.tags["sfbench.run_dir"]: r for r in logged_runs(uri, "item13")}
    assert set(by_folder) == {str(first), str(second)}
    for folder, logged in by_folder.items():
        row = pd.read_csv(Path(folder) / "summary.csv").iloc[0]
        assert logged.data.metrics["mse_c"] == pytest.approx(float(row["mse_c"]), rel=1e-12, abs=0.0)
    assert by_folder[str(first)].data.tags["sfbench.run_key"] != by_folder[str(second)].data.tags["sfbench.run_key"]

    MlflowClient(tracking_uri=uri).log_metric(by_folder[str(first)].info.run_id, "mse_c", 123.0)
    changed = report_mlflow(uri, "item13", first)
    assert changed.returncode == 1 and len(changed.stderr.strip().splitlines()) == 1, changed.stderr
    assert "holds the key of" in changed.stderr and "metric mse_c is 123.0 there" in changed.stderr


class FailingProxy(http.server.ThreadingHTTPServer):
    """A tiny HTTP server on 127.0.0.1 in front of the real MLflow server: it forwards every request until the
    first `log-batch`, which it answers 500 (`mode="500"`), or from which on it drops every connection unanswered,
    as a server that died would (`mode="die"`)."""

    def __init__(self, upstream: str, mode: str) -> None:
        self.upstream, self.mode, self.dead = upstream, mode, False
        super().__init__(("127.0.0.1", 0), ProxyHandler)
        self.thread = threading.Thread(target=self.serve_forever, daemon=True)
        self.thread.start()

    @property
    def uri(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


class ProxyHandler(http.server.BaseHTTPRequestHandler):
    server: FailingProxy

    def log_message(self, *args: object) -> None:
        del args

    def forward(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.server.dead |= self.server.mode == "die" and "log-batch" in self.path
        if self.server.dead:
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)
            return
        if "log-batch" in self.path:
            self.send_response(500)
            self.send_header("Content-Type", "text/plain")
            self.end_headers()
            self.wfile.write(b"Internal Server Error")
            return
        request = urllib.request.Request(self.server.upstream + self.path, data=body or None, method=self.command,
                                         headers={k: v for k, v in self.headers.items() if k.lower() != "host"})
        try:
            with urllib.request.urlopen(request, timeout=60) as answer:
                status, headers, payload = answer.status, answer.headers, answer.read()
        except urllib.error.HTTPError as error:
            status, headers, payload = error.code, error.headers, error.read()
        self.send_response(status)
        for name, value in headers.items():
            if name.lower() not in ("transfer-encoding", "connection", "content-length"):
                self.send_header(name, value)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = forward


@pytest.mark.parametrize("mode", ["500", "die"])
def test_a_server_failing_midway_costs_one_line_and_the_run_is_logged_later(
        server: tuple[str, subprocess.Popen], stored_run: Path, tmp_path: Path, mode: str) -> None:
    """Issue 43 item 15: a tracking server answering 500 or dying mid-way gave 46-115 lines of traceback."""
    uri, _ = server
    proxy = FailingProxy(uri, mode)
    try:
        failed = report_mlflow(proxy.uri, f"item15-{mode}", stored_run)
    finally:
        proxy.shutdown()
        proxy.server_close()
    assert failed.returncode == 1, failed.stdout + failed.stderr
    assert len(failed.stderr.strip().splitlines()) == 1 and "Traceback" not in failed.stderr, failed.stderr
    assert "failed while logging" in failed.stderr and "run folders are complete and unchanged" in failed.stderr
    later = report_mlflow(uri, f"item15-{mode}", stored_run)
    assert later.returncode == 0 and "1 logged now" in later.stdout, later.stderr
    complete = [r for r in logged_runs(uri, f"item15-{mode}") if r.data.tags.get("sfbench.logged") == "complete"]
    assert len(complete) == 1


def test_two_loggers_at_once_log_the_run_once(server: tuple[str, subprocess.Popen], stored_run: Path) -> None:
    """Issue 43 item 15: two loggers of one run at once logged it twice or failed with a traceback (one deleted
    the other's run while it was being logged)."""
    from sfbench_jax.report.mlflow_logging import log_stored_folders

    uri, _ = server
    start, results, errors = threading.Barrier(2), [], []

    def logger() -> None:
        start.wait()
        try:
            results.extend(log_stored_folders([stored_run], uri=uri, experiment="item15-two"))
        except Exception as error:  # noqa: BLE001 - the test reports what either logger raised
            errors.append(error)

    threads = [threading.Thread(target=logger) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=300)
    assert not errors, errors
    assert sorted(item.created for item in results) == [False, True]
    assert len({item.run_id for item in results}) == 1
    runs = logged_runs(uri, "item15-two")
    assert len(runs) == 1 and runs[0].data.tags["sfbench.logged"] == "complete"
