"""Extra (plug-in) fault scenarios: registered as a `FaultSpec`, opted into with `eval.scenarios`, scored beside the
paper's eight without changing a bit of the eight's draws, losses or aggregate scores, reported in their own
columns."""

from __future__ import annotations

from collections.abc import Iterator

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from sfbench_jax.config import EvalConfig
from sfbench_jax.data import load, prepare
from sfbench_jax.evaluation import predict_fn
from sfbench_jax.evaluation.evaluation import evaluate_predictor
from sfbench_jax.faults import SCENARIO_KEYS, FaultContext, FaultSpec, scored
from sfbench_jax.faults.registry import FAULTS, extra_scenarios
from sfbench_jax.faults.spec import RESERVED_SCENARIO_IDS
from sfbench_jax.models.seasonal_naive import SeasonalNaive
from sfbench_jax.pipeline.cell import EvaluatedModel
from sfbench_jax.pipeline.outputs.tables import per_window_table, summary_row
from sfbench_jax.plugins.entry_points import PluginError, register_specs

NAME = "test_offset_fault"


def apply_offset(x: jax.Array, params: scored.ChannelFault, ctx: FaultContext) -> jax.Array:
    """Add `2 s` to the selected channels (drift's parameters, a larger offset)."""
    del ctx
    return jnp.where(params.selected[None, :], x + 2.0 * scored.units_to_severity(params.severity_units), x)


SPEC = FaultSpec(name=NAME, label="TestOffset", fault_class="Value", sample=scored.sample_channel_fault,
                 apply=apply_offset)


@pytest.fixture(scope="module")
def registered() -> Iterator[FaultSpec]:
    register_specs(FAULTS, [SPEC], kind="faults")  # as the registry does for an installed plug-in
    try:
        yield SPEC
    finally:
        del FAULTS[NAME]


@pytest.fixture(scope="module")
def etth1():
    data = prepare(load("etth1"))
    model = SeasonalNaive(season_length=24, input_len=96, horizon=96, target_indices=range(7))
    predict, state = predict_fn(model)
    return data, predict, state


def _evaluate(etth1, **options):
    data, predict, state = etth1
    settings = {"seed": 7, "k": 200, "progress": False, "bootstrap_draws": 40} | options
    return evaluate_predictor(predict, state, data, EvalConfig(**settings))


def test_plugin_stream_id_never_a_built_in(registered: FaultSpec) -> None:
    assert registered.index >= RESERVED_SCENARIO_IDS and registered.index == FaultSpec(
        name=NAME, label="x", fault_class="Value", sample=scored.sample_channel_fault, apply=apply_offset).index
    assert registered in extra_scenarios()
    with pytest.raises(PluginError, match="registered as"):
        register_specs(FAULTS, [SPEC], kind="faults")


@pytest.mark.parametrize("channel_sparse", [True, False])
def test_extra_scenario_leaves_the_eight_bit_for_bit(registered: FaultSpec, etth1, channel_sparse: bool) -> None:
    paper = _evaluate(etth1, channel_sparse=channel_sparse)
    both = _evaluate(etth1, channel_sparse=channel_sparse, scenarios=[NAME])
    assert paper.extra is None and both.options.scenarios == SCENARIO_KEYS + (NAME,)
    assert both.losses.scenario_keys == SCENARIO_KEYS
    np.testing.assert_array_equal(both.losses.clean, paper.losses.clean)
    np.testing.assert_array_equal(both.losses.faulted, paper.losses.faulted)
    np.testing.assert_array_equal(both.losses.severity_units, paper.losses.severity_units)
    assert (both.scores.d_w, both.scores.mse_w, both.scores.worst_index, both.scores.d_mean, both.scores.mpc) == \
        (paper.scores.d_w, paper.scores.mse_w, paper.scores.worst_index, paper.scores.d_mean, paper.scores.mpc)
    assert both.intervals == paper.intervals
    extra = both.extra
    assert extra is not None and extra.losses.scenario_keys == (NAME,) and extra.losses.faulted.shape == (1, 200)
    # its own stream: drift draws with the same sampler, so a shared key would give the same severities
    assert not np.array_equal(extra.losses.severity_units[0], paper.losses.severity_units[0])
    assert (extra.losses.faulted[0] >= 0).all() and extra.scores.d_p[0] > 1.0
    assert both.scenario_keys == SCENARIO_KEYS + (NAME,)


def test_extra_scenario_columns(registered: FaultSpec, etth1) -> None:
    both = _evaluate(etth1, scenarios=[*SCENARIO_KEYS, NAME])  # listing the eight too is the same
    assert both.options.scenarios == SCENARIO_KEYS + (NAME,)
    model = EvaluatedModel(dataset="etth1", architecture="seasonal_naive", method="baseline", hyperparameters={},
                           mse_val=1.0, evaluation=both)
    row = summary_row(model)
    assert row[f"d_{NAME}"] == pytest.approx(both.extra.scores.d_p[0])
    assert row[f"mse_{NAME}"] == pytest.approx(both.extra.scores.mse_p[0])
    assert row[f"d_{NAME}_ci_lo"] <= row[f"d_{NAME}"] <= row[f"d_{NAME}_ci_hi"]
    assert row["worst_scenario"] in SCENARIO_KEYS and row["d_w"] == max(row[f"d_{key}"] for key in SCENARIO_KEYS)
    columns = list(row)
    assert columns.index(f"d_{NAME}") > columns.index("mse_missing_data")  # after the eight's columns
    windows = per_window_table([model])
    np.testing.assert_array_equal(windows[f"mse_{NAME}"].to_numpy(), both.extra.losses.faulted[0])
    assert f"severity_{NAME}" in windows


def test_scenario_settings_are_checked(registered: FaultSpec) -> None:
    with pytest.raises(ValueError, match="not a registered extra scenario"):
        EvalConfig(scenarios=["no_such_fault"])
    with pytest.raises(ValueError, match="not a registered extra scenario"):
        EvalConfig(scenarios=["linear_drift"])  # a transfer family is not scored
    with pytest.raises(ValueError, match="eval.rng_mode=jax"):
        EvalConfig(rng_mode="reference", scenarios=[NAME])
    assert EvalConfig(rng_mode="reference").scenarios == SCENARIO_KEYS
    assert EvalConfig(scenarios=[]).scenarios == SCENARIO_KEYS  # the eight are always scored
