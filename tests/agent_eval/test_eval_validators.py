"""Each validator kind with a passing and a failing answer (hand-written answers and truths)."""

from __future__ import annotations

from typing import Any

import pytest
from eval_helpers import call

from sfbench_jax.agent_eval.scenario import resolve_pointer
from sfbench_jax.agent_eval.validators import (
    VALIDATORS,
    ValidationContext,
    apply_validator,
    evaluate_validators,
    normalise_label,
)

TEMPLATE = {"type": "object", "required": ["a", "b", "c", "d", "e"],
            "properties": {"a": {"type": "number"}, "risk": {"type": "string"}}}
TRUTH = {"mae_target": 10.0, "labels": {"ids": ["r1", "r2", "r3", "r4"],
                                        "values": ["normal", "ball", "inner_race", "normal"]},
         "rul": {"ids": [1, 2, 3, 4], "values": [112.0, 98.0, 69.0, 82.0]},
         "top": [3, 4], "level": "high", "flag": False, "choice": "B"}


def ctx(answer: Any, calls: list[Any] | None = None, rule: str = "all") -> ValidationContext:
    return ValidationContext(answer=answer, ground_truth=TRUTH, calls=calls or [],
                             output_template=TEMPLATE, precedence=[("load", "predict")],
                             pass_rule=rule)


def passes(spec: dict[str, Any], answer: Any, **kwargs: Any) -> bool:
    return apply_validator(spec, ctx(answer, **kwargs)).passed


CASES: list[tuple[dict[str, Any], Any, Any]] = [
    ({"kind": "numeric_range", "path": "/x", "min": 7, "max": 18}, {"x": 18}, {"x": 18.01}),
    ({"kind": "numeric_close", "path": "/x", "gt_path": "/mae_target", "rtol": 0.2},
     {"x": "11.9"}, {"x": 12.01}),
    ({"kind": "numeric_close", "path": "/x", "target": 5, "atol": 0}, {"x": 5}, {"x": True}),
    ({"kind": "categorical", "path": "/risk", "gt_path": "/level"}, {"risk": " High "},
     {"risk": "critical"}),
    ({"kind": "categorical", "path": "/f", "allowed": ["inner_race"],
      "synonyms": {"IR": "inner_race"}}, {"f": "ir"}, {"f": 3}),
    ({"kind": "mcq", "path": "/c", "gt_path": "/choice"}, {"c": "(b)"}, {"c": "B and C"}),
    ({"kind": "set_overlap", "path": "/s", "gt_path": "/top", "min_overlap": 1.0},
     {"s": ["4", 3.0]}, {"s": [3]}),
    # Padding the list with a wrong item costs precision (2/3 < 1.0): recall alone is not enough.
    ({"kind": "set_overlap", "path": "/s", "gt_path": "/top", "min_overlap": 1.0},
     {"s": [4, 3]}, {"s": [3, 4, 7]}),
    ({"kind": "set_overlap", "path": "/s", "gt_path": "/top", "min_overlap": 0.5, "max_items": 2},
     {"s": [3, 9]}, {"s": [3, 4, 9]}),
    ({"kind": "field_relation", "path": "/n", "relation": "count_of", "of": "/s"},
     {"n": 2, "s": ["s2", "s3"]}, {"n": 3, "s": ["s2", "s3"]}),
    ({"kind": "field_relation", "path": "/first", "relation": "member_of", "of": "/s"},
     {"first": "s3", "s": ["s2", "s3"]}, {"first": "s4", "s": ["s2", "s3"]}),
    ({"kind": "field_relation", "path": "/low", "relation": "less_equal", "of": "/high"},
     {"low": 2, "high": 2}, {"low": 3, "high": 2}),
    ({"kind": "boolean", "path": "/ok", "gt_path": "/flag"}, {"ok": "no"}, {"ok": True}),
    ({"kind": "recompute_metric", "metric": "mae", "path": "/mae", "predictions_path": "/p",
      "gt_path": "/rul/values", "min": 5, "max": 10, "rtol": 0.01},
     {"mae": 6.75, "p": [100, 105, 69, 90]}, {"mae": 5.0, "p": [100, 105, 69, 90]}),
    ({"kind": "recompute_metric", "metric": "rmse", "predictions_path": "/p",
      "gt_path": "/rul/values", "min": 0, "max": 8}, {"p": {"1": 112, "2": 98, "3": 69, "4": 82}},
     {"p": {"1": 100, "2": 105, "3": 69, "4": 90}}),
    ({"kind": "classification_metrics", "path": "/labels", "gt_path": "/labels/values",
      "metric": "accuracy", "min": 0.75},
     {"labels": {"r1": "normal", "r2": "normal", "r3": "Inner race", "r4": "normal"}},
     {"labels": ["ball", "ball", "ball", "ball"]}),
]


