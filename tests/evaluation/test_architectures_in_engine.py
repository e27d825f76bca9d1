"""Every trainable architecture runs through the fused scorer (inside `shard_map` and `lax.map`, where a
model's internal constants, such as the GRU's zero initial state, must be accepted) and its clean
per-window losses equal the model applied directly to the same windows."""

from __future__ import annotations

import numpy as np
import pytest

from sfbench_jax.config import EvalConfig
from sfbench_jax.data import load, prepare
from sfbench_jax.evaluation import predict_fn
from sfbench_jax.evaluation.engine import score_windows
from sfbench_jax.models.registry import MODELS
from sfbench_jax.models.restore import build_for

SMALL = {
    "dlinear": {},
    "gru_direct": {"d_hidden": 8, "n_layers": 2, "autoregressive": False},
    "gru_autoregressive": {"d_hidden": 8, "n_layers": 1, "autoregressive": True},
    "moderntcn": {"d_model": 4},
    "patchtst": {"d_model": 4, "n_heads": 2, "d_ff": 4},
    "tsmixer": {"ff_dim": 4},
}


@pytest.fixture(scope="module")
def etth1():
    return prepare(load("etth1"))


@pytest.mark.parametrize("case", sorted(SMALL))
def test_architecture_scores_in_the_fused_engine(etth1, case: str) -> None:
    architecture = case.split("_")[0]
    model = build_for(etth1, MODELS[architecture], SMALL[case], seed=0)
    model.eval()
    predict, state = predict_fn(model)
    options = EvalConfig(seed=7, k=24, chunk_size=8, progress=False)
    losses, _ = score_windows(predict, state, etth1, options)

    spec = etth1.spec
    series = np.asarray(etth1.standardised)
    starts = losses.sample_starts
    x = np.stack([series[s:s + spec.input_len] for s in starts])
    y = np.stack([series[s + spec.input_len:s + spec.input_len + spec.horizon] for s in starts])
    y = y[..., list(spec.target_indices)]
    direct = np.mean((np.asarray(model(x)) - y) ** 2, axis=(1, 2))
    np.testing.assert_allclose(losses.clean, direct, rtol=2e-5, atol=1e-7)
    assert losses.faulted.shape == (8, 24) and np.isfinite(losses.faulted).all()
