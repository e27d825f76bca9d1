"""What the engine runs on a GPU, and how fast: the lowered programs (any machine) and one measured table (a GPU).

Two uses:

* ``python benchmarks/gpu_check.py --lower-only cuda --chunk N --out DIR`` (no GPU needed): writes the StableHLO
  text of the programs a CUDA device compiles, traced by the engine's own functions in the accelerator layout
  (`evaluation.engine.traceable_chunk`, `training.fit.epoch_function`; no copy is made for the check):
  ``DIR/evaluate_<model>.stablehlo.txt`` (one evaluation chunk of N windows per device: fault draws, forward,
  losses) for seasonal_naive, dlinear, patchtst and tsmixer on ETTh1, and ``DIR/epoch_<model>_g8.stablehlo.txt``
  (one training epoch of 8 vectorised candidates) for dlinear and patchtst. It prints each program's structure
  (`program_structure`: `case` ops, `while` loops and their trip counts) and writes it to ``DIR/structure.json``.
  tests/evaluation/test_layouts.py asserts the structure the accelerator layout promises (docs/speed.md, "Layouts").
* ``python benchmarks/gpu_check.py`` on a machine with a GPU: measures, in one process and in under 8 minutes,
  the fault pass against the per-scenario vmapped baseline (ETTh1 and Traffic-shaped, K = 10,000), the
  SeasonalNaive evaluation (K = 10,000 x 8, 1,000 bootstrap draws), every architecture's evaluation at K = 10,000
  (PatchTST also Traffic-shaped with the paper's d_model 128, channel-sparse), one training epoch per architecture
  with 1, 8 and the automatic number of candidates, the GPU's float32 matrix-multiply rate and each forward's share
  of it. It writes ``--out`` (default ``gpu_check/``) ``gpu_check.json`` and ``gpu_check.md`` and, with
  ``--docs docs/speed.md``, replaces the page's GPU section between its markers.

It runs from the repository without installing it (it puts the checkout and ``kernels/`` on ``sys.path``); a bare
GPU machine with JAX, Flax and Optax needs nothing else for it (the CLI's own dependencies are not imported).
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
for _path in (ROOT, ROOT / "kernels", ROOT / "benchmarks"):
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))

import argparse
import datetime
import json
import re
import statistics
import time
from collections.abc import Callable
from typing import Any

import jax
import numpy as np

from sfbench_jax.config import EvalConfig, TrainConfig
from sfbench_jax.data import load, prepare
from sfbench_jax.data.prepared import PreparedData
from sfbench_jax.evaluation import predict_fn
from sfbench_jax.evaluation.engine import score_program, traceable_chunk
from sfbench_jax.models.layers import traced_for
from sfbench_jax.models.registry import MODELS, build_model
from sfbench_jax.models.seasonal_naive import SeasonalNaive

#: The evaluation programs written by --lower-only, and the epoch programs (8 candidates).
EVALUATE_MODELS = ("seasonal_naive", "dlinear", "patchtst", "tsmixer")
EPOCH_MODELS = ("dlinear", "patchtst")
EPOCH_CANDIDATES = 8
#: Every architecture of the GPU run, and PatchTST's paper-sized hyperparameters for the Traffic-shaped row.
ARCHITECTURES = ("dlinear", "gru", "moderntcn", "patchtst", "tsmixer")
PATCHTST_PAPER = {"d_model": 128, "n_heads": 8, "d_ff": 256}
#: Candidates of one structure the automatic group size may take at most in the epoch rows (a method's variants).
AUTO_MOST = 40
#: Input bytes of the forward-alone batch (`forward_batch`).
FORWARD_BATCH_BYTES = 2**30
#: Seconds the measured run may take before it skips what is left (each skipped row says so): the issue's 8 minutes
#: less the start-up and a margin.
TIME_BUDGET_SECONDS = 420
DOCS_BEGIN, DOCS_END = "<!-- gpu_check:begin -->", "<!-- gpu_check:end -->"


# --- structure of a lowered program ----------------------------------------------------------------------------


def program_structure(text: str) -> dict[str, Any]:
    """`case` ops and `while` loops of a StableHLO module: each loop's trip count where its condition compares the
    counter with a constant (`lax.scan`, `lax.map`, `fori_loop`), or the constant that bounds a data-dependent loop
    (`while i < min(n, 16)` reads 16)."""
    lines = text.splitlines()
    trips: list[int | None] = []
    for index, line in enumerate(lines):
        if "stablehlo.while" not in line:
            continue
        constants: dict[str, int] = {}
        bound = None
        for cond_line in lines[index + 1:index + 40]:
            if cond_line.strip().startswith("} do {"):
                break
            constant = re.search(r"(%\S+) = stablehlo.constant dense<(-?\d+)> : tensor<i\d+>", cond_line)
            if constant:
                constants[constant.group(1)] = int(constant.group(2))
            compare = re.search(r"stablehlo.compare\s+LT, %\S+, (%[^\s,]+)", cond_line)
            if compare and compare.group(1) in constants:
                bound = constants[compare.group(1)]
            elif "stablehlo.minimum" in cond_line and constants:
                bound = max(constants.values())
        trips.append(bound)
    return {"case_ops": text.count("stablehlo.case"), "while_trip_counts": trips}


def _lowered_text(fn: Any, arguments: tuple[Any, ...], platform: str) -> str:
    with traced_for(platform):  # models trace as on the target platform (whole batches, not CPU slices)
        traced = fn.trace(*arguments)
    return str(traced.lower(lowering_platforms=(platform,)).as_text())


def evaluation_model(data: PreparedData, name: str, hparams: dict[str, Any] | None = None) -> Any:
    """A model of `name` for `data`'s shape, random weights, in eval mode (SeasonalNaive: its daily season)."""
    spec = data.spec
    if name == "seasonal_naive":
        return SeasonalNaive(season_length=24 if spec.horizon == 96 else 1, input_len=spec.input_len,
                             horizon=spec.horizon, target_indices=spec.target_indices)
    model = build_model(name, hparams or {}, input_len=spec.input_len, horizon=spec.horizon,
                        num_channels=spec.num_channels, target_indices=spec.target_indices, seed=0)
    model.eval()
    return model


