"""The PyTorch baselines' modules (`benchmarks/torch_models.py`, needs the `torch` extra): every parity fixture
of the five architectures loads with `load_state_dict(strict=True)` and reproduces its output, and the same
PyTorch weights loaded into the engine's Flax modules (`parity.load_state`) give the same forecasts, so
`benchmarks/torch_baselines.py` times both sides on identical models."""

from __future__ import annotations

import sys
from pathlib import Path

import jax.numpy as jnp
import numpy as np
import pytest

pytest.importorskip("torch")

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import torch
import torch_models
from parity_cases import parity_folder

from sfbench_jax.evaluate import predict_fn
from sfbench_jax.models.parity import load_state, parity_error
from sfbench_jax.models.registry import build_model

FIXTURES = [path.name for path in torch_models.fixture_paths(parity_folder())]


def test_the_fixtures_cover_every_architecture(parity_dir: Path) -> None:
    covered = {name.split("_")[0] for name in FIXTURES}
    assert covered == set(torch_models.TORCH_MODELS), f"fixtures found in {parity_dir}: {FIXTURES}"


@pytest.mark.parametrize("name", FIXTURES)
def test_torch_module_reproduces_the_fixture(parity_dir: Path, name: str) -> None:
    limit = 3e-6 if name.startswith("moderntcn") else 1e-5  # exact GELU check (parity README 6)
    assert torch_models.check_fixture(parity_dir / name) <= limit


@pytest.mark.parametrize("architecture", sorted(torch_models.TORCH_MODELS))
def test_the_same_weights_give_the_same_forecast_in_the_engine(architecture: str) -> None:
    shape = {"input_len": 96, "horizon": 96, "num_channels": 7, "target_indices": list(range(7))}
    module = torch_models.build_torch_model(architecture, {}, seed=0, **shape).eval()
    model = build_model(architecture, {}, seed=0, **shape)
    load_state(model, torch_models.numpy_state(module))
    x = np.random.default_rng(0).standard_normal((8, 96, 7)).astype(np.float32)
    with torch.no_grad():
        expected = module(torch.from_numpy(x)).numpy()
    predict, state = predict_fn(model)
    assert parity_error(predict(state, jnp.asarray(x)), expected) <= 1e-5
