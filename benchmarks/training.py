"""Training throughput: optimiser steps per second and seconds per epoch for each architecture, and the
candidate-parallel speed-up (G candidates vectorised with vmap vs the same candidates one after another).

Prints a table; `--json` prints one JSON object. Every number comes from the engine's own compiled epoch
program (`sfbench_jax.train.loop`): an epoch of S steps plus the clean validation pass. Steps per second
come from the difference between a 2S-step and an S-step epoch (so the validation pass cancels); the
validation seconds are what remains; seconds per full epoch = full steps / steps per second + validation.
Compile time is measured separately; timings are medians of `--repeats` runs after a warm-up, with
`block_until_ready` semantics (the host reads the epoch's losses).

The speed-up compares G candidates with the architecture's default hyperparameters (learning rates
1e-3 / 5e-4 / 1e-4, three seeds) in one vmapped program, split over every local device (like the
`sfbench` CLI, every CPU core is a JAX device; `--devices` overrides), against the single-candidate
program run G times,
per training step, per validation pass and for a full epoch derived from both (S- and 2S-step epochs
again). Example:

    python benchmarks/training.py                                  # ETTh1 + traffic_synthetic, all five
    python benchmarks/training.py --datasets etth1 --architectures dlinear gru --json
"""

from __future__ import annotations

from sfbench_jax.cli.cpu_devices import expose_cpu_cores

expose_cpu_cores()  # like the `sfbench` CLI, before JAX initialises

import argparse
import json
import statistics
import sys
import time

import jax

from sfbench_jax.config import TrainConfig
from sfbench_jax.data import load, prepare
from sfbench_jax.train.fit import EpochProgram, GroupMember

ARCHITECTURES = ("dlinear", "gru", "moderntcn", "patchtst", "tsmixer")
DEFAULT_STEPS = {"etth1": 50, "traffic_synthetic": 4}
LEARNING_RATES = (1e-3, 5e-4, 1e-4)


