"""The whole speed table in one command: runs every benchmark in `benchmarks/` that measures the engine and writes
one JSON file and one Markdown table (device, versions, date and commit at the top).

What it runs, each benchmark in its own process with `--json` (like the `sfbench` CLI, each exposes every CPU core
as a JAX device before JAX starts):

* the fused fault pass and SeasonalNaive's evaluation against the vmapped baseline, and randomized smoothing
  (`scoring_core.py --smoothing`), on ETTh1 (and Traffic-shaped data in a full run);
* each trained architecture's evaluation with its forward FLOP utilisation against the matrix-multiply rate
  measured in the same process (`scoring_core.py --model <arch>`);
* each architecture's training epoch: steps/s, validation pass, seconds per full epoch (`training.py`);
* a method's variant search vectorised against one variant after another, three paired rounds (`training.py
  --variants`; its own part, `variants`, since it alone takes about an hour);
* each architecture's evaluation and training epoch against a competent PyTorch implementation on the same weights,
  PyTorch on 2 threads (and 1, for reference) (`torch_baselines.py`; needs the torch extra);
* whole `sfbench` processes (warm compilation cache: one untimed run first): wall and CPU seconds of the process
  and the phases its manifest records (`startup`, `timings`).

`--quick` runs every part at small sizes (hundreds of windows, a few steps, a few variants): minutes instead of an
hour, for checking the table on a new machine; its numbers are not the published ones. On a GPU machine the same
command gives the table for that device. `--docs docs/speed.md` also replaces the block between the page's
`<!-- suite:begin -->` and `<!-- suite:end -->` lines with the tables (`--from-json` renders a previous run's
`speed.json` instead of measuring). Every part records its own date, commit, load average and duration;
`--merge <run>/speed.json --parts <part> ...` measures only those parts into an earlier run of the same set-up
(device, versions, sizes), e.g. after a change that concerns one part. Example:

    python benchmarks/suite.py --quick --out /tmp/speed
    python benchmarks/suite.py --out docs/speed-suite --docs docs/speed.md   # the full table (about 2.5 h, 2 cores)
    python benchmarks/suite.py --from-json docs/speed-suite/speed.json --docs docs/speed.md
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
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent
ARCHITECTURES = ("dlinear", "gru", "moderntcn", "patchtst", "tsmixer")
PACKAGES = ("sfbench-jax", "jax", "jaxlib", "flax", "optax", "numpy", "torch")

#: Sizes per mode: (full, quick).
SIZES = {
    "k": (10_000, 500), "repeats": (3, 1), "train_steps": (None, 60), "train_repeats": (3, 5),
    "variant_budget": (40, 6), "variant_max_epochs": (200, 2), "variant_steps": (None, 20), "variant_repeats": (3, 2),
    "process_runs": (5, 2),
    "torch_k": (10_000, 500), "torch_steps": (None, 20), "torch_repeats": (3, 1), "torch_threads": ("2 1", "2"),
}
#: Quick training epochs per architecture: S- and 2S-step epochs whose S steps take a few tenths of a second on
#: 2 cores (0.2 ms DLinear to 20 ms ModernTCN per step), so the step time the benchmark derives from their
#: difference stands above timing noise; 2S stays within ETTh1's 625 drop-last batches. A quick measurement that
#: still fails on noise is retried once at twice the steps (capped there).
QUICK_TRAIN_STEPS = {"dlinear": 300, "gru": 60, "moderntcn": 20, "patchtst": 30, "tsmixer": 150}
MAX_QUICK_TRAIN_STEPS = 312


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


def _epoch_row(name: str, quick: bool, timeout: float) -> dict:
    """One architecture's training epoch (training.py in its own process); quick sizes retry once at twice the
    steps when timing noise exceeded the work timed."""
    steps = QUICK_TRAIN_STEPS[name] if quick else size("train_steps", quick)
    arguments = ["--datasets", "etth1", "--repeats", str(size("train_repeats", quick)), "--speedup-datasets",
                 "none" if quick else "etth1", "--architectures", name]
    try:
        return run_json("training.py", *arguments, *([] if steps is None else ["--steps", str(steps)]),
                        timeout=timeout)["rows"][0]
    except RuntimeError as error:
        if not quick or "timing noise" not in str(error):
            raise
        steps = min(2 * steps, MAX_QUICK_TRAIN_STEPS)
        return run_json("training.py", *arguments, "--steps", str(steps), timeout=timeout)["rows"][0]


def training(quick: bool, timeout: float) -> dict:
    """Each architecture's training epoch on ETTh1 (training.py, one process per architecture)."""
    return {"epochs": [_attempt(name, lambda name=name: _epoch_row(name, quick, timeout)) for name in ARCHITECTURES]}


