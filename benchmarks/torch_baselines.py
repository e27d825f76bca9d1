"""The engine against a competent PyTorch implementation of the same architectures and weights, on 2 threads
(prints a table; `--json` prints one JSON object; `--check` only checks parity).

Per architecture (default hyperparameters, ETTh1 from `SFBENCH_DATA_ROOT`), in one process:

* **weights**: the PyTorch module (`benchmarks/torch_models.py`, PyTorch's default initialisation, seed 0) is the
  source; its `state_dict()` is loaded into the engine's Flax module by `sfbench_jax.models.parity.load_state`, and
  the two forwards must agree to 1e-5 (scale-relative) before anything is timed;
* **evaluation**: K test windows x 9 (clean + the 8 scenarios). The faulted windows are made once, outside the
  timed region, with the engine's public per-window fault pieces (`perturb` under the engine's (scenario, window)
  keys), so they are the windows the engine scores. PyTorch times what a competent user writes for the rest:
  batched `torch.no_grad()` forwards over the 9K windows and a per-window MSE (the batch size chosen as the
  fastest of `TORCH_BATCHES` on this machine). Ours: the engine's whole evaluation (`evaluate_predictor`: fault
  pass, forward, losses and the 1000-draw bootstrap; engine run + bootstrap seconds, as
  `scoring_core.py --model` reports) and, for the same work as PyTorch's, the jitted forward + per-window MSE over
  the same precomputed windows. The per-window losses of PyTorch and of the engine must agree (checked, reported).
  `eval ratio` = PyTorch seconds / the engine's whole evaluation seconds (PyTorch does less work);
* **training epoch**: PyTorch's `Adam` (lr 1e-3) step loop at batch 16 over the ETTh1 training windows (shuffled
  per epoch, windows gathered from a precomputed window tensor), MSE loss, then the validation pass under
  `torch.no_grad()`; against the engine's compiled epoch program (`EpochProgram`, timed by
  `training.interleaved_epoch_seconds`, which also runs the PyTorch epoch). Full epochs (every drop-last batch)
  unless `--steps` sets the steps of every timed epoch on both sides (then the figures are S-step epochs plus the
  validation pass, not full epochs). Each side starts from its own initialisation: a step's cost does not depend on
  the weights' values.

Timings are paired rounds after a warm-up round (PyTorch and the engine back to back, the order alternating in
evaluation); ratios are medians of the per-round ratios, so other work on the machine weighs on both alike.
`torch.set_num_threads(2)`; JAX sees every CPU core as a device, as in the `sfbench` CLI. Example:

    python benchmarks/torch_baselines.py --architectures patchtst --repeats 3
    python benchmarks/torch_baselines.py --k 500 --steps 20 --repeats 1 --json    # quick
    python benchmarks/torch_baselines.py --check
"""

from __future__ import annotations

from sfbench_jax.cli.cpu_devices import expose_cpu_cores

expose_cpu_cores()  # like the `sfbench` CLI, before JAX initialises

import argparse
import copy
import json
import os
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import torch
import torch.nn.functional as F
import torch_models
from training import DATA_ROOT, _members, interleaved_epoch_seconds

from sfbench_jax.config import EvalConfig, TrainConfig
from sfbench_jax.data import load, prepare
from sfbench_jax.data.prepared import PreparedData
from sfbench_jax.evaluation import evaluate_predictor, predict_fn
from sfbench_jax.evaluation.engine import fault_context
from sfbench_jax.evaluation.kernel import window_mse
from sfbench_jax.faults import SCENARIOS, perturb
from sfbench_jax.faults.streams import pair_key
from sfbench_jax.models.parity import load_state, parity_error
from sfbench_jax.models.registry import MODELS, build_model
from sfbench_jax.predictors.protocol import ChannelIndependentPredictor
from sfbench_jax.training.fit import EpochProgram