@pytest.mark.parametrize(("spec", "good", "bad"), CASES)
def test_validator_pass_and_fail(spec: dict[str, Any], good: Any, bad: Any) -> None:
    assert passes(spec, good)
    result = apply_validator(spec, ctx(bad))
    assert not result.passed and result.detail


def test_every_kind_is_covered() -> None:
    covered = {spec["kind"] for spec, _, _ in CASES} | {
        "required_fields", "trace_called", "trace_order", "all_of", "any_of", "k_of_n"}
    assert covered == set(VALIDATORS)


def test_recompute_metric_uses_the_agents_own_predictions() -> None:
    # A claimed MAE inside the accepted range still fails when it does not follow from the
    # predictions the agent reported (the PHMForge false-positive case).
    spec = {"kind": "recompute_metric", "metric": "mae", "path": "/mae", "predictions_path": "/p",
            "gt_path": "/rul/values", "min": 0, "max": 20, "rtol": 0.01}
    result = apply_validator(spec, ctx({"mae": 8.0, "p": [100, 105, 69, 90]}))
    assert not result.passed and "does not follow" in result.detail
    assert result.expected["recomputed"] == pytest.approx(6.75)


def test_required_fields_threshold_depends_on_pass_rule() -> None:
    answer = {"a": 1, "b": 2, "c": 3, "d": 4}  # 4 of 5 fields
    spec = {"kind": "required_fields"}
    assert not passes(spec, answer)
    assert passes(spec, answer, rule="completeness_80_and_gt")
    assert not passes(spec, {"a": 1, "b": 2, "c": 3}, rule="completeness_80_and_gt")
    assert not passes(spec, "not an object")


def test_trace_validators() -> None:
    ok_order = [call(0, "load"), call(1, "predict")]
    wrong = [call(0, "predict"), call(1, "load"), call(2, "predict")]
    failed_load = [call(0, "load", "invalid_arguments"), call(1, "predict")]
    assert passes({"kind": "trace_order"}, {}, calls=ok_order)
    assert not passes({"kind": "trace_order"}, {}, calls=wrong)
    assert not passes({"kind": "trace_order"}, {}, calls=failed_load)
    assert passes({"kind": "trace_called", "tool": "predict"}, {}, calls=ok_order)
    assert not passes({"kind": "trace_called", "tool": "predict"}, {},
                      calls=[call(0, "predict", "domain_error")])


def test_combinators() -> None:
    yes = {"kind": "numeric_range", "path": "/x", "min": 0}
    no = {"kind": "numeric_range", "path": "/x", "max": 0}
    answer = {"x": 1}
    assert passes({"kind": "all_of", "children": [yes, yes]}, answer)
    assert not passes({"kind": "all_of", "children": [yes, no]}, answer)
    assert passes({"kind": "any_of", "children": [no, yes]}, answer)
    assert not passes({"kind": "any_of", "children": [no, no]}, answer)
    assert passes({"kind": "k_of_n", "k": 2, "children": [yes, no, yes]}, answer)
    assert not passes({"kind": "k_of_n", "k": 3, "children": [yes, no, yes]}, answer)


def test_missing_values_fail_but_scenario_bugs_raise() -> None:
    assert not passes({"kind": "numeric_range", "path": "/nope", "min": 0}, {"x": 1})
    with pytest.raises(KeyError):
        apply_validator({"kind": "numeric_close", "path": "/x", "gt_path": "/no_such_key"},
                        ctx({"x": 1}))
    with pytest.raises(KeyError, match="unknown validator"):
        apply_validator({"kind": "vibes"}, ctx({}))


def test_evaluate_validators_requires_all() -> None:
    specs = [{"kind": "numeric_range", "path": "/x", "min": 0},
             {"kind": "numeric_range", "path": "/x", "max": 0}]
    success, results = evaluate_validators(specs, ctx({"x": 1}))
    assert not success and [r.passed for r in results] == [True, False]


def test_label_normalisation_and_pointers() -> None:
    assert normalise_label(" Inner-Race ") == "inner_race"
    assert normalise_label("IR", {"ir": "inner_race"}) == "inner_race"
    assert resolve_pointer({"a/b": [1, {"~x": 2}]}, "/a~1b/1/~0x") == 2
    with pytest.raises(KeyError):
        resolve_pointer({"a": [1]}, "/a/3")