def evaluation_program_text(data: PreparedData, name: str, chunk: int, platform: str,
                            rng_mode: str = "jax") -> str:
    """The StableHLO of one evaluation chunk of `chunk` windows of model `name` in the accelerator layout."""
    model = evaluation_model(data, name)
    channel_sparse = MODELS[name].channel_sparse if name in MODELS else True
    predict, state = predict_fn(model, channel_sparse=channel_sparse)
    options = EvalConfig(seed=7, k=10_000, chunk_size=chunk, layout="accelerator", num_devices=1,
                         rng_mode=rng_mode, progress=False).for_dataset(data.spec)
    fn, arguments = traceable_chunk(score_program(predict, data, options), state, data, options)
    return _lowered_text(fn, arguments, platform)


def epoch_program_text(data: PreparedData, name: str, candidates: int, platform: str) -> str:
    """The StableHLO of one training epoch of `candidates` vectorised candidates of `name`."""
    from sfbench_jax.training.fit import epoch_function

    fn, arguments = epoch_function(data, MODELS[name], candidates, platform=platform)
    return _lowered_text(fn, arguments, platform)


def lower_programs(platform: str, chunk: int, out: Path) -> dict[str, dict[str, Any]]:
    """Write every program's StableHLO into `out` and return each one's structure."""
    out.mkdir(parents=True, exist_ok=True)
    data = prepare(load("etth1"))
    texts = {f"evaluate_{name}": lambda name=name: evaluation_program_text(data, name, chunk, platform)
             for name in EVALUATE_MODELS}
    texts |= {f"epoch_{name}_g{EPOCH_CANDIDATES}": lambda name=name: epoch_program_text(
        data, name, EPOCH_CANDIDATES, platform) for name in EPOCH_MODELS}
    structure = {}
    for program, make in texts.items():
        text = make()
        (out / f"{program}.stablehlo.txt").write_text(text)
        structure[program] = program_structure(text)
        print(f"{program:<24} case ops {structure[program]['case_ops']}, while trip counts "
              f"{structure[program]['while_trip_counts']}", flush=True)
    (out / "structure.json").write_text(json.dumps({"platform": platform, "chunk": chunk,
                                                    "programs": structure}, indent=1))
    return structure


# --- the measured run ------------------------------------------------------------------------------------------


