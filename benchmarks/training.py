"""Training throughput: optimiser steps per second and seconds per epoch for each architecture, and the
candidate-parallel speed-up split into its two effects: vectorisation (G candidates in one vmapped program vs
the same candidates one after another, both on one device) and the device split (the vmapped group split over
D devices vs on one device).

Prints a table; `--json` prints one JSON object. Every number comes from the engine's own compiled epoch
program (`sfbench_jax.training.loop`): an epoch of S steps plus the clean validation pass. Steps per second
come from the difference between a 2S-step and an S-step epoch (so the validation pass cancels); the
validation seconds are what remains; seconds per full epoch = full steps / steps per second + validation.
The S- and 2S-step epochs (and, for the speed-up, all six programs) run interleaved, one epoch of each per
round, so other work on the machine weighs on them alike; the step time is the median of the paired
differences. If timing noise still makes the 2S-step epochs no slower than the S-step ones, or the S-step
epoch shorter than its S steps, the benchmark stops with an error instead of reporting a clamped number (rerun
with more `--steps` or `--repeats`, or on a quieter machine). Compile time is measured separately; timings
are medians of `--repeats` rounds after a warm-up round, with `block_until_ready` semantics (the host reads
the epoch's losses).

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

`--methods` measures instead the training-kind robustness methods (spec 4) on ETTh1, DLinear and PatchTST by
default: one candidate per method recipe (PGD with 3, 5 and 7 steps at eps 0.1; the first recipe of every other
method's grid), each the engine's compiled full epoch with the method's step transform, all interleaved with the
baseline's in the same rounds; it reports each recipe's epoch seconds relative to the baseline's. PGD runs
steps + 1 forward/backward passes per step, so it should cost about steps + 1 baseline epochs.

    python benchmarks/training.py --methods --architectures dlinear            # full epochs
    python benchmarks/training.py --methods --architectures patchtst --steps 20  # full epoch from 20/40 steps

`--variants` times a training-kind method's whole variant search (by default the adaptive robust loss's 40
variants of DLinear on ETTh1, full protocol: every drop-last batch, at most 200 epochs, patience 10) as `sfbench`
runs it (`run_search`: early stopping, every variant saved, the winner selected): all variants as one vectorised
group split over every local device (`train.group_size` = `--budget`) against one variant after another
(`train.group_size=1`), back to back in each round, the order alternating; it prints each round's seconds, ratio
and load average, whether both selected the same variant with the same epochs and best losses (1e-5 relative),
and the median ratio. `--steps`, `--max-epochs`, `--patience` and `--budget` bound it:

    python benchmarks/training.py --variants --steps 200 --max-epochs 20 --repeats 2

`--group-sizes` compares, per architecture, one full epoch of G = 1, 8 and `train.group_size=auto` candidates on one
device (G = 1: the single-candidate program; otherwise the vmapped one; auto: as many as the device's memory holds
by the compiled epoch's memory analysis, `fit.candidates_per_group`, at most `AUTO_GROUP_LIMIT`; on a CPU auto keeps
one), derived from S- and 2S-step epochs as above, all programs interleaved: seconds per epoch, per candidate-epoch,
and `x seq` = G one-candidate epochs / one G-candidate epoch (the vectorisation's gain):

    python benchmarks/training.py --group-sizes --architectures dlinear patchtst --steps 20
"""

from __future__ import annotations

from sfbench_jax.cli.cpu_devices import expose_cpu_cores

expose_cpu_cores()  # like the `sfbench` CLI, before JAX initialises

import argparse
import json
import os
import statistics
import sys
import time
from collections.abc import Hashable

import jax

from sfbench_jax.config import TrainConfig
from sfbench_jax.data import load, prepare
from sfbench_jax.methods.registry import METHODS
from sfbench_jax.models.registry import MODELS
from sfbench_jax.training.fit import (
    AUTO_GROUP_LIMIT,
    EpochProgram,
    GroupMember,
    candidates_per_group,
    training_recipe,
)

#: Real datasets (Beijing, Traffic, Penmanshiel) come from here, as for the `sfbench` CLI.
DATA_ROOT = os.environ.get("SFBENCH_DATA_ROOT")

