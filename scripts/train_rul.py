"""Train and score the C-MAPSS RUL models; write a results table (CSV + Markdown) and checkpoints.

Thin entry point: arguments become :class:`phm_kernels.rul_model.RulTrainConfig` objects and the
library does the work (``load_cmapss`` -> ``train_rul_model`` -> ``results_table``). Outputs, all
under ``--out``:

    results.csv        one row per (subset, architecture, seed), metrics in float64
    results.md         the same table plus the published baselines of spec section 1.6
    checkpoints/<subset>_<architecture>_seed<k>/   Orbax parameters + model.json

Example::

    python scripts/train_rul.py --data-root ../shared/data --out outputs/rul \\
        --subsets FD001 FD002 FD003 FD004 --architectures mlp cnn --seed 0

The README's FD001 figure (prints ``FD001 mlp seed 0: RMSE 15.20 ...``; the checkpoint it writes is stored as
``tests/kernels/fixtures/fd001_mlp_seed0``)::

    python scripts/train_rul.py --data-root ../shared/data --out outputs/rul_fd001 --subsets FD001 \\
        --architectures mlp --seed 0
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import platform
import sys
from pathlib import Path

import jax
from phm_kernels import loaders, rul_model


def _parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-root", type=Path, required=True,
                        help="shared data folder holding phm/cmapss")
    parser.add_argument("--out", type=Path, required=True, help="output folder (created)")
    parser.add_argument("--subsets", nargs="+", default=list(loaders.CMAPSS_SUBSETS),
                        choices=loaders.CMAPSS_SUBSETS)
    parser.add_argument("--architectures", nargs="+", default=["mlp"],
                        choices=rul_model.ARCHITECTURES)
    parser.add_argument("--seed", type=int, default=0, help="seed of the typed JAX key")
    parser.add_argument("--epochs", type=int, default=None,
                        help="override the per-architecture default epoch count")
    parser.add_argument("--clip-truth", action="store_true",
                        help="also cap the test truth at R_max when scoring (default: official)")
    parser.add_argument("--quiet", action="store_true")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    """Runs the requested trainings and writes the tables; returns the exit status."""
    args = _parse(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    results = []
    for subset in args.subsets:
        data = loaders.load_cmapss(args.data_root, subset)
        for architecture in args.architectures:
            config = rul_model.default_train_config(subset, architecture, seed=args.seed,
                                                    epochs=args.epochs)
            if args.clip_truth:
                config = dataclasses.replace(config, clip_truth=True)
            result = rul_model.train_rul_model(data, config)
            name = f"{subset}_{architecture}_seed{args.seed}"
            rul_model.save_rul_checkpoint(result.model, args.out / "checkpoints" / name)
            results.append(result)
            if not args.quiet:
                m = result.test_metrics
                print(f"{subset} {architecture:3s} seed {args.seed}: RMSE {m['rmse']:.2f}  "
                      f"MAE {m['mae']:.2f}  PHM08 {m['phm08_score']:.1f}  "
                      f"(best epoch {result.best_epoch}, {result.train_seconds:.1f} s)",
                      flush=True)
    table = rul_model.results_table(results)
    table.to_csv(args.out / "results.csv", index=False)
    baselines = rul_model.baselines_table()
    baselines = baselines[baselines["subset"].isin(args.subsets)]
    truth = "capped" if args.clip_truth else "uncapped (official RUL files)"
    provenance = (f"Cap R_max = {results[0].model.config.cap:g}; truth {truth}; seed {args.seed}; "
                  f"device {jax.devices()[0].device_kind}; JAX {jax.__version__}; "
                  f"Python {platform.python_version()}.")
    text = ["# C-MAPSS last-cycle test results", "", provenance, "",
            rul_model.markdown_table(table), "## Published baselines (spec 1.6, reference only)",
            "", rul_model.markdown_table(baselines, float_format="{:.2f}")]
    (args.out / "results.md").write_text("\n".join(text))
    (args.out / "configs.json").write_text(json.dumps(
        [r.model.config.to_dict() for r in results], indent=2))
    if not args.quiet:
        print(f"wrote {args.out / 'results.csv'} and {args.out / 'results.md'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
