"""The fixture folder of small real runs behind the analysis tests (built once per session by `conftest.py`).

Every run is a real `sfbench` job (`profile=tiny`: two candidates of two 20-step epochs, K = 200) on the real
ETTh1 and Beijing files:

* `seeds_multirun/`: a real multirun `sfbench -m eval.seed=0,1 model=seasonal_naive,dlinear` (ETTh1) through the
  default (joblib) launcher with `hydra.launcher.n_jobs=1`, which joblib runs in the launching process, one job
  after the other (two worker processes fewer: each would import and start JAX again). It runs after the in-process
  runs so that its jobs load their compiled programs, with a store of its own;
* `runs/<dataset>/...`: SeasonalNaive and DLinear at the canonical realisation and at eval seeds 0 and 1 (Beijing;
  ETTh1 has them from the multirun), and DLinear at one fixed channel fraction per dataset (ETTh1 0.25, Beijing 0.5:
  both of the paper's fractions, one compiled program each; its re-evaluation loads the stored candidates, and
  SeasonalNaive's would add only the same table rows), run in-process with the same Hydra composition as the CLI;
  each writes its log (`run.log`) so tests can see what was trained;
* `reference/<dataset>/seasonal_naive`: SeasonalNaive under the full protocol in `eval.rng_mode=reference` mode;
* `methods/etth1/`: real method runs of DLinear on ETTh1 (the methods of `sfbench_jax.methods`) with small recipe
  grids: PGD adversarial training (eps 0.05 and 0.1, 3 steps: two trained variants) and the ensemble (top 2 of the
  stored baseline candidates, mean or median: two variants, no training). One dataset: the method tables' code
  is the same for each dataset's rows, and Beijing's runs cost about 20 s;
* `stand_ins/etth1/`: STAND-IN method rows, for a second pair per method on ETTh1: methods do not apply to
  SeasonalNaive, so a SeasonalNaive with a pinned season (48) is run for real and its `method` / `variant`
  summary columns are set by this fixture to "adversarial_training" / "stand_in_season_48". Its numbers are
  real; its label is not (its completion record is written again after the relabelling). Pair statistics with
  two pairs (the pair bootstrap) read it;
* `selector_pressure/`: ETTh1's PGD run and stand-in re-selected on perturbed validation by
  `scripts/selector_pressure.py` (each candidate scored on all 3,000 validation windows: one dataset is enough).

`python tests/report/fixture_runs.py ROOT DATA_ROOT` builds it in its own process with the compilation cache
on (as the `sfbench` command does), so the many small jobs share their compiled programs; the cache folder is the
test session's (SFBENCH_CACHE_DIR, set by `tests/conftest.py`), so the suite's later `sfbench` runs load them too.
"""

from __future__ import annotations

import contextlib
import io
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/, when this file runs as a script
from sfbench_cli import run_in_process  # each job in this process, its log kept in `run.log`

DATASETS = ("etth1", "beijing_air_tiantan")
ARCHITECTURES = ("seasonal_naive", "dlinear")
#: The explicit evaluation seeds of the Table 10 runs (the multirun's on ETTh1, in-process runs on Beijing).
EVAL_SEEDS = (0, 1)
#: The fixed channel fraction of each dataset's Table 12 runs.
CHANNEL_FRACTION = {"etth1": 0.25, "beijing_air_tiantan": 0.5}
#: The dataset of the method runs and the stand-in.
METHOD_DATASET = "etth1"
#: Real method runs of DLinear: method -> overrides (small recipe grids).
METHOD_RUNS = {
    "adversarial_training": ["method=adversarial_training", "method.grid={eps:[0.05,0.1],steps:[3]}"],
    "ensemble": ["method=ensemble", "method.grid={top_k:[2],combine:[mean,median]}"],
}
#: The stand-in pair: (method label, variant, overrides of a real SeasonalNaive run).
STAND_IN = ("adversarial_training", "stand_in_season_48", ["model=seasonal_naive", "model.hparams={season_length:48}"])


def relabel(run_dir: Path, method: str, variant: str) -> None:
    """Set a stand-in run's `method` and `variant` summary columns (the only edit the fixture makes) and write
    its completion record again through the writers' own last step, so the relabelled run verifies."""
    from sfbench_jax.run_folder.record import seal_run

    summary = pd.read_csv(run_dir / "summary.csv")
    summary["method"], summary["variant"] = method, variant
    summary.to_csv(run_dir / "summary.csv", index=False)
    seal_run(run_dir)