def variant_search(quick: bool, timeout: float) -> dict:
    """The adaptive-loss variant search of DLinear on ETTh1, vectorised against one variant after another
    (training.py --variants, paired rounds in one process)."""
    steps = size("variant_steps", quick)
    return _attempt("variants", lambda: run_json(
        "training.py", "--variants", "--budget", str(size("variant_budget", quick)), "--max-epochs",
        str(size("variant_max_epochs", quick)), "--repeats", str(size("variant_repeats", quick)),
        *([] if steps is None else ["--steps", str(steps)]), timeout=timeout))


def against_torch(quick: bool, timeout: float) -> list[dict]:
    """Each architecture's evaluation and training epoch against the PyTorch baseline on the same weights
    (torch_baselines.py, one process per architecture; needs the torch extra)."""
    steps = size("torch_steps", quick)
    arguments = ["--k", str(size("torch_k", quick)), "--repeats", str(size("torch_repeats", quick)),
                 "--torch-threads", *str(size("torch_threads", quick)).split(),
                 *([] if steps is None else ["--steps", str(steps)])]
    return [_attempt(name, lambda name=name: _torch_row(name, arguments, timeout)) for name in ARCHITECTURES]


def _torch_row(name: str, arguments: list[str], timeout: float) -> dict:
    """One architecture's row of torch_baselines.py, with its run's settings (PyTorch version, threads, sizes)."""
    run = run_json("torch_baselines.py", *arguments, "--architectures", name, timeout=timeout)
    return run["rows"][0] | {key: run[key] for key in ("torch", "torch_threads", "steps", "repeats")}


def processes(quick: bool, timeout: float) -> list[dict]:
    """Whole `sfbench` processes on a warm compilation cache."""
    runs = size("process_runs", quick)
    commands = [["eval=quick"]] + ([] if quick else [["dataset=traffic_synthetic", "eval.k=1000"]])
    return [whole_process(overrides, runs, timeout) for overrides in commands]


def _commit() -> str | None:
    """The checkout's short commit, `-dirty` when tracked files differ from it (None outside a git checkout)."""
    def git(*arguments: str) -> str:
        return subprocess.run(["git", *arguments], cwd=HERE, capture_output=True, text=True, check=False).stdout.strip()

    commit = git("rev-parse", "--short", "HEAD")
    return (commit + ("-dirty" if git("status", "--porcelain", "--untracked-files=no") else "")) or None


def _now() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")


def _load_average() -> list[float] | None:
    return list(os.getloadavg()) if hasattr(os, "getloadavg") else None


#: Vector instruction sets that decide XLA's and PyTorch's CPU kernels, widest first.
VECTOR_ISAS = ("avx512f", "avx2", "avx", "sse4_2", "asimd", "sve")


def host_cpu() -> str:
    """The host CPU's model and the vector instruction sets it has (e.g. `AMD EPYC (avx2, avx, sse4_2; no
    avx512f)`): the same core count gives other figures with other vector units, so the table names them."""
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return platform.processor() or platform.machine()
    first_cpu = text.split("\n\n")[0].splitlines()
    fields = {key.strip(): value.strip() for key, value in (line.split(":", 1) for line in first_cpu if ":" in line)}
    model = fields.get("model name") or fields.get("CPU part") or platform.machine()
    flags = set((fields.get("flags") or fields.get("Features") or "").split())
    has = [isa for isa in VECTOR_ISAS if isa in flags]
    lacks = [isa for isa in ("avx512f", "avx2") if isa not in flags and "avx" in flags]
    return f"{model} ({', '.join(has) or 'no vector ISA listed'}{'; no ' + ', '.join(lacks) if lacks else ''})"


