"""`sfbench-report NAME... --runs FOLDER...`: regenerate any table or figure of the paper's analysis from stored
runs, without retraining (e.g. `sfbench-report table19 --runs multirun/2026-01-01_10-00-00`).

NAME is one of the outputs of `sfbench_jax.report.catalog.OUTPUTS` (table4, table10, table11, table12, table16,
table17, table19, table20, figure2, figure3, figure4, figure5, figure6, curves, extras, longform) or `all`. A FOLDER
that a multirun wrote is first checked against the jobs it expected: a missing or failed job is named and
nothing is written. Every run is verified first (its completion record and its summary against its per-window
losses, `run_folder.loading.load_run`). Exit status 0 when everything was written, 1 when runs are missing (or
still being written, the writer named) or cannot support an output (the reason is printed), 2 on bad arguments or a
damaged run (named in one line with the file; no table is written).

`html` (one self-contained page of the runs) and `mlflow` (log the runs to MLflow) are commands of their own
(`sfbench_jax.cli.pages`).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from sfbench_jax.cli.report_options import report_options
from sfbench_jax.report.catalog import OUTPUTS, Analysis, Restorer, build_output
from sfbench_jax.report.collect import EXPECTED_FILE, check_sweep
from sfbench_jax.report.realisations import NotApplicable
from sfbench_jax.run_folder.damage import DamagedRunError, DamagedRunsError, RunInProgressError
from sfbench_jax.run_folder.finding import ExtraRunsError
from sfbench_jax.run_folder.loading import RunConflictError, gather_runs

#: Names that are commands over the runs rather than tables (`sfbench_jax.cli.pages`).
PAGE_COMMANDS = ("html", "mlflow")


def parse_arguments(argv: list[str] | None) -> argparse.Namespace:
    """The command line."""
    parser = argparse.ArgumentParser(prog="sfbench-report", description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="+", metavar="NAME",
                        help=f"outputs: {', '.join(OUTPUTS)}, or all; or html (one-file page) or mlflow (log runs)")
    parser.add_argument("--runs", nargs="+", type=Path, required=True, metavar="FOLDER",
                        help="folders holding run folders (searched recursively); multirun folders are checked")
    parser.add_argument("--output", type=Path, default=None,
                        help="where to write (default: ./report; html: a file, default ./report/report.html)")
    parser.add_argument("--select", nargs="+", default=[], metavar="COLUMN=VALUE",
                        help="keep only summary rows with these values, e.g. rng_mode=reference k=10000")
    parser.add_argument("--published-frontier", action="store_true",
                        help="fit rho-bar's frontier also on the published winners of architectures the runs lack")
    parser.add_argument("--method", default=None, help="the method of Figure 6 (default: adversarial_training)")
    parser.add_argument("--architecture", default=None, help="the model of Figures 3/4 (default: seasonal_naive)")
    parser.add_argument("--severities", default=None, metavar="S1,S2,...",
                        help="severity grid of the curves (default 0,0.05,...,1)")
    parser.add_argument("--curve-k", type=int, default=None, help="test windows of the curves (default: the run's)")
    return parser.parse_args(argv)


def check_sweeps(folders: list[Path], output: Path) -> list[str]:
    """Missing jobs of every multirun folder among `folders` (named, with the reason)."""
    lines = []
    for folder in folders:
        if (folder / EXPECTED_FILE).is_file():
            _, missing = check_sweep(folder, output_dir=output)
            lines += [f"{folder}: {item.name}: {item.reason}" for item in missing]
    return lines


def still_written(error: Exception) -> bool:
    """Whether every folder an error names is a run still being written (exit 1, as for a missing run and as every
    other reader says it), rather than damaged (exit 2)."""
    errors = error.errors if isinstance(error, DamagedRunsError) else [error]
    return all(isinstance(item, RunInProgressError) for item in errors)


def build_all(names: list[str], analysis: Analysis, output: Path, *, skip_inapplicable: bool) -> dict[str, Path]:
    """Build the outputs; with `skip_inapplicable` (NAME `all`) the ones the runs cannot support are reported
    and skipped, otherwise the first one stops the command."""
    written: dict[str, Path] = {}
    for name in names:
        try:
            written.update(build_output(name, analysis, output))
        except NotApplicable as reason:
            if not skip_inapplicable:
                raise NotApplicable(f"{name}: {reason}") from reason
            print(f"sfbench-report: skipped {name}: {reason}", file=sys.stderr)
    return written


def main(argv: list[str] | None = None) -> int:
    """Build the requested outputs; see the module docstring for exit codes."""
    from sfbench_jax.cli.compilation_cache import use_compilation_cache
    from sfbench_jax.pipeline.rebuild import NotStoredError, fault_examples, run_config, run_severity_curves

    args = parse_arguments(argv)
    if args.names[0] in PAGE_COMMANDS:  # `sfbench-report html|mlflow --runs FOLDER...` (sfbench_jax.cli.pages)
        from sfbench_jax.cli.pages import run_page_command

        return run_page_command(args)
    names = list(OUTPUTS) if args.names == ["all"] else args.names
    unknown = [name for name in names if name not in OUTPUTS]
    missing_folders = [str(folder) for folder in args.runs if not folder.is_dir()]
    if unknown or missing_folders:
        print(f"sfbench-report: unknown output(s) {unknown}; valid: {', '.join(OUTPUTS)}, all." if unknown else
              f"sfbench-report: not a folder: {', '.join(missing_folders)}", file=sys.stderr)
        return 2
    try:
        options = report_options(args)
        args.output = args.output or Path("report")
        args.output.mkdir(parents=True, exist_ok=True)
        missing = check_sweeps(args.runs, args.output)
        if missing:
            print(f"sfbench-report: {len(missing)} expected run(s) missing; nothing was written:\n  - "
                  + "\n  - ".join(missing), file=sys.stderr)
            return 1
        runs = gather_runs(args.runs)
        if runs.runs:  # restoring outputs compile models: keep the programs as the sfbench command does
            use_compilation_cache(run_config(runs.runs[0].manifest))
        analysis = Analysis(runs, options, restorer=Restorer(fault_examples, run_severity_curves))
        written = build_all(names, analysis, args.output, skip_inapplicable=args.names == ["all"])
    except (DamagedRunError, DamagedRunsError, ExtraRunsError) as error:
        print(f"sfbench-report: {error} No table was written.", file=sys.stderr)
        return 1 if still_written(error) else 2
    except (NotApplicable, RunConflictError, NotStoredError) as error:
        print(f"sfbench-report: {error}", file=sys.stderr)
        return 1
    except ValueError as error:
        print(f"sfbench-report: {error}", file=sys.stderr)
        return 2
    print(f"sfbench-report: {len(analysis.runs.runs)} run(s); wrote " + ", ".join(str(p) for p in written.values()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