def _members(count: int) -> list[GroupMember]:
    return [GroupMember(LEARNING_RATES[i % 3], 1000 + i // 3) for i in range(count)]


def _epoch_seconds(program: EpochProgram, repeats: int) -> float:
    active = [True] * program.size
    program.run_epoch(0, active)  # warm-up
    times = []
    for epoch in range(1, repeats + 1):
        started = time.perf_counter()
        program.run_epoch(epoch, active)  # returns host values: the epoch has finished
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def throughput(data, architecture: str, steps: int, repeats: int) -> dict:
    """Steps/s, validation seconds and seconds per full epoch of one candidate."""
    full_steps = len(data.train_starts) // data.spec.batch_size
    short, long = (EpochProgram(data, architecture, {}, _members(1), TrainConfig(steps_per_epoch=length),
                                vectorize=False) for length in (steps, 2 * steps))
    t_short, t_long = _epoch_seconds(short, repeats), _epoch_seconds(long, repeats)
    step_seconds = max(t_long - t_short, 1e-9) / steps
    validation = max(t_short - steps * step_seconds, 0.0)
    return {"steps_timed": steps, "compile_seconds": short.compile_seconds, "steps_per_second": 1.0 / step_seconds,
            "validation_seconds": validation, "epoch_seconds": full_steps * step_seconds + validation,
            "steps_per_epoch": full_steps}


def _split(t_short: float, t_long: float, steps: int) -> tuple[float, float]:
    """(seconds per step, validation seconds) from an S-step and a 2S-step epoch."""
    step_seconds = max(t_long - t_short, 1e-9) / steps
    return step_seconds, max(t_short - steps * step_seconds, 0.0)


def speedup(data, architecture: str, steps: int, repeats: int, candidates: int, devices: int | None) -> dict:
    """G candidates vectorised vs one after another: per training step, per validation pass, and for a
    full epoch (full steps x step time + validation) derived from both."""
    full_steps = len(data.train_starts) // data.spec.batch_size
    seconds = {}
    for vectorize in (True, False):
        for length in (steps, 2 * steps):
            options = TrainConfig(steps_per_epoch=length, devices=devices)
            program = EpochProgram(data, architecture, {}, _members(candidates), options, vectorize=vectorize)
            if vectorize:
                used = program.num_devices
            seconds[vectorize, length] = _epoch_seconds(program, repeats)
    vec_step, vec_val = _split(seconds[True, steps], seconds[True, 2 * steps], steps)
    seq_step, seq_val = _split(seconds[False, steps], seconds[False, 2 * steps], steps)
    vec_epoch, seq_epoch = full_steps * vec_step + vec_val, full_steps * seq_step + seq_val
    return {"candidates": candidates, "devices": used, "steps_timed": steps, "vectorised_epoch_seconds": vec_epoch,
            "sequential_epoch_seconds": seq_epoch, "speedup_epoch": seq_epoch / vec_epoch,
            "speedup_step": seq_step / vec_step, "speedup_validation": seq_val / max(vec_val, 1e-9)}


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", nargs="+", default=["etth1", "traffic_synthetic"])
    parser.add_argument("--architectures", nargs="+", default=list(ARCHITECTURES), choices=ARCHITECTURES)
    parser.add_argument("--steps", type=int, default=None,
                        help="steps per timed epoch (default: 50 on etth1, 4 on traffic_synthetic)")
    parser.add_argument("--repeats", type=int, default=3, help="timed repeats after a warm-up (default 3)")
    parser.add_argument("--candidates", type=int, default=8, help="candidates in the speed-up test (default 8)")
    parser.add_argument("--devices", type=int, default=None,
                        help="devices the vectorised group is split over (default: all local devices)")
    parser.add_argument("--speedup-datasets", nargs="+", default=["etth1"],
                        help="datasets on which the speed-up is measured (default: etth1)")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    args = parser.parse_args(argv)
    device = jax.devices()[0]
    result: dict = {"device": f"{device.platform}:{device.device_kind}", "jax": jax.__version__, "rows": []}
    for dataset in args.datasets:
        data = prepare(load(dataset))
        steps = args.steps or DEFAULT_STEPS.get(dataset, 20)
        for architecture in args.architectures:
            row = {"dataset": dataset, "architecture": architecture, "batch_size": data.spec.batch_size,
                   "channels": data.spec.num_channels, **throughput(data, architecture, steps, args.repeats)}
            if dataset in args.speedup_datasets:
                row["parallel"] = speedup(data, architecture, steps, args.repeats, args.candidates,
                                          args.devices)
            result["rows"].append(row)
            if not args.json:
                print(f"... {dataset} {architecture} done", file=sys.stderr, flush=True)
    if args.json:
        print(json.dumps(result))
        return result
    print(f"device: {result['device']} (jax {result['jax']}); default hyperparameters of each architecture")
    header = (f"{'dataset':<18} {'arch':<10} {'B':>3} {'m':>4} {'compile s':>9} {'steps/s':>9} {'val s':>7} "
              f"{'s/epoch':>9} {'G':>3} {'D':>2} {'vmap s/ep':>9} {'seq s/ep':>9} "
              f"{'x step':>7} {'x val':>7} {'x epoch':>7}")
    print(header)
    print("-" * len(header))
    for row in result["rows"]:
        line = (f"{row['dataset']:<18} {row['architecture']:<10} {row['batch_size']:>3} {row['channels']:>4} "
                f"{row['compile_seconds']:>9.2f} {row['steps_per_second']:>9.1f} {row['validation_seconds']:>7.2f} "
                f"{row['epoch_seconds']:>9.1f}")
        if "parallel" in row:
            p = row["parallel"]
            line += (f" {p['candidates']:>3} {p['devices']:>2} {p['vectorised_epoch_seconds']:>9.1f} "
                     f"{p['sequential_epoch_seconds']:>9.1f} {p['speedup_step']:>6.2f}x "
                     f"{p['speedup_validation']:>6.2f}x {p['speedup_epoch']:>6.2f}x")
        print(line)
    print("s/epoch: one candidate, full epoch (625 or 156 steps) + validation. vmap/seq s/ep: a full epoch of all "
          "G candidates, vectorised over D devices / one after another; "
          "x step, x val, x epoch: sequential / vectorised time.")
    return result


if __name__ == "__main__":
    main()