ARCHITECTURES = ("dlinear", "gru", "moderntcn", "patchtst", "tsmixer")
TORCH_THREADS = 2
#: Batch sizes tried for PyTorch's evaluation forward; the fastest on this machine is used.
TORCH_BATCHES = (256, 1024, 4096)
#: Windows the batch-size choice times each candidate on.
BATCH_PROBE_WINDOWS = 8192
#: Largest scale-relative forward difference allowed between PyTorch and the engine on the same weights.
PARITY_LIMIT = 1e-5
#: Largest relative per-window loss difference allowed between PyTorch's and the engine's evaluation.
LOSS_RTOL = 1e-3


# --- the evaluation windows -----------------------------------------------------------------------------------


def evaluation_windows(data: PreparedData, seed: int, k: int) -> tuple[np.ndarray, np.ndarray]:
    """`(inputs (9, K, n, m), targets (K, H, targets))`: the clean test windows and the eight faulted copies the
    engine scores (its per-window fault pieces under its (scenario, window) keys), standardised."""
    spec, ctx = data.spec, fault_context(data)
    starts = data.test_starts(seed, k).astype(np.int64)
    rows = starts[:, None] + np.arange(spec.input_len + spec.horizon)
    windows = data.standardised[rows]  # (K, n + H, m)
    clean = windows[:, : spec.input_len]
    base_key = jax.random.key(np.uint32(seed))

    def faulted(fault_key: str, index: int) -> Callable:
        def one(x: jax.Array, window_id: jax.Array) -> jax.Array:
            return perturb(fault_key, x, rng_key=pair_key(base_key, index, window_id), ctx=ctx)
        return jax.jit(jax.vmap(one))

    ids = jnp.arange(k, dtype=jnp.int32)
    copies = [clean] + [np.asarray(faulted(f.key, f.index)(jnp.asarray(clean), ids)) for f in SCENARIOS]
    targets = windows[:, spec.input_len:][:, :, list(spec.target_indices)]
    return np.stack(copies).astype(np.float32), np.ascontiguousarray(targets, np.float32)


# --- the two models on the same weights ------------------------------------------------------------------------


@dataclass(frozen=True)
class Pair:
    """The PyTorch module and the engine's predict function on the same weights."""

    module: torch.nn.Module
    model: Any  # the engine's Flax module
    predict: Any
    state: Any
    forward_parity: float


def same_weights(data: PreparedData, architecture: str, probe: np.ndarray) -> Pair:
    """The PyTorch module (seed 0) and the engine's module with its weights (`parity.load_state`); the forwards
    on `probe` windows must agree to `PARITY_LIMIT`.

    Raises:
        RuntimeError: the forwards disagree (a layout or semantics difference: nothing would be comparable).
    """
    spec = data.spec
    shape = {"input_len": spec.input_len, "horizon": spec.horizon, "num_channels": spec.num_channels,
             "target_indices": spec.target_indices}
    module = torch_models.build_torch_model(architecture, {}, seed=0, **shape)
    model = build_model(architecture, {}, seed=0, **shape)
    load_state(model, torch_models.numpy_state(module))
    predict, state = predict_fn(model, channel_sparse=MODELS[architecture].channel_sparse)
    full = predict.full if isinstance(predict, ChannelIndependentPredictor) else predict
    module.eval()
    with torch.no_grad():
        expected = module(torch.from_numpy(probe)).numpy()
    error = parity_error(np.asarray(jax.jit(full)(state, jnp.asarray(probe))), expected)
    if not error <= PARITY_LIMIT:
        raise RuntimeError(f"{architecture}: the engine's forward differs from the PyTorch module's on the same "
                           f"weights by {error:.2e} (> {PARITY_LIMIT:g}); fix torch_models.py or the parity "
                           "mapping before timing.")
    return Pair(module, model, predict, state, error)


# --- evaluation -----------------------------------------------------------------------------------------------


