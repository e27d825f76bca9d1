"""`sfbench`: compose conf/config.yaml, convert it to RunConfig, run the pipeline in the Hydra run dir.

A run folder that holds a completed run is never written into (`sfbench_jax.run_folder.claim`): `ClaimRunFolder`, a
Hydra callback, refuses it before Hydra creates the folder or writes its `.hydra/` and log there, so a refused
command leaves the folder untouched; with `overwrite=true` it sends Hydra's own files to the staging folder the
new run is written into, so they are swapped in with the run. An unusable `hydra.run.dir` is reported there too,
as one line.

In a multirun every job records its (dataset, architecture, method) cell first and, if it fails, its
error (`job_failed.json`) instead of stopping the sweep; the collection callback then names it. A job whose
folder already holds a completed run is skipped (re-running a sweep fills in only what is missing), or with
`overwrite=true` replaced like a single run.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import traceback
from collections.abc import Iterator
from pathlib import Path

from sfbench_jax.cli.cpu_devices import expose_cpu_cores

expose_cpu_cores()  # before JAX initialises (the imports below load it)

import hydra
from hydra.core.config_store import ConfigStore
from hydra.core.hydra_config import HydraConfig
from hydra.experimental.callback import Callback
from hydra.types import RunMode
from omegaconf import DictConfig, OmegaConf, open_dict, read_write

from sfbench_jax.cli.arguments import (
    CommandLineError,
    Stopped,
    check_overrides,
    disk_full_line,
    is_disk_full,
    stop_on_sigterm,
    stopped_line,
)
from sfbench_jax.config import (
    DatasetConfig,
    EvalConfig,
    MethodConfig,
    ModelConfig,
    RunConfig,
    TrainConfig,
)
from sfbench_jax.methods import get_method
from sfbench_jax.pipeline.outputs.startup import mark_startup
from sfbench_jax.report.collect import CELL_FILE, FAILED_FILE
from sfbench_jax.run_folder.claim import check_run_folder, real_folder, staging_folder, target_of_staging
from sfbench_jax.run_folder.locks import (
    NoFolderLockError,
    RunFolderBusyError,
    lock_run_folder,
    remove_if_empty,
    unlock_run_folder,
)
from sfbench_jax.run_folder.record import holds_completed_run
from sfbench_jax.storage.atomic import write_json

mark_startup("imports")  # the manifest's start-up phases: interpreter and imports up to here

CONFIG_PATH = "pkg://sfbench_jax.conf"

#: Errors that mean bad input (config values, data files, folders): reported as one line, no traceback.
#: `HYDRA_FULL_ERROR=1` re-raises them with the traceback.
INPUT_ERRORS = (ValueError, FileNotFoundError, NotADirectoryError, PermissionError)


def _schema(config_type: type) -> DictConfig:
    """A writable structured node of a frozen dataclass (YAML presets merge onto it and are type-checked;
    the frozen dataclass is only instantiated at the end, by `to_run_config`)."""
    node = OmegaConf.structured(config_type)
    _make_writable(node)
    return node


def _make_writable(node: DictConfig) -> None:
    OmegaConf.set_readonly(node, False)
    for key in node:
        child = node._get_node(key)
        if isinstance(child, DictConfig):
            _make_writable(child)
            if OmegaConf.get_type(child) is dict:  # free-form mappings (model.grid, model.hparams) take new keys
                OmegaConf.set_struct(child, False)


_store = ConfigStore.instance()
_store.store(name="run_schema", node=_schema(RunConfig))
_store.store(group="schema", name="dataset", node=_schema(DatasetConfig))
_store.store(group="schema", name="model", node=_schema(ModelConfig))
_store.store(group="schema", name="method", node=_schema(MethodConfig))
_store.store(group="schema", name="train", node=_schema(TrainConfig))
_store.store(group="schema", name="eval", node=_schema(EvalConfig))


def to_run_config(cfg: DictConfig) -> RunConfig:
    """Hydra config -> validated RunConfig (raises a ValueError naming the bad field, registries included)."""
    from sfbench_jax.pipeline.runner import check_run_config

    run_config = OmegaConf.to_object(cfg)
    if not isinstance(run_config, RunConfig):
        raise TypeError("The composed config is not a RunConfig; conf/config.yaml must list run_schema.")
    check_run_config(run_config)
    return run_config


def run_job(cfg: DictConfig, output_dir: Path, job_files: dict[str, dict] | None = None) -> None:
    """Validate the config, switch on the compilation cache, run the pipeline (a host model's failure, e.g. an
    external predictor's wrong shape, is raised as its own `HostModelError`, a ValueError)."""
    mark_startup("compose")  # Hydra composed the config
    from sfbench_jax.cli.compilation_cache import use_compilation_cache
    from sfbench_jax.pipeline.runner import run
    from sfbench_jax.predictors.host import reporting_host_failures

    run_config = to_run_config(cfg)
    use_compilation_cache(run_config)
    mark_startup("configure")  # the pipeline imported, the config checked, the compilation cache on
    with reporting_host_failures():
        run(run_config, output_dir, job_files=job_files)


def _refuse(error: Exception) -> None:
    """Report bad input as one line (HYDRA_FULL_ERROR=1: with the traceback) and exit with status 2."""
    if os.environ.get("HYDRA_FULL_ERROR") == "1":
        traceback.print_exception(error)
    print(f"sfbench: error: {error}", file=sys.stderr, flush=True)
    sys.exit(2)


def check_before_folder(config: DictConfig) -> None:
    """The run's config checks, the contracts of its model, method and faults included (`pipeline/contracts.py`; those
    on the data's windows too, `runner.check_run_data`), before Hydra creates the run folder: a refused run leaves no
    folder behind. Errors that are not bad input (and data that does not load) are left to the run itself (it repeats
    the checks, cached, and takes the data loaded here)."""
    from sfbench_jax.data.errors import DataContractError
    from sfbench_jax.pipeline.runner import check_run_data

    job = config.copy()
    with read_write(job), open_dict(job):
        job.pop("hydra", None)
    try:
        run_config = to_run_config(job)
    except INPUT_ERRORS:
        raise
    except Exception:  # noqa: BLE001 - reported by the run, which makes the same checks
        return
    try:
        check_run_data(run_config)  # the checks on the data's windows (a batch-dependent model); the run reuses it
    except (DataContractError, OSError):
        pass  # data that does not load is reported by the run, as before
    except INPUT_ERRORS:
        raise
    except Exception:  # noqa: BLE001 - reported by the run, which makes the same checks
        pass


class ClaimRunFolder(Callback):
    """Check `hydra.run.dir` before Hydra creates it (see the module docstring); registered in conf/config.yaml."""

    def on_run_start(self, config: DictConfig, **kwargs: object) -> None:
        """Refuse an unusable folder or one holding a completed run; with `overwrite=true` redirect Hydra's
        files (and the run) to the staging folder."""
        target = real_folder(Path(str(OmegaConf.select(config, "hydra.run.dir"))))
        overwrite = bool(OmegaConf.select(config, "overwrite", default=False))
        created = not target.exists()
        try:
            check_before_folder(config)  # before check_run_folder, which creates the folder
            check_run_folder(target, overwrite=overwrite)
            lock_run_folder(target)  # held by this process until its run is sealed (or the process ends)
            check_run_folder(target, overwrite=overwrite)  # again, under the lock
        except INPUT_ERRORS as error:
            if created and isinstance(error, NoFolderLockError):
                remove_if_empty(target)  # the folder this refusal created: nothing is left behind
            _refuse(error)
        if overwrite and holds_completed_run(target):
            with read_write(config.hydra.run):
                config.hydra.run.dir = str(staging_folder(target))


def cell_of(cfg: DictConfig) -> dict[str, str]:
    """The (dataset, architecture, method) cell a job config belongs to."""
    return {"dataset": str(cfg.dataset.name), "architecture": str(cfg.model.name), "method": str(cfg.method.name)}


def run_recorded(cfg: DictConfig, output_dir: Path) -> None:
    """Run one multirun job; record its cell first and any failure instead of raising, so the sweep goes on.

    A (method, architecture) pair the benchmark does not define (e.g. RevIN on PatchTST) is skipped with a
    one-line note: it is not a cell of the sweep (the collection does not expect it). So is a job whose folder
    already holds a completed run (without `overwrite=true`): it is kept as it is, record and cell included."""
    cell = cell_of(cfg)
    if not get_method(cell["method"]).applies_to(cell["architecture"]):
        print(f"[sfbench] job {output_dir.name} skipped: method {cell['method']!r} does not apply to "
              f"{cell['architecture']!r} (not a cell of the benchmark)", file=sys.stderr, flush=True)
        return
    try:
        lock_run_folder(output_dir)  # a job still running there (a sweep re-submitted meanwhile) is left alone
    except (RunFolderBusyError, NoFolderLockError) as error:
        print(f"[sfbench] job {output_dir.name} skipped: {error}", file=sys.stderr, flush=True)
        return
    try:
        _run_locked_job(cfg, cell, output_dir)
    finally:
        unlock_run_folder(output_dir)


def _run_locked_job(cfg: DictConfig, cell: dict[str, str], output_dir: Path) -> None:
    replacing = holds_completed_run(output_dir)
    if replacing and not bool(cfg.get("overwrite", False)):
        print(f"[sfbench] job {output_dir.name} skipped: {output_dir} already holds a completed run (kept; delete "
              "the folder or pass overwrite=true to run it again)", file=sys.stderr, flush=True)
        return
    job = {**cell, "overrides": list(HydraConfig.get().overrides.task)}
    if not replacing:  # a job that fails before it writes anything is still named by its cell
        (output_dir / FAILED_FILE).unlink(missing_ok=True)
        write_json(job, output_dir / CELL_FILE)
    try:
        run_job(cfg, output_dir, job_files={CELL_FILE: job})
    except Exception as error:  # noqa: BLE001 - recorded in job_failed.json and reported by the collection step
        if not replacing:  # a completed run being replaced stays as it was
            write_json({**cell, "error": type(error).__name__, "message": str(error),
                        "traceback": traceback.format_exc()}, output_dir / FAILED_FILE)
        print(f"[sfbench] job {output_dir.name} FAILED ({cell['dataset']}, {cell['architecture']}, "
              f"{cell['method']}): {type(error).__name__}: {error}", file=sys.stderr, flush=True)


#: Single runs of this process that finished normally (then `main` ends the process without the teardown).
_FINISHED_RUNS: list[Path] = []


@hydra.main(version_base="1.3", config_path=CONFIG_PATH, config_name="config")
def hydra_main(cfg: DictConfig) -> None:
    """Run one benchmark job (in the run folder `hydra.run.dir`; a replacing run is written in its staging
    folder and swapped in at the end)."""
    hydra_config = HydraConfig.get()
    output_dir = Path(hydra_config.runtime.output_dir)
    with ending_in_one_line(output_dir, OmegaConf.select(cfg, "train.store_dir")):
        if hydra_config.mode == RunMode.MULTIRUN:
            run_recorded(cfg, output_dir)
            return
        try:
            run_job(cfg, target_of_staging(output_dir) or output_dir)
        except INPUT_ERRORS as error:
            if os.environ.get("HYDRA_FULL_ERROR") == "1" or is_disk_full(error):
                raise
            _refuse(error)
    _FINISHED_RUNS.append(output_dir)


@contextlib.contextmanager
def ending_in_one_line(output_dir: Path, store: str | None) -> Iterator[None]:
    """End a run stopped by SIGINT/SIGTERM (exit 130/143) or a full disk (exit 2) with one line saying what is kept
    and how to resume, no traceback (`HYDRA_FULL_ERROR=1`: with it)."""
    try:
        yield
    except (KeyboardInterrupt, Stopped) as error:
        name = "SIGINT" if isinstance(error, KeyboardInterrupt) else "SIGTERM"
        print(f"sfbench: {stopped_line(name, output_dir, store)}", file=sys.stderr, flush=True)
        end_process(130 if name == "SIGINT" else 143)  # at once: background threads (Orbax, XLA) print nothing more
    except Exception as error:
        if not is_disk_full(error) or os.environ.get("HYDRA_FULL_ERROR") == "1":
            raise
        print(f"sfbench: error: {disk_full_line(error, output_dir, store)}", file=sys.stderr, flush=True)
        end_process(2)


def main() -> None:
    """The `sfbench` entry point: Hydra's app (`hydra_main`); when it was a single run that finished, the process
    ends at once (`exit_now`). Errors and multiruns (whose launchers may hold workers) end as usual. The command
    line is checked first (`cli.arguments.check_overrides`: renamed or unknown settings, preset typos)."""
    try:
        check_overrides(sys.argv[1:])
    except CommandLineError as error:
        print(f"sfbench: error: {error}", file=sys.stderr, flush=True)
        sys.exit(2)
    stop_on_sigterm()
    hydra_main()
    if _FINISHED_RUNS:
        exit_now()


def exit_now() -> None:
    """End the process with status 0 after flushing the log files and standard streams, without the interpreter's
    teardown: collecting ~1,500 imported modules and running JAX's and Orbax's exit hooks is a sizeable share of a short
    `sfbench eval=quick` process (docs/speed.md, "Start-up of a whole run"). Every output was already written and
    sealed, the compilation cache is written when a program is compiled, and checkpoints before a candidate's record."""
    end_process(0)


def end_process(status: int) -> None:
    """`os._exit(status)` after flushing the log files and standard streams. A process that coverage.py measures (the
    test suite's `sfbench` processes) saves its measurement first: `os._exit` skips the exit hook that would."""
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    measuring = getattr(sys.modules.get("coverage"), "Coverage", None)
    current = measuring.current() if measuring is not None else None
    if current is not None:
        current.stop()
        current.save()
    os._exit(status)


if __name__ == "__main__":
    main()
