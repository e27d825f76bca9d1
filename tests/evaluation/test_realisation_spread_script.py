"""scripts/realisation_spread.py: the canonical realisation of each mode is the published / CLI one,
and the spread is computed over the requested fault seeds."""

from __future__ import annotations

import pytest

from sfbench_jax.config import EvalConfig
from sfbench_jax.data import load, prepare
from sfbench_jax.evaluation import evaluate_predictor, predict_fn
from sfbench_jax.models.seasonal_naive import SeasonalNaive


def test_spread_of_etth1_realisations(load_script) -> None:
    result = load_script("realisation_spread").main(["--dataset", "etth1", "--count", "2", "--json"])
    assert result["season"] == 24 and result["interval"] == [1.2722, 1.3050]
    reference, jax_mode = result["modes"]["reference"], result["modes"]["jax"]
    assert reference["canonical"] == pytest.approx(1.287904, abs=2e-6)  # the published realisation
    # the canonical JAX realisation is the one a plain evaluation draws (its own test-window draw, no override)
    data = prepare(load("etth1"))
    spec = data.spec
    model = SeasonalNaive(season_length=24, input_len=spec.input_len, horizon=spec.horizon,
                          target_indices=spec.target_indices)
    predict, state = predict_fn(model)
    options = EvalConfig(seed=spec.seeds.canonical_eval_seed, bootstrap_draws=40, progress=False)
    evaluation = evaluate_predictor(predict, state, data, options)
    assert jax_mode["canonical"] == pytest.approx(evaluation.scores.d_w, rel=1e-12)
    for row in (reference, jax_mode):
        assert row["min"] <= row["mean"] <= row["max"] and row["sd"] > 0
        assert row["inside_interval"] in (0.0, 0.5, 1.0)


def test_bad_count_is_an_error(load_script, capsys) -> None:
    with pytest.raises(SystemExit) as raised:
        load_script("realisation_spread").main(["--count", "1"])
    assert raised.value.code == 2
    assert "--count must be >= 2" in capsys.readouterr().err