def torch_losses(module: torch.nn.Module, inputs: torch.Tensor, targets: torch.Tensor, batch: int) -> torch.Tensor:
    """A competent user's evaluation: batched `no_grad` forwards and the per-window MSE -> `(N,)`."""
    module.eval()
    losses = []
    with torch.no_grad():
        for first in range(0, inputs.shape[0], batch):
            error = module(inputs[first:first + batch]) - targets[first:first + batch]
            losses.append(error.square().mean(dim=(1, 2)))
    return torch.cat(losses)


def fastest_batch(module: torch.nn.Module, inputs: torch.Tensor, targets: torch.Tensor) -> int:
    """The fastest of `TORCH_BATCHES` for PyTorch's evaluation (one warm-up and two timed passes each over the
    first `BATCH_PROBE_WINDOWS` windows)."""
    probe = min(inputs.shape[0], BATCH_PROBE_WINDOWS)
    seconds = {}
    for batch in TORCH_BATCHES:
        times = []
        for _ in range(3):
            started = time.perf_counter()
            torch_losses(module, inputs[:probe], targets[:probe], batch)
            times.append(time.perf_counter() - started)
        seconds[batch] = min(times[1:])
    return min(seconds, key=seconds.get)


def jax_losses(predict: Any, batch: int, inputs: np.ndarray, targets: np.ndarray) -> Callable:
    """Ours on the same work as PyTorch's: the jitted forward + per-window MSE over the precomputed windows, each
    batch split into one part per JAX device (as the engine spreads its blocks over the devices; the parts run
    concurrently). Returns `run(state) -> (N,) losses`."""
    full = predict.full if isinstance(predict, ChannelIndependentPredictor) else predict
    step = jax.jit(lambda state, x, y: window_mse(full(state, x), y))
    devices = jax.devices()
    parts = []
    for first in range(0, inputs.shape[0], batch):
        size = min(batch, inputs.shape[0] - first)
        bounds = np.linspace(first, first + size, len(devices) + 1).astype(int)
        parts += [(device, jax.device_put(inputs[lo:hi], device), jax.device_put(targets[lo:hi], device))
                  for device, lo, hi in zip(devices, bounds[:-1], bounds[1:], strict=True) if hi > lo]
    states = {}

    def run(state: Any) -> np.ndarray:
        if not states:
            states.update({device: jax.device_put(state, device) for device in devices})
        losses = [step(states[device], x, y) for device, x, y in parts]
        return np.concatenate(jax.device_get(losses))

    return run


def _torch_leg(threads: int, run: Callable[[], Any]) -> Callable[[], Any]:
    """`run` on `threads` PyTorch intra-op threads."""
    def leg() -> Any:
        torch.set_num_threads(threads)
        return run()
    return leg


def _summary(rounds: list[dict[str, float]], ours: str, threads: list[int], prefix: str) -> dict:
    """Median seconds of every leg, and PyTorch / ours per round (median) at each thread count and against the
    fastest PyTorch of each round; the plain keys are the first thread count's (2 by default)."""
    result = {f"{prefix}_seconds_{name}": statistics.median(r[name] for r in rounds) for name in rounds[0]}
    for n in threads:
        result[f"{prefix}_ratio_t{n}"] = statistics.median(r[f"torch_t{n}"] / r[ours] for r in rounds)
    result[f"{prefix}_ratio_vs_fastest_torch"] = statistics.median(
        min(r[f"torch_t{n}"] for n in threads) / r[ours] for r in rounds)
    return result


