"""Methods through the command line: bad method settings fail before any work with one clear message,
RevIN's exact round trip, and a method run end to end (tiny profile, composed as the command composes it, in this
process) that resumes from the store."""

from __future__ import annotations

import json
from pathlib import Path

import jax.numpy as jnp
import numpy as np
import pandas as pd
import pytest
from hydra import compose, initialize_config_module
from sfbench_cli import run_in_process

from sfbench_jax.cli.main import to_run_config
from sfbench_jax.methods import METHODS
from sfbench_jax.models.registry import build_model
from sfbench_jax.models.revin import RevIN, RevINConfig


def _compose(overrides: list[str]):
    with initialize_config_module(version_base="1.3", config_module="sfbench_jax.conf"):
        return compose(config_name="config", overrides=overrides)


@pytest.mark.parametrize(("overrides", "message"), [
    (["model=patchtst", "method=revin"], "Method 'revin' does not apply to 'patchtst'"),
    (["model=seasonal_naive", "method=ensemble"], "Method 'ensemble' does not apply to 'seasonal_naive'"),
    (["model=dlinear", "method=adversarial_training", "+method.grid.alpha_lo=[0.5]"],
     "PGD adversarial training cannot be combined with the adaptive robust loss"),
    (["model=dlinear", "method=randomized_smoothing", "method.grid.alpha=[0.6]"],
     r"alpha=0.6 with N=10 samples trims t = floor\(alpha N\) = 6 at each end; need 0 < alpha < 0.5"),
    (["model=dlinear", "method=randomized_smoothing", "method.grid.alpha=[0.05]"], "need 0 < alpha < 0.5 and t >= 1"),
    (["model=dlinear", "method=ensemble", "profile=tiny"], r"Ensemble top_k \[3, 5, 7, 10\] exceed the 2 baseline"),
    (["model=dlinear", "method=revin", "+method.grid.gamma=[1]"], r"Unknown recipe key\(s\) \['gamma'\] for method"),
])
def test_bad_method_settings_are_rejected(overrides: list[str], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        to_run_config(_compose(overrides))


def test_every_method_preset_composes_with_its_grid() -> None:
    for name, spec in METHODS.items():
        config = to_run_config(_compose(["model=dlinear", f"method={name}"]))
        assert config.method.name == name and dict(spec.grid) == {
            key: tuple(values) for key, values in (config.method.grid or dict(spec.grid)).items()}


@pytest.mark.parametrize("affine", [True, False])
def test_revin_round_trip_and_target_denormalisation(affine: bool) -> None:
    base = build_model("dlinear", {}, input_len=96, horizon=24, num_channels=5, target_indices=(3, 1), seed=0)
    revin = RevIN(base, RevINConfig(affine=affine))
    if affine:
        revin.affine_weight[...] = jnp.asarray([0.5, 2.0, 1.5, 0.8, 1.2])
        revin.affine_bias[...] = jnp.asarray([0.1, -0.3, 0.0, 0.7, -1.0])
    x = jnp.asarray(np.random.default_rng(0).normal(2.0, 3.0, size=(4, 96, 5)), jnp.float32)
    mean, std = revin.statistics(x)
    normalised = revin.normalize(x, mean, std)
    x_np = np.asarray(x, np.float64)
    mu, sigma = x_np.mean(axis=1, keepdims=True), np.sqrt(x_np.var(axis=1, keepdims=True) + 1e-5)
    weight = np.asarray([0.5, 2.0, 1.5, 0.8, 1.2]) if affine else np.ones(5)
    bias = np.asarray([0.1, -0.3, 0.0, 0.7, -1.0]) if affine else np.zeros(5)
    np.testing.assert_allclose(normalised, (x_np - mu) / sigma * weight + bias, rtol=1e-4, atol=1e-5)
    targets = normalised[..., (3, 1)][:, :24]  # a "forecast" in normalised space of the target channels
    back = np.asarray(revin.denormalize(targets, mean, std), np.float64)
    expected = (np.asarray(targets) - bias[[3, 1]]) / (weight[[3, 1]] + 1e-10) * sigma[..., [3, 1]] + mu[..., [3, 1]]
    np.testing.assert_allclose(back, expected, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(back, x_np[:, :24][..., [3, 1]], rtol=1e-4, atol=1e-4)  # the round trip


def test_a_method_run_writes_its_variant_and_resumes(tmp_path: Path) -> None:
    common = ["model=dlinear", "method=randomized_training", "profile=tiny", f"train.store_dir={tmp_path / 'store'}"]
    first = run_in_process(common, tmp_path / "first")
    summary = pd.read_csv(tmp_path / "first" / "summary.csv")
    row = summary.iloc[0]
    assert (row.method, row.selection_metric) == ("randomized_training", "best_val_loss")
    assert row.variant.startswith("rt_spaceraw_std") and row.variant.endswith("_channelscontinuous")
    candidates = pd.read_csv(tmp_path / "first" / "candidates.csv")
    winner = candidates[candidates.is_winner].iloc[0]
    assert winner.variant == row.variant and row.selection_value == pytest.approx(winner.best_val_loss)
    assert json.loads(winner.recipe)["sigma"] in (0.1, 0.2, 0.3)
    assert "0 already in the store, 2 to train" in first  # the baseline first, then the 2 variants
    again = run_in_process(common, tmp_path / "again")
    assert again.count("2 already in the store, 0 to train") == 2
    assert pd.read_csv(tmp_path / "again" / "summary.csv").iloc[0].mse_c == row.mse_c
