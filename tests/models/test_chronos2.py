"""Chronos-2 (protocol 3.7) through the fused engine, on a small randomly initialised Chronos-2 built from a
configuration and saved like a downloaded checkpoint (no download: the Hugging Face hub is offline here).

The adapter gives the pipeline's own mean forecast for the spec's call (per window one multivariate task,
context = the window, targets selected); missing weights stop with the one-line instruction; `sfbench
model=chronos2 eval=quick` scores it end to end on ETTh1. Runs where the optional `chronos` extra is installed.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import jax
import numpy as np
import pandas as pd
import pytest

from sfbench_jax.models.chronos2 import CHRONOS2_REPO, Chronos2Config, Chronos2WeightsError, load_pipeline
from sfbench_jax.models.registry import build_model

# Chronos and PyTorch are imported by the tests that use them, not here: importing `chronos` takes about 10 s,
# which every test worker would pay while collecting, whichever worker runs these tests.
pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("chronos") is None or importlib.util.find_spec("torch") is None,
    reason="Chronos-2 tests need the optional extra: pip install -e '.[chronos]'")

#: Chronos-2's quantile levels (the released checkpoint's 21): 0.01, 0.05, 0.1, 0.15, ..., 0.9, 0.95, 0.99.
QUANTILES = [0.01, 0.05, *[round(0.05 * i, 2) for i in range(2, 19)], 0.95, 0.99]


def save_tiny_chronos2(folder: Path, *, seed: int = 0) -> Path:
    """A small randomly initialised Chronos-2 (one layer, d_model 32) with the released checkpoint's layout
    (patches of 16, register token, arcsinh scaling, 21 quantiles), saved with `save_pretrained`."""
    import torch
    from chronos.chronos2 import Chronos2Model
    from chronos.chronos2.config import Chronos2CoreConfig

    torch.manual_seed(seed)
    config = Chronos2CoreConfig(
        d_model=32, d_kv=8, d_ff=64, num_layers=1, num_heads=4, architectures=["Chronos2Model"],
        chronos_config={"context_length": 512, "input_patch_size": 16, "input_patch_stride": 16,
                        "output_patch_size": 16, "quantiles": QUANTILES, "use_reg_token": True,
                        "use_arcsinh": True, "max_output_patches": 8})
    Chronos2Model(config).save_pretrained(folder)
    return folder


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return save_tiny_chronos2(tmp_path_factory.mktemp("tiny_chronos2"))


@pytest.fixture(autouse=True)
def _offline(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


def _spec_forecast(folder: Path, x: np.ndarray, *, horizon: int, targets: list[int]) -> np.ndarray:
    """Spec 3.7 written out: per window the (m, n) context, the mean forecast (m, H), transposed, targets."""
    import torch
    from chronos import Chronos2Pipeline

    pipeline = Chronos2Pipeline.from_pretrained(str(folder))
    _, mean = pipeline.predict_quantiles(torch.from_numpy(np.ascontiguousarray(x.transpose(0, 2, 1))),
                                         prediction_length=horizon, quantile_levels=[0.5], context_length=96,
                                         limit_prediction_length=False, cross_learning=False)
    return torch.stack(mean).numpy().transpose(0, 2, 1)[..., targets]


@pytest.mark.parametrize(("channels", "horizon", "targets"), [(7, 96, list(range(7))), (12, 6, [0])])
def test_the_adapter_gives_the_pipelines_forecast(checkpoint: Path, channels: int, horizon: int,
                                                  targets: list[int]) -> None:
    model = build_model("chronos2", {"weights": str(checkpoint)}, input_len=96, horizon=horizon,
                        num_channels=channels, target_indices=targets, seed=0)
    model.eval()
    x = 2 * np.random.default_rng(channels).standard_normal((5, 96, channels)).astype(np.float32)
    forecast = np.asarray(jax.jit(lambda x: model(x))(x))
    assert forecast.shape == (5, horizon, len(targets)) and np.isfinite(forecast).all()
    np.testing.assert_allclose(forecast, _spec_forecast(checkpoint, x, horizon=horizon, targets=targets),
                               rtol=1e-5, atol=1e-6)
    assert load_pipeline.cache_info().currsize == 1  # selection and evaluation share one loaded pipeline


def test_missing_weights_stop_with_one_line_saying_how_to_get_them(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    import huggingface_hub.constants

    with pytest.raises(Chronos2WeightsError, match=r"No Chronos-2 checkpoint in model.weights=.*hf download") as caught:
        Chronos2Config(weights=str(tmp_path / "nothing"))
    assert "\n" not in str(caught.value)
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(tmp_path / "empty_cache"))
    with pytest.raises(Chronos2WeightsError, match=f"{CHRONOS2_REPO} is not in the Hugging Face cache"):
        Chronos2Config()


@pytest.mark.slow  # ~1.1 min on 2 cores: .ci/run runs it after the default suite
def test_sfbench_scores_a_small_random_chronos2_end_to_end(checkpoint: Path, tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    environment = dict(os.environ, HF_HUB_OFFLINE="1", OMP_NUM_THREADS="1")  # one PyTorch thread per host call
    completed = subprocess.run([str(Path(sys.executable).parent / "sfbench"), "model=chronos2",
                                f"model.weights={checkpoint}", "eval=quick", f"hydra.run.dir={run_dir}",
                                f"cache_dir={tmp_path / 'cache'}"],
                               capture_output=True, text=True, env=environment, timeout=600, check=False)
    assert completed.returncode == 0, completed.stderr[-3000:]
    row = pd.read_csv(run_dir / "summary.csv").iloc[0]
    assert (row.dataset, row.architecture, row.method, row.k) == ("etth1", "chronos2", "baseline", 1000)
    assert json.loads(row.hyperparameters) == {"weights": str(checkpoint)}
    assert np.isfinite([row.mse_val, row.mse_c, row.d_w, row.mse_w]).all() and row.mse_c > 0
    per_window = pd.read_parquet(run_dir / "per_window.parquet")
    assert len(per_window) == 1000 and per_window["mse_clean"].mean() == pytest.approx(row.mse_c, rel=1e-6)
    assert (run_dir / "scenario_heatmap.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "chronos2 baseline: selected trial 1" in completed.stderr
