"""Logging stored runs to an MLflow tracking server (the optional `[mlflow]` extra), for users who track there.

The run folder stays the source of truth: a run is logged from its verified folder (`run_folder.loading.load_run`),
after it is complete, never instead of it. Per run: the resolved config as params (dotted names), every finite
numeric summary column (scores, their 95% intervals, the extra scenarios) as metrics, as artifacts only the files
its completion record covers (and the record itself: `recorded_artifacts`, each opened without following a link and
checked against the record while it is copied; any other file of the folder is never uploaded), and as tags the run
key (`sfbench.run_key`), the code revision, the dataset, architecture, method and the folder. A multirun is a parent
run (tag `sfbench.sweep_dir`, found by `sfbench.sweep_key`, the SHA-256 of the folder) with one child per job
(`mlflow.parentRunId`).

The run key is the SHA-256 of the run's settings key, the code identity its manifest holds and the digest of its
record's files (`run_key_hash`): two runs of the same settings that gave other numbers are two MLflow runs. Logging
is idempotent by run key: a run already logged completely (tag `sfbench.logged=complete`, set last) is not logged
again, after checking that the server holds what would be logged (`TrackingConflict` otherwise: never the old
numbers kept silently); one that was cut halfway is deleted and logged again. Loggers on one machine take turns
(a lock file per server and experiment in the temporary folder), and a run logged twice at once by loggers on two
machines is kept once.

A server that cannot be reached is checked first (`/health`, a few seconds) and raises `TrackingUnavailable`; a
server that fails mid-way (an error answer, a dropped connection) raises `TrackingFailed`; both are one line, which
the `sfbench` command turns into one warning (`sfbench_jax.cli.tracking`) and `sfbench-report mlflow` into one error
line; `sfbench-report mlflow --runs FOLDER` logs the runs later.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import io
import json
import math
import os
import stat
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sfbench_jax.report.collect import EXPECTED_FILE
from sfbench_jax.run_folder.damage import DamagedRunError
from sfbench_jax.run_folder.keys import flatten
from sfbench_jax.run_folder.loading import StoredRun, gather_runs
from sfbench_jax.run_folder.names import RECORD_FILE
from sfbench_jax.run_folder.record import read_record

RUN_KEY_TAG, SWEEP_TAG, COMPLETE_TAG = "sfbench.run_key", "sfbench.sweep_dir", "sfbench.logged"
SWEEP_KEY_TAG = "sfbench.sweep_key"
PARENT_TAG = "mlflow.parentRunId"
#: MLflow's limits: params per batch call and a param value's length.
PARAMS_PER_BATCH, METRICS_PER_BATCH, MAX_PARAM_CHARS = 100, 1000, 6000
#: Seconds the server's health check may take before it counts as unreachable.
HEALTH_TIMEOUT_S = 5.0
#: Seconds a logger waits for another logger of the same server and experiment on this machine.
TURN_TIMEOUT_S = 600.0
#: Characters of a server's error kept in the one line a failure costs.
ERROR_CHARS = 300
#: Relative tolerance of a logged metric against the run's number (MLflow stores float64: exact in practice).
METRIC_RTOL = 1e-12
DEFAULT_EXPERIMENT = "sfbench"
#: The sweep outputs a multirun's parent run carries (never through a link).
SWEEP_ARTIFACTS = ("summary.csv", "collect_report.json", "report.html", EXPECTED_FILE)


class TrackingUnavailable(RuntimeError):
    """The tracking server cannot be reached or MLflow is not installed (the message says which and the fix)."""


class TrackingFailed(RuntimeError):
    """The tracking server failed mid-way (an error answer, a dropped connection); the message is one line."""


class TrackingConflict(RuntimeError):
    """The server holds, under a run's key, numbers or files other than the run's (one line naming what differs)."""


@dataclass(frozen=True)
class LoggedRun:
    """One stored run on the server: its folder, MLflow run id and whether it was logged now (else already)."""

    directory: Path
    run_id: str
    created: bool


def one_line(error: BaseException, chars: int = ERROR_CHARS) -> str:
    """An error as one short line: its first non-empty line, cut to `chars` (its type when it has no text)."""
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    text = lines[0] if lines else type(error).__name__
    return text if len(text) <= chars else text[:chars] + "..."


def record_digest(directory: Path) -> str:
    """SHA-256 of the files a run folder's completion record covers (names and their SHA-256): what the run holds."""
    files = read_record(directory)["files"]
    body = {name: entry.get("sha256") for name, entry in sorted(files.items())}
    return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()


