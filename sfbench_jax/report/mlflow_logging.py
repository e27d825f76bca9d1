"""Logging stored runs to an MLflow tracking server (the optional `[mlflow]` extra), for users who track there.

The run folder stays the source of truth: a run is logged from its verified folder (`run_folder.stored_runs.load_run`),
after it is complete, never instead of it. Per run: the resolved config as params (dotted names), every finite
numeric summary column (scores, their 95% intervals, the extra scenarios) as metrics, every file of the folder
as artifacts, and as tags the run key (`sfbench.run_key`, the SHA-256 of the key identity), the code revision,
the dataset, architecture, method and the folder. A multirun is a parent run (tag `sfbench.sweep_dir`) with one
child per job (`mlflow.parentRunId`).

Logging is idempotent by run key: a run already logged completely (tag `sfbench.logged=complete`, set last) is
not logged again; one that was cut halfway is deleted and logged again. A server that cannot be reached is
checked first (`/health`, a few seconds) and raises `TrackingUnavailable`, which the `sfbench` command turns into
one warning line (`sfbench_jax.cli.tracking`); `sfbench-report mlflow --runs FOLDER` logs the runs later.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import math
import os
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sfbench_jax.report.collect import EXPECTED_FILE
from sfbench_jax.run_folder.stored_runs import StoredRun, flatten, gather_runs

RUN_KEY_TAG, SWEEP_TAG, COMPLETE_TAG = "sfbench.run_key", "sfbench.sweep_dir", "sfbench.logged"
PARENT_TAG = "mlflow.parentRunId"
#: MLflow's limits: params per batch call and a param value's length.
PARAMS_PER_BATCH, METRICS_PER_BATCH, MAX_PARAM_CHARS = 100, 1000, 6000
#: Seconds the server's health check may take before it counts as unreachable.
HEALTH_TIMEOUT_S = 5.0
DEFAULT_EXPERIMENT = "sfbench"


class TrackingUnavailable(RuntimeError):
    """The tracking server cannot be reached or MLflow is not installed (the message says which and the fix)."""


@dataclass(frozen=True)
class LoggedRun:
    """One stored run on the server: its folder, MLflow run id and whether it was logged now (else already)."""

    directory: Path
    run_id: str
    created: bool


def run_key_hash(run: StoredRun) -> str:
    """The tag value that identifies a run on the server: SHA-256 of its key identity."""
    return hashlib.sha256(run.identity.encode()).hexdigest()


def run_params(run: StoredRun) -> dict[str, str]:
    """The run's resolved config as `{dotted.name: text}` (values cut to MLflow's length limit)."""
    return {name: str(value)[:MAX_PARAM_CHARS] for name, value in flatten(run.manifest.get("config", {})).items()}


def run_metrics(run: StoredRun) -> dict[str, float]:
    """Every finite numeric column of the run's summary row (scores, intervals, counts)."""
    metrics = {}
    for name, value in run.row.items():
        if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(float(value)):
            metrics[name] = float(value)
    return metrics


def run_tags(run: StoredRun) -> dict[str, str]:
    """The run key, code revision, cell and folder of a run."""
    return {RUN_KEY_TAG: run_key_hash(run), "sfbench.code_revision": str(run.manifest.get("code_revision")),
            "sfbench.dataset": str(run.row.get("dataset")), "sfbench.architecture": str(run.row.get("architecture")),
            "sfbench.method": str(run.row.get("method")), "sfbench.run_dir": str(run.directory)}


def check_reachable(uri: str) -> None:
    """Refuse an HTTP tracking server that does not answer its health check within `HEALTH_TIMEOUT_S`.

    Raises:
        TrackingUnavailable: naming the URI and the error.
    """
    if not uri.startswith(("http://", "https://")):
        return
    try:
        with urllib.request.urlopen(uri.rstrip("/") + "/health", timeout=HEALTH_TIMEOUT_S) as response:
            response.read()
    except (OSError, urllib.error.URLError) as error:
        raise TrackingUnavailable(f"the MLflow server at {uri} cannot be reached ({error})") from error


