"""Throughput and memory of the fused scoring core (prints a table; `--json` prints one JSON object).

Measures, on one dataset at K windows:

* compile seconds of the fused kernel;
* the fault pass: draw and apply all eight scenarios to every window (each faulted window reduced to its
  sum of squares, so every element is computed), through the engine's own stages, blocks, chunks and
  devices (`faulted_window_checksums`), no model;
* the full SeasonalNaive evaluation: clean pass + eight scenarios + 1000-draw bootstrap;
* the same fault pass done the straightforward way, one jitted call per (window, scenario) in a Python
  loop, timed on a subset and extrapolated, as the in-run baseline for the speed-up ratio;
* peak resident memory of the process.

Steady-state numbers are medians over repeats after the compile. Example:

    python benchmarks/scoring_core.py --dataset etth1 --k 10000
    python benchmarks/scoring_core.py --dataset traffic_synthetic --k 10000 --json
"""

from __future__ import annotations

from sfbench_jax.cli.cpu_devices import expose_cpu_cores

expose_cpu_cores()  # like the `sfbench` CLI, before JAX initialises

import argparse
import json
import resource
import statistics
import sys
import time

import jax

from sfbench_jax.config import EvalConfig
from sfbench_jax.data import load, prepare
from sfbench_jax.evaluate import evaluate_predictor, predict_fn
from sfbench_jax.evaluate.engine import fault_context, faulted_window_checksums
from sfbench_jax.faults import SCENARIOS, perturb
from sfbench_jax.faults.streams import pair_key
from sfbench_jax.models.seasonal_naive import SeasonalNaive

# Reference (PyTorch, per-window Python loop) fault-pass seconds for 10,000 windows x 8 scenarios on the
# 2-core CPU machine class (issue: ~9.5 s ETTh1, ~175 s Traffic-shaped).
REFERENCE_FAULT_SECONDS = {"etth1": 9.5, "traffic_synthetic": 175.0, "traffic": 175.0}


def loop_baseline_seconds(data, num_windows: int, seed: int) -> float:
    """Seconds for the straightforward loop: one jitted `perturb` call per (window, scenario)."""
    ctx = fault_context(data)
    starts = data.test_starts(seed, num_windows)
    n = data.spec.input_len
    windows = [jax.device_put(data.standardised[s:s + n]) for s in starts]
    base = jax.random.key(seed)
    one = {fault.key: jax.jit(lambda x, key, name=fault.key: perturb(name, x, rng_key=key, ctx=ctx))
           for fault in SCENARIOS}
    for fault in SCENARIOS:  # compile outside the timing
        one[fault.key](windows[0], pair_key(base, fault.index, 0)).block_until_ready()
    started = time.perf_counter()
    for window_id, window in enumerate(windows):
        for fault in SCENARIOS:
            one[fault.key](window, pair_key(base, fault.index, window_id)).block_until_ready()
    return time.perf_counter() - started


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", default="etth1",
                        help="dataset key, e.g. etth1 or traffic_synthetic (default etth1)")
    parser.add_argument("--k", type=int, default=10_000, help="test windows (default 10000)")
    parser.add_argument("--repeats", type=int, default=3, help="steady-state repeats (default 3)")
    parser.add_argument("--baseline-windows", type=int, default=100,
                        help="windows timed for the per-window loop baseline (default 100; 0 skips it)")
    parser.add_argument("--block-size", type=int, default=None, help="engine block size (default: auto)")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    args = parser.parse_args(argv)
    if args.k < 1 or args.repeats < 1 or args.baseline_windows < 0:
        parser.error("--k and --repeats must be >= 1 and --baseline-windows >= 0")

    data = prepare(load(args.dataset))
    spec = data.spec
    seed = spec.seeds.canonical_eval_seed
    options = EvalConfig(seed=seed, k=args.k, block_size=args.block_size, progress=False)

    fault_runs, fault_cpu = [], []
    for _ in range(args.repeats + 1):
        cpu_started = time.process_time()
        fault_runs.append(faulted_window_checksums(data, options)[1])
        fault_cpu.append(time.process_time() - cpu_started)
    compile_seconds = fault_runs[0].compile_seconds
    fault_seconds = statistics.median(stats.run_seconds for stats in fault_runs[1:])

    season = 24 if spec.horizon == 96 else 1
    model = SeasonalNaive(season_length=season, input_len=spec.input_len, horizon=spec.horizon,
                          target_indices=spec.target_indices)
    predict, state = predict_fn(model)
    eval_seconds_list, eval_compile = [], []
    for _ in range(args.repeats + 1):
        evaluation = evaluate_predictor(predict, state, data, options)
        eval_compile.append(evaluation.engine.compile_seconds)
        eval_seconds_list.append(evaluation.engine.run_seconds + evaluation.bootstrap_seconds)
    eval_seconds = statistics.median(eval_seconds_list[1:])

    loop_seconds = None
    if args.baseline_windows:
        sample = min(args.baseline_windows, args.k)
        loop_seconds = loop_baseline_seconds(data, sample, seed) * args.k / sample

    peak_rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    cells = args.k * len(SCENARIOS)
    result = {
        "dataset": args.dataset, "k": args.k, "device": jax.devices()[0].device_kind,
        "devices_used": fault_runs[0].num_devices,
        "backend": jax.default_backend(), "block_size": fault_runs[0].block_size,
        "compile_seconds": round(compile_seconds, 3),
        "fault_seconds": round(fault_seconds, 4),
        "fault_cpu_seconds": round(statistics.median(fault_cpu[1:]), 3),  # process CPU time, all cores
        "eval_seconds": round(eval_seconds, 4),
        "eval_compile_seconds": round(eval_compile[0], 3),
        "windows_x_scenarios_per_second": round(cells / fault_seconds),
        "loop_baseline_seconds": None if loop_seconds is None else round(loop_seconds, 2),
        "speedup_vs_loop": None if loop_seconds is None else round(loop_seconds / fault_seconds, 1),
        "reference_pytorch_fault_seconds": REFERENCE_FAULT_SECONDS.get(args.dataset),
        "speedup_vs_reference": (None if args.dataset not in REFERENCE_FAULT_SECONDS else
                                 round(REFERENCE_FAULT_SECONDS[args.dataset] * args.k / 10_000 / fault_seconds, 1)),
        "peak_rss_mb": round(peak_rss_mb, 1),
    }
    if args.json:
        print(json.dumps(result))
    else:
        width = max(len(key) for key in result)
        print(f"scoring core: {args.dataset}, K = {args.k}, {result['backend']} ({result['device']})")
        for key, value in result.items():
            print(f"  {key:<{width}}  {value}")
    return result


if __name__ == "__main__":
    main(sys.argv[1:])