def environment(quick: bool) -> dict:
    """Date, machine, device, versions and commit of this suite run."""
    import jax

    versions = {"python": platform.python_version()}
    for name in PACKAGES:
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            versions[name] = "not installed"
    device = jax.devices()[0]
    return {"date": _now(), "quick": quick, "device": f"{device.platform}: {device.device_kind}",
            "host_cpus": os.cpu_count(), "host_cpu": host_cpu(), "platform": platform.platform(), "versions": versions,
            "commit": _commit(),
            "load_average": _load_average()}


#: Part name -> how it is measured.
PARTS = {"fault_pass": fault_pass, "evaluation": evaluations, "training": training, "variants": variant_search,
         "torch": against_torch, "processes": processes}


def measure(parts: list[str], quick: bool, timeout: float, previous: dict | None = None,
            on_part: Callable[[dict], None] = lambda result: None) -> dict:
    """Every requested part, each with its own date, commit, load average at its start and seconds
    (`part_environments`); a part that fails is recorded with its error and the others still run. With `previous`
    (an earlier run's result, `--merge`), its other parts are kept. `on_part(result)` is called after each part
    (the CLI writes `speed.json` there, so an interrupted suite keeps its finished parts for `--merge`)."""
    result = {"environment": environment(quick), "part_environments": {}} if previous is None else previous
    result.setdefault("part_environments", {})
    for name in parts:
        print(f"[suite] {name} ...", file=sys.stderr, flush=True)
        started, when = time.perf_counter(), {"date": _now(), "commit": _commit(), "load_average": _load_average()}
        try:
            result[name] = PARTS[name](quick, timeout)
        except (RuntimeError, subprocess.SubprocessError, json.JSONDecodeError, OSError) as error:
            result[name] = {"error": str(error)}
        result["part_environments"][name] = when | {"seconds": time.perf_counter() - started}
        print(f"[suite] {name}: {time.perf_counter() - started:.0f} s", file=sys.stderr, flush=True)
        on_part(result)
    return result


def check_mergeable(previous: dict, current: dict, where: Path) -> None:
    """Refuse to merge new parts into a run measured at other sizes, on another device or CPU or with other versions
    (its tables would mix two set-ups under one heading). A run from before the suite recorded `host_cpu` is
    compared on the other keys.

    Raises:
        ValueError: naming what differs.
    """
    differences = [f"{key}: {previous.get(key)!r} there, {current[key]!r} now"
                   for key in ("quick", "device", "host_cpus", "host_cpu", "versions")
                   if key in previous and previous.get(key) != current[key]]
    if differences:
        raise ValueError(f"{where} was measured with another set-up ({'; '.join(differences)}); measure every part "
                         "afresh instead of --merge.")


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
    return _table(header, body) + ["", *_failures(part["epochs"])]


def _variant_lines(variants: dict) -> list[str]:
    if "error" in variants:
        return _failures([variants])
    rounds = variants["rounds"]
    lines = [f"{variants['method']} of {variants['architecture']} on {variants['dataset']}, {variants['variants']} "
             f"variants, at most {variants['max_epochs']} epochs of {variants['steps_per_epoch'] or 'all'} steps, "
             f"patience {variants['patience']}; round 1 includes compilation. Median ratio "
             f"{variants['median_ratio']:.2f}x, without round 1 {variants['median_ratio_warm']:.2f}x.", ""]
    return lines + _table(["round", "vectorised s", "one after another s", "ratio", "same selected variant",
                           "best val max rel. diff."],
                          [[i, r["vectorised_seconds"], r["sequential_seconds"], f"{r['ratio']:.2f}x",
                            r["selected"][0] == r["selected"][1], f"{r['max_relative_difference']:.1e}"]
                           for i, r in enumerate(rounds, start=1)])


def _ratio(value: float | None) -> str | None:
    return None if value is None else f"{value:.3g}x"