@contextlib.contextmanager
def _few_retries() -> Iterator[None]:
    """MLflow's HTTP calls with few retries and a short timeout (its defaults retry for minutes)."""
    saved = {name: os.environ.get(name) for name in ("MLFLOW_HTTP_REQUEST_MAX_RETRIES",
                                                     "MLFLOW_HTTP_REQUEST_TIMEOUT")}
    os.environ.setdefault("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "1")
    os.environ.setdefault("MLFLOW_HTTP_REQUEST_TIMEOUT", "30")
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def tracking_client(uri: str | None) -> Any:
    """An `MlflowClient` for `uri` (else `MLFLOW_TRACKING_URI`, else MLflow's default), checked reachable.

    Raises:
        TrackingUnavailable: MLflow is not installed, or the server does not answer.
    """
    try:
        from mlflow.tracking import MlflowClient
    except ImportError as error:
        raise TrackingUnavailable("MLflow is not installed: pip install 'sfbench-jax[mlflow]'") from error
    uri = uri or os.environ.get("MLFLOW_TRACKING_URI")
    if uri:
        check_reachable(uri)
    return MlflowClient(tracking_uri=uri)


def experiment_id(client: Any, name: str) -> str:
    """The id of experiment `name`, created if needed."""
    experiment = client.get_experiment_by_name(name)
    return experiment.experiment_id if experiment is not None else client.create_experiment(name)


def _runs_tagged(client: Any, experiment: str, tag: str, value: str) -> list[Any]:
    return list(client.search_runs([experiment], filter_string=f"tags.`{tag}` = '{value}'"))


def _complete_run(client: Any, experiment: str, tag: str, value: str) -> str | None:
    """The id of a completely logged run with this tag value; halfway-logged ones are deleted."""
    found = None
    for logged in _runs_tagged(client, experiment, tag, value):
        if logged.data.tags.get(COMPLETE_TAG) == "complete" and found is None:
            found = logged.info.run_id
        elif logged.data.tags.get(COMPLETE_TAG) != "complete":
            client.delete_run(logged.info.run_id)
    return found


def _batches(items: Sequence[Any], size: int) -> Iterator[Sequence[Any]]:
    for start in range(0, len(items), size):
        yield items[start:start + size]


def _finish(client: Any, run_id: str) -> None:
    """Mark a run finished, without MLflow's two lines of links per run on the terminal."""
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        client.set_terminated(run_id, "FINISHED")


def log_run(client: Any, experiment: str, run: StoredRun, *, parent_id: str | None = None) -> LoggedRun:
    """Log one verified run (params, metrics, artifacts, tags), unless it is already logged by its run key."""
    from mlflow.entities import Metric, Param

    existing = _complete_run(client, experiment, RUN_KEY_TAG, run_key_hash(run))
    if existing is not None:
        return LoggedRun(run.directory, existing, created=False)
    tags = run_tags(run) | ({PARENT_TAG: parent_id} if parent_id else {})
    mlflow_run = client.create_run(experiment, tags=tags, run_name=run.directory.name)
    run_id = mlflow_run.info.run_id
    stamp = int(time.time() * 1000)
    params = [Param(name, value) for name, value in sorted(run_params(run).items())]
    metrics = [Metric(name, value, stamp, 0) for name, value in sorted(run_metrics(run).items())]
    for batch in _batches(params, PARAMS_PER_BATCH):
        client.log_batch(run_id, params=batch)
    for batch in _batches(metrics, METRICS_PER_BATCH):
        client.log_batch(run_id, metrics=batch)
    client.log_artifacts(run_id, str(run.directory))
    client.set_tag(run_id, COMPLETE_TAG, "complete")
    _finish(client, run_id)
    return LoggedRun(run.directory, run_id, created=True)


def sweep_parent(client: Any, experiment: str, sweep_dir: Path) -> str:
    """The parent run of a multirun folder (found by its folder, else created)."""
    folder = str(Path(sweep_dir).resolve())
    existing = _complete_run(client, experiment, SWEEP_TAG, folder)
    if existing is not None:
        return existing
    parent = client.create_run(experiment, tags={SWEEP_TAG: folder}, run_name=f"multirun {Path(folder).name}")
    for name in ("summary.csv", "collect_report.json", "report.html", EXPECTED_FILE):
        if (Path(folder) / name).is_file():
            client.log_artifact(parent.info.run_id, str(Path(folder) / name))
    client.set_tag(parent.info.run_id, COMPLETE_TAG, "complete")
    _finish(client, parent.info.run_id)
    return parent.info.run_id


def log_stored_folders(folders: Sequence[Path], *, uri: str | None = None,
                       experiment: str = DEFAULT_EXPERIMENT) -> list[LoggedRun]:
    """Log every verified run under `folders`, once each; a multirun folder's runs as children of its parent.

    Raises:
        TrackingUnavailable: MLflow is missing or the server does not answer (nothing is logged).
        DamagedRunError / DamagedRunsError / RunConflictError: a run folder is damaged or conflicts (named).
    """
    gathered = [(Path(folder), gather_runs([folder])) for folder in folders]  # every run verified first
    with _few_retries():
        client = tracking_client(uri)
        experiment_number = experiment_id(client, experiment)
        logged: list[LoggedRun] = []
        for folder, runs in gathered:
            parent = sweep_parent(client, experiment_number, folder) if (folder / EXPECTED_FILE).is_file() else None
            logged += [log_run(client, experiment_number, run, parent_id=parent) for run in runs.runs]
    return logged


def log_run_folder(directory: Path, *, uri: str | None = None, experiment: str = DEFAULT_EXPERIMENT) -> LoggedRun:
    """Log one completed run folder (the end of a single `sfbench` run with `tracking=mlflow`)."""
    from sfbench_jax.run_folder.stored_runs import load_run

    run = load_run(directory)
    with _few_retries():
        client = tracking_client(uri)
        return log_run(client, experiment_id(client, experiment), run)
