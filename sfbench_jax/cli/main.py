"""`sfbench`: compose conf/config.yaml, convert it to RunConfig, run the pipeline in the Hydra run dir.

In a multirun every job records its (dataset, architecture, method) cell first and, if it fails, its
error (`job_failed.json`) instead of stopping the sweep; the collection callback then names it.
"""

from __future__ import annotations

import os
import sys
import traceback
from pathlib import Path

from sfbench_jax.cli.cpu_devices import expose_cpu_cores

expose_cpu_cores()  # before JAX initialises (the imports below load it)

import hydra
from hydra.core.config_store import ConfigStore
from hydra.core.hydra_config import HydraConfig
from hydra.types import RunMode
from omegaconf import DictConfig, OmegaConf

from sfbench_jax.config import (
    DatasetConfig,
    EvalConfig,
    MethodConfig,
    ModelConfig,
    RunConfig,
    TrainConfig,
)
from sfbench_jax.files import write_json
from sfbench_jax.methods import get_method
from sfbench_jax.report.collect import CELL_FILE, FAILED_FILE

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
    from sfbench_jax.pipeline import check_run_config

    run_config = OmegaConf.to_object(cfg)
    if not isinstance(run_config, RunConfig):
        raise TypeError("The composed config is not a RunConfig; conf/config.yaml must list run_schema.")
    check_run_config(run_config)
    return run_config


def run_job(cfg: DictConfig, output_dir: Path) -> None:
    """Validate the config, switch on the compilation cache, run the pipeline (a host model's failure, e.g. an
    external predictor's wrong shape, is raised as its own `HostModelError`, a ValueError)."""
    from sfbench_jax.cli.compilation_cache import use_compilation_cache
    from sfbench_jax.host_calls import reporting_host_failures
    from sfbench_jax.pipeline import run

    run_config = to_run_config(cfg)
    use_compilation_cache(run_config)
    with reporting_host_failures():
        run(run_config, output_dir)


def cell_of(cfg: DictConfig) -> dict[str, str]:
    """The (dataset, architecture, method) cell a job config belongs to."""
    return {"dataset": str(cfg.dataset.name), "architecture": str(cfg.model.name), "method": str(cfg.method.name)}


def run_recorded(cfg: DictConfig, output_dir: Path) -> None:
    """Run one multirun job; record its cell first and any failure instead of raising, so the sweep goes on.

    A (method, architecture) pair the benchmark does not define (e.g. RevIN on PatchTST) is skipped with a
    one-line note: it is not a cell of the sweep (the collection does not expect it)."""
    cell = cell_of(cfg)
    if not get_method(cell["method"]).applies_to(cell["architecture"]):
        print(f"[sfbench] job {output_dir.name} skipped: method {cell['method']!r} does not apply to "
              f"{cell['architecture']!r} (not a cell of the benchmark)", file=sys.stderr, flush=True)
        return
    write_json({**cell, "overrides": list(HydraConfig.get().overrides.task)}, output_dir / CELL_FILE)
    try:
        run_job(cfg, output_dir)
    except Exception as error:  # noqa: BLE001 - recorded in job_failed.json and reported by the collection step
        write_json({**cell, "error": type(error).__name__, "message": str(error),
                    "traceback": traceback.format_exc()}, output_dir / FAILED_FILE)
        print(f"[sfbench] job {output_dir.name} FAILED ({cell['dataset']}, {cell['architecture']}, "
              f"{cell['method']}): {type(error).__name__}: {error}", file=sys.stderr, flush=True)


@hydra.main(version_base="1.3", config_path=CONFIG_PATH, config_name="config")
def main(cfg: DictConfig) -> None:
    """Run one benchmark job."""
    hydra_config = HydraConfig.get()
    output_dir = Path(hydra_config.runtime.output_dir)
    if hydra_config.mode == RunMode.MULTIRUN:
        run_recorded(cfg, output_dir)
        return
    try:
        run_job(cfg, output_dir)
    except INPUT_ERRORS as error:
        if os.environ.get("HYDRA_FULL_ERROR") == "1":
            raise
        print(f"sfbench: error: {error}\n(set HYDRA_FULL_ERROR=1 for the traceback)", file=sys.stderr, flush=True)
        sys.exit(2)


if __name__ == "__main__":
    main()