def _torch_lines(rows: list[dict]) -> list[str]:
    measured = [r for r in rows if "error" not in r]
    if not measured:
        return _failures(rows)
    first = measured[0]
    threads, other = first["torch_threads"][0], first["torch_threads"][1:]
    header = ["architecture", f"evaluation: PyTorch s ({threads} threads)", "ours s", "ratio", "ours forward + MSE s",
              "ratio, same work", f"training epoch: PyTorch s ({threads} threads)", "ours s", "ratio",
              *(f"ratio vs PyTorch on {n} thread(s): evaluation / epoch" for n in other)]
    body = [[r["architecture"], r[f"eval_seconds_torch_t{threads}"], r["eval_seconds_ours"],
             _ratio(r[f"eval_ratio_t{threads}"]), r["eval_seconds_ours_forward_mse"],
             _ratio(r[f"eval_same_work_ratio_t{threads}"]), r[f"epoch_seconds_torch_t{threads}"],
             r["epoch_seconds_ours"], _ratio(r[f"epoch_ratio_t{threads}"]),
             *(f"{_ratio(r[f'eval_ratio_t{n}'])} / {_ratio(r[f'epoch_ratio_t{n}'])}" for n in other)]
            for r in measured]
    epoch = ("full epochs (every drop-last batch of 16)" if first["steps"] is None else
             f"{first['steps']}-step epochs")
    note = (f"ETTh1, default hyperparameters, the same weights on both sides (PyTorch's initialisation loaded into "
            f"the engine, forwards checked to 1e-5), PyTorch {first['torch']}. Evaluation: K = {first['k']:,} windows "
            "x 9 (clean + 8 scenarios); PyTorch times batched `no_grad` forwards and the per-window MSE over windows "
            "faulted beforehand (its fastest batch size), ours the whole evaluation (fault pass, forward, losses, "
            "bootstrap) and, for the same work, the jitted forward + MSE over the same windows. Training: "
            f"{epoch} + the validation pass, PyTorch's `Adam` against the engine's compiled epoch program. Ratio = "
            f"PyTorch seconds / ours (> 1: ours is faster); medians of {first['repeats']} paired rounds.")
    return [note, "", *_table(header, body), *(["", *_failures(rows)] if len(measured) < len(rows) else [])]


def _process_lines(rows: list[dict]) -> list[str]:
    keys = ("before_run_seconds", "imports_seconds", "configure_seconds", "select_seconds", "evaluate_seconds",
            "evaluate_compile_seconds", "write_seconds")
    header = ["command", "wall s", "CPU s", *(key.removesuffix("_seconds").replace("_", " ") + " s" for key in keys)]
    return _table(header, [[f"`{r['command']}`", r["wall_seconds"], r["cpu_seconds"],
                            *(r["phases"].get(key) for key in keys)] for r in rows])


RENDERERS = {"fault_pass": ("Fault pass, SeasonalNaive evaluation, smoothing", _fault_lines),
             "evaluation": ("Evaluation of each architecture (ETTh1, default hyperparameters, random weights)",
                            _evaluation_lines),
             "training": ("Training epoch of each architecture (ETTh1)", _training_lines),
             "variants": ("Variant search: vectorised against one variant after another", _variant_lines),
             "torch": ("Against PyTorch (2 threads)", _torch_lines),
             "processes": ("Whole `sfbench` processes (warm compilation cache; medians)", _process_lines)}


def markdown(result: dict, level: int = 1) -> str:
    """The suite's Markdown table: environment first, then one table per part (`level`: the title's heading level,
    the parts' one below)."""
    env = result["environment"]
    versions = ", ".join(f"{name} {version}" for name, version in env["versions"].items())
    lines = [f"{'#' * level} Speed table{' (quick sizes: not the published figures)' if env['quick'] else ''}", "",
             f"Generated by `python benchmarks/suite.py{' --quick' if env['quick'] else ''}` on {env['date']}, commit "
             f"{env['commit']}. Device: {env['device']} ({env['host_cpus']} host CPUs"
             f"{', ' + env['host_cpu'] if env.get('host_cpu') else ''}, load average "
             f"{', '.join(f'{v:.1f}' for v in env['load_average'] or [])} at the start). {versions}.", ""]
    for name, (title, render) in RENDERERS.items():
        if name not in result:
            continue
        lines += [f"{'#' * (level + 1)} {title}", ""]
        when = result.get("part_environments", {}).get(name)
        if when is not None:
            load = f"{when['load_average'][0]:.1f}" if when.get("load_average") else "unknown"
            lines += [f"Measured {when['date']} at commit {when['commit']} in {when['seconds'] / 60:.0f} min (load "
                      f"average {load} at its start).", ""]
        part = result[name]
        lines += ([f"Failed: {part['error']}"] if isinstance(part, dict) and "error" in part else render(part))
        lines.append("")
    return "\n".join(lines)