def _seconds(run: Callable[[], Any], repeats: int) -> float:
    """Median wall seconds of `run()` (which blocks on its result) after one warm-up call."""
    run()
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        run()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def fault_pass_row(key: str, k: int, repeats: int) -> dict[str, Any]:
    """The fused fault pass against the per-scenario vmapped baseline, paired per round (scoring_core's), and the
    SeasonalNaive evaluation (K windows x 8 scenarios, 1,000 bootstrap draws)."""
    import scoring_core

    data = prepare(load(key))
    options = EvalConfig(k=k, progress=False).for_dataset(data.spec)
    fused = scoring_core.fused_fault_pass(data, options)
    baseline = scoring_core.baseline_fault_pass(data, options.seed or 0, k)
    scoring_core.check_same_work(fused.checksums, baseline.checksums)
    samples = scoring_core.paired_runs({"fused": fused, "baseline": baseline}, repeats)
    compile_seconds, evaluation_seconds = scoring_core.full_evaluation_seconds(data, options, repeats)
    return {"dataset": key, "k": k, "fault_pass_seconds": statistics.median(s[0] for s in samples["fused"]),
            "baseline_seconds": statistics.median(s[0] for s in samples["baseline"]),
            "x_baseline": scoring_core.paired_ratio(samples["baseline"], samples["fused"]), "chunk": fused.block_size,
            "seasonal_naive_compile_seconds": compile_seconds, "seasonal_naive_evaluation_seconds": evaluation_seconds}


def model_row(key: str, name: str, hparams: dict[str, Any] | None, k: int, repeats: int,
              peak_gflops: float) -> dict[str, Any]:
    """One architecture's evaluation as `sfbench` runs it (channel-sparse where the model is channel-independent):
    compile seconds, steady seconds (engine run + bootstrap) and windows x 9 per second; and its forward alone on a
    batch of `forward_batch` windows against the matrix-multiply rate measured in this process."""
    import scoring_core

    from sfbench_jax.evaluation import evaluate_predictor

    data = prepare(load(key))
    options = EvalConfig(k=k, progress=False).for_dataset(data.spec)
    predict, state = predict_fn(evaluation_model(data, name, hparams), channel_sparse=MODELS[name].channel_sparse)
    first = evaluate_predictor(predict, state, data, options)
    seconds = statistics.median(_evaluation_seconds(predict, state, data, options) for _ in range(repeats))
    full_forward = getattr(predict, "full", predict)
    batch = forward_batch(data)
    windows = jax.device_put(np.zeros((batch, data.spec.input_len, data.spec.num_channels), np.float32))
    flops = scoring_core.forward_flops_per_window(full_forward, state, windows)
    forward = jax.jit(full_forward)
    forward_seconds = _seconds(lambda: forward(state, windows).block_until_ready(), repeats)
    return {"dataset": key, "model": name, "hparams": hparams or "default", "k": k,
            "compile_seconds": first.engine.compile_seconds, "chunk": first.engine.chunk_size,
            "layout": first.engine.layout, "evaluation_seconds": seconds, "windows_x9_per_second": 9 * k / seconds,
            "forward_mflops_per_window": flops / 1e6, "forward_batch": batch,
            "forward_utilisation": flops * batch / forward_seconds / 1e9 / peak_gflops}


def _evaluation_seconds(predict: Any, state: Any, data: PreparedData, options: EvalConfig) -> float:
    from sfbench_jax.evaluation import evaluate_predictor

    evaluation = evaluate_predictor(predict, state, data, options)
    return float(evaluation.engine.run_seconds + evaluation.bootstrap_seconds)


