"""`sfbench` for trainable architectures: train + select + evaluate end to end, resuming from the store,
multirun fan-out with the joblib launcher and its collection (every cell present, or a missing cell named),
presets, and clear errors before any work."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import yaml
from hydra import compose, initialize_config_module
from sfbench_cli import sfbench_refusal

from sfbench_jax.cli.callbacks import job_cell, sweep_jobs
from sfbench_jax.cli.main import to_run_config
from sfbench_jax.models import MODELS
from sfbench_jax.report.collect import Cell

CONF = Path(__file__).resolve().parents[2] / "conf"


def _sfbench(*overrides: str, data_root: Path | None = None) -> subprocess.CompletedProcess:
    environment = dict(os.environ)
    environment.pop("SFBENCH_DATA_ROOT", None)
    if data_root is not None:
        environment["SFBENCH_DATA_ROOT"] = str(data_root)
    script = Path(sys.executable).parent / "sfbench"
    return subprocess.run([str(script), *overrides], capture_output=True, text=True, env=environment,
                          timeout=900, check=False)


# ~25-32 s on 2 cores (two `sfbench` processes that train and compile): .ci/run runs it after the default suite;
# tests/methods/test_method_runs.py keeps a trained run and its resume from the store in the default suite
@pytest.mark.slow
def test_trained_architecture_end_to_end_and_resume(tmp_path: Path) -> None:
    store = tmp_path / "store"
    common = ["model=dlinear", "profile=tiny", f"train.store_dir={store}"]
    completed = _sfbench(*common, f"hydra.run.dir={tmp_path / 'run'}")
    assert completed.returncode == 0, completed.stderr[-3000:]
    run = tmp_path / "run"
    summary = pd.read_csv(run / "summary.csv")
    candidates = pd.read_csv(run / "candidates.csv")
    assert len(summary) == 1 and len(candidates) == 2
    row, winner = summary.iloc[0], candidates[candidates.is_winner].iloc[0]
    assert (row.dataset, row.architecture, row.method, row.k) == ("etth1", "dlinear", "baseline", 200)
    assert winner.best_val_loss == candidates.best_val_loss.min() and candidates.is_winner.sum() == 1
    assert json.loads(row.hyperparameters) == json.loads(winner.hyperparameters)
    assert "lr" in json.loads(row.hyperparameters)
    assert row.mse_val == pytest.approx(winner.best_val_loss, rel=1e-6)  # restored checkpoint = best epoch
    curves = pd.read_parquet(run / "training_curves.parquet")
    assert len(curves) == candidates.epochs_run.sum() == 4
    manifest = json.loads((run / "manifest.json").read_text())
    assert manifest["selection"]["winner"] == winner.candidate_hash
    assert manifest["selection"]["valid_candidates"] == 84 and manifest["selection"]["budget"] == 2
    assert manifest["config"]["train"]["steps_per_epoch"] == 20
    assert len(list(store.glob("etth1/dlinear/*/result.json"))) == 2

    again = _sfbench(*common, f"hydra.run.dir={tmp_path / 'again'}")
    assert again.returncode == 0, again.stderr[-3000:]
    assert "2 already in the store, 0 to train" in again.stderr
    repeat = pd.read_csv(tmp_path / "again" / "summary.csv").iloc[0]
    assert (repeat.mse_c, repeat.d_w, repeat.mse_val) == (row.mse_c, row.d_w, row.mse_val)


@pytest.mark.slow  # ~1.2 min on 2 cores: .ci/run runs it after the default suite
def test_multirun_two_datasets_two_architectures(tmp_path: Path, data_root: Path) -> None:
    sweep = tmp_path / "sweep"
    completed = _sfbench("-m", "dataset=etth1,beijing_air_tiantan", "model=dlinear,seasonal_naive", "profile=tiny",
                         f"hydra.sweep.dir={sweep}", f"train.store_dir={tmp_path / 'store'}", data_root=data_root)
    assert completed.returncode == 0, completed.stderr[-3000:]
    assert "Joblib.Parallel" in completed.stdout + completed.stderr  # fanned out by the joblib launcher
    assert len([p for p in sweep.iterdir() if (p / "cell.json").is_file()]) == 4
    merged = pd.read_csv(sweep / "summary.csv")
    assert sorted(zip(merged.dataset, merged.architecture, merged.method, strict=True)) == sorted(
        (d, a, "baseline") for d in ("etth1", "beijing_air_tiantan") for a in ("dlinear", "seasonal_naive"))
    table = (sweep / "table4_architectures.md").read_text().splitlines()
    assert table[0] == "| dataset | measure | SeasonalNaive | DLinear |"
    assert [line.split(" | ")[0] for line in table[2:]] == ["| Beijing Air Tiantan"] * 3 + ["| ETTh1"] * 3
    assert "–" not in "".join(table)
    block = pd.read_csv(sweep / "table4_architectures.csv")
    assert block[["seasonal_naive", "dlinear"]].notna().all().all()
    assert json.loads((sweep / "collect_report.json").read_text())["status"] == "complete"


#: Hydra's basic launcher: the jobs in the launching process. The multirun tests here are about what the sweep
#: collects, which no launcher changes (the launchers themselves: tests/cli/test_launchers.py), and two worker
#: processes fewer save their start-up.
BASIC_LAUNCHER = "hydra/launcher=basic"


def test_multirun_skips_a_pair_the_benchmark_does_not_define(tmp_path: Path) -> None:
    sweep = tmp_path / "sweep"
    completed = _sfbench("-m", "model=seasonal_naive", "method=baseline,ensemble", "profile=tiny",
                         f"hydra.sweep.dir={sweep}", BASIC_LAUNCHER)
    assert completed.returncode == 0, completed.stderr[-3000:]
    output = completed.stdout + completed.stderr
    skipped = [line for line in output.splitlines() if "skipped: method 'ensemble' does not apply" in line]
    assert len(skipped) == 1, output[-3000:]  # one line, not an error
    report = json.loads((sweep / "collect_report.json").read_text())
    assert report["status"] == "complete"  # the skipped pair is no expected cell
    merged = pd.read_csv(sweep / "summary.csv")
    assert list(zip(merged.architecture, merged.method, strict=True)) == [("seasonal_naive", "baseline")]


#: Holds the writer lock of the run folder argv[1] until its standard input closes.
HOLD_LOCK = ("import sys; from sfbench_jax.run_folder.locks import lock_run_folder; lock_run_folder(sys.argv[1]); "
             "print('held', flush=True); sys.stdin.read()")


def test_a_sweep_job_whose_folder_another_process_writes_is_skipped(tmp_path: Path, capsys) -> None:
    # a sweep submitted again while its first submission still runs: the job that is still running is left alone
    from sfbench_jax.cli.main import run_recorded

    job = tmp_path / "sweep" / "0"
    job.mkdir(parents=True)
    holder = subprocess.Popen([sys.executable, "-c", HOLD_LOCK, str(job)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        run_recorded(_compose(["model=seasonal_naive", "profile=tiny"]), job)
    finally:
        holder.communicate(timeout=60)
    err = capsys.readouterr().err
    assert f"[sfbench] job 0 skipped: The run folder {job} is being written by another run (pid {holder.pid} " in err
    assert list(job.iterdir()) == []  # nothing written: no cell file, no failure record


def test_multirun_missing_cell_is_named(tmp_path: Path) -> None:
    sweep, empty = tmp_path / "sweep", tmp_path / "empty_root"
    (empty / "forecasting").mkdir(parents=True)
    completed = _sfbench("-m", "dataset=etth1,beijing_air_tiantan", "model=seasonal_naive", "profile=tiny",
                         f"hydra.sweep.dir={sweep}", f"data_root={empty}", BASIC_LAUNCHER)
    assert completed.returncode == 1
    assert "1 expected cell(s) missing" in completed.stderr
    assert "(dataset=beijing_air_tiantan, architecture=seasonal_naive, method=baseline): job " in completed.stderr
    report = json.loads((sweep / "collect_report.json").read_text())
    assert report["status"] == "incomplete"
    assert report["missing"][0]["cell"] == ["beijing_air_tiantan", "seasonal_naive", "baseline"]
    assert not (sweep / "summary.csv").exists() and not (sweep / "table4_architectures.md").exists()
    assert (next(sweep.glob("*_etth1_seasonal_naive_baseline")) / "summary.csv").is_file()  # the rest ran


@pytest.mark.parametrize(("overrides", "message"), [
    (["model=gru", "model.hparams={dropout:0.1,n_layers:1}"],
     "GRU dropout=0.1 with n_layers=1 is an invalid combination"),
    (["method=pgd"], "there is no method preset 'pgd'; the method presets: "),  # one line, exit 2 (issue 30)
])
def test_cli_reports_bad_input_before_work(tmp_path: Path, overrides: list[str], message: str,
                                           monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.delenv("SFBENCH_DATA_ROOT", raising=False)  # as `_sfbench` runs the command
    status, stderr = sfbench_refusal(monkeypatch, capsys, *overrides, f"hydra.run.dir={tmp_path / 'run'}",
                                        f"train.store_dir={tmp_path / 'store'}")
    assert status != 0
    assert message in stderr, stderr[-2000:]
    assert not (tmp_path / "run" / "summary.csv").exists() and not (tmp_path / "store").exists()


def test_unwritable_store_is_reported_before_training(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    monkeypatch.delenv("SFBENCH_DATA_ROOT", raising=False)  # as `_sfbench` runs the command
    status, stderr = sfbench_refusal(monkeypatch, capsys, "model=dlinear", "profile=tiny",
                                        f"train.store_dir={blocker / 'store'}", f"hydra.run.dir={tmp_path / 'run'}")
    assert status != 0
    assert f"Cannot create the candidate store {blocker / 'store'}" in stderr
    assert "train.store_dir=PATH" in stderr and not (tmp_path / "run" / "summary.csv").exists()


def _compose(overrides: list[str], hydra_config: bool = False):
    with initialize_config_module(version_base="1.3", config_module="sfbench_jax.conf"):
        return compose(config_name="config", overrides=overrides, return_hydra_config=hydra_config)


@pytest.mark.parametrize(("overrides", "message"), [
    (["model=gru", "model.hparams={d_hiden:64}"], r"Unknown hyperparameter\(s\) \['d_hiden'\] in model.hparams"),
    (["model.name=lstm"], "Unknown model 'lstm'. Valid models: chronos2, dlinear, external, gru, moderntcn"),
    (["model=patchtst", "model.hparams={patch_len:128}"], "No valid patchtst candidate for etth1"),
    (["dataset.horizon=24"], "dataset.horizon=24 does not match etth1's window"),
    (["dataset=beijing_air_tiantan", "dataset.input_len=48"], "dataset.input_len=48 does not match"),
    (["method.name=pgd"], "Unknown or unsupported method 'pgd'"),
    (["train.max_epochs=0"], "train.max_epochs must be >= 1"),
    (["train.candidate_budget=0"], "train.candidate_budget must be >= 1"),
    (["train.group_size=eight"], "train.group_size must be a whole number >= 1 or 'auto'"),
    (["train.group_size=0"], "train.group_size must be >= 1"),
    (["model=dlinear", "model.grid.lr=[0.001,-1.0]"], "Learning rate lr=-1.0 for 'dlinear' must be a finite"),
    (["model=dlinear", "model.grid.moving_avg=[10]"], "moving_avg must be odd, got 10"),
    (["model=seasonal_naive", "model.hparams={season:24}"],
     r"Unknown hyperparameter\(s\) \['season'\] in model.hparams"),
])
def test_bad_training_config_is_rejected(overrides: list[str], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        to_run_config(_compose(overrides))


@pytest.mark.parametrize(("overrides", "expected"), [
    ([], "auto"), (["train.group_size=auto"], "auto"), (["train.group_size=null"], None), (["train.group_size=8"], 8)])
def test_group_size_is_auto_by_default_or_a_number(overrides: list[str], expected: object) -> None:
    """`auto` (as many as fit; null, its former spelling, still means it) or a number of candidates."""
    assert to_run_config(_compose(overrides)).train.group_size == expected


@pytest.mark.parametrize("name", ["dlinear", "gru", "moderntcn", "patchtst", "tsmixer", "seasonal_naive"])
def test_model_presets_carry_the_spec_grids(name: str) -> None:
    config = to_run_config(_compose([f"model={name}"]))
    assert config.model.name == name
    if MODELS[name].is_trainable:
        assert {key: tuple(values) for key, values in config.model.grid.items()} == dict(MODELS[name].grid)
        assert list(config.model.grid) == list(MODELS[name].grid)  # spec key order = expansion order


@pytest.mark.parametrize(("profile", "epochs", "budget", "windows"), [
    ("paper", 200, 40, 10_000), ("quick", 10, 4, 1_000), ("tiny", 2, 2, 200)])
def test_profiles(profile: str, epochs: int, budget: int, windows: int) -> None:
    config = to_run_config(_compose([f"profile={profile}", "model=patchtst"]))
    assert (config.train.max_epochs, config.train.candidate_budget, config.eval.k) == (epochs, budget, windows)
    default = to_run_config(_compose(["model=patchtst"]))
    assert (default.train.max_epochs, default.train.patience, default.train.candidate_budget) == (200, 10, 40)


def test_experiment_presets_sweep_every_cell() -> None:
    with initialize_config_module(version_base="1.3", config_module="sfbench_jax.conf"):
        cfg = compose(config_name="config", overrides=["experiment=table4_architectures"], return_hydra_config=True)
        figure5 = compose(config_name="config", overrides=["experiment=figure5_tradeoffs"], return_hydra_config=True)
        assert str(cfg.hydra.mode) == str(figure5.hydra.mode) == "RunMode.MULTIRUN"
        assert cfg.hydra.sweeper.params == figure5.hydra.sweeper.params  # Figure 5 plots Table 4's runs
        jobs = sweep_jobs(cfg)
        base = Cell("etth1", "seasonal_naive", "baseline")
        cells = {job_cell(job, "config", base) for job in jobs}
    datasets = ("beijing_air_tiantan", "penmanshiel_wt08", "etth1", "traffic")
    architectures = ("seasonal_naive", "dlinear", "gru", "moderntcn", "tsmixer", "patchtst")
    assert len(jobs) == 24 and cells == {Cell(d, a, "baseline") for d in datasets for a in architectures}


def test_launcher_presets() -> None:
    cfg = _compose(["model=dlinear"], hydra_config=True)
    assert cfg.hydra.launcher._target_ == "hydra_plugins.hydra_joblib_launcher.joblib_launcher.JoblibLauncher"
    assert cfg.hydra.launcher.n_jobs == 2
    # the SLURM and Ray presets extend their plugins' configs (extras slurm / ray; run by tests/cli/test_launchers.py)
    slurm = yaml.safe_load((CONF / "hydra" / "launcher" / "slurm.yaml").read_text())
    ray = yaml.safe_load((CONF / "hydra" / "launcher" / "ray.yaml").read_text())
    assert slurm["defaults"] == ["submitit_slurm"] and slurm["gpus_per_node"] == 1
    assert ray["defaults"] == ["sfbench_ray"] and ray["remote"]["num_gpus"] == 0
