"""`sfbench model=external` and `model=chronos2` from the command line: a user's function in the current folder is
scored with the usual summary, per-window file and figure; a predictor that fails stops the run with one line
(the host call, its block and the expected shape) before anything is written; a missing target or missing
Chronos-2 weights (or package) stop before any work with one line and exit code 2."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pandas as pd
import pytest
from hydra import compose, initialize_config_module

from sfbench_jax.cli.main import to_run_config

RESULT_FILES = ("summary.csv", "per_window.parquet", "candidates.csv", "manifest.json", "scenario_heatmap.png")

USER_MODULE = textwrap.dedent("""
    import numpy as np

    def last_value(x, *, horizon, target_indices):
        return np.repeat(x[:, -1:, list(target_indices)], horizon, axis=1)

    def nan_on_spikes(x, *, horizon):
        forecast = np.repeat(x[:, -1:], horizon, axis=1)
        forecast[np.abs(x).max(axis=(1, 2)) > 7] = np.nan  # e.g. a model that breaks on extreme inputs
        return forecast
""")


def _sfbench(*overrides: str, cwd: Path, **environment: str) -> subprocess.CompletedProcess:
    script = Path(sys.executable).parent / "sfbench"
    return subprocess.run([str(script), *overrides], capture_output=True, text=True, cwd=cwd,
                          env=dict(os.environ, **environment), timeout=600, check=False)


def _error_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("sfbench: error:")]


def test_sfbench_scores_a_users_function_with_the_usual_outputs(tmp_path: Path) -> None:
    (tmp_path / "user_forecasts.py").write_text(USER_MODULE)
    run_dir = tmp_path / "run"
    completed = _sfbench("model=external", "model.target=user_forecasts:last_value", "eval=quick",
                         f"hydra.run.dir={run_dir}", cwd=tmp_path)
    assert completed.returncode == 0, completed.stderr[-3000:]
    row = pd.read_csv(run_dir / "summary.csv").iloc[0]
    assert (row.dataset, row.architecture, row.method, row.k) == ("etth1", "external", "baseline", 1000)
    assert json.loads(row.hyperparameters) == {"target": "user_forecasts:last_value"}
    assert row.d_w_ci_lo <= row.d_w <= row.d_w_ci_hi and row.mse_c > 0
    per_window = pd.read_parquet(run_dir / "per_window.parquet")
    assert len(per_window) == 1000 and per_window["mse_clean"].mean() == pytest.approx(row.mse_c, rel=1e-6)
    assert (run_dir / "scenario_heatmap.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert manifest["config"]["model"]["target"] == "user_forecasts:last_value"


def test_a_failing_predictor_stops_the_run_before_anything_is_written(tmp_path: Path) -> None:
    (tmp_path / "user_forecasts.py").write_text(USER_MODULE)
    run_dir = tmp_path / "run"
    completed = _sfbench("model=external", "model.target=user_forecasts:nan_on_spikes", "eval=quick",
                         f"hydra.run.dir={run_dir}", cwd=tmp_path)
    assert completed.returncode == 2
    [line] = _error_lines(completed.stderr)
    assert "user_forecasts:nan_on_spikes failed on host call" in line and "non-finite value(s)" in line
    assert "the engine expects a forecast of shape (windows, horizon, targets) = (" in line
    assert "Traceback" not in completed.stderr
    assert not [name for name in RESULT_FILES if (run_dir / name).exists()]


def test_chronos2_without_weights_prints_one_line_and_exits_2(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    completed = _sfbench("model=chronos2", "eval=quick", f"hydra.run.dir={run_dir}", cwd=tmp_path,
                         HF_HUB_OFFLINE="1", HF_HOME=str(tmp_path / "hf"))
    assert completed.returncode == 2, completed.stderr[-3000:]
    [line] = _error_lines(completed.stderr)
    # with the chronos extra: how to get the weights; without it: how to install it
    assert ("hf download amazon/chronos-2 --revision 0f8a440441931157957e2be1a9bce66627d99c76" in line
            or "pip install 'sfbench-jax[chronos]'" in line), line
    assert not [name for name in RESULT_FILES if (run_dir / name).exists()]


@pytest.mark.parametrize(("overrides", "message"), [
    (["model=external"], "model=external needs model.target=package.module:function"),
    (["model=external", "model.target=predict"], "must look like 'package.module:function'"),
    (["model=seasonal_naive", "model.target=numpy:mean"], r"Unknown hyperparameter\(s\) \['target'\]"),
    (["model=external", "model.target=numpy:mean", "method=ensemble"], "does not apply to 'external'"),
])
def test_bad_external_settings_fail_before_work(overrides: list[str], message: str) -> None:
    with initialize_config_module(version_base="1.3", config_module="sfbench_jax.conf"):
        cfg = compose(config_name="config", overrides=overrides)
    with pytest.raises(ValueError, match=message):
        to_run_config(cfg)
