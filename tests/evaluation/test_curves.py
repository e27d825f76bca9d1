"""Severity-response curves of SeasonalNaive on the real ETTh1 file: D_p(0) is exactly 1 for every scenario,
the whole grid is one compiled program (traces counted; another grid of the same length reuses it), results do
not depend on the chunk size, the severity-averaged curve agrees with the evaluation's D_p within its interval,
and bad input fails before any work."""

from __future__ import annotations

import numpy as np
import pytest

from sfbench_jax.config import EvalConfig
from sfbench_jax.data import load, prepare
from sfbench_jax.evaluation import evaluate_predictor, predict_fn
from sfbench_jax.evaluation.curves import DEFAULT_SEVERITIES, severity_curves
from sfbench_jax.models.seasonal_naive import SeasonalNaive

K = 2000


@pytest.fixture(scope="module")
def seasonal_naive() -> tuple:
    data = prepare(load("etth1"))
    model = SeasonalNaive(season_length=24, input_len=96, horizon=96, target_indices=data.spec.target_indices)
    predict, state = predict_fn(model)
    return data, predict, state


def counted(predict: object, traces: list) -> object:
    """`predict` that records each call; the engine calls it once per trace of its compiled program."""

    def call(state: object, x: object) -> object:
        traces.append(1)
        return predict(state, x)

    return call


@pytest.fixture(scope="module")
def curves(seasonal_naive: tuple) -> object:
    data, predict, state = seasonal_naive
    return severity_curves(predict, state, data, EvalConfig(k=K, chunk_size=512, progress=False))


def test_zero_severity_is_exactly_clean(curves: object) -> None:
    assert curves.severities[0] == 0.0 and len(curves.severities) == len(DEFAULT_SEVERITIES) == 21
    assert (curves.d[0] == 1.0).all()
    assert (np.diff(curves.d[:, 0]) >= 0).all()  # drift only gets worse with severity on ETTh1
    assert curves.engine.num_chunks == 4


def test_one_compiled_program_for_the_grid(seasonal_naive: tuple, curves: object) -> None:
    data, predict, state = seasonal_naive
    traces: list = []
    options = EvalConfig(k=K, chunk_size=512, progress=False)
    model = counted(predict, traces)
    first = severity_curves(model, state, data, options)
    assert len(traces) == 1 and first.engine.compiles == 1  # 21 severities x 8 scenarios x 4 chunks: one trace
    assert np.array_equal(first.mse, curves.mse)
    other = severity_curves(model, state, data, options, severities=np.linspace(0.0, 0.5, 21))
    assert len(traces) == 1  # the grid is data: another grid of the same length reuses the program
    assert (other.d[0] == 1.0).all() and not np.allclose(other.d[-1], curves.d[-1])


def test_chunk_size_never_changes_a_number(seasonal_naive: tuple, curves: object) -> None:
    data, predict, state = seasonal_naive
    again = severity_curves(predict, state, data, EvalConfig(k=K, chunk_size=2048, progress=False))
    assert np.array_equal(again.mse, curves.mse) and again.mse_c == curves.mse_c


def test_severity_average_agrees_with_the_evaluation(seasonal_naive: tuple, curves: object) -> None:
    """The evaluation draws s uniformly on [0, 1), so its D_p estimates the curve's average over [0, 1]. The
    trapezoid rule on the default 0.05 grid smooths over the steps of k(s) (ETTh1: at s = 1/3 and 2/3); on a
    0.01 grid its error is far below the interval."""
    data, predict, state = seasonal_naive
    evaluation = evaluate_predictor(predict, state, data, EvalConfig(k=K, progress=False))
    assert curves.mse_c == pytest.approx(evaluation.scores.mse_c, rel=1e-12)  # the same windows
    fine = severity_curves(predict, state, data, EvalConfig(k=K, progress=False),
                           severities=np.round(np.arange(101) * 0.01, 2))
    averages = fine.severity_average()
    for index, interval in enumerate(evaluation.intervals.d_p):
        assert interval.low <= averages[index] <= interval.high, (fine.scenario_keys[index], averages[index],
                                                                 interval)
    assert np.abs(curves.severity_average() - averages).max() < 0.01
    assert ((fine.d_ci_lo <= fine.d) & (fine.d <= fine.d_ci_hi)).all()


def test_bad_input_fails_before_work(seasonal_naive: tuple) -> None:
    data, predict, state = seasonal_naive
    traces: list = []
    model = counted(predict, traces)
    with pytest.raises(ValueError, match="need eval.rng_mode=jax"):
        severity_curves(model, state, data, EvalConfig(k=K, rng_mode="reference"))
    with pytest.raises(ValueError, match=r"Severity must lie in \[0, 1\]"):
        severity_curves(model, state, data, EvalConfig(k=K), severities=[0.0, 1.5])
    with pytest.raises(ValueError, match="grid is empty"):
        severity_curves(model, state, data, EvalConfig(k=K), severities=[])
    assert traces == []
