"""The whole speed table in one command: runs every benchmark in `benchmarks/` that measures the engine and writes
one JSON file and one Markdown table (device, versions, date and commit at the top).

What it runs, each benchmark in its own process with `--json` (like the `sfbench` CLI, each exposes every CPU core
as a JAX device before JAX starts):

* the fused fault pass and SeasonalNaive's evaluation against the vmapped baseline, and randomized smoothing
  (`scoring_core.py --smoothing`), on ETTh1 (and Traffic-shaped data in a full run);
* each trained architecture's evaluation with its forward FLOP utilisation against the matrix-multiply rate
  measured in the same process (`scoring_core.py --model <arch>`);
* each architecture's training epoch: steps/s, validation pass, seconds per full epoch (`training.py`);
* a method's variant search vectorised against one variant after another (`training.py --variants`);
* whole `sfbench` processes (warm compilation cache: one untimed run first): wall and CPU seconds of the process
  and the phases its manifest records (`startup`, `timings`).

`--quick` runs every part at small sizes (hundreds of windows, a few steps, a few variants): minutes instead of an
hour, for checking the table on a new machine; its numbers are not the published ones. On a GPU machine the same
command gives the table for that device. Example:

    python benchmarks/suite.py --quick --out /tmp/speed
    python benchmarks/suite.py --out docs/speed-suite           # the full table (about an hour on 2 CPU cores)
"""

from __future__ import annotations

import argparse
import datetime
import importlib.metadata
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ARCHITECTURES = ("dlinear", "gru", "moderntcn", "patchtst", "tsmixer")
PACKAGES = ("sfbench-jax", "jax", "jaxlib", "flax", "optax", "numpy")

#: Sizes per mode: (full, quick).
SIZES = {
    "k": (10_000, 500), "repeats": (3, 1), "train_steps": (None, 60), "train_repeats": (3, 3),
    "variant_budget": (40, 6), "variant_max_epochs": (200, 2), "variant_steps": (None, 20), "process_runs": (5, 2),
}


def size(name: str, quick: bool) -> object:
    """The size `name` of the full or the quick suite."""
    return SIZES[name][1 if quick else 0]


def run_json(script: str, *arguments: str, timeout: float) -> dict:
    """Run `benchmarks/<script> --json ...` in its own process; its JSON output (the last line printed).

    Raises:
        RuntimeError: the benchmark failed (its last error lines are in the message).
    """
    command = [sys.executable, str(HERE / script), *arguments, "--json"]
    completed = subprocess.run(command, capture_output=True, text=True, timeout=timeout, check=False)
    if completed.returncode != 0:
        raise RuntimeError(f"{' '.join(command[1:])} failed ({completed.returncode}):\n{completed.stderr[-2000:]}")
    return json.loads(completed.stdout.strip().splitlines()[-1])


def whole_process(overrides: list[str], runs: int, timeout: float) -> dict:
    """Wall and CPU seconds of whole `sfbench <overrides>` processes (one untimed run first, so the compilation
    cache is warm) and the median of the start-up and run phases their manifests record."""
    samples, manifests = [], []
    with tempfile.TemporaryDirectory() as folder:
        for index in range(runs + 1):
            output = Path(folder) / f"run{index}"
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            started = time.perf_counter()
            completed = subprocess.run([sys.executable, "-m", "sfbench_jax.cli.main", *overrides,
                                        f"hydra.run.dir={output}"], capture_output=True, text=True, timeout=timeout,
                                       check=False)
            if completed.returncode != 0:
                raise RuntimeError(f"sfbench {' '.join(overrides)} failed ({completed.returncode}):\n"
                                   f"{completed.stderr[-2000:]}")
            wall = time.perf_counter() - started
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
            if index:
                samples.append((wall, cpu))
                manifests.append(json.loads((output / "manifest.json").read_text()))
    phases = {key: statistics.median(m.get(part, {}).get(key, float("nan")) for m in manifests)
              for part in ("startup", "timings") for key in manifests[0].get(part, {})}
    return {"command": "sfbench " + " ".join(overrides), "runs": runs,
            "wall_seconds": statistics.median(s[0] for s in samples),
            "cpu_seconds": statistics.median(s[1] for s in samples), "phases": phases}


def fault_pass(quick: bool, timeout: float) -> list[dict]:
    """The fault pass, SeasonalNaive's evaluation and smoothing (scoring_core.py) per dataset."""
    k, repeats = str(size("k", quick)), str(size("repeats", quick))
    rows = [run_json("scoring_core.py", "--dataset", "etth1", "--k", k, "--repeats", repeats, "--smoothing",
                     timeout=timeout)]
    if not quick:
        rows.append(run_json("scoring_core.py", "--dataset", "traffic_synthetic", "--k", k, "--baseline-windows",
                             "1000", "--repeats", repeats, timeout=timeout))
    return rows


