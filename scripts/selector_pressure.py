"""Selector pressure (spec 5.5, paper Table 11): re-select stored method runs on perturbed validation and
evaluate the new winners in full, without training.

    python scripts/selector_pressure.py --runs multirun/<time> --output selector_pressure
    sfbench-report table11 --runs multirun/<time> selector_pressure

Every method run (method != baseline) at the canonical realisation is re-selected among its stored candidates
by the worst-scenario (or mean) perturbed validation MSE on all 3,000 validation windows (perturbation seed
`noise_seed`); the new winner is evaluated on the run's test settings and written to OUTPUT/<run folder name>
(summary `selection_metric` = the mode, `selection_value` = its score). Baselines stay as they are;
`--include-baselines` re-selects them too (for trying the procedure on baseline runs).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from sfbench_jax.pipeline.rebuild import SELECTION_MODES, NotStoredError, reselect_runs
from sfbench_jax.report.realisations import canonical_rows
from sfbench_jax.run_folder.loading import gather_runs


def main(argv: list[str] | None = None) -> int:
    """Re-select the stored runs; exit 0 when done, 1 when a run's candidates are not stored."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", nargs="+", type=Path, required=True, help="folders holding the method runs")
    parser.add_argument("--output", type=Path, required=True, help="where the re-selected runs are written")
    parser.add_argument("--mode", choices=SELECTION_MODES, default="perturbed_worst")
    parser.add_argument("--method", nargs="+", default=None, help="only these methods (default: every method)")
    parser.add_argument("--include-baselines", action="store_true", help="re-select baseline runs too")
    args = parser.parse_args(argv)
    runs = gather_runs(args.runs)
    chosen = canonical_rows(runs.summary)
    if not args.include_baselines:
        chosen = chosen[chosen["method"] != "baseline"]
    if args.method:
        chosen = chosen[chosen["method"].isin(args.method)]
    selected = [runs.by_directory(directory) for directory in chosen["run_dir"]]
    if not selected:
        print("selector_pressure: no method run at the canonical realisation in the given folders.", file=sys.stderr)
        return 1
    try:
        written = reselect_runs(selected, args.output, mode=args.mode, log=lambda line: print(line, file=sys.stderr))
    except NotStoredError as error:
        print(f"selector_pressure: {error}", file=sys.stderr)
        return 1
    print(f"selector_pressure: {len(written)} run(s) re-selected into {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
