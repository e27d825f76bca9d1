"""Engine invariances: chunk size, device count, compile discipline, transfer discipline, scores."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import threading

import jax
import numpy as np
import pytest

from sfbench_jax.config import EvalConfig
from sfbench_jax.data import load, prepare
from sfbench_jax.evaluation import predict_fn, score_windows
from sfbench_jax.evaluation.abandon import EvaluationAbandoned, abandonable
from sfbench_jax.evaluation.scores import bootstrap_intervals, robustness_scores
from sfbench_jax.models.seasonal_naive import SeasonalNaive

K = 300


@pytest.fixture(scope="module")
def etth1():
    data = prepare(load("etth1"))
    model = SeasonalNaive(season_length=24, input_len=96, horizon=96, target_indices=range(7))
    predict, state = predict_fn(model)
    return data, predict, state


def _run(etth1, **options):
    data, predict, state = etth1
    settings = {"seed": 7, "k": K, "progress": False, "block_size": 16} | options
    return score_windows(predict, state, data, EvalConfig(**settings))


@pytest.mark.parametrize("rng", ["jax", "reference"])
def test_results_do_not_depend_on_chunk_size(etth1, rng: str) -> None:
    baseline, _ = _run(etth1, rng_mode=rng)  # one call of 304 windows (19 blocks of 16)
    for chunk, calls in ((1, 19), (37, 7), (128, 3)):  # chunks are rounded up to whole blocks
        other, stats = _run(etth1, rng_mode=rng, chunk_size=chunk)
        assert stats.num_chunks == calls and stats.block_size == 16
        np.testing.assert_array_equal(other.clean, baseline.clean)
        np.testing.assert_array_equal(other.faulted, baseline.faulted)
        np.testing.assert_array_equal(other.severity_units, baseline.severity_units)


def test_an_abandoned_evaluation_stops_before_its_next_chunk(etth1) -> None:
    # the MCP server's time budget gives up on a call by setting its event (mcp/guard.py)
    baseline, _ = _run(etth1, chunk_size=37)
    kept = threading.Event()
    with abandonable(kept):
        same, _ = _run(etth1, chunk_size=37)
    np.testing.assert_array_equal(same.faulted, baseline.faulted)  # an event not set changes nothing
    given_up = threading.Event()
    given_up.set()
    with abandonable(given_up), pytest.raises(EvaluationAbandoned, match="stopped between two chunks"):
        _run(etth1, chunk_size=37)
    again, _ = _run(etth1, chunk_size=37)  # outside the block the check does nothing
    np.testing.assert_array_equal(again.faulted, baseline.faulted)


def test_one_compile_per_shape_across_chunks(etth1) -> None:
    data, predict, state = etth1
    traces = []

    def counting_predict(state, x):
        traces.append(x.shape)
        return predict(state, x)

    losses, stats = score_windows(counting_predict, state, data,
                                  EvalConfig(seed=7, k=K, chunk_size=64, block_size=16,
                                              progress=False))
    # one trace of the chunk kernel, although the last of the 5 chunks is ragged (300 = 4 x 64 + 44):
    # the model sees the clean block and the 8 faulted blocks as one batch
    assert stats.num_chunks == 5 and stats.compiles == 1
    assert traces == [(9 * 16, 96, 7)]
    assert losses.clean.shape == (K,)


def test_a_repeated_evaluation_reuses_the_compiled_kernel(etth1) -> None:
    data, predict, state = etth1
    traces = []

    def counting_predict(state, x):
        traces.append(x.shape)
        return predict(state, x)

    def evaluate(predict_fn, seed):
        return score_windows(predict_fn, state, data, EvalConfig(seed=seed, k=K,
                                                                  block_size=16, progress=False))

    evaluate(counting_predict, 7)
    second, _ = evaluate(counting_predict, 8)  # another eval seed: same program and shapes
    assert traces == [(9 * 16, 96, 7)], "the second evaluation traced (and compiled) the kernel again"
    fresh, _ = evaluate(lambda state, x: predict(state, x), 8)  # a new function compiles its own kernel
    np.testing.assert_array_equal(second.clean, fresh.clean)
    np.testing.assert_array_equal(second.faulted, fresh.faulted)


def test_engine_makes_no_implicit_transfers(etth1) -> None:
    with jax.transfer_guard("disallow"):
        losses, _ = _run(etth1, rng_mode="jax", chunk_size=100)
    assert np.isfinite(losses.faulted).all()


def test_scores_and_tie_break() -> None:
    clean = np.array([1.0, 3.0])
    faulted = np.array([[2.0, 4.0], [4.0, 2.0], [1.0, 1.0]])  # scenarios 0 and 1 tie at D = 1.5
    scores = robustness_scores(clean, faulted)
    assert scores.mse_c == 2.0 and scores.worst_index == 0 and scores.d_w == 1.5
    np.testing.assert_allclose(scores.d_p, [1.5, 1.5, 0.5])
    assert scores.d_mean == pytest.approx(7 / 6) and scores.mpc == pytest.approx(7 / 3)
    with pytest.raises(ValueError, match="positive clean error"):
        robustness_scores(np.zeros(3), np.ones((8, 3)))


def test_bootstrap_matches_explicit_resampling() -> None:
    rng = np.random.default_rng(0)
    clean = rng.random(50) + 0.5
    faulted = rng.random((8, 50)) + 0.6
    got = bootstrap_intervals(clean, faulted, eval_seed=11, draws=40)
    from sfbench_jax.data.seeds import bootstrap_seed

    generator = np.random.default_rng(bootstrap_seed(11))
    d_worst, mse_clean = [], []
    for _ in range(40):
        index = generator.integers(0, 50, size=50)
        mse_c = clean[index].mean()
        d = faulted[:, index].mean(axis=1) / mse_c
        d_worst.append(d.max())
        mse_clean.append(mse_c)
    assert got.d_w.low == pytest.approx(np.quantile(d_worst, 0.025))
    assert got.d_w.high == pytest.approx(np.quantile(d_worst, 0.975))
    assert got.mse_c.low == pytest.approx(np.quantile(mse_clean, 0.025))


def test_bad_options_are_rejected() -> None:
    with pytest.raises(ValueError, match="chunk_size must be >= 1"):
        EvalConfig(seed=0, chunk_size=0)
    with pytest.raises(ValueError, match="Unknown eval.rng_mode 'torch'"):
        EvalConfig(seed=0, rng_mode="torch")
    with pytest.raises(ValueError, match="eval.k"):
        EvalConfig(seed=0, k=0)
    with pytest.raises(ValueError, match=r"must be in \[1, 1,000,000\]"):
        EvalConfig(seed=0, k=10**9)
    with pytest.raises(ValueError, match="fixed channel fraction"):
        EvalConfig(seed=0, channel_fraction=0.7)


_DEVICE_SCRIPT = textwrap.dedent("""
    import json, sys
    import numpy as np
    from sfbench_jax.data import load, prepare
    from sfbench_jax.config import EvalConfig
    from sfbench_jax.evaluation import predict_fn, score_windows
    from sfbench_jax.models.seasonal_naive import SeasonalNaive
    data = prepare(load("etth1"))
    predict, state = predict_fn(SeasonalNaive(season_length=24, input_len=96, horizon=96,
                                              target_indices=range(7)))
    out = {}
    for rng, devices, chunk in json.loads(sys.argv[1]):
        losses, stats = score_windows(predict, state, data, EvalConfig(
            seed=7, k=300, rng_mode=rng, num_devices=devices, chunk_size=chunk,
            block_size=16, progress=False))
        out[f"{rng}-{devices}-{chunk}"] = [losses.clean.tolist(), losses.faulted.tolist(),
                                           stats.num_devices]
    json.dump(out, sys.stdout)