def multirun(root: Path, common: list[str], data_root: Path) -> subprocess.CompletedProcess:
    """The real multirun over evaluation seeds and two architectures (the joblib launcher, its jobs in this
    process: `hydra.launcher.n_jobs=1`)."""
    environment = {**os.environ, "SFBENCH_DATA_ROOT": str(data_root)}
    script = Path(sys.executable).parent / "sfbench"
    seeds = ",".join(map(str, EVAL_SEEDS))
    return subprocess.run([str(script), "-m", f"eval.seed={seeds}", "model=seasonal_naive,dlinear",
                           "hydra.launcher.n_jobs=1", f"hydra.sweep.dir={root / 'seeds_multirun'}", *common],
                          capture_output=True, text=True, env=environment, timeout=900, check=False)


def build(root: Path, data_root: Path, load_script: Callable[[str], ModuleType]) -> subprocess.CompletedProcess:
    """Build the whole fixture folder under `root`; returns the multirun's completed process."""
    cache = os.environ.get("SFBENCH_CACHE_DIR") or root / "cache"  # the test session's cache, shared with its runs
    places = [f"cache_dir={cache}", f"data_root={data_root}", "train.progress=false"]
    common = ["profile=tiny", f"train.store_dir={root / 'store'}", *places]
    for dataset in DATASETS:
        for architecture in ARCHITECTURES:
            base = [*common, f"dataset={dataset}", f"model={architecture}"]
            run_in_process(base, root / "runs" / dataset / architecture / "canonical")
            if architecture == "dlinear":
                fraction = CHANNEL_FRACTION[dataset]
                run_in_process([*base, f"eval.channel_fraction={fraction}"],
                               root / "runs" / dataset / architecture / f"fraction_{fraction}")
            if dataset != "etth1":  # ETTh1's seeds come from the multirun
                for seed in EVAL_SEEDS:
                    run_in_process([*base, f"eval.seed={seed}"],
                                   root / "runs" / dataset / architecture / f"seed_{seed}")
        run_in_process([f"dataset={dataset}", "eval=reference", f"cache_dir={cache}", f"data_root={data_root}",
                        "eval.progress=false", "figures=false"], root / "reference" / dataset / "seasonal_naive")
    for method, overrides in METHOD_RUNS.items():
        run_in_process([*common, f"dataset={METHOD_DATASET}", "model=dlinear", *overrides],
                       root / "methods" / METHOD_DATASET / f"dlinear_{method}")
    method, variant, overrides = STAND_IN
    target = root / "stand_ins" / METHOD_DATASET / f"seasonal_naive_{method}"
    run_in_process([*common, f"dataset={METHOD_DATASET}", *overrides], target)
    relabel(target, method, variant)
    # last, so that its jobs load the programs the in-process ETTh1 runs compiled; its own store, so that its two
    # DLinear jobs train each candidate once between them (tests/report/test_sensitivity.py)
    sweep = multirun(root, ["profile=tiny", f"train.store_dir={root / 'multirun_store'}", *places], data_root)
    pressure = load_script("selector_pressure")
    with contextlib.redirect_stderr(io.StringIO()):
        status = pressure.main(["--runs", str(root / "methods" / "etth1"), str(root / "stand_ins" / "etth1"),
                                "--output", str(root / "selector_pressure"), "--method", "adversarial_training"])
    if status != 0:
        raise RuntimeError("scripts/selector_pressure.py failed on the stand-in runs")
    return sweep


def _load_script(name: str) -> ModuleType:
    import importlib.util

    path = Path(__file__).resolve().parents[2] / "scripts" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"{name}_script", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


if __name__ == "__main__":
    from sfbench_jax.cli.cpu_devices import expose_cpu_cores

    expose_cpu_cores()  # as the sfbench command does, before JAX starts
    completed = build(Path(sys.argv[1]), Path(sys.argv[2]), _load_script)
    (Path(sys.argv[1]) / "multirun.log").write_text(completed.stdout + completed.stderr)
    sys.exit(completed.returncode)