ARCHITECTURES = ("dlinear", "gru", "moderntcn", "patchtst", "tsmixer")
DEFAULT_STEPS = {"etth1": 50, "traffic_synthetic": 4}
LEARNING_RATES = (1e-3, 5e-4, 1e-4)


def _members(count: int) -> list[GroupMember]:
    return [GroupMember(LEARNING_RATES[i % 3], 1000 + i // 3) for i in range(count)]


def interleaved_epoch_seconds(programs: dict[Hashable, EpochProgram], repeats: int) -> dict[Hashable, list[float]]:
    """Seconds of `repeats` epochs of every program, interleaved (one epoch of each per round, after one warm-up
    round), so that other work on the machine weighs on all of them alike."""
    times: dict[Hashable, list[float]] = {name: [] for name in programs}
    for epoch in range(repeats + 1):
        for name, program in programs.items():
            started = time.perf_counter()
            program.run_epoch(epoch, [True] * program.size)  # returns host values: the epoch has finished
            if epoch:
                times[name].append(time.perf_counter() - started)
    return times


def step_and_validation_seconds(short: list[float], long: list[float], steps: int, what: str) -> tuple[float, float]:
    """(seconds per step, validation seconds) from paired S-step and 2S-step epoch times: the step time is the
    median of the paired differences / S, the validation time the median S-step epoch minus S steps.

    Raises:
        RuntimeError: the times are inconsistent (timing noise larger than the quantity measured).
    """
    t_short = statistics.median(short)
    step_seconds = statistics.median(b - a for a, b in zip(short, long, strict=True)) / steps
    if not step_seconds > 0:
        raise RuntimeError(f"{what}: the {2 * steps}-step epochs ({statistics.median(long):.4f} s) were not slower "
                           f"than the {steps}-step epochs ({t_short:.4f} s), so steps/s cannot be derived; timing "
                           "noise exceeds the work timed. Rerun with a larger --steps or --repeats, or on a quieter "
                           "machine.")
    validation = t_short - steps * step_seconds
    if validation < 0:
        raise RuntimeError(f"{what}: the {steps}-step epochs ({t_short:.4f} s) took less than their {steps} steps "
                           f"alone ({steps * step_seconds:.4f} s, from the {2 * steps}-step epochs), so the "
                           "validation time would be negative; timing noise exceeds the validation pass. Rerun "
                           "with a larger --repeats, or on a quieter machine.")
    return step_seconds, validation


def throughput(data, architecture: str, steps: int, repeats: int) -> dict:
    """Steps/s, validation seconds and seconds per full epoch of one candidate."""
    full_steps = len(data.train_starts) // data.spec.batch_size
    model = MODELS[architecture]
    programs = {length: EpochProgram(data, model, {}, _members(1), TrainConfig(steps_per_epoch=length),
                                     vectorize=False) for length in (steps, 2 * steps)}
    times = interleaved_epoch_seconds(programs, repeats)
    step_seconds, validation = step_and_validation_seconds(times[steps], times[2 * steps], steps,
                                                           f"{architecture} one candidate")
    return {"steps_timed": steps, "compile_seconds": programs[steps].compile_seconds,
            "steps_per_second": 1.0 / step_seconds, "validation_seconds": validation,
            "epoch_seconds": full_steps * step_seconds + validation, "steps_per_epoch": full_steps}


#: The three ways of training G candidates: (label, vectorised, devices or None for `--devices`).
LAYOUTS = (("sequential", False, 1), ("vmap_one_device", True, 1), ("vmap_devices", True, None))


def speedup(data, architecture: str, steps: int, repeats: int, candidates: int, devices: int | None) -> dict:
    """G candidates one after another, vectorised on one device, and vectorised over D devices (S- and
    2S-step epochs of each, all six programs interleaved): epoch seconds of each layout, and the
    vectorisation, device-split and total speed-ups per step, validation pass and epoch."""
    full_steps = len(data.train_starts) // data.spec.batch_size
    programs = {(label, length): EpochProgram(data, MODELS[architecture], {}, _members(candidates),
                                              TrainConfig(steps_per_epoch=length,
                                                          num_devices=devices if wanted is None else wanted),
                                              vectorize=vectorize)
                for label, vectorize, wanted in LAYOUTS for length in (steps, 2 * steps)}
    times = interleaved_epoch_seconds(programs, repeats)
    seconds = {}
    for label, _, _ in LAYOUTS:
        used = programs[label, steps].num_devices
        step, validation = step_and_validation_seconds(times[label, steps], times[label, 2 * steps], steps,
                                                       f"{architecture} {candidates} candidates, {label} ({used} "
                                                       "device(s))")
        seconds[label] = {"devices": used, "step": step, "validation": validation,
                          "epoch": full_steps * step + validation}
    sequential, one, split = (seconds[label] for label, _, _ in LAYOUTS)
    ratios = {}
    for part in ("step", "validation", "epoch"):
        ratios[f"vmap_{part}"] = sequential[part] / one[part]
        ratios[f"devices_{part}"] = one[part] / split[part]
        ratios[f"total_{part}"] = sequential[part] / split[part]
    return {"candidates": candidates, "devices": split["devices"], "steps_timed": steps,
            "sequential_epoch_seconds": sequential["epoch"], "vmap_one_device_epoch_seconds": one["epoch"],
            "vmap_devices_epoch_seconds": split["epoch"], **ratios}


HEADER = (f"{'dataset':<18} {'arch':<10} {'B':>3} {'m':>4} {'compile s':>9} {'steps/s':>9} {'val s':>7} "
          f"{'s/epoch':>9} {'G':>3} {'D':>2} {'seq s/ep':>9} {'vmap1 s/ep':>10} {'vmapD s/ep':>10} "
          f"{'x vmap':>7} {'x devices':>9} {'x total':>7}")
LEGEND = ("s/epoch: one candidate, full epoch (625 or 156 steps) + validation. seq / vmap1 / vmapD s/ep: a full "
          "epoch of all G candidates one after another on one device / vectorised on one device / vectorised "
          "over D devices. x vmap = seq / vmap1 (vectorisation), x devices = vmap1 / vmapD (device split), "
          "x total = seq / vmapD; per step and per validation pass in --json.")


def table_line(row: dict) -> str:
    """One row of the printed table."""
    line = (f"{row['dataset']:<18} {row['architecture']:<10} {row['batch_size']:>3} {row['channels']:>4} "
            f"{row['compile_seconds']:>9.2f} {row['steps_per_second']:>9.1f} {row['validation_seconds']:>7.2f} "
            f"{row['epoch_seconds']:>9.1f}")
    if "parallel" in row:
        p = row["parallel"]
        line += (f" {p['candidates']:>3} {p['devices']:>2} {p['sequential_epoch_seconds']:>9.2f} "
                 f"{p['vmap_one_device_epoch_seconds']:>10.2f} {p['vmap_devices_epoch_seconds']:>10.2f} "
                 f"{p['vmap_epoch']:>6.2f}x {p['devices_epoch']:>8.2f}x {p['total_epoch']:>6.2f}x")
    return line


def method_recipes() -> dict[str, tuple[str, dict]]:
    """Label -> (method, recipe) of the timed recipes: the baseline, PGD at 3/5/7 steps, and the first recipe of
    every other training-kind method's grid."""
    recipes: dict[str, tuple[str, dict]] = {"baseline": ("baseline", {})}
    for name, spec in METHODS.items():
        if spec.kind != "train":
            continue
        first = {key: values[0] for key, values in spec.grid.items()}
        if name == "adversarial_training":
            for steps in (3, 5, 7):
                recipes[f"pgd_steps{steps}"] = (name, {**first, "eps": 0.1, "steps": steps})
        else:
            recipes[name] = (name, first)
    return recipes


def method_costs(data, architecture: str, repeats: int, steps: int | None) -> list[dict]:
    """Full-epoch seconds (every drop-last batch + the clean validation pass) of each applicable method recipe and
    their ratio to the baseline's, all programs interleaved in the same rounds. Without `steps` full epochs are
    timed and the ratio is the median of the per-round ratios; with `steps` (for slow architectures) S- and
    2S-step epochs are timed and the full epoch derived as in `throughput`."""
    full_steps = len(data.train_starts) // data.spec.batch_size
    recipes = {label: (name, recipe) for label, (name, recipe) in method_recipes().items()
               if METHODS[name].applies_to(architecture)}
    lengths = (None,) if steps is None else (steps, 2 * steps)
    programs = {(label, length): EpochProgram(data, MODELS[architecture], {}, _members(1),
                                              TrainConfig(steps_per_epoch=length), vectorize=False,
                                              recipe=training_recipe(data, METHODS[name], recipe))
                for label, (name, recipe) in recipes.items() for length in lengths}
    times = interleaved_epoch_seconds(programs, repeats)
    if steps is None:
        epochs = {label: times[label, None] for label in recipes}
    else:
        epochs = {}
        for label in recipes:
            step, validation = step_and_validation_seconds(times[label, steps], times[label, 2 * steps], steps,
                                                           f"{architecture} {label}")
            epochs[label] = [full_steps * step + validation]
    return [{"architecture": architecture, "recipe": label, "method": name, "settings": recipe,
             "compile_seconds": programs[label, lengths[0]].compile_seconds,
             "epoch_seconds": statistics.median(epochs[label]),
             "epoch_vs_baseline": statistics.median(t / b for t, b in zip(epochs[label], epochs["baseline"],
                                                                          strict=True))}
            for label, (name, recipe) in recipes.items()]


METHOD_HEADER = f"{'arch':<10} {'recipe':<22} {'compile s':>9} {'s/epoch':>8} {'x baseline':>10}"


def method_line(row: dict) -> str:
    """One row of the methods table."""
    return (f"{row['architecture']:<10} {row['recipe']:<22} {row['compile_seconds']:>9.2f} "
            f"{row['epoch_seconds']:>8.2f} {row['epoch_vs_baseline']:>9.2f}x")


def methods_main(args: argparse.Namespace) -> dict:
    """The `--methods` table: every training-kind method against the baseline epoch of the same run."""
    device = jax.devices()[0]
    result: dict = {"device": f"{device.platform}:{device.device_kind}", "jax": jax.__version__, "rows": []}
    architectures = args.architectures or ["dlinear", "patchtst"]
    datasets = args.datasets or ["etth1"]
    if not args.json:
        print(f"device: {result['device']} (jax {result['jax']}); one candidate, default hyperparameters")
    for dataset in datasets:
        data = prepare(load(dataset, data_root=DATA_ROOT))
        if not args.json:
            timed = "full epochs" if args.steps is None else f"{args.steps}- and {2 * args.steps}-step epochs"
            print(f"{dataset}: {timed}, {args.repeats} rounds\n{METHOD_HEADER}")
            print("-" * len(METHOD_HEADER), flush=True)
        for architecture in architectures:
            for row in method_costs(data, architecture, args.repeats, args.steps):
                result["rows"].append({"dataset": dataset, **row})
                if not args.json:
                    print(method_line(row), flush=True)
    if args.json:
        print(json.dumps(result))
    else:
        print("x baseline: the recipe's full epoch (every training batch + the clean validation pass) over the "
              "baseline's, median of the per-round ratios.")
    return result


#: Relative difference of the best validation losses within which both layouts count as giving equal numbers.
VARIANT_RTOL = 1e-5


def variant_layouts(group_size: int) -> tuple[tuple[str, int], ...]:
    """The two ways of training a method's variants: vectorised groups of `group_size` variants split over every
    local device (`train.group_size`, `train.num_devices` null; the number of variants: all of them in one group)
    and one variant after another (`train.group_size=1`, the single-candidate program reused for every variant)."""
    return (("vectorised", group_size), ("sequential", 1))


def _search_once(data, architecture: str, method: str, options: TrainConfig, budget: int) -> tuple[list, float]:
    """One whole variant search on a fresh candidate store: its records and wall seconds."""
    import tempfile

    from sfbench_jax.methods.registry import method_grid
    from sfbench_jax.training import CandidateStore, run_search
    from sfbench_jax.training.sweep import plan_method_search

    plan = plan_method_search(data, MODELS[architecture], METHODS[method], recipes=method_grid(method, None),
                              inherited={"lr": 1e-3}, options=options, budget=budget)
    with tempfile.TemporaryDirectory() as store:
        started = time.perf_counter()
        results = run_search(data, plan, store=CandidateStore(store), options=options)
        return results, time.perf_counter() - started


def _agreement(ours: list, theirs: list) -> dict:
    """Whether two searches selected the same variant with the same epochs and best losses (to `VARIANT_RTOL`)."""
    from sfbench_jax.training import select_winner

    selected = [select_winner(r).variant for r in (ours, theirs)]
    difference = max(abs(a.best_val_loss - b.best_val_loss) / abs(b.best_val_loss)
                      for a, b in zip(ours, theirs, strict=True))
    same_epochs = all((a.epochs_run, a.best_epoch) == (b.epochs_run, b.best_epoch)
                      for a, b in zip(ours, theirs, strict=True))
    return {"selected": selected, "max_relative_difference": difference, "same_epochs": same_epochs,
            "agree": selected[0] == selected[1] and same_epochs and difference <= VARIANT_RTOL}


def variant_search(data, architecture: str, method: str, *, steps: int | None, max_epochs: int, patience: int,
                   budget: int, repeats: int, group_size: int | None = None) -> dict:
    """The method's whole variant search as `sfbench` runs it (`run_search` on a fresh candidate store: every variant
    trained with early stopping, saved with its checkpoint, then the winner selected), vectorised and one variant
    after another, the two back to back in each round with their order alternating: seconds of each, the ratio per
    round, the load average, and whether both selected the same variant with the same numbers. The variants inherit
    the architecture's default hyperparameters at learning rate 1e-3 (in a study: the baseline winner's). Round 1
    includes the compilation of both layouts' programs (later rounds reuse them, as a warm compilation cache does)."""
    rounds = []
    for round_index in range(repeats):
        layouts = variant_layouts(group_size or budget)
        seconds, results = {}, {}
        for label, size in layouts if round_index % 2 == 0 else layouts[::-1]:
            options = TrainConfig(max_epochs=max_epochs, patience=patience, steps_per_epoch=steps,
                                  candidate_budget=budget, group_size=size, progress=False)
            results[label], seconds[label] = _search_once(data, architecture, method, options, budget)
            print(f"[variants] round {round_index + 1}: {label} {seconds[label]:.1f} s "
                  f"(epochs run: {sum(r.epochs_run for r in results[label])})", file=sys.stderr, flush=True)
        rounds.append({"vectorised_seconds": seconds["vectorised"], "sequential_seconds": seconds["sequential"],
                       "ratio": seconds["sequential"] / seconds["vectorised"], "load_average": os.getloadavg()[0],
                       **_agreement(results["vectorised"], results["sequential"]),
                       "epochs_run": sorted(r.epochs_run for r in results["vectorised"])})
    warm = rounds[1:] or rounds
    return {"dataset": data.spec.key, "architecture": architecture, "method": method, "variants": budget,
            "group_size": group_size or budget,
            "steps_per_epoch": steps, "max_epochs": max_epochs, "patience": patience, "rounds": rounds,
            "median_ratio": statistics.median(r["ratio"] for r in rounds),
            "median_ratio_warm": statistics.median(r["ratio"] for r in warm),
            "agree": all(r["agree"] for r in rounds)}


def variants_main(args: argparse.Namespace) -> dict:
    """The `--variants` comparison: a method's variant search vectorised against one variant after another."""
    device = jax.devices()[0]
    data = prepare(load((args.datasets or ["etth1"])[0], data_root=DATA_ROOT))
    architecture = (args.architectures or ["dlinear"])[0]
    result = {"device": f"{device.platform}:{device.device_kind}", "devices": len(jax.devices()),
              "cores": len(os.sched_getaffinity(0)), "jax": jax.__version__, **variant_search(
                  data, architecture, args.variant_method, steps=args.steps, max_epochs=args.max_epochs,
                  patience=args.patience, budget=args.budget, repeats=args.repeats, group_size=args.group_size)}
    if args.json:
        print(json.dumps(result))
        return result
    print(f"device: {result['device']} x {result['devices']} on {result['cores']} cores (jax {result['jax']}); "
          f"{result['method']} search of {architecture} on {data.spec.key}: {args.budget} variants in groups of "
          f"{result['group_size']}, "
          f"{args.steps or 'all'} steps per epoch, at most {args.max_epochs} epochs, patience {args.patience}")
    for number, row in enumerate(result["rounds"], start=1):
        print(f"round {number} (load {row['load_average']:.1f}): vectorised {row['vectorised_seconds']:.1f} s, one "
              f"after another {row['sequential_seconds']:.1f} s -> {row['ratio']:.2f}x; selected "
              f"{row['selected'][0]} / {row['selected'][1]}, same epochs {row['same_epochs']}, best val max rel. "
              f"difference {row['max_relative_difference']:.1e}; epochs run {row['epochs_run']}", flush=True)
    print(f"median ratio (one after another / vectorised): {result['median_ratio']:.2f}x over {len(result['rounds'])} "
          f"rounds (round 1 includes compilation), {result['median_ratio_warm']:.2f}x without round 1; same selected "
          f"variant, epochs and best losses (rel. {VARIANT_RTOL:g}) in every round: {result['agree']}")
    return result


def group_size_epochs(data, architecture: str, steps: int, repeats: int, sizes: tuple[int | str, ...] = (1, 8, "auto"),
                      most: int = AUTO_GROUP_LIMIT) -> dict:
    """Full-epoch seconds of G candidates on one device for each G in `sizes` ("auto": `train.group_size=auto`'s size
    here, at most `most`), from interleaved S- and 2S-step epochs: per epoch, per candidate-epoch, and G
    one-candidate epochs over one G-candidate epoch (`speedup`)."""
    full_steps = len(data.train_starts) // data.spec.batch_size
    options = TrainConfig(steps_per_epoch=steps, num_devices=1)
    widths = {str(size): (candidates_per_group(data, MODELS[architecture], {}, options, most=most) if size == "auto"
                          else int(size)) for size in sizes}
    programs = {(width, length): EpochProgram(data, MODELS[architecture], {}, _members(width),
                                              TrainConfig(steps_per_epoch=length, num_devices=1),
                                              vectorize=width > 1)
                for width in sorted(set(widths.values()) | {1}) for length in (steps, 2 * steps)}
    times = interleaved_epoch_seconds(programs, repeats)
    epochs = {}
    for width in sorted(set(widths.values()) | {1}):
        step, validation = step_and_validation_seconds(times[width, steps], times[width, 2 * steps], steps,
                                                       f"{architecture} {width} candidate(s)")
        epochs[width] = full_steps * step + validation
    rows = [{"group": label, "candidates": width, "compile_seconds": programs[width, steps].compile_seconds,
             "epoch_seconds": epochs[width], "candidate_epoch_seconds": epochs[width] / width,
             "speedup": width * epochs[1] / epochs[width]} for label, width in widths.items()]
    return {"dataset": data.spec.key, "architecture": architecture, "steps_timed": steps, "rows": rows}


GROUP_HEADER = (f"{'dataset':<18} {'arch':<10} {'group':>5} {'G':>3} {'compile s':>9} {'s/epoch':>9} "
                f"{'s/cand-epoch':>12} {'x seq':>7}")


def group_sizes_main(args: argparse.Namespace) -> dict:
    """The `--group-sizes` table: full epochs of 1, 8 and auto candidates per architecture."""
    device = jax.devices()[0]
    result: dict = {"device": f"{device.platform}:{device.device_kind}", "jax": jax.__version__, "rows": []}
    if not args.json:
        print(f"device: {result['device']} (jax {result['jax']}); default hyperparameters, one device\n{GROUP_HEADER}")
        print("-" * len(GROUP_HEADER), flush=True)
    for dataset in args.datasets or ["etth1"]:
        data = prepare(load(dataset, data_root=DATA_ROOT))
        steps = args.steps or DEFAULT_STEPS.get(dataset, 20)
        for architecture in args.architectures or ARCHITECTURES:
            measured = group_size_epochs(data, architecture, steps, args.repeats)
            result["rows"].append(measured)
            for row in measured["rows"] if not args.json else []:
                print(f"{dataset:<18} {architecture:<10} {row['group']:>5} {row['candidates']:>3} "
                      f"{row['compile_seconds']:>9.2f} {row['epoch_seconds']:>9.2f} "
                      f"{row['candidate_epoch_seconds']:>12.3f} {row['speedup']:>6.2f}x", flush=True)
    if args.json:
        print(json.dumps(result))
    else:
        print("s/epoch: one full epoch (every drop-last batch + validation) of the whole group; x seq = G "
              "one-candidate epochs / one G-candidate epoch.")
    return result


def _parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", nargs="+", default=None,
                        help="default: etth1 traffic_synthetic (with --methods: etth1)")
    parser.add_argument("--architectures", nargs="+", default=None, choices=ARCHITECTURES,
                        help="default: all five (with --methods: dlinear patchtst)")
    parser.add_argument("--steps", type=int, default=None,
                        help="steps per timed epoch (default: 50 on etth1, 4 on traffic_synthetic)")
    parser.add_argument("--repeats", type=int, default=3, help="timed repeats after a warm-up (default 3)")
    parser.add_argument("--candidates", type=int, default=8, help="candidates in the speed-up test (default 8)")
    parser.add_argument("--devices", type=int, default=None,
                        help="devices the vectorised group is split over (default: all local devices)")
    parser.add_argument("--speedup-datasets", nargs="+", default=["etth1"],
                        help="datasets on which the speed-up is measured (default: etth1)")
    parser.add_argument("--methods", action="store_true",
                        help="time the training-kind robustness methods against the baseline epoch instead "
                             "(default: etth1, dlinear and patchtst)")
    parser.add_argument("--variants", action="store_true",
                        help="time a method's whole variant search vectorised against one variant after another "
                             "(default: adaptive_robust_loss, dlinear, etth1, 40 variants)")
    parser.add_argument("--group-sizes", action="store_true",
                        help="compare full epochs of 1, 8 and auto candidates per architecture (default: etth1)")
    parser.add_argument("--variant-method", default="adaptive_robust_loss",
                        help="with --variants: the training-kind method (default adaptive_robust_loss)")
    parser.add_argument("--budget", type=int, default=40, help="with --variants: variants sampled (default 40)")
    parser.add_argument("--group-size", type=int, default=None,
                        help="with --variants: variants per vectorised group (default: all of them in one group)")
    parser.add_argument("--max-epochs", type=int, default=200, help="with --variants: epoch limit (default 200)")
    parser.add_argument("--patience", type=int, default=10, help="with --variants: patience (default 10)")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> dict:
    """Measures every (dataset, architecture) row; the table prints each row as soon as it is measured, so an
    error on a later row (inconsistent timings) still leaves the earlier ones on screen."""
    args = _parse(argv)
    if args.methods:
        return methods_main(args)
    if args.variants:
        return variants_main(args)
    if args.group_sizes:
        return group_sizes_main(args)
    device = jax.devices()[0]
    result: dict = {"device": f"{device.platform}:{device.device_kind}", "jax": jax.__version__, "rows": []}
    if not args.json:
        print(f"device: {result['device']} (jax {result['jax']}); default hyperparameters of each architecture")
        print(HEADER)
        print("-" * len(HEADER), flush=True)
    for dataset in args.datasets or ["etth1", "traffic_synthetic"]:
        data = prepare(load(dataset, data_root=DATA_ROOT))
        steps = args.steps or DEFAULT_STEPS.get(dataset, 20)
        for architecture in args.architectures or ARCHITECTURES:
            row = {"dataset": dataset, "architecture": architecture, "batch_size": data.spec.batch_size,
                   "channels": data.spec.num_channels, **throughput(data, architecture, steps, args.repeats)}
            if dataset in args.speedup_datasets:
                row["parallel"] = speedup(data, architecture, steps, args.repeats, args.candidates,
                                          args.devices)
            result["rows"].append(row)
            if not args.json:
                print(table_line(row), flush=True)
    if args.json:
        print(json.dumps(result))
    else:
        print(LEGEND)
    return result


if __name__ == "__main__":
    main()
