"""`sfbench-collect SWEEP_DIR`: merge a multirun's jobs into one table per sweep (the same step the
multirun runs at its end), e.g. after SLURM jobs finished separately or failed jobs were re-run.

Exit status 0 when every expected cell is present, 1 when cells are missing (they are listed), 2 on
bad arguments, an unreadable sweep file, or a damaged run (a run folder without a valid completion record, a
file that differs from it, or a summary its per-window losses do not give: named in one line, no table written).
"""

from __future__ import annotations

import argparse
import itertools
import sys
from pathlib import Path

from sfbench_jax.report.collect import Cell, MissingCellsError, collect
from sfbench_jax.run_folder.damage import DamagedRunError, DamagedRunsError
from sfbench_jax.run_folder.finding import ExtraRunsError


def parse_expect(tokens: list[str]) -> list[Cell]:
    """`dataset=a,b model=c,d method=baseline` -> the Cartesian product of cells."""
    axes: dict[str, list[str] | None] = {"dataset": None, "model": None, "method": ["baseline"]}
    for token in tokens:
        key, _, values = token.partition("=")
        if key not in axes or not values:
            raise ValueError(f"--expect takes dataset=..., model=... and method=... (comma-separated), got {token!r}.")
        axes[key] = values.split(",")
    datasets, models, methods = axes["dataset"], axes["model"], axes["method"]
    if datasets is None or models is None:
        raise ValueError("--expect needs both dataset=... and model=....")
    assert methods is not None  # defaults to ["baseline"]; a given method= sets a list
    return [Cell(*cell) for cell in itertools.product(datasets, models, methods)]


def main(argv: list[str] | None = None) -> int:
    """Collect a sweep folder; see the module docstring for exit codes."""
    parser = argparse.ArgumentParser(prog="sfbench-collect", description=__doc__.splitlines()[0])
    parser.add_argument("sweep_dir", type=Path, help="the multirun folder (job folders inside)")
    parser.add_argument("--expect", nargs="+", metavar="AXIS=V1,V2",
                        help="expected cells (default: expected_cells.json written by the multirun)")
    parser.add_argument("--output", type=Path, default=None, help="where to write (default: SWEEP_DIR)")
    parser.add_argument("--no-figures", action="store_true", help="skip the PNG figures")
    args = parser.parse_args(argv)
    if not args.sweep_dir.is_dir():
        print(f"sfbench-collect: {args.sweep_dir} is not a folder.", file=sys.stderr)
        return 2
    try:
        expected = parse_expect(args.expect) if args.expect else None
        collection = collect(args.sweep_dir, expected, output_dir=args.output, figures=not args.no_figures)
    except MissingCellsError as error:
        print(f"sfbench-collect: {error}", file=sys.stderr)
        return 1
    except (DamagedRunError, DamagedRunsError, ExtraRunsError) as error:
        print(f"sfbench-collect: {error} No table was written.", file=sys.stderr)
        return 2
    except (ValueError, FileNotFoundError) as error:
        print(f"sfbench-collect: {error}", file=sys.stderr)
        return 2
    print(f"sfbench-collect: {len(collection.summary)} cells merged; wrote "
          f"{', '.join(str(path) for path in collection.files.values())}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