#: The generated block of a Markdown page (`--docs`): everything between these two lines is replaced.
DOCS_BEGIN, DOCS_END = "<!-- suite:begin -->", "<!-- suite:end -->"


def docs_page(page: str, block: str, where: Path) -> str:
    """`page` with the text between its `DOCS_BEGIN` and `DOCS_END` lines replaced by `block`.

    Raises:
        ValueError: the markers are missing, repeated or out of order (checked before anything is measured).
    """
    lines = page.splitlines()
    begins = [i for i, line in enumerate(lines) if line.strip() == DOCS_BEGIN]
    ends = [i for i, line in enumerate(lines) if line.strip() == DOCS_END]
    if len(begins) != 1 or len(ends) != 1 or begins[0] > ends[0]:
        raise ValueError(f"{where} needs exactly one line {DOCS_BEGIN!r} followed by one line {DOCS_END!r} around "
                         f"the generated tables (found {len(begins)} and {len(ends)}); add them where the tables "
                         "belong.")
    return "\n".join([*lines[: begins[0] + 1], "", block.strip(), "", *lines[ends[0]:]]) + "\n"


def write_atomically(path: Path, text: str) -> None:
    """Write `text` to a temporary file beside `path`, then rename it over `path`."""
    temporary = path.parent / f".{path.name}.tmp"
    temporary.write_text(text)
    temporary.replace(path)


def main(argv: list[str] | None = None) -> dict:
    """Measure the requested parts (or read them back with `--from-json`), write `speed.json` and `speed.md` into
    `--out`, and with `--docs` replace the generated block of that page."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes (minutes, not the published figures)")
    parser.add_argument("--out", type=Path, default=Path("speed-suite"), help="output folder (default speed-suite)")
    parser.add_argument("--parts", nargs="+", choices=list(PARTS), default=list(PARTS), help="default: all")
    parser.add_argument("--timeout", type=float, default=7200.0,
                        help="seconds per benchmark process (default 7200: the variant search's three rounds took "
                             "57 min on 2 cores)")
    parser.add_argument("--docs", type=Path, default=None,
                        help=f"also replace the lines between {DOCS_BEGIN} and {DOCS_END} of this Markdown page "
                             "(e.g. docs/speed.md) with the tables")
    parser.add_argument("--from-json", type=Path, default=None,
                        help="render a previous run's speed.json instead of measuring (with --docs: regenerate "
                             "the page from it)")
    parser.add_argument("--merge", type=Path, default=None,
                        help="keep the other parts of this earlier speed.json (same device, versions and sizes) "
                             "and measure only --parts into it, e.g. after a change to one of them")
    args = parser.parse_args(argv)
    if args.merge is not None and args.from_json is not None:
        parser.error("--merge measures parts into an earlier run; --from-json only renders one: use one of them.")
    if args.docs is not None:  # a page without its markers fails before an hour of measuring
        try:
            docs_page(args.docs.read_text(), "", args.docs)
        except (OSError, ValueError) as error:
            parser.error(f"--docs: {error}")
    previous = None
    if args.merge is not None:  # checked before measuring too
        try:
            previous = json.loads(args.merge.read_text())
            check_mergeable(previous["environment"], environment(args.quick), args.merge)
        except (OSError, ValueError, KeyError) as error:
            parser.error(f"--merge: {error}")
    if args.from_json is not None:
        result = json.loads(args.from_json.read_text())
    else:
        args.out.mkdir(parents=True, exist_ok=True)
        def save(result: dict) -> None:
            write_atomically(args.out / "speed.json", json.dumps(result, indent=1) + "\n")
            write_atomically(args.out / "speed.md", markdown(result) + "\n")

        result = measure(args.parts, args.quick, args.timeout, previous, on_part=save)
    if args.docs is not None:
        write_atomically(args.docs, docs_page(args.docs.read_text(), markdown(result, level=2), args.docs))
    print(markdown(result))
    return result


if __name__ == "__main__":
    main()