def evaluation_rounds(pair: Pair, data: PreparedData, options: EvalConfig, windows: tuple[np.ndarray, np.ndarray],
                      repeats: int, threads: list[int]) -> dict:
    """Paired rounds (after a warm-up round; the order alternates) of PyTorch's evaluation at each thread count,
    the engine's whole evaluation and the engine's forward + MSE on the same windows; seconds, ratios and the
    loss agreement."""
    inputs, targets = windows
    count = inputs.shape[0] * inputs.shape[1]
    flat_inputs = inputs.reshape(count, *inputs.shape[2:])
    flat_targets = np.tile(targets, (inputs.shape[0], 1, 1))
    t_inputs, t_targets = torch.from_numpy(flat_inputs), torch.from_numpy(flat_targets)
    batches = {}
    for n in threads:
        torch.set_num_threads(n)
        batches[n] = fastest_batch(pair.module, t_inputs, t_targets)
    ours_batch = 9 * evaluate_predictor(pair.predict, pair.state, data, options).engine.block_size
    forward_mse = jax_losses(pair.predict, ours_batch, flat_inputs, flat_targets)
    legs = {f"torch_t{n}": _torch_leg(n, lambda n=n: torch_losses(pair.module, t_inputs, t_targets,
                                                                   batches[n]).numpy()) for n in threads}
    legs |= {"ours": lambda: evaluate_predictor(pair.predict, pair.state, data, options),
             "ours_forward_mse": lambda: forward_mse(pair.state)}
    rounds, results = [], {}
    for index in range(repeats + 1):
        seconds = {}
        for name in (legs if index % 2 == 0 else list(legs)[::-1]):
            started = time.perf_counter()
            results[name] = legs[name]()
            seconds[name] = time.perf_counter() - started
        evaluation = results["ours"]
        seconds["ours"] = evaluation.engine.run_seconds + evaluation.bootstrap_seconds
        if index:
            rounds.append(seconds)
    engine = np.concatenate([evaluation.losses.clean[None], evaluation.losses.faulted]).reshape(-1)
    gap = max(float(np.max(np.abs(results[name] - engine) / np.maximum(np.abs(engine), 1e-12)))
              for name in legs if name != "ours")
    if not gap <= LOSS_RTOL:
        raise RuntimeError(f"PyTorch's (or the bare forward's) per-window losses differ from the engine's by "
                           f"{gap:.2e} (relative, > {LOSS_RTOL:g}): they did not score the same windows; nothing is "
                           "comparable.")
    same_work = {f"eval_same_work_ratio_t{n}": statistics.median(r[f"torch_t{n}"] / r["ours_forward_mse"]
                                                                  for r in rounds) for n in threads}
    return {"eval_windows": count, "torch_eval_batch": batches, "ours_eval_batch": ours_batch,
            **_summary(rounds, "ours", threads, "eval"), **same_work,
            "eval_max_relative_loss_difference": float(f"{gap:.2e}")}


# --- training epoch -------------------------------------------------------------------------------------------


class TorchEpoch:
    """A competent user's PyTorch epoch: shuffled batches of the training windows, `Adam` steps on the MSE, then
    the validation pass under `no_grad`. Runs like an `EpochProgram` (`size`, `run_epoch`)."""

    size = 1

    def __init__(self, module: torch.nn.Module, data: PreparedData, steps: int | None, eval_batch: int,
                 threads: int) -> None:
        spec = data.spec
        self.module, self.eval_batch, self.batch, self.threads = module, eval_batch, spec.batch_size, threads
        self.steps = len(data.train_starts) // self.batch if steps is None else steps
        self.optimizer = torch.optim.Adam(module.parameters(), lr=1e-3, betas=(0.9, 0.999), eps=1e-8)

        def windows(starts: np.ndarray) -> tuple[torch.Tensor, torch.Tensor]:
            rows = starts.astype(np.int64)[:, None] + np.arange(spec.input_len + spec.horizon)
            w = data.standardised[rows]
            targets = w[:, spec.input_len:][:, :, list(spec.target_indices)]
            return (torch.from_numpy(np.ascontiguousarray(w[:, : spec.input_len], np.float32)),
                    torch.from_numpy(np.ascontiguousarray(targets, np.float32)))

        self.train = windows(data.train_starts)
        self.val = windows(data.val_starts_drop_last(self.batch))

    def run_epoch(self, epoch: int, active: list[bool]) -> float:
        """One epoch; returns the validation loss (a host value: the epoch has finished)."""
        del active
        torch.set_num_threads(self.threads)
        inputs, targets = self.train
        order = torch.randperm(inputs.shape[0], generator=torch.Generator().manual_seed(epoch))
        self.module.train()
        for step in range(self.steps):
            index = order[step * self.batch:(step + 1) * self.batch]
            loss = F.mse_loss(self.module(inputs[index]), targets[index])
            self.optimizer.zero_grad(set_to_none=True)
            loss.backward()
            self.optimizer.step()
        val_inputs, val_targets = self.val
        return float(torch_losses(self.module, val_inputs, val_targets, self.eval_batch).mean())


