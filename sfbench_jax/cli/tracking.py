"""Hydra callback that logs finished runs to the tracking server when `tracking=mlflow`
(`sfbench_jax.report.mlflow_logging`).

Registered in conf/config.yaml under `hydra.callbacks.track`. A single run is logged when it ends, from its
completed run folder; a multirun when it ends (before its collection: Hydra calls the end hooks in reverse
order), as a parent run with one child per finished job. Tracking never fails or loses a run: the run folder
is written first, and any tracking error (an unreachable server, MLflow missing) is one warning line naming the
folder and the command that logs it later (`sfbench-report mlflow --runs FOLDER`).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from hydra.experimental.callback import Callback
from omegaconf import DictConfig, OmegaConf

from sfbench_jax.run_folder.claim import target_of_staging
from sfbench_jax.run_folder.record import holds_completed_run


def tracking_settings(config: DictConfig) -> tuple[str, str | None, str]:
    """`(backend, uri, experiment)` of a composed config."""
    return (str(OmegaConf.select(config, "tracking.backend", default="none")),
            OmegaConf.select(config, "tracking.uri", default=None),
            str(OmegaConf.select(config, "tracking.experiment", default="sfbench")))


def warn(folder: Path, error: BaseException) -> None:
    """The one line a tracking failure costs (the error's first line)."""
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    reason = (lines[0] if lines else type(error).__name__)[:300]
    print(f"[sfbench] WARNING: tracking failed, the run is complete in {folder} but not logged to MLflow: {reason} "
          f"(log it later with `sfbench-report mlflow --runs {folder}`)", file=sys.stderr, flush=True)


class TrackFinishedRuns(Callback):
    """Log a finished single run or multirun to MLflow when `tracking.backend` is "mlflow"."""

    def on_run_end(self, config: DictConfig, **kwargs: Any) -> None:
        backend, uri, experiment = tracking_settings(config)
        folder = Path(str(OmegaConf.select(config, "hydra.run.dir")))
        folder = target_of_staging(folder) or folder
        if backend != "mlflow" or not holds_completed_run(folder):
            return
        try:
            from sfbench_jax.report.mlflow_logging import log_run_folder

            logged = log_run_folder(folder, uri=uri, experiment=experiment)
        except Exception as error:  # noqa: BLE001 - tracking never fails a run: one line, the folder stays
            warn(folder, error)
            return
        print(f"[sfbench] logged to MLflow: run {logged.run_id}" + ("" if logged.created else " (already logged)"),
              file=sys.stderr, flush=True)

    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        backend, uri, experiment = tracking_settings(config)
        if backend != "mlflow":
            return
        sweep_dir = Path(str(config.hydra.sweep.dir))
        try:
            from sfbench_jax.report.mlflow_logging import log_stored_folders

            logged = log_stored_folders([sweep_dir], uri=uri, experiment=experiment)
        except Exception as error:  # noqa: BLE001 - tracking never fails a sweep: one line, the folders stay
            warn(sweep_dir, error)
            return
        print(f"[sfbench] logged to MLflow: {len(logged)} job run(s) under one parent run "
              f"({sum(item.created for item in logged)} new)", file=sys.stderr, flush=True)
