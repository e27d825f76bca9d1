"""Hydra callback that collects a multirun: it records the expected cells when the sweep starts and
merges the jobs into one table (with the paper views) when it ends, naming any missing cell.

Registered in conf/config.yaml under `hydra.callbacks.collect`. Hydra turns exceptions raised in
callbacks into warnings, so a missing cell ends the process with exit status 1 after the report.

Both hooks run in the launching process, once per sweep, with every launcher (joblib, submitit's local
and SLURM executors, Ray): the jobs themselves never collect, so jobs on other machines need only write
their folders under the shared `hydra.sweep.dir` (tests/cli/test_launchers.py checks it for each launcher).
If the launcher fails (a job process was killed), Hydra skips `on_multirun_end`; re-running the sweep, or
`sfbench-collect SWEEP_DIR`, collects it.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from hydra import compose
from hydra._internal.core_plugins.basic_sweeper import BasicSweeper
from hydra.core.global_hydra import GlobalHydra
from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.experimental.callback import Callback
from omegaconf import DictConfig, OmegaConf

from sfbench_jax.methods import METHODS
from sfbench_jax.report.collect import Cell, MissingCellsError, check_sweep_folder, collect, write_expected_cells
from sfbench_jax.run_folder.locks import check_folder_locking


def sweep_jobs(config: DictConfig) -> list[list[str]]:
    """The override list of every job of the sweep (the basic sweeper's Cartesian product)."""
    params = OmegaConf.select(config, "hydra.sweeper.params") or {}
    arguments = [f"{key}={value}" for key, value in params.items()]
    arguments += list(OmegaConf.select(config, "hydra.overrides.task") or [])
    overrides = OverridesParser.create().parse_overrides(arguments)
    return [list(job) for batch in BasicSweeper.split_arguments(overrides, None) for job in batch]


def job_cell(job: list[str], config_name: str | None, base: Cell) -> Cell:
    """The cell of one job: compose its config (hydra.* overrides aside) and read the names."""
    task = [override for override in job if not override.lstrip("+~").startswith("hydra")]
    if GlobalHydra.instance().is_initialized() and config_name is not None:
        cfg = compose(config_name=config_name, overrides=task)
        return Cell(str(cfg.dataset.name), str(cfg.model.name), str(cfg.method.name))
    values = dict(override.lstrip("+~").split("=", 1) for override in task if "=" in override)
    return Cell(values.get("dataset", values.get("dataset.name", base.dataset)),
                values.get("model", values.get("model.name", base.architecture)),
                values.get("method", values.get("method.name", base.method)))


def applies(cell: Cell) -> bool:
    """Whether a cell's method applies to its architecture (a job of an inapplicable pair is skipped)."""
    return cell.method not in METHODS or METHODS[cell.method].applies_to(cell.architecture)


class CollectOnMultirunEnd(Callback):
    """Write expected_cells.json at multirun start; collect the sweep at multirun end."""

    def on_multirun_start(self, config: DictConfig, **kwargs: Any) -> None:
        """Refuse a sweep folder that holds jobs of other settings or cannot be locked (one line, exit 2, before
        any job or file), then record the sweep's expected jobs."""
        base = Cell(str(config.dataset.name), str(config.model.name), str(config.method.name))
        jobs = sweep_jobs(config)
        sweep_dir = Path(config.hydra.sweep.dir)
        try:
            check_sweep_folder(sweep_dir, jobs)
            check_folder_locking(sweep_dir)
        except (ValueError, PermissionError) as error:  # Hydra would turn an exception into a warning and go on
            print(f"sfbench: error: {error}", file=sys.stderr, flush=True)
            raise SystemExit(2) from None
        cells = [job_cell(job, kwargs.get("config_name"), base) for job in jobs]
        cells = [cell for cell in cells if applies(cell)]  # e.g. RevIN on PatchTST is no cell: its job is skipped
        write_expected_cells(sweep_dir, cells, jobs)

    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        sweep_dir = Path(config.hydra.sweep.dir)
        try:
            collection = collect(sweep_dir, figures=bool(config.figures))
        except MissingCellsError as error:
            print(f"[sfbench-collect] {error}", file=sys.stderr, flush=True)
            raise SystemExit(1) from error
        except ValueError as error:  # a damaged run or an unreadable sweep file: named, no table written
            print(f"[sfbench-collect] {error} No table was written.", file=sys.stderr, flush=True)
            raise SystemExit(2) from error
        write_report_page(sweep_dir)
        print(f"[sfbench-collect] {len(collection.summary)} cells merged -> "
              f"{', '.join(path.name for path in collection.files.values())} in {sweep_dir}",
              file=sys.stderr, flush=True)


def write_report_page(sweep_dir: Path) -> None:
    """Write the sweep's one-file HTML report (`report.html`, `sfbench_jax.report.html`) after its collection; a
    page that cannot be written is one line, never a failed sweep (the tables are already written)."""
    from sfbench_jax.report.html import write_html_report

    try:
        target = write_html_report([sweep_dir], sweep_dir / "report.html")
    except (OSError, ValueError) as error:
        print(f"[sfbench-collect] report.html not written: {error}", file=sys.stderr, flush=True)
        return
    print(f"[sfbench-collect] wrote {target}", file=sys.stderr, flush=True)
