"""The `sfbench` console script end to end: outputs, their schema, presets, and clear errors."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from hydra import compose, initialize_config_module
from sfbench_cli import sfbench_refusal

from sfbench_jax.cli.main import to_run_config
from sfbench_jax.faults import SCENARIO_KEYS

REQUIRED = ["dataset", "architecture", "method", "rng_mode", "eval_seed", "k", "mse_val", "mse_c", "mse_w",
            "d_w", "d_w_ci_lo", "d_w_ci_hi", "d_mean", "mpc", "worst_scenario"]


def _sfbench(*overrides: str, data_root: Path | None = None) -> subprocess.CompletedProcess:
    environment = dict(os.environ)
    if data_root is not None:
        environment["SFBENCH_DATA_ROOT"] = str(data_root)
    script = Path(sys.executable).parent / "sfbench"
    return subprocess.run([str(script), *overrides], capture_output=True, text=True, env=environment,
                          timeout=600, check=False)


def test_main_job_writes_all_outputs(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    completed = _sfbench("eval.k=400", "eval.bootstrap_draws=100", f"hydra.run.dir={run_dir}")
    assert completed.returncode == 0, completed.stderr[-3000:]
    summary = pd.read_csv(run_dir / "summary.csv")
    assert len(summary) == 1
    for column in REQUIRED + [f"d_{key}" for key in SCENARIO_KEYS] + [f"mse_{key}" for key in SCENARIO_KEYS]:
        assert column in summary.columns, column
    row = summary.iloc[0]
    assert (row.dataset, row.architecture, row.method, row.rng_mode, row.k) == (
        "etth1", "seasonal_naive", "baseline", "jax", 400)
    assert row.eval_seed == 341970080 and json.loads(row.hyperparameters) == {"season_length": 24}
    assert row.d_w == max(row[f"d_{key}"] for key in SCENARIO_KEYS)
    assert row.d_w_ci_lo <= row.d_w <= row.d_w_ci_hi
    assert row.mse_w == pytest.approx(row.d_w * row.mse_c, rel=1e-9)
    per_window = pd.read_parquet(run_dir / "per_window.parquet")
    assert len(per_window) == 400 and per_window["sample_id"].tolist() == list(range(400))
    assert per_window["mse_clean"].mean() == pytest.approx(row.mse_c, rel=1e-6)
    assert per_window["mse_missing_data"].mean() == pytest.approx(row.mse_missing_data, rel=1e-6)
    assert per_window["severity_noise"].between(0, 1).all()
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert manifest["data"]["matches_reference"] is True
    assert manifest["config"]["eval"]["k"] == 400 and "jax" in manifest["versions"]
    from sfbench_jax.plugins.code_identity import engine_identity

    assert manifest["code_identity"] == {**engine_identity(), "plugins": {}}  # the engine that made the run
    assert manifest["timings"]["total_seconds"] > 0
    png = (run_dir / "scenario_heatmap.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    record = json.loads((run_dir / "run_record.json").read_text())  # written last, vouching for every file
    assert sorted(record["files"]) == ["candidates.csv", "manifest.json", "per_window.parquet",
                                       "scenario_heatmap.png", "summary.csv"]
    assert record["files"]["scenario_heatmap.png"]["bytes"] == len(png)
    assert "done in" in completed.stderr
    assert "selected trial" in completed.stderr and "season_length=24" in completed.stderr


def test_reference_mode_on_beijing(tmp_path: Path, data_root: Path) -> None:
    run_dir = tmp_path / "run"
    completed = _sfbench("dataset=beijing_air_tiantan", "eval=reference", "eval.k=300", "eval.bootstrap_draws=50",
                         "figures=false", f"hydra.run.dir={run_dir}",
                         data_root=data_root)
    assert completed.returncode == 0, completed.stderr[-3000:]
    row = pd.read_csv(run_dir / "summary.csv").iloc[0]
    assert row.rng_mode == "reference" and json.loads(row.hyperparameters) == {"season_length": 1}
    assert row.d_time_compress == 1.0  # season 1 never sees TimeCompress (protocol 3.6)
    assert not (run_dir / "scenario_heatmap.png").exists()


@pytest.mark.parametrize(("override", "message"), [
    ("dataset=ettm1", "there is no dataset preset 'ettm1'; did you mean etth1?"),  # one line, exit 2 (issue 30)
    ("model=lstm", "there is no model preset 'lstm'; the model presets: "),
    ("eval.chunk_size=0", "eval.chunk_size must be >= 1"),
    ("eval.rng_mode=torch", "Unknown eval.rng_mode 'torch'"),
    ("eval.k=0", "eval.k must be in [1, 1,000,000]"),
    ("eval.k=1000000000", "eval.k must be in [1, 1,000,000]"),
    ("eval.channel_fraction=0.9", "eval.channel_fraction must lie in (0, 0.5]"),
    ("eval.k=many", "eval.k=many: eval.k takes an integer, not 'many'"),
])
def test_bad_overrides_fail_before_work(tmp_path: Path, override: str, message: str, monkeypatch: pytest.MonkeyPatch,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    status, stderr = sfbench_refusal(monkeypatch, capsys, override, f"hydra.run.dir={tmp_path / 'run'}")
    assert status != 0
    assert message in stderr, stderr[-2000:]
    assert not (tmp_path / "run" / "summary.csv").exists()


def test_unusable_run_directory_is_reported(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    status, stderr = sfbench_refusal(monkeypatch, capsys, f"hydra.run.dir={blocker / 'run'}")
    assert status == 2
    [line] = [line for line in stderr.splitlines() if line.startswith("sfbench: error:")]
    assert f"Cannot create the run directory {blocker / 'run'}" in line and "hydra.run.dir=PATH" in line
    assert f"Not a directory: '{blocker / 'run'}'" in line and "Traceback" not in stderr


def test_library_rejects_unwritable_run_directory(tmp_path: Path) -> None:
    from sfbench_jax.storage.atomic import ensure_writable_dir

    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    with pytest.raises(PermissionError, match="Cannot create the run directory.*hydra.run.dir=PATH"):
        ensure_writable_dir(blocker / "run")


def test_compiled_programs_are_cached_and_reused_without_changing_results(tmp_path: Path) -> None:
    common = ["eval.k=400", "eval.bootstrap_draws=100", "figures=false"]
    off = _sfbench(*common, "compilation_cache=false", f"cache_dir={tmp_path / 'off'}",
                   f"hydra.run.dir={tmp_path / 'run_off'}")
    assert off.returncode == 0, off.stderr[-3000:]
    assert not (tmp_path / "off" / "xla").exists()
    runs = []
    for name in ("first", "again"):  # the second run loads the programs the first one stored
        completed = _sfbench(*common, f"cache_dir={tmp_path / 'on'}", f"hydra.run.dir={tmp_path / name}")
        assert completed.returncode == 0, completed.stderr[-3000:]
        runs.append(tmp_path / name)
    assert list((tmp_path / "on" / "xla").glob("*-cache")), "no compiled program was stored"
    assert not (tmp_path / "off" / "programs").exists()
    # the evaluation program itself (no trace or lowering when loaded): stored by the first run, loaded by the next
    sources = [json.loads((run_dir / "manifest.json").read_text())["models"][0]["engine"]["program_cache"]
               for run_dir in runs]
    assert sources == ["stored", "loaded"]
    reference = (tmp_path / "run_off" / "summary.csv").read_bytes()
    for run_dir in runs:
        assert (run_dir / "summary.csv").read_bytes() == reference
        off = tmp_path / "run_off" / "per_window.parquet"
        assert (run_dir / "per_window.parquet").read_bytes() == off.read_bytes()


def test_unwritable_compilation_cache_is_reported_before_work(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    completed = _sfbench("eval.k=100", f"cache_dir={blocker}", f"hydra.run.dir={tmp_path / 'run'}")
    assert completed.returncode == 2
    assert "Cannot create the compilation cache folder" in completed.stderr
    assert "compilation_cache=false" in completed.stderr
    assert not (tmp_path / "run" / "summary.csv").exists()


@pytest.mark.parametrize("overrides", [
    [], ["dataset=beijing_air_tiantan"], ["dataset=traffic_synthetic", "eval=quick"],
    ["dataset=penmanshiel_synthetic", "eval=reference"], ["dataset=traffic"], ["dataset=penmanshiel_wt08"],
])
def test_every_preset_composes_and_validates(overrides: list[str]) -> None:
    with initialize_config_module(version_base="1.3", config_module="sfbench_jax.conf"):
        cfg = compose(config_name="config", overrides=overrides)
    run_config = to_run_config(cfg)
    assert run_config.eval.k in (10_000, 1_000)
