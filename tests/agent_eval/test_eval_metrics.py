"""Process and pass metrics on hand-made traces and tables (expected values worked by hand)."""

from __future__ import annotations

import math

import pytest
from eval_helpers import call

from sfbench_jax.agent_eval.metrics import (
    lcs_ratio,
    pass_all,
    pass_at_1,
    pass_hat_k,
    process_metrics,
    state_dependency_violations,
)

TABLE = {"s1": [True, True, True], "s2": [True, False, True], "s3": [False, False, False],
         "s4": [True, True, False]}


def test_pass_metrics_match_hand_computation() -> None:
    assert pass_at_1(TABLE) == pytest.approx(7 / 12)
    assert pass_all(TABLE) == pytest.approx(1 / 4)
    # tau-bench: mean over tasks of C(c, k) / C(n, k); c = 3, 2, 0, 2 with n = 3.
    assert pass_hat_k(TABLE, 1) == pytest.approx((3 / 3 + 2 / 3 + 0 + 2 / 3) / 4)
    assert pass_hat_k(TABLE, 2) == pytest.approx((3 / 3 + 1 / 3 + 0 + 1 / 3) / 4)
    assert pass_hat_k(TABLE, 3) == pytest.approx(pass_all(TABLE))
    with pytest.raises(ValueError, match="needs at least 4 runs"):
        pass_hat_k(TABLE, 4)
    assert math.isnan(pass_at_1({}))


def test_process_metrics_on_a_hand_made_trace() -> None:
    calls = [
        call(0, "load_dataset", arguments={"dataset_name": "x"},
             structured={"handle": "ds:x:test"}),
        call(1, "web_search"),
        call(2, "predict_rul", "invalid_arguments", {"dataset_handle": 3}),
        call(3, "predict_rul", arguments={"dataset_handle": "ds:x:test"},
             structured={"handle": "pred:x"}),
        call(4, "calculate_mae", arguments={"predictions": "pred:y"}),
    ]
    metrics = process_metrics(
        calls=calls, required=["load_dataset", "predict_rul", "calculate_mae", "calculate_rmse"],
        distractors=["web_search"],
        precedence=[("load_dataset", "predict_rul"), ("predict_rul", "calculate_mae"),
                    ("calculate_rmse", "calculate_mae")],
        reference_order=["load_dataset", "predict_rul", "calculate_mae", "calculate_rmse"],
        handle_args=["dataset_handle", "predictions"],
        usage={"llm_turns": 4, "tokens_in": 900, "tokens_out": 60})
    assert metrics["tool_precision"] == pytest.approx(3 / 4)  # called: 4 tools, 3 required
    assert metrics["tool_recall"] == pytest.approx(3 / 4)  # rmse never called
    assert metrics["distractor_rate"] == pytest.approx(1 / 4)
    # (load -> predict): load ok at 0 < first predict at 2; (predict -> mae): first ok predict 3
    # < mae 4; (rmse -> mae): rmse never appears.
    assert metrics["sequencing_accuracy"] == pytest.approx(2 / 3)
    # ok sequence: load, web_search, predict, mae -> LCS with the reference is 3 of 4.
    assert metrics["order_lcs"] == pytest.approx(3 / 4)
    assert (metrics["n_tool_calls"], metrics["n_ok_calls"], metrics["n_invalid_calls"]) == (5, 4, 1)
    # "pred:y" was never returned by an ok call; the integer 3 is not a handle string.
    assert metrics["n_state_dependency_violations"] == 1
    assert (metrics["n_llm_turns"], metrics["tokens_in"], metrics["tokens_out"]) == (4, 900, 60)


def test_empty_trace_conventions() -> None:
    metrics = process_metrics(calls=[], required=["a"], distractors=[], precedence=[],
                              reference_order=[], handle_args=[], usage={})
    # Undefined, not a free 1.0: no calls to be precise about, no edges to keep in order.
    assert metrics["tool_precision"] is None and metrics["tool_recall"] == 0.0
    assert metrics["sequencing_accuracy"] is None


def test_state_dependency_accepts_literal_arrays() -> None:
    calls = [call(0, "calculate_mae", arguments={"predictions": "[1, 2]"})]
    assert state_dependency_violations(calls, ["predictions"]) == []


def test_lcs_ratio() -> None:
    assert lcs_ratio(["a", "b", "c"], ["a", "b", "c"]) == 1.0
    assert lcs_ratio(["c", "b", "a"], ["a", "b", "c"]) == pytest.approx(1 / 3)
    assert lcs_ratio([], ["a"]) == 0.0
    assert lcs_ratio(["x"], []) == 1.0