def evaluations(quick: bool, timeout: float) -> list[dict]:
    """Each architecture's evaluation with its FLOP utilisation (scoring_core.py --model) on ETTh1."""
    k, repeats = str(size("k", quick)), str(size("repeats", quick))
    rows = []
    for name in ARCHITECTURES:  # one architecture's failure is recorded in its row; the others still run
        try:
            rows.append(run_json("scoring_core.py", "--dataset", "etth1", "--k", k, "--repeats", repeats, "--model",
                                 name, timeout=timeout))
        except (RuntimeError, subprocess.SubprocessError, json.JSONDecodeError) as error:
            rows.append({"model": name, "error": str(error)})
    return rows


def _attempt(what: str, measure: object) -> dict:
    """`measure()`, or its error recorded under `what` (the other measurements still run)."""
    try:
        return measure()
    except (RuntimeError, subprocess.SubprocessError, json.JSONDecodeError) as error:
        return {"what": what, "error": str(error)}


def training(quick: bool, timeout: float) -> dict:
    """Each architecture's training epoch on ETTh1 (training.py, one process per architecture), and the variant
    search (training.py --variants)."""
    steps = size("train_steps", quick)
    arguments = ["--datasets", "etth1", "--repeats", str(size("train_repeats", quick)), "--speedup-datasets",
                 "none" if quick else "etth1", *([] if steps is None else ["--steps", str(steps)])]
    epochs = [_attempt(name, lambda name=name: run_json("training.py", *arguments, "--architectures", name,
                                                        timeout=timeout)["rows"][0]) for name in ARCHITECTURES]
    variant_steps = size("variant_steps", quick)
    variants = _attempt("variants", lambda: run_json(
        "training.py", "--variants", "--budget", str(size("variant_budget", quick)), "--max-epochs",
        str(size("variant_max_epochs", quick)), "--repeats", str(size("repeats", quick) + 1),
        *([] if variant_steps is None else ["--steps", str(variant_steps)]), timeout=timeout))
    return {"epochs": epochs, "variants": variants}


def processes(quick: bool, timeout: float) -> list[dict]:
    """Whole `sfbench` processes on a warm compilation cache."""
    runs = size("process_runs", quick)
    commands = [["eval=quick"]] + ([] if quick else [["dataset=traffic_synthetic", "eval.k=1000"]])
    return [whole_process(overrides, runs, timeout) for overrides in commands]


def environment(quick: bool) -> dict:
    """Date, machine, device, versions and commit of this suite run."""
    import jax

    versions = {"python": platform.python_version()}
    for name in PACKAGES:
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            versions[name] = "not installed"
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=HERE, capture_output=True, text=True,
                            check=False).stdout.strip() or None
    device = jax.devices()[0]
    return {"date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"), "quick": quick,
            "device": f"{device.platform}: {device.device_kind}", "host_cpus": os.cpu_count(),
            "platform": platform.platform(), "versions": versions, "commit": commit,
            "load_average": list(os.getloadavg()) if hasattr(os, "getloadavg") else None}


#: Part name -> how it is measured.
PARTS = {"fault_pass": fault_pass, "evaluation": evaluations, "training": training, "processes": processes}


def measure(parts: list[str], quick: bool, timeout: float) -> dict:
    """Every requested part; a part that fails is recorded with its error and the others still run."""
    result = {"environment": environment(quick)}
    for name in parts:
        print(f"[suite] {name} ...", file=sys.stderr, flush=True)
        started = time.perf_counter()
        try:
            result[name] = PARTS[name](quick, timeout)
        except (RuntimeError, subprocess.SubprocessError, json.JSONDecodeError, OSError) as error:
            result[name] = {"error": str(error)}
        print(f"[suite] {name}: {time.perf_counter() - started:.0f} s", file=sys.stderr, flush=True)
    return result


def _table(header: list[str], rows: list[list[object]]) -> list[str]:
    def cell(value: object) -> str:
        if isinstance(value, float):
            return f"{value:.3g}" if abs(value) < 100 else f"{value:,.0f}"
        return "-" if value is None else str(value)

    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" if i == 0 else "---:" for i in range(len(header)))
             + "|"]
    return lines + ["| " + " | ".join(cell(value) for value in row) + " |" for row in rows]


def _fault_lines(rows: list[dict]) -> list[str]:
    header = ["dataset", "K", "fault pass s", "x vmapped baseline", "SeasonalNaive evaluation s",
              "smoothing N=10 s (x plain)", "smoothing N=30 s (x plain)"]
    body = [[r["dataset"], r["k"], r["fault_seconds"], r["baseline_ratio"], r["eval_seconds"],
             *(None if f"smoothing_n{n}_seconds" not in r else
               f"{r[f'smoothing_n{n}_seconds']:.3g} ({r[f'smoothing_n{n}_ratio_vs_plain']:.2f}x)" for n in (10, 30))]
            for r in rows]
    return _table(header, body)