def forward_batch(data: PreparedData) -> int:
    """Windows of the forward-alone measurement: 9 x 1,024 (a chunk's clean and faulted windows), fewer where
    that would exceed `FORWARD_BATCH_BYTES` of input (Traffic's 862 channels)."""
    window_bytes = data.spec.input_len * data.spec.num_channels * 4
    return max(9, min(9 * 1024, FORWARD_BATCH_BYTES // window_bytes))


def epoch_row(name: str, repeats: int) -> dict[str, Any]:
    """Seconds of one training epoch of `name` (ETTh1) with 1, 8 and the automatic number of candidates, and the
    8 candidates' speed-up over training them one after another."""
    from sfbench_jax.training.fit import candidates_per_group, epoch_function

    data = prepare(load("etth1"))
    automatic = candidates_per_group(data, MODELS[name], {}, TrainConfig(), most=AUTO_MOST)
    row: dict[str, Any] = {"architecture": name}
    for label, size in {"g1": 1, "g8": EPOCH_CANDIDATES, "auto": automatic}.items():
        fn, arguments = epoch_function(data, MODELS[name], size)
        started = time.perf_counter()
        jax.block_until_ready(fn(*arguments))
        row[f"{label}_compile_seconds"] = time.perf_counter() - started
        row[f"{label}_epoch_seconds"] = _seconds(lambda fn=fn, arguments=arguments: jax.block_until_ready(
            fn(*arguments)), repeats)
        row[f"{label}_candidates"] = size
    row["g8_x_sequential"] = EPOCH_CANDIDATES * row["g1_epoch_seconds"] / row["g8_epoch_seconds"]
    return row


def _cells(row: dict[str, Any], cells: Callable[[dict[str, Any]], str], width: int) -> str:
    """A table row, or the case's name and why it has no figures."""
    if "skipped" in row or "error" in row:
        return f"| {row['case']} | " + " | ".join([row.get("skipped") or row["error"]] + ["-"] * (width - 2)) + " |"
    return cells(row)


def markdown(result: dict[str, Any]) -> str:
    """The GPU section of docs/speed.md."""
    env = result["environment"]
    lines = [f"### {env['device']}", "",
             f"`python benchmarks/gpu_check.py` on {env['date']}, commit {env['commit']}, jax {env['jax']} "
             f"(jaxlib {env['jaxlib']}), in {result['seconds']:.0f} s. Float32 matrix-multiply rate "
             f"{result['matmul_gflops']:,.0f} GFLOP/s, measured in the same process; ratios are paired per round.", "",
             "| dataset | K | fault pass s | vmapped baseline s | x baseline | SeasonalNaive evaluation s |",
             "|---|---:|---:|---:|---:|---:|"]
    lines += [_cells(r, lambda r: f"| {r['dataset']} | {r['k']} | {r['fault_pass_seconds']:.4f} | "
                     f"{r['baseline_seconds']:.4f} | {r['x_baseline']:.2f} | "
                     f"{r['seasonal_naive_evaluation_seconds']:.4f} |", 6) for r in result["fault_pass"]]
    lines += ["", "| evaluation | K | layout, chunk | compile s | evaluation s | windows x 9 / s | "
              "forward utilisation |", "|---|---:|---|---:|---:|---:|---:|"]
    lines += [_cells(r, lambda r: f"| {r['case']} | {r['k']} | {r['layout']}, {r['chunk']} | "
                     f"{r['compile_seconds']:.1f} | {r['evaluation_seconds']:.3f} | "
                     f"{r['windows_x9_per_second']:,.0f} | {100 * r['forward_utilisation']:.0f}% |", 7)
              for r in result["models"]]
    lines += ["", "| architecture | epoch s, 1 candidate | epoch s, 8 | 8 x one after another | auto size | "
              "epoch s, auto |", "|---|---:|---:|---:|---:|---:|"]
    lines += [_cells(r, lambda r: f"| {r['architecture']} | {r['g1_epoch_seconds']:.3f} | {r['g8_epoch_seconds']:.3f} "
                     f"| {r['g8_x_sequential']:.1f} | {r['auto_candidates']} | {r['auto_epoch_seconds']:.3f} |", 6)
              for r in result["epochs"]]
    return "\n".join(lines) + "\n"


def replace_docs_section(page: Path, section: str) -> None:
    """Replace the text between the page's gpu_check markers (refused when they are missing)."""
    text = page.read_text()
    if DOCS_BEGIN not in text or DOCS_END not in text:
        raise SystemExit(f"{page} has no {DOCS_BEGIN} ... {DOCS_END} markers; add them where the GPU table goes.")
    head, rest = text.split(DOCS_BEGIN, 1)
    tail = rest.split(DOCS_END, 1)[1]
    temporary = page.with_suffix(".tmp")
    temporary.write_text(f"{head}{DOCS_BEGIN}\n\n{section}\n{DOCS_END}{tail}")
    temporary.replace(page)


def environment() -> dict[str, Any]:
    import subprocess

    import jaxlib

    device = jax.devices()[0]
    try:
        commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True,
                                text=True, check=False).stdout.strip() or "unknown"
    except OSError:
        commit = "unknown"
    return {"device": f"{device.device_kind} ({device.platform})", "jax": jax.__version__,
            "jaxlib": jaxlib.__version__, "commit": commit,
            "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")}


