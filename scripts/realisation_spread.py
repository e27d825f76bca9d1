"""How much one Monte Carlo realisation of SeasonalNaive's D_w varies with the fault randomness alone.

The test windows stay the dataset's canonical ones (so MSE_c is fixed); only the fault keys change:
realisation r uses fault seed r in both RNG modes (JAX keys folded from r; the reference's MT19937
streams derived from r). Prints, per mode, the canonical realisation, the mean and standard deviation
of D_w over `--count` realisations and the share that lands inside an interval (default: the published
95% interval of the dataset's SeasonalNaive D_w). This separates Monte Carlo variation from a
difference in law between the modes: equal means, different single realisations.

Usage::

    python scripts/realisation_spread.py --dataset etth1 --count 40
    python scripts/realisation_spread.py --dataset beijing_air_tiantan --data-root ../shared/data --json
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

import numpy as np

from sfbench_jax.config import RNG_MODES, DatasetConfig, EvalConfig, RunConfig
from sfbench_jax.data import load, prepare
from sfbench_jax.evaluation import predict_fn
from sfbench_jax.evaluation.engine import score_windows
from sfbench_jax.evaluation.scores import robustness_scores
from sfbench_jax.models.seasonal_naive import SeasonalNaive
from sfbench_jax.pipeline.cell import select_model
from sfbench_jax.pipeline.resolved import resolve_cell

#: Published 95% bootstrap intervals of SeasonalNaive's D_w (spec, Table 4 / 16 style).
PUBLISHED_INTERVALS = {"etth1": (1.2722, 1.3050), "beijing_air_tiantan": (1.3131, 1.3928)}


def realisations(data, season: int, mode: str, fault_seeds: list[int]) -> list[float]:
    """D_w on the canonical test windows for each fault seed."""
    spec = data.spec
    starts = data.test_starts(spec.seeds.canonical_eval_seed, 10_000)
    model = SeasonalNaive(season_length=season, input_len=spec.input_len, horizon=spec.horizon,
                          target_indices=spec.target_indices)
    predict, state = predict_fn(model)
    values = []
    for seed in fault_seeds:
        options = EvalConfig(seed=seed, rng_mode=mode, progress=False)
        losses, _ = score_windows(predict, state, data, options, test_starts=starts)
        values.append(robustness_scores(losses.clean, losses.faulted).d_w)
        print(f"... {mode} fault seed {seed}: D_w {values[-1]:.5f}", file=sys.stderr, flush=True)
    return values


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", default="etth1", help="dataset key (default etth1)")
    parser.add_argument("--data-root", type=Path, default=os.environ.get("SFBENCH_DATA_ROOT"),
                        help="data root (default: $SFBENCH_DATA_ROOT; not needed for etth1)")
    parser.add_argument("--count", type=int, default=40, help="realisations per mode (default 40)")
    parser.add_argument("--modes", nargs="+", default=list(RNG_MODES), choices=list(RNG_MODES))
    parser.add_argument("--interval", nargs=2, type=float, default=None, metavar=("LO", "HI"),
                        help="interval to count hits in (default: the published one for the dataset)")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    args = parser.parse_args(argv)
    if args.count < 2:
        parser.error("--count must be >= 2 (a standard deviation needs two realisations)")
    interval = tuple(args.interval) if args.interval else PUBLISHED_INTERVALS.get(args.dataset)
    if interval is None:
        parser.error(f"no published interval is known for {args.dataset!r}; pass --interval LO HI")

    data = prepare(load(args.dataset, data_root=args.data_root))
    cfg = RunConfig(dataset=DatasetConfig(name=args.dataset))
    season = select_model(data, resolve_cell(cfg), None, log=lambda message: None).winner.hparams["season_length"]
    canonical = data.spec.seeds.canonical_eval_seed
    result = {"dataset": args.dataset, "season": season, "count": args.count, "interval": list(interval),
              "modes": {}}
    for mode in args.modes:
        values = np.asarray(realisations(data, season, mode, [canonical, *range(args.count)]))
        spread = values[1:]
        result["modes"][mode] = {
            "canonical": float(values[0]), "mean": float(spread.mean()), "sd": float(spread.std(ddof=1)),
            "min": float(spread.min()), "max": float(spread.max()),
            "inside_interval": float(np.mean((spread >= interval[0]) & (spread <= interval[1])))}
    if args.json:
        print(json.dumps(result))
        return result
    print(f"{args.dataset}: SeasonalNaive (season {season}), canonical test windows, {args.count} fault seeds "
          f"per mode; interval [{interval[0]}, {interval[1]}]")
    print(f"{'mode':<10} {'canonical':>10} {'mean':>8} {'sd':>7} {'min':>8} {'max':>8} {'inside':>7}")
    for mode, row in result["modes"].items():
        print(f"{mode:<10} {row['canonical']:>10.5f} {row['mean']:>8.5f} {row['sd']:>7.5f} {row['min']:>8.5f} "
              f"{row['max']:>8.5f} {row['inside_interval']:>6.0%}")
    return result


if __name__ == "__main__":
    main()