def code_identity_of(run: StoredRun) -> Any:
    """The code identity a run's manifest holds (`code_identity`, else its code revision and versions)."""
    manifest = run.manifest
    if "code_identity" in manifest:
        return manifest["code_identity"]
    return {"code_revision": manifest.get("code_revision"), "versions": manifest.get("versions")}


def run_key_hash(run: StoredRun) -> str:
    """The tag value that identifies a run on the server: SHA-256 of its settings key, its code identity and its
    record digest (two runs of the same settings with other numbers have two keys)."""
    identity = json.dumps({"settings": run.identity, "code": code_identity_of(run),
                           "record": record_digest(run.directory)}, sort_keys=True, default=str)
    return hashlib.sha256(identity.encode()).hexdigest()


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


def _plain_name(directory: Path, name: str) -> str:
    """A file name of the folder itself (no separator, not a dot name), else refused."""
    if not name or name in (".", "..") or "/" in name or "\\" in name or name != os.path.basename(name):
        raise TrackingConflict(f"{directory}: its completion record lists {name!r}, which is not a file of the run "
                               "folder itself; nothing of this run is uploaded")
    return name


def copy_without_links(source: Path, target: Path) -> str | None:
    """Copy a regular file opened without following a link; its SHA-256, or None for a link or a non-file."""
    try:
        descriptor = os.open(source, os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_NONBLOCK", 0))
    except OSError as error:
        if error.errno in (errno.ELOOP, errno.ENOENT, errno.ENXIO):
            return None
        raise
    digest = hashlib.sha256()
    with os.fdopen(descriptor, "rb") as handle:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            return None
        with target.open("wb") as copy:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
                copy.write(block)
    return digest.hexdigest()


def recorded_artifacts(directory: Path, staging: Path) -> list[str]:
    """Copy into `staging` the files a run folder's completion record covers and the record itself, each opened
    without following a link and checked against the record; these are a run's only artifacts.

    Raises:
        TrackingConflict: a recorded file is a link, missing, or differs from the record (one line; nothing of
            the run is uploaded).
    """
    directory = Path(directory)
    record = read_record(directory)
    names = [_plain_name(directory, name) for name in sorted(record["files"])]
    for name in [*names, RECORD_FILE]:
        digest = copy_without_links(directory / name, staging / name)
        expected = record["files"].get(name, {}).get("sha256") if name != RECORD_FILE else digest
        if digest is None or digest != expected:
            problem = "is a symbolic link or not a plain file" if digest is None else "differs from its record"
            raise TrackingConflict(f"{directory / name} {problem}: a run is uploaded only from the files its "
                                   "completion record covers, never through a link; nothing of this run is "
                                   "uploaded (re-run the job, or restore the file)")
    return [*names, RECORD_FILE]


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
        raise TrackingUnavailable(f"the MLflow server at {uri} cannot be reached ({one_line(error)})") from error


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


@contextlib.contextmanager
def _one_logger_at_a_time(uri: str | None, experiment: str) -> Iterator[None]:
    """Take turns with the other loggers of this machine to the same server and experiment (a lock file in the
    temporary folder); where the folder cannot lock, go on without (the server-side checks still keep one run)."""
    name = hashlib.sha256(f"{uri}\n{experiment}".encode()).hexdigest()[:16]
    path = Path(tempfile.gettempdir()) / f"sfbench-mlflow-{name}.lock"
    try:
        handle = path.open("a")
    except OSError:
        yield
        return
    with handle:
        deadline = time.monotonic() + TURN_TIMEOUT_S
        locked = False
        while not locked:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                locked = True
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise TrackingFailed(f"another sfbench logger to {uri or 'MLflow'} has been logging for "
                                         f"{TURN_TIMEOUT_S:g} s; try again when it has finished") from None
                time.sleep(0.2)
            except OSError:
                break  # no locks on this file system: go on without
        try:
            yield
        finally:
            if locked:
                fcntl.flock(handle, fcntl.LOCK_UN)


@contextlib.contextmanager
def _one_line_failures(uri: str | None) -> Iterator[None]:
    """Any failure of the MLflow client or the server as one `TrackingFailed` line (the run folders are untouched)."""
    try:
        yield
    except (TrackingUnavailable, TrackingFailed, TrackingConflict, DamagedRunError):
        raise
    except Exception as error:  # MLflow raises its own, requests' and OS errors: one line each
        raise TrackingFailed(f"the MLflow server at {uri or 'MLFLOW_TRACKING_URI'} failed while logging "
                             f"({type(error).__name__}: {one_line(error)}); the run folders are complete and "
                             "unchanged") from error


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
    """The id of experiment `name`, created if needed (by another logger at the same moment, too)."""
    experiment = client.get_experiment_by_name(name)
    if experiment is not None:
        return str(experiment.experiment_id)
    try:
        return str(client.create_experiment(name))
    except Exception:
        experiment = client.get_experiment_by_name(name)  # created meanwhile by another logger
        if experiment is None:
            raise
        return str(experiment.experiment_id)


def _runs_tagged(client: Any, experiment: str, tag: str, value: str) -> list[Any]:
    """Runs whose tag `tag` is `value` (a hexadecimal digest: nothing in it needs quoting)."""
    if not all(char in "0123456789abcdef" for char in value):
        raise ValueError(f"tag values searched for are digests, got {value!r}")
    return list(client.search_runs([experiment], filter_string=f"tags.`{tag}` = '{value}'"))


def _complete_runs(client: Any, experiment: str, tag: str, value: str) -> list[Any]:
    """The completely logged runs with this tag value, oldest first; halfway-logged ones are deleted."""
    complete = []
    for logged in _runs_tagged(client, experiment, tag, value):
        if logged.data.tags.get(COMPLETE_TAG) == "complete":
            complete.append(logged)
        else:
            client.delete_run(logged.info.run_id)
    return sorted(complete, key=lambda logged: (logged.info.start_time or 0, logged.info.run_id))


def _batches(items: Sequence[Any], size: int) -> Iterator[Sequence[Any]]:
    for start in range(0, len(items), size):
        yield items[start:start + size]


def _finish(client: Any, run_id: str) -> None:
    """Mark a run finished, without MLflow's two lines of links per run on the terminal."""
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        client.set_terminated(run_id, "FINISHED")


def _same_number(logged: Any, value: float) -> bool:
    return isinstance(logged, (int, float)) and math.isclose(float(logged), value, rel_tol=METRIC_RTOL, abs_tol=0.0)


def differences(logged: Any, run: StoredRun) -> list[str]:
    """What an MLflow run holds that differs from what logging `run` would write (metrics, params, key tag)."""
    metrics, params = run_metrics(run), run_params(run)
    held_metrics, held_params = dict(logged.data.metrics), dict(logged.data.params)
    found = [f"metric {name} is {held_metrics.get(name)} there, {value!r} here" for name, value in metrics.items()
             if not _same_number(held_metrics.get(name), value)]
    found += [f"metric {name} is there, not here" for name in held_metrics if name not in metrics]
    found += [f"param {name} is {held_params.get(name)!r} there, {value!r} here" for name, value in params.items()
              if held_params.get(name) != value]
    return found


def _log_new_run(client: Any, experiment: str, run: StoredRun, tags: Mapping[str, str]) -> str:
    """Create one MLflow run and log the run's params, metrics and recorded files; marked complete last. A run
    that fails mid-way is deleted where the server still answers (else its missing mark keeps it unused)."""
    from mlflow.entities import Metric, Param

    mlflow_run = client.create_run(experiment, tags=dict(tags), run_name=run.directory.name)
    run_id = mlflow_run.info.run_id
    try:
        stamp = int(time.time() * 1000)
        params = [Param(name, value) for name, value in sorted(run_params(run).items())]
        metrics = [Metric(name, value, stamp, 0) for name, value in sorted(run_metrics(run).items())]
        for batch in _batches(params, PARAMS_PER_BATCH):
            client.log_batch(run_id, params=batch)
        for batch in _batches(metrics, METRICS_PER_BATCH):
            client.log_batch(run_id, metrics=batch)
        with tempfile.TemporaryDirectory(prefix="sfbench-mlflow-") as staging:
            recorded_artifacts(run.directory, Path(staging))
            client.log_artifacts(run_id, staging)
        client.set_tag(run_id, COMPLETE_TAG, "complete")
        _finish(client, run_id)
    except BaseException:
        with contextlib.suppress(Exception):
            client.delete_run(run_id)
        raise
    return run_id


def _kept_once(client: Any, experiment: str, tag: str, value: str, run_id: str) -> str:
    """The one complete run of a key after logging `run_id` (a logger on another machine may have logged the same
    run at once): the oldest is kept, a later duplicate of ours is deleted."""
    complete = _complete_runs(client, experiment, tag, value)
    kept = complete[0].info.run_id if complete else run_id
    if kept != run_id:
        client.delete_run(run_id)
    return kept


def log_run(client: Any, experiment: str, run: StoredRun, *, parent_id: str | None = None) -> LoggedRun:
    """Log one verified run (params, metrics, recorded files, tags), unless it is already logged by its run key.

    Raises:
        TrackingConflict: the server holds other numbers under the run's key, or a recorded file is a link.
    """
    key = run_key_hash(run)
    existing = _complete_runs(client, experiment, RUN_KEY_TAG, key)
    if existing:
        changed = differences(existing[0], run)
        if changed:
            raise TrackingConflict(
                f"MLflow run {existing[0].info.run_id} holds the key of {run.directory} but not its numbers "
                f"({changed[0]}{f'; {len(changed) - 1} more' if len(changed) > 1 else ''}): it was changed on the "
                "server; delete that MLflow run and log this folder again")
        return LoggedRun(run.directory, existing[0].info.run_id, created=False)
    tags = run_tags(run) | ({PARENT_TAG: parent_id} if parent_id else {})
    run_id = _log_new_run(client, experiment, run, tags)
    kept = _kept_once(client, experiment, RUN_KEY_TAG, key, run_id)
    return LoggedRun(run.directory, kept, created=kept == run_id)


def sweep_key(sweep_dir: Path) -> str:
    """The tag value that finds a multirun's parent run: SHA-256 of its resolved folder (any character allowed)."""
    return hashlib.sha256(str(Path(sweep_dir).resolve()).encode()).hexdigest()


def sweep_parent(client: Any, experiment: str, sweep_dir: Path) -> str:
    """The parent run of a multirun folder (found by its folder, else created)."""
    folder = Path(sweep_dir).resolve()
    key = sweep_key(folder)
    existing = _complete_runs(client, experiment, SWEEP_KEY_TAG, key)
    if existing:
        return str(existing[0].info.run_id)
    parent = client.create_run(experiment, tags={SWEEP_TAG: str(folder), SWEEP_KEY_TAG: key},
                               run_name=f"multirun {folder.name}")
    with tempfile.TemporaryDirectory(prefix="sfbench-mlflow-") as staging:
        for name in SWEEP_ARTIFACTS:  # the sweep's merged outputs, never through a link
            if copy_without_links(folder / name, Path(staging) / name) is None:
                (Path(staging) / name).unlink(missing_ok=True)
        if any(Path(staging).iterdir()):
            client.log_artifacts(parent.info.run_id, staging)
    client.set_tag(parent.info.run_id, COMPLETE_TAG, "complete")
    _finish(client, parent.info.run_id)
    return _kept_once(client, experiment, SWEEP_KEY_TAG, key, parent.info.run_id)


def _logging(uri: str | None, experiment: str, work: Callable[[Any, str], Any]) -> Any:
    """`work(client, experiment id)` with few retries, one logger of this machine at a time, failures as one line."""
    with _few_retries(), _one_line_failures(uri):
        client = tracking_client(uri)
        with _one_logger_at_a_time(uri or os.environ.get("MLFLOW_TRACKING_URI"), experiment):
            return work(client, experiment_id(client, experiment))


def log_stored_folders(folders: Sequence[Path], *, uri: str | None = None,
                       experiment: str = DEFAULT_EXPERIMENT) -> list[LoggedRun]:
    """Log every verified run under `folders`, once each; a multirun folder's runs as children of its parent.

    Raises:
        TrackingUnavailable: MLflow is missing or the server does not answer (nothing is logged).
        TrackingFailed: the server failed mid-way (one line).
        TrackingConflict: the server holds other numbers under a run's key, or a recorded file is a link.
        DamagedRunError / DamagedRunsError / RunConflictError: a run folder is damaged or conflicts (named).
    """
    gathered = [(Path(folder), gather_runs([folder])) for folder in folders]  # every run verified first

    def work(client: Any, experiment_number: str) -> list[LoggedRun]:
        logged: list[LoggedRun] = []
        for folder, runs in gathered:
            parent = sweep_parent(client, experiment_number, folder) if (folder / EXPECTED_FILE).is_file() else None
            logged += [log_run(client, experiment_number, run, parent_id=parent) for run in runs.runs]
        return logged

    result: list[LoggedRun] = _logging(uri, experiment, work)
    return result


def log_run_folder(directory: Path, *, uri: str | None = None, experiment: str = DEFAULT_EXPERIMENT) -> LoggedRun:
    """Log one completed run folder (the end of a single `sfbench` run with `tracking=mlflow`)."""
    from sfbench_jax.run_folder.loading import load_run

    run = load_run(directory)
    result: LoggedRun = _logging(uri, experiment, lambda client, number: log_run(client, number, run))
    return result