class Deadline:
    """The measured run's time budget: rows are measured in order until it is spent, the rest recorded skipped."""

    def __init__(self, seconds: float) -> None:
        self.started, self.seconds = time.perf_counter(), seconds

    def rows(self, cases: list[tuple[str, Callable[[], dict[str, Any]]]]) -> list[dict[str, Any]]:
        """Each case's row, in order, or `{"case": ..., "skipped": "time budget spent"}` once the budget is spent;
        a case that fails is recorded with its error (the run goes on)."""
        rows: list[dict[str, Any]] = []
        for case, measure_case in cases:
            if time.perf_counter() - self.started > self.seconds:
                rows.append({"case": case, "skipped": "time budget spent"})
            else:
                try:
                    rows.append({"case": case} | measure_case())
                except Exception as error:  # noqa: BLE001 (one failed row must not lose the others' figures)
                    rows.append({"case": case, "error": f"{type(error).__name__}: {error}"[:500]})
            print(json.dumps(rows[-1]), flush=True)
        return rows


def measure(k: int, repeats: int, budget: float = TIME_BUDGET_SECONDS) -> dict[str, Any]:
    """The whole GPU table (see the module docstring), in the order of the issue's targets."""
    import scoring_core

    deadline = Deadline(budget)
    result: dict[str, Any] = {"environment": environment(), "k": k}
    print(json.dumps(result["environment"]), flush=True)
    peak = scoring_core.matmul_peak_gflops(repeats, size=8192)
    result["matmul_gflops"] = peak
    result["fault_pass"] = deadline.rows([(key, lambda key=key: fault_pass_row(key, k, repeats))
                                          for key in ("etth1", "traffic_synthetic")])
    model_cases: list[tuple[str, Callable[[], dict[str, Any]]]] = [
        ("traffic_synthetic patchtst paper", lambda: model_row("traffic_synthetic", "patchtst", PATCHTST_PAPER, k, 1,
                                                               peak))]
    model_cases += [(f"etth1 {name}", lambda name=name: model_row("etth1", name, None, k, repeats, peak))
                    for name in ARCHITECTURES]
    result["models"] = deadline.rows(model_cases)
    result["epochs"] = deadline.rows([(name, lambda name=name: epoch_row(name, repeats)) for name in ARCHITECTURES])
    result["seconds"] = time.perf_counter() - deadline.started
    return result


def _parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lower-only", metavar="PLATFORM", help="write the programs lowered for PLATFORM (cuda)")
    parser.add_argument("--chunk", type=int, default=1024, help="windows per evaluation chunk (--lower-only)")
    parser.add_argument("--out", type=Path, default=Path("gpu_check"), help="folder for the files written")
    parser.add_argument("--k", type=int, default=10_000, help="test windows of the measured run")
    parser.add_argument("--repeats", type=int, default=3, help="timed rounds after a warm-up")
    parser.add_argument("--budget", type=float, default=TIME_BUDGET_SECONDS,
                        help="seconds to measure before skipping the remaining rows")
    parser.add_argument("--docs", type=Path, help="replace this page's GPU section (docs/speed.md)")
    args = parser.parse_args(argv)
    if args.chunk < 1 or args.k < 1 or args.repeats < 1 or args.budget <= 0:
        parser.error("--chunk, --k and --repeats must be at least 1, --budget positive")
    return args


def main(argv: list[str] | None = None) -> dict[str, Any]:
    args = _parse(argv)
    if args.lower_only:
        return lower_programs(args.lower_only, args.chunk, args.out)
    if jax.default_backend() == "cpu":
        raise SystemExit("No GPU: jax sees only the CPU. Run `--lower-only cuda` here to see what a GPU would "
                         "compile, or run this on a machine with one (JAX's CUDA plug-in: .[cuda12] or .[cuda13]).")
    result = measure(args.k, args.repeats, args.budget)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "gpu_check.json").write_text(json.dumps(result, indent=1))
    section = markdown(result)
    (args.out / "gpu_check.md").write_text(section)
    if args.docs:
        replace_docs_section(args.docs, section)
    print(section)
    return result


if __name__ == "__main__":
    main()