def training_rounds(pair: Pair, data: PreparedData, steps: int | None, eval_batches: dict[int, int], repeats: int,
                    threads: list[int]) -> dict:
    """Paired rounds (after a warm-up round) of the PyTorch epoch at each thread count (each on its own copy of
    the module and its own `Adam`) and the engine's compiled epoch program."""
    program = EpochProgram(data, MODELS[pair_architecture(pair)], {}, _members(1), TrainConfig(steps_per_epoch=steps),
                           vectorize=False)
    epochs = {"ours": program} | {f"torch_t{n}": TorchEpoch(copy.deepcopy(pair.module), data, steps, eval_batches[n],
                                                            n) for n in threads}
    times = interleaved_epoch_seconds(epochs, repeats)
    rounds = [{name: times[name][i] for name in epochs} for i in range(repeats)]
    return {"train_steps": epochs[f"torch_t{threads[0]}"].steps, "ours_train_compile_seconds": program.compile_seconds,
            **_summary(rounds, "ours", threads, "epoch")}


def pair_architecture(pair: Pair) -> str:
    """The registry name of the pair's architecture."""
    return next(name for name, cls in torch_models.TORCH_MODELS.items() if isinstance(pair.module, cls))


# --- the table ------------------------------------------------------------------------------------------------

def table(rows: list[dict], threads: list[int]) -> list[str]:
    """The printed table: per architecture, evaluation then training epoch; PyTorch at each thread count."""
    columns = [("arch", "architecture", "<10", "")]
    for part, ours in (("eval", "ours"), ("epoch", "ours")):
        columns += [(f"torch@{n} {part} s", f"{part}_seconds_torch_t{n}", ">14", ".3f") for n in threads]
        columns.append((f"ours {part} s", f"{part}_seconds_{ours}", ">12", ".3f"))
        if part == "eval":
            columns.append(("ours fwd+mse s", "eval_seconds_ours_forward_mse", ">14", ".3f"))
        columns += [(f"x@{n}", f"{part}_ratio_t{n}", ">7", ".2f") for n in threads]
    lines = [" ".join(f"{title:{align}}" for title, _, align, _ in columns)]
    lines.append("-" * len(lines[0]))
    lines += [" ".join(f"{row[key]:{align}{style}}" for _, key, align, style in columns) for row in rows]
    return lines


def measure(data: PreparedData, architecture: str, k: int, steps: int | None, repeats: int,
            threads: list[int]) -> dict:
    """Every figure of one architecture (module docstring)."""
    seed = data.spec.seeds.canonical_eval_seed
    windows = evaluation_windows(data, seed, k)
    pair = same_weights(data, architecture, windows[0][0, :256])
    options = EvalConfig(seed=seed, k=k, progress=False)
    row = {"architecture": architecture, "k": k, "forward_parity": float(f"{pair.forward_parity:.2e}"),
           **evaluation_rounds(pair, data, options, windows, repeats, threads)}
    return row | training_rounds(pair, data, steps, row["torch_eval_batch"], repeats, threads)