def _evaluation_lines(rows: list[dict]) -> list[str]:
    header = ["architecture", "K", "MFLOP / window", "forward GFLOP/s", "forward utilisation", "evaluation s",
              "windows x 9 / s", "channel-sparse speed-up"]
    failed = [f"{r['model']} failed: {r['error'].splitlines()[-1]}" for r in rows if "error" in r]
    rows = [r for r in rows if "error" not in r]
    body = [[r["model"], r["k"], r["model_forward_mflops_per_window"], r["model_forward_gflops"],
             f"{100 * r['model_forward_utilisation']:.0f}% of {r['model_matmul_peak_gflops']:.0f}",
             r.get("model_sparse_seconds", r["model_full_seconds"]),
             r.get("model_sparse_windows_per_second", r["model_full_windows_per_second"]),
             r.get("model_sparse_speedup")]
            for r in rows]
    return _table(header, body) + ([""] + failed if failed else [])


def _failures(rows: list[dict]) -> list[str]:
    return [f"{r['what']} failed: {r['error'].strip().splitlines()[-1]}" for r in rows if "error" in r]


def _training_lines(part: dict) -> list[str]:
    rows = [r for r in part["epochs"] if "error" not in r]
    header = ["architecture", "steps / s", "validation s", "s / full epoch", "compile s", "x vmap (8 candidates)"]
    body = [[r["architecture"], r["steps_per_second"], r["validation_seconds"], r["epoch_seconds"],
             r["compile_seconds"], r.get("parallel", {}).get("total_epoch")] for r in rows]
    lines = _table(header, body) + ["", *_failures(part["epochs"])]
    variants = part["variants"]
    if "error" in variants:
        return [*lines, "", *_failures([variants])]
    rounds = variants["rounds"]
    lines = lines + ["", f"Variant search: {variants['method']} of {variants['architecture']} on "
                                    f"{variants['dataset']}, {variants['variants']} variants, at most "
                                    f"{variants['max_epochs']} epochs of {variants['steps_per_epoch'] or 'all'} "
                                    "steps.", ""]
    return lines + _table(["round", "vectorised s", "one after another s", "ratio", "same selected variant",
                           "best val max rel. diff."],
                          [[i, r["vectorised_seconds"], r["sequential_seconds"], f"{r['ratio']:.2f}x",
                            r["selected"][0] == r["selected"][1], f"{r['max_relative_difference']:.1e}"]
                           for i, r in enumerate(rounds, start=1)])


def _process_lines(rows: list[dict]) -> list[str]:
    keys = ("before_run_seconds", "imports_seconds", "configure_seconds", "select_seconds", "evaluate_seconds",
            "evaluate_compile_seconds", "write_seconds")
    header = ["command", "wall s", "CPU s", *(key.removesuffix("_seconds").replace("_", " ") + " s" for key in keys)]
    return _table(header, [[f"`{r['command']}`", r["wall_seconds"], r["cpu_seconds"],
                            *(r["phases"].get(key) for key in keys)] for r in rows])


RENDERERS = {"fault_pass": ("Fault pass, SeasonalNaive evaluation, smoothing", _fault_lines),
             "evaluation": ("Evaluation of each architecture (ETTh1, default hyperparameters, random weights)",
                            _evaluation_lines),
             "training": ("Training epoch of each architecture (ETTh1), and a method's variant search",
                          _training_lines),
             "processes": ("Whole `sfbench` processes (warm compilation cache; medians)", _process_lines)}


def markdown(result: dict) -> str:
    """The suite's Markdown table: environment first, then one table per part."""
    env = result["environment"]
    versions = ", ".join(f"{name} {version}" for name, version in env["versions"].items())
    lines = [f"# Speed table{' (quick sizes: not the published figures)' if env['quick'] else ''}", "",
             f"Generated by `python benchmarks/suite.py{' --quick' if env['quick'] else ''}` on {env['date']}, commit "
             f"{env['commit']}. Device: {env['device']} ({env['host_cpus']} host CPUs, load average "
             f"{', '.join(f'{v:.1f}' for v in env['load_average'] or [])} at the start). {versions}.", ""]
    for name, (title, render) in RENDERERS.items():
        if name not in result:
            continue
        lines += [f"## {title}", ""]
        part = result[name]
        lines += ([f"Failed: {part['error']}"] if isinstance(part, dict) and "error" in part else render(part))
        lines.append("")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> dict:
    """Measure the requested parts and write `speed.json` and `speed.md` into `--out`."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes (minutes, not the published figures)")
    parser.add_argument("--out", type=Path, default=Path("speed-suite"), help="output folder (default speed-suite)")
    parser.add_argument("--parts", nargs="+", choices=list(PARTS), default=list(PARTS), help="default: all")
    parser.add_argument("--timeout", type=float, default=3600.0, help="seconds per benchmark process")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    result = measure(args.parts, args.quick, args.timeout)
    for name, text in (("speed.json", json.dumps(result, indent=1)), ("speed.md", markdown(result))):
        temporary = args.out / f".{name}.tmp"
        temporary.write_text(text + "\n")
        temporary.replace(args.out / name)
    print(markdown(result))
    return result


if __name__ == "__main__":
    main()