""")


#: (rng mode, devices, chunk size) of the sharded runs. Each is its own compiled program (~4 s on 2 cores): the
#: default suite shards JAX's mode over 8 devices in chunks and over 2 devices in a chunk size that is not a multiple
#: of 8; the other four (the reference mode, one chunk over 8 devices) run with `-m slow`, as in CI.
SHARDED_DEFAULT = [("jax", 8, 64), ("jax", 2, 40)]
SHARDED_SLOW = [("jax", 8, None), ("reference", 8, 64), ("reference", 8, None), ("reference", 2, 40)]


@pytest.mark.parametrize("configurations", [pytest.param(SHARDED_DEFAULT, id="default"),
                                            pytest.param(SHARDED_SLOW, id="rest", marks=pytest.mark.slow)])
def test_eight_devices_give_identical_results(etth1, configurations: list[tuple]) -> None:
    environment = dict(os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=8",
                       JAX_PLATFORMS="cpu")
    completed = subprocess.run([sys.executable, "-c", _DEVICE_SCRIPT, json.dumps(configurations)], env=environment,
                               capture_output=True, text=True, timeout=600, check=False)
    assert completed.returncode == 0, completed.stderr[-3000:]
    results = json.loads(completed.stdout)
    for rng in sorted({rng for rng, _, _ in configurations}):
        single, _ = _run(etth1, rng_mode=rng)
        for devices, chunk in [(d, c) for r, d, c in configurations if r == rng]:
            clean, faulted, used = results[f"{rng}-{devices}-{chunk}"]
            assert used == devices
            np.testing.assert_array_equal(np.asarray(clean, np.float32), single.clean)
            np.testing.assert_array_equal(np.asarray(faulted, np.float32), single.faulted)
