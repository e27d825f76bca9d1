"""The PyTorch baselines' modules (`benchmarks/torch_models.py`, needs the `torch` extra): every parity fixture
of the five architectures loads with `load_state_dict(strict=True)` and reproduces its output, and the same
PyTorch weights loaded into the engine's Flax modules (`parity.load_state`) give the same forecasts, so
`benchmarks/torch_baselines.py` times both sides on identical models."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import jax.numpy as jnp
import numpy as np
import pytest
from parity_cases import parity_folder

from sfbench_jax.evaluation import predict_fn
from sfbench_jax.models.parity import load_state, parity_error
from sfbench_jax.models.registry import build_model

# PyTorch is imported by the tests, not while collecting (about 2.5 s in every test worker).
pytestmark = pytest.mark.skipif(importlib.util.find_spec("torch") is None,
                                reason="the PyTorch baselines need the torch extra: pip install -e '.[torch]'")

#: The architectures of `benchmarks/torch_models.py` (`TORCH_MODELS`; the first test checks the two agree).
ARCHITECTURES = ("dlinear", "gru", "moderntcn", "patchtst", "tsmixer")
FIXTURES = sorted(path.name for path in parity_folder().glob("*.npz") if path.name.split("_")[0] in ARCHITECTURES)


@pytest.fixture(scope="module")
def torch_models() -> ModuleType:
    """`benchmarks/torch_models.py` (it imports PyTorch)."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
    import torch_models

    return torch_models


def test_the_architectures_are_the_torch_modules(torch_models: ModuleType) -> None:
    assert set(ARCHITECTURES) == set(torch_models.TORCH_MODELS)
    assert [path.name for path in torch_models.fixture_paths(parity_folder())] == FIXTURES


def test_the_fixtures_cover_every_architecture(parity_dir: Path) -> None:
    covered = {name.split("_")[0] for name in FIXTURES}
    assert covered == set(ARCHITECTURES), f"fixtures found in {parity_dir}: {FIXTURES}"


@pytest.mark.parametrize("name", FIXTURES)
def test_torch_module_reproduces_the_fixture(torch_models: ModuleType, parity_dir: Path, name: str) -> None:
    limit = 3e-6 if name.startswith("moderntcn") else 1e-5  # exact GELU check (parity README 6)
    assert torch_models.check_fixture(parity_dir / name) <= limit


@pytest.mark.parametrize("architecture", ARCHITECTURES)
def test_the_same_weights_give_the_same_forecast_in_the_engine(torch_models: ModuleType, architecture: str) -> None:
    import torch

    shape = {"input_len": 96, "horizon": 96, "num_channels": 7, "target_indices": list(range(7))}
    module = torch_models.build_torch_model(architecture, {}, seed=0, **shape).eval()
    model = build_model(architecture, {}, seed=0, **shape)
    load_state(model, torch_models.numpy_state(module))
    x = np.random.default_rng(0).standard_normal((8, 96, 7)).astype(np.float32)
    with torch.no_grad():
        expected = module(torch.from_numpy(x)).numpy()
    predict, state = predict_fn(model)
    assert parity_error(predict(state, jnp.asarray(x)), expected) <= 1e-5
