"""Post-hoc wrappers (protocol 4.6, 4.7): the combiners equal NumPy on fixed inputs, and wrapped predictors are
scored by the fused engine with per-window losses that do not depend on the chunk size."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
import pytest

from sfbench_jax.config import EvalConfig
from sfbench_jax.data import load, prepare
from sfbench_jax.evaluation import predict_fn, score_windows, validation_mse
from sfbench_jax.methods import check_trimming
from sfbench_jax.methods.wrappers import SmoothingPredictor, ensemble_combine, ensemble_predictor, trimmed_mean
from sfbench_jax.models.registry import build_model

K = 300  # small: the point is the chunk sizes below (one not dividing K, one leaving a partial chunk, K itself)


def test_combiners_equal_numpy() -> None:
    values = np.random.default_rng(0).normal(size=(6, 5, 4)).astype(np.float32)
    np.testing.assert_allclose(ensemble_combine(jnp.asarray(values), "mean"), values.mean(axis=0), rtol=1e-6)
    for count in (3, 4):  # odd, and even (midpoint of the two middle values)
        np.testing.assert_allclose(ensemble_combine(jnp.asarray(values[:count]), "median"),
                                   np.median(values[:count], axis=0), rtol=1e-6)
    for samples, alpha in ((10, 0.25), (20, 0.35), (30, 0.45)):
        draws = np.random.default_rng(samples).normal(size=(samples, 3, 2)).astype(np.float32)
        trimmed = int(np.floor(alpha * samples))
        expected = np.sort(draws, axis=0)[trimmed:samples - trimmed].mean(axis=0)
        np.testing.assert_allclose(trimmed_mean(jnp.asarray(draws), trimmed), expected, rtol=1e-5, atol=1e-6)
    ties = np.array([[1.0], [1.0], [1.0], [5.0], [0.0]], np.float32)  # ties are kept or dropped once each
    np.testing.assert_allclose(trimmed_mean(jnp.asarray(ties), 1), [1.0])


@pytest.mark.parametrize(("alpha", "samples"), [(0.05, 10), (0.5, 10), (0.6, 30)])
def test_invalid_trimming_is_rejected(alpha: float, samples: int) -> None:
    with pytest.raises(ValueError, match=r"need 0 < alpha < 0.5 and t >= 1"):
        check_trimming(alpha=alpha, samples=samples)


@pytest.fixture(scope="module")
def etth1():
    return prepare(load("etth1"))


def _dlinear(data, seed: int, moving_avg: int):
    spec = data.spec
    model = build_model("dlinear", {"moving_avg": moving_avg}, input_len=spec.input_len, horizon=spec.horizon,
                        num_channels=spec.num_channels, target_indices=spec.target_indices, seed=seed)
    return predict_fn(model)


def _losses(predict, state, data, chunk_size: int) -> np.ndarray:
    losses, _ = score_windows(predict, state, data, EvalConfig(seed=5, k=K, chunk_size=chunk_size, block_size=50,
                                                               progress=False))
    return np.vstack([losses.clean[None], losses.faulted])


@pytest.mark.parametrize("wrapper", ["ensemble", "smoothing"])
def test_wrappers_give_the_same_per_window_losses_for_any_chunk_size(etth1, wrapper: str) -> None:
    if wrapper == "ensemble":
        members = [_dlinear(etth1, seed, moving_avg) for seed, moving_avg in ((0, 25), (1, 13), (2, 25))]
        predict = ensemble_predictor([member for member, _ in members], "median")
        predictor_state = tuple(state for _, state in members)
    else:
        backbone, state = _dlinear(etth1, 0, 25)
        predict, predictor_state = SmoothingPredictor(backbone=backbone, sigma=0.5, samples=4, trimmed=1, seed=7), state
    runs = [_losses(predict, predictor_state, etth1, chunk) for chunk in (64, 250, K)]
    for other in runs[1:]:
        np.testing.assert_array_equal(runs[0], other)
    if wrapper == "smoothing":
        clean_smoothed, noisy = runs[0][0], _losses(backbone, state, etth1, K)[0]
        assert not np.array_equal(clean_smoothed, noisy)  # the smoothing noise acts on the clean pass too


def test_smoothing_noise_is_keyed_by_context_and_window(etth1) -> None:
    backbone, state = _dlinear(etth1, 0, 25)
    smoothing = SmoothingPredictor(backbone=backbone, sigma=1.0, samples=4, trimmed=1, seed=7)
    x = jnp.asarray(np.broadcast_to(etth1.standardised[:96], (3, 96, etth1.spec.num_channels)))
    rows = jnp.asarray([[0, 4], [0, 4], [1, 4]], jnp.int32)  # same window twice in the clean pass, then scenario 0
    out = np.asarray(smoothing.apply(state, x, rows))
    np.testing.assert_array_equal(out[0], out[1])
    assert not np.array_equal(out[0], out[2])
    again = validation_mse(smoothing, state, etth1)
    assert again == validation_mse(smoothing, state, etth1)  # validation is keyed too: deterministic
