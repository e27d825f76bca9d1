"""`sfbench-report html --runs FOLDER... [--output FILE]` and `sfbench-report mlflow --runs FOLDER...`: the two
commands of `sfbench-report` that read stored runs without writing tables.

`html` writes the one-file report page (`sfbench_jax.report.html`; default `report/report.html`, or
`FOLDER/report.html` when --output is a folder). Exit status 0 when every run was verified and shown, 1 when the
page was written but names damaged or missing runs at its top (they are also printed), 2 on bad arguments.

`mlflow` logs every verified run under the folders to the MLflow tracking server (`MLFLOW_TRACKING_URI`) in the
experiment `MLFLOW_EXPERIMENT_NAME` (default `sfbench`), once each: a run already logged under its run key is skipped
(`sfbench_jax.report.mlflow_logging`); only the files each run's completion record covers are uploaded. A multirun
folder becomes a parent run with one child per job. Exit status 0 when everything was logged or was already there,
1 (one line) when the server cannot be reached or fails mid-way, holds other numbers under a run's key, or a run
folder is damaged (named).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from sfbench_jax.run_folder.loading import RunConflictError


def html_target(output: Path | None) -> Path:
    """The page's file: `--output` when it names a file, `OUTPUT/report.html` for a folder, else the default."""
    if output is None:
        return Path("report") / "report.html"
    return output / "report.html" if output.is_dir() or not output.suffix else output


def run_html(args: argparse.Namespace) -> int:
    """Write the report page; see the module docstring for exit codes."""
    from sfbench_jax.cli.report_options import report_options
    from sfbench_jax.report.html import read_page_runs, refusal_label, report_html, stored_curves, write_page

    try:
        options = report_options(args)  # --select COLUMN=VALUE keeps the tables' rows, as for the other outputs
        page = read_page_runs(args.runs)
        target = write_page(report_html(page, stored_curves(args.runs, page.runs), options), html_target(args.output))
    except (RunConflictError, FileNotFoundError, ValueError) as error:
        print(f"sfbench-report html: {error}", file=sys.stderr)
        return 2
    problems = [f"{refusal_label(reason)} {folder}: {reason}" for folder, reason in page.damaged]
    problems += [f"missing {item}" for item in page.missing]
    print(f"sfbench-report html: {len(page.runs.runs)} verified run(s); wrote {target}")
    if problems:
        print(f"sfbench-report html: {len(problems)} run(s) are named at the top of the page and left out of its "
              "tables:\n  - " + "\n  - ".join(problems), file=sys.stderr)
        return 1
    return 0


def run_mlflow(args: argparse.Namespace) -> int:
    """Log the stored runs to MLflow; see the module docstring for exit codes."""
    from sfbench_jax.report.mlflow_logging import (
        DEFAULT_EXPERIMENT,
        TrackingConflict,
        TrackingFailed,
        TrackingUnavailable,
        log_stored_folders,
        one_line,
    )

    uri = os.environ.get("MLFLOW_TRACKING_URI")
    experiment = os.environ.get("MLFLOW_EXPERIMENT_NAME") or DEFAULT_EXPERIMENT
    try:
        logged = log_stored_folders(args.runs, uri=uri, experiment=experiment)
    except (TrackingUnavailable, TrackingFailed, TrackingConflict, RunConflictError, FileNotFoundError,
            ValueError) as error:
        print(f"sfbench-report mlflow: {one_line(error, chars=2000)}", file=sys.stderr)
        return 1
    new = sum(1 for item in logged if item.created)
    print(f"sfbench-report mlflow: {len(logged)} run(s); {new} logged now, {len(logged) - new} already logged")
    return 0


def run_page_command(args: argparse.Namespace) -> int:
    """`html` or `mlflow` (the first NAME), alone."""
    if len(args.names) != 1:
        print(f"sfbench-report: {args.names[0]} is a command of its own; pass it without other names.",
              file=sys.stderr)
        return 2
    missing = [str(folder) for folder in args.runs if not folder.is_dir()]
    if missing:
        print(f"sfbench-report: not a folder: {', '.join(missing)}", file=sys.stderr)
        return 2
    return run_html(args) if args.names[0] == "html" else run_mlflow(args)
