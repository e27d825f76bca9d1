"""Training throughput: optimiser steps per second and seconds per epoch for each architecture, and the
candidate-parallel speed-up split into its two effects: vectorisation (G candidates in one vmapped program vs
the same candidates one after another, both on one device) and the device split (the vmapped group split over
D devices vs on one device).

Prints a table; `--json` prints one JSON object. Every number comes from the engine's own compiled epoch
program (`sfbench_jax.train.loop`): an epoch of S steps plus the clean validation pass. Steps per second
come from the difference between a 2S-step and an S-step epoch (so the validation pass cancels); the
validation seconds are what remains; seconds per full epoch = full steps / steps per second + validation.
If timing noise makes the 2S-step epoch no slower than the S-step one, or the S-step epoch shorter than its
S steps, the benchmark stops with an error instead of reporting a clamped number (rerun with more `--steps`
or `--repeats`, or on a quieter machine). Compile time is measured separately; timings are medians of
`--repeats` runs after a warm-up, with `block_until_ready` semantics (the host reads the epoch's losses).

The speed-up uses G candidates with the architecture's default hyperparameters (learning rates
1e-3 / 5e-4 / 1e-4, three seeds) and three programs, all measured in the same run:

* sequential: the single-candidate program run G times on one device;
* vmap, one device: the G candidates vectorised in one program on one device;
* vmap, D devices: the same program with the candidates split over D devices (like the `sfbench` CLI, every
  CPU core is a JAX device; `--devices` sets D, default all local devices).

`x vmap` = sequential / vmap-one-device (vectorisation alone), `x devices` = vmap-one-device / vmap-D-devices
(the device split alone), `x total` = sequential / vmap-D-devices = their product; each per training step,
per validation pass and for a full epoch derived from both (S- and 2S-step epochs again). On CPU one device
is one XLA host device: XLA may still spread a single large operation over several cores (its intra-op
thread pool), so `x devices` is what running the two halves of the group concurrently adds on top. Example:

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


def step_and_validation_seconds(t_short: float, t_long: float, steps: int, what: str) -> tuple[float, float]:
    """(seconds per step, validation seconds) from the median times of an S-step and a 2S-step epoch.

    Raises:
        RuntimeError: the times are inconsistent (timing noise larger than the quantity measured).
    """
    if not t_long > t_short:
        raise RuntimeError(f"{what}: the {2 * steps}-step epoch ({t_long:.4f} s) was not slower than the "
                           f"{steps}-step epoch ({t_short:.4f} s), so steps/s cannot be derived; timing noise "
                           "exceeds the work timed. Rerun with a larger --steps or --repeats, or on a quieter machine.")
    step_seconds = (t_long - t_short) / steps
    validation = t_short - steps * step_seconds
    if validation < 0:
        raise RuntimeError(f"{what}: the {steps}-step epoch ({t_short:.4f} s) took less than its {steps} steps "
                           f"alone ({steps * step_seconds:.4f} s, from the {2 * steps}-step epoch), so the validation "
                           "time would be negative; timing noise exceeds the validation pass. Rerun with a larger "
                           "--repeats, or on a quieter machine.")
    return step_seconds, validation


def throughput(data, architecture: str, steps: int, repeats: int) -> dict:
    """Steps/s, validation seconds and seconds per full epoch of one candidate."""
    full_steps = len(data.train_starts) // data.spec.batch_size
    short, long = (EpochProgram(data, architecture, {}, _members(1), TrainConfig(steps_per_epoch=length),
                                vectorize=False) for length in (steps, 2 * steps))
    step_seconds, validation = step_and_validation_seconds(
        _epoch_seconds(short, repeats), _epoch_seconds(long, repeats), steps, f"{architecture} one candidate")
    return {"steps_timed": steps, "compile_seconds": short.compile_seconds, "steps_per_second": 1.0 / step_seconds,
            "validation_seconds": validation, "epoch_seconds": full_steps * step_seconds + validation,
            "steps_per_epoch": full_steps}


#: The three ways of training G candidates: (label, vectorised, devices or None for `--devices`).
LAYOUTS = (("sequential", False, 1), ("vmap_one_device", True, 1), ("vmap_devices", True, None))


def layout_seconds(data, architecture: str, steps: int, repeats: int, candidates: int, vectorize: bool,
                   devices: int | None) -> dict:
    """Per-step, validation and full-epoch seconds of all G candidates in one layout, and its device count."""
    full_steps = len(data.train_starts) // data.spec.batch_size
    times, used = [], 1
    for length in (steps, 2 * steps):
        program = EpochProgram(data, architecture, {}, _members(candidates),
                               TrainConfig(steps_per_epoch=length, devices=devices), vectorize=vectorize)
        used = program.num_devices
        times.append(_epoch_seconds(program, repeats))
    what = f"{architecture} {candidates} candidates, {'vmap' if vectorize else 'sequential'} on {used} device(s)"
    step, validation = step_and_validation_seconds(*times, steps, what)
    return {"devices": used, "step": step, "validation": validation, "epoch": full_steps * step + validation}


def speedup(data, architecture: str, steps: int, repeats: int, candidates: int, devices: int | None) -> dict:
    """G candidates one after another, vectorised on one device, and vectorised over D devices: epoch seconds
    of each, and the vectorisation, device-split and total speed-ups per step, validation pass and epoch."""
    seconds = {label: layout_seconds(data, architecture, steps, repeats, candidates, vectorize,
                                     devices if layout_devices is None else layout_devices)
               for label, vectorize, layout_devices in LAYOUTS}
    sequential, one, split = (seconds[label] for label, _, _ in LAYOUTS)
    ratios = {}
    for part in ("step", "validation", "epoch"):
        ratios[f"vmap_{part}"] = sequential[part] / one[part]
        ratios[f"devices_{part}"] = one[part] / split[part]
        ratios[f"total_{part}"] = sequential[part] / split[part]
    return {"candidates": candidates, "devices": split["devices"], "steps_timed": steps,
            "sequential_epoch_seconds": sequential["epoch"], "vmap_one_device_epoch_seconds": one["epoch"],
            "vmap_devices_epoch_seconds": split["epoch"], **ratios}


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
              f"{'s/epoch':>9} {'G':>3} {'D':>2} {'seq s/ep':>9} {'vmap1 s/ep':>10} {'vmapD s/ep':>10} "
              f"{'x vmap':>7} {'x devices':>9} {'x total':>7}")
    print(header)
    print("-" * len(header))
    for row in result["rows"]:
        line = (f"{row['dataset']:<18} {row['architecture']:<10} {row['batch_size']:>3} {row['channels']:>4} "
                f"{row['compile_seconds']:>9.2f} {row['steps_per_second']:>9.1f} {row['validation_seconds']:>7.2f} "
                f"{row['epoch_seconds']:>9.1f}")
        if "parallel" in row:
            p = row["parallel"]
            line += (f" {p['candidates']:>3} {p['devices']:>2} {p['sequential_epoch_seconds']:>9.2f} "
                     f"{p['vmap_one_device_epoch_seconds']:>10.2f} {p['vmap_devices_epoch_seconds']:>10.2f} "
                     f"{p['vmap_epoch']:>6.2f}x {p['devices_epoch']:>8.2f}x {p['total_epoch']:>6.2f}x")
        print(line)
    print("s/epoch: one candidate, full epoch (625 or 156 steps) + validation. seq / vmap1 / vmapD s/ep: a full "
          "epoch of all G candidates one after another on one device / vectorised on one device / vectorised "
          "over D devices. x vmap = seq / vmap1 (vectorisation), x devices = vmap1 / vmapD (device split), "
          "x total = seq / vmapD; per step and per validation pass in --json.")
    return result


if __name__ == "__main__":
    main()