def check() -> int:
    """`--check`: every covered parity fixture through the PyTorch modules, and the PyTorch and engine forwards on
    the same weights for each architecture's defaults on ETTh1; 0 when all agree to `PARITY_LIMIT`."""
    worst = 0.0
    for path in torch_models.fixture_paths():
        error = torch_models.check_fixture(path)
        worst = max(worst, error)
        print(f"fixture {path.stem:<40} {error:.2e}")
    data = prepare(load("etth1", data_root=DATA_ROOT))
    windows = evaluation_windows(data, data.spec.seeds.canonical_eval_seed, 64)[0]
    for architecture in ARCHITECTURES:
        pair = same_weights(data, architecture, windows.reshape(-1, *windows.shape[2:]))
        worst = max(worst, pair.forward_parity)
        print(f"torch vs engine, {architecture:<10} (ETTh1 defaults, 576 windows) {pair.forward_parity:.2e}")
    print(f"worst {worst:.2e} (limit {PARITY_LIMIT:g})")
    return 0 if worst <= PARITY_LIMIT else 1


def _parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--architectures", nargs="+", default=list(ARCHITECTURES), choices=ARCHITECTURES)
    parser.add_argument("--k", type=int, default=10_000, help="test windows (x 9 with the scenarios; default 10000)")
    parser.add_argument("--steps", type=int, default=None, help="steps per timed epoch (default: full epochs)")
    parser.add_argument("--repeats", type=int, default=3, help="paired rounds after a warm-up round (default 3)")
    parser.add_argument("--torch-threads", type=int, nargs="+", default=[TORCH_THREADS],
                        help=f"PyTorch intra-op thread counts, each timed (default {TORCH_THREADS}, the acceptance "
                             "setting; e.g. 2 1 adds one thread, which wins for small steps on a loaded machine)")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    parser.add_argument("--check", action="store_true", help="only check parity (fixtures, torch vs engine)")
    args = parser.parse_args(argv)
    if args.k < 1 or args.repeats < 1 or (args.steps is not None and args.steps < 1):
        parser.error("--k, --repeats and --steps must be >= 1")
    return args


def main(argv: list[str] | None = None) -> dict:
    """Measure every requested architecture; the table prints each row as soon as it is measured. `--check`
    exits with `check()`'s status instead."""
    args = _parse(argv)
    torch.set_num_threads(args.torch_threads[0])
    if args.check:
        sys.exit(check())
    data = prepare(load("etth1", data_root=DATA_ROOT))
    device = jax.devices()[0]
    result: dict = {"dataset": "etth1", "device": f"{device.platform}:{device.device_kind}", "jax": jax.__version__,
                    "torch": torch.__version__, "torch_threads": args.torch_threads, "k": args.k,
                    "steps": args.steps, "repeats": args.repeats, "load_average": list(os.getloadavg()), "rows": []}
    if not args.json:
        print(f"ETTh1, K = {args.k} x 9, {'full epochs' if args.steps is None else f'{args.steps}-step epochs'} "
              f"+ validation; torch {result['torch']} on {args.torch_threads} thread(s); jax {result['jax']} on "
              f"{len(jax.devices())} {device.platform} device(s)", flush=True)
    for architecture in args.architectures:
        result["rows"].append(measure(data, architecture, args.k, args.steps, args.repeats, args.torch_threads))
        if not args.json:
            print("\n".join(table(result["rows"][-1:], args.torch_threads)[2 if len(result["rows"]) > 1 else 0:]),
                  flush=True)
    if args.json:
        print(json.dumps(result))
    else:
        print("eval: torch forward + per-window MSE over the K x 9 windows; ours: the engine's whole evaluation (fault "
              "pass, forward, losses, bootstrap), and its forward + MSE over the same windows; epoch: steps + "
              "validation. x@n = torch on n threads / ours (whole evaluation; epoch): > 1 means ours is faster.")
    return result


if __name__ == "__main__":
    main()
