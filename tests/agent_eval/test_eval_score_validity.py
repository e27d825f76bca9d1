"""What a pass means (issue 33): each test reproduces one way a score could be earned without the
work, and shows it no longer is.

Gamed validators (a padded set, a self-contradictory answer, an answer lacking required fields),
typed-in reference answers and queries that state the answer (the scenario lint), a verification
tool that names the true label, vacuous process metrics, precedence charged when neither end was
called, and the template-only floor: answers built from the output template alone (every enum and
boolean combination, numbers 0, strings and arrays empty, no tool calls) may pass at most 5 of the
packaged scenarios, and the test names them.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
from eval_helpers import call, copy_scenario
from mcp.server import MCPServer

from sfbench_jax.agent_eval.answer_ops import evaluate_leaf
from sfbench_jax.agent_eval.lint import lint_static
from sfbench_jax.agent_eval.metrics import mean_applicable, process_metrics
from sfbench_jax.agent_eval.report import summarise, to_markdown
from sfbench_jax.agent_eval.scenario import Scenario
from sfbench_jax.agent_eval.taxonomy import classify_failure
from sfbench_jax.agent_eval.toolbox import connect
from sfbench_jax.agent_eval.trace import TraceRecorder
from sfbench_jax.agent_eval.validators import (
    TRACE_KINDS,
    ValidationContext,
    apply_validator,
    evaluate_validators,
)

#: Scenarios an answer built from the output template alone can pass: the two multiple-choice
#: questions (by nature), and two whose every answer is a boolean that the tool computes (two FAA
#: inspection-status questions). Since issue 44 the PL question also asks by how many levels the
#: requirement is missed, which no enumeration of the template gives.
TEMPLATE_PASSABLE = {"health_turbofan_hpt_mcq", "health_turbofan_lpc_mcq",
                     "safety_aircraft_inspection", "safety_aircraft_overdue_inspection"}


def _context(scenario: Scenario, answer: Any, calls: list[Any] | None = None) -> ValidationContext:
    return ValidationContext(answer=answer, ground_truth=scenario.load_ground_truth(), calls=calls or [],
                             output_template=scenario.output_template, precedence=scenario.precedence,
                             pass_rule=scenario.pass_rule)


def _answer_checks(scenario: Scenario) -> list[Mapping[str, Any]]:
    """The scenario's validators less the trace checks (what the answer alone must satisfy)."""
    return [spec for spec in scenario.validators if spec["kind"] not in TRACE_KINDS]


def test_listing_every_unit_does_not_pass_the_top_10(scenario_map: dict[str, Scenario]) -> None:
    scenario = scenario_map["rul_cmapss_fd001_fleet"]
    spec = next(s for s in scenario.validators if s["kind"] == "set_overlap")
    truth = scenario.load_ground_truth()
    everyone = apply_validator(spec, _context(scenario, {"top_n_risk_units": list(range(1, 101))}))
    assert not everyone.passed  # recall 1.0, but precision 10/100 and 100 items > max_items 10
    assert everyone.observed["recall"] == 1.0 and everyone.observed["precision"] == pytest.approx(0.1)
    assert "precision" in everyone.detail and "max_items" in everyone.detail
    assert apply_validator(spec, _context(scenario, {"top_n_risk_units": truth["top_risk_by_true_rul"]})).passed


def test_seven_sensors_with_a_count_of_three_fails(scenario_map: dict[str, Scenario]) -> None:
    scenario = scenario_map["health_cmapss_fd003_engine_signals"]
    truth = scenario.load_ground_truth()
    assert truth["n_anomalous_sensors"] == 3  # the count alone is right
    contradictory = {"anomalous_sensors": ["s2", "s3", "s4", "s7", "s11", "s12", "s15"],
                     "n_anomalous_sensors": 3, "first_anomalous_cycle": truth["first_anomalous_cycle"],
                     "cycles_after_first_departure": truth["cycles_after_first_departure"]}
    success, results = evaluate_validators(_answer_checks(scenario), _context(scenario, contradictory))
    failed = {r.kind for r in results if not r.passed}
    assert not success and failed == {"set_overlap", "field_relation"}, failed
    relation = next(r for r in results if r.kind == "field_relation")
    assert "contradicts itself" in relation.detail
    flags = classify_failure(success=False, calls=[], answer=contradictory, stop_reason="final",
                             required=[], distractors=[], precedence=[], handle_args=[],
                             output_template=scenario.output_template,
                             validator_results=[r.to_json() for r in results])
    assert "inconsistent_answer" in flags["flags"] and flags["primary"] == "reasoning"
    right = {"anomalous_sensors": truth["anomalous_sensors"], "n_anomalous_sensors": 3,
             "first_anomalous_cycle": truth["first_anomalous_cycle"],
             "cycles_after_first_departure": truth["cycles_after_first_departure"]}
    assert evaluate_validators(_answer_checks(scenario), _context(scenario, right))[0]


def test_an_answer_missing_required_fields_is_flagged(scenario_map: dict[str, Scenario]) -> None:
    scenario = scenario_map["health_cmapss_fd003_engine_signals"]
    calls = [call(0, "load_dataset"), call(1, "analyze_engine_signals")]  # full recall, right order
    for answer in ({}, {"first_anomalous_cycle": 161}):
        failure = classify_failure(success=False, calls=calls, answer=answer, stop_reason="final",
                                   required=scenario.required_tools, distractors=scenario.distractor_tools,
                                   precedence=scenario.precedence, handle_args=[],
                                   output_template=scenario.output_template)
        # An answer-level failure: the agent did the work and then did not answer the question.
        assert "missing_required_fields" in failure["flags"] and failure["primary"] == "reasoning"
    complete = classify_failure(success=False, calls=calls, answer={"anomalous_sensors": [], "n_anomalous_sensors": 0,
                                                                    "first_anomalous_cycle": 0,
                                                                    "cycles_after_first_departure": 0},
                                stop_reason="final", required=scenario.required_tools, distractors=[],
                                precedence=scenario.precedence, handle_args=[],
                                output_template=scenario.output_template)
    assert "missing_required_fields" not in complete["flags"] and complete["primary"] == "orchestration"


def test_lint_fails_a_typed_in_answer_and_a_query_that_states_it(
        tmp_path: Path, scenario_map: dict[str, Scenario]) -> None:
    source = scenario_map["safety_sis_high_demand_pfh"]
    catalog = [*source.required_tools, *source.distractor_tools]
    raw = json.loads(json.dumps(source.raw))
    assert lint_static([copy_scenario(tmp_path, source, raw)], catalog) == {}
    raw["reference_answer"]["requirement_met"] = True  # typed in: the tool's output is never read
    raw["validators"].append({"kind": "boolean", "path": "/requirement_met", "target": True})
    problems = lint_static([copy_scenario(tmp_path, source, raw)], catalog)[source.id]
    assert any(p.startswith("derived_answer:") and "'requirement_met'" in p for p in problems), problems
    assert any(p.startswith("gt_target:") for p in problems), problems
    raw["query_inputs"] = ["requirement_met"]  # declared an input of the query: allowed, and said so
    raw["validators"].pop()
    assert lint_static([copy_scenario(tmp_path, source, raw)], catalog) == {}
    # issue 44: the query asked "is the SIL 3 requirement met?" and expected SIL 3; a small whole number next to
    # a word of the field's name is a stated answer, the same number as a parameter elsewhere is not
    stated = json.loads(json.dumps(source.raw))
    stated["query"] = source.query + " Is the SIL 3 requirement met?"
    problems = lint_static([copy_scenario(tmp_path, source, stated)], catalog)[source.id]
    assert problems == ["query_leak: the query or context states 3.0, within 3e-09 of the value /achieved_sil "
                        "must give (3)"], problems
    stated["query"] = source.query + " The burner has 3 flame scanners."
    assert lint_static([copy_scenario(tmp_path, source, stated)], catalog) == {}
    bearing = scenario_map["fault_gearbox_bearing_outer_race"]
    leaky_bearing = json.loads(json.dumps(bearing.raw))
    leaky_bearing["query"] = bearing.query.replace("145.5 Hz", "145.18 Hz")  # the theoretical BPFO itself
    problems = lint_static([copy_scenario(tmp_path, bearing, leaky_bearing)],
                           [*bearing.required_tools, *bearing.distractor_tools])[bearing.id]
    assert problems and all(p.startswith("query_leak:") for p in problems), problems
    named = json.loads(json.dumps(bearing.raw))
    named["query"] = bearing.query + " (We suspect an outer race defect.)"
    problems = lint_static([copy_scenario(tmp_path, bearing, named)],
                           [*bearing.required_tools, *bearing.distractor_tools])[bearing.id]
    assert any("names 'outer_race'" in p for p in problems), problems


#: The query of ``fault_cwru_outer_race`` before issue 33: it asked only for the frequency of the class
#: it expected, so the question named the answer.
OLD_OUTER_RACE_QUERY = ("Please diagnose drive-end recording cwru_bearing_ose from the motor test rig: is the bearing "
                        "healthy or is there a defect, and if so where? Also give me the outer-race ball-pass "
                        "frequency you expect at the recorded shaft speed so the technician can look for it.")


@pytest.mark.parametrize("query, hinted", [
    (OLD_OUTER_RACE_QUERY, True),
    ("Diagnose cwru_bearing_ose and give its BPFO.", True),  # the class by its frequency's name
    ("Diagnose cwru_bearing_ose; we suspect the outer ring.", True),  # a synonym
    ("Diagnose cwru_bearing_ose: normal, inner race, outer race or ball defect?", False),  # a choice
    ("Diagnose cwru_bearing_ose with envelope analysis.", False),  # names no class
])
def test_lint_fails_a_query_that_hints_at_the_class(tmp_path: Path, scenario_map: dict[str, Scenario],
                                                    query: str, hinted: bool) -> None:
    source = scenario_map["fault_cwru_outer_race"]
    catalog = [*source.required_tools, *source.distractor_tools]
    assert lint_static([source], catalog) == {}
    raw = json.loads(json.dumps(source.raw))
    raw["query"] = query
    problems = lint_static([copy_scenario(tmp_path, source, raw)], catalog).get(source.id, [])
    assert [p for p in problems if not p.startswith("label_hint:")] == []
    assert bool(problems) == hinted, problems
    if hinted:
        assert "'outer_race'" in problems[0], problems


def test_every_cwru_diagnosis_names_the_classes_equally(scenarios: list[Scenario]) -> None:
    """Each single-recording CWRU diagnosis names all four conditions, so none is singled out."""
    diagnoses = [s for s in scenarios if s.id.startswith("fault_cwru_") and s.id != "fault_cwru_fleet_classification"]
    assert len(diagnoses) == 6
    for scenario in diagnoses:
        text = " ".join(scenario.query.casefold().replace("-", " ").split())
        assert all(word in text for word in ("healthy", "inner race", "outer race", "ball")), scenario.id


def _labels_in(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, Mapping):
        for key, item in value.items():
            yield str(key)
            yield from _labels_in(item)
    elif isinstance(value, list):
        for item in value:
            yield from _labels_in(item)


@pytest.mark.anyio
async def test_calculate_accuracy_shows_no_label(eval_server: MCPServer) -> None:
    # cwru_bearing_epr (CWRU record 118) is a ball fault; a wrong guess used to come back with the label set
    # ["ball", "normal"] and the confusion matrix, i.e. with the answer.
    async with connect(eval_server) as session:
        tools = session.toolbox(allowed=None, recorder=TraceRecorder(run_id="t", scenario_id="t"))
        outcome = await tools.call("calculate_accuracy", {"ground_truth": ["gt:cwru_bearing_epr"],
                                                          "predictions": ["normal"]})
    assert outcome.ok and outcome.structured is not None
    assert outcome.structured["accuracy"] == 0.0 and outcome.structured["n"] == 1
    assert not {"labels", "per_class_f1", "confusion"} & set(outcome.structured)
    words = " ".join(_labels_in(outcome.structured)) + " " + outcome.text
    assert "ball" not in words


def test_vacuous_metrics_are_not_applicable() -> None:
    silent = process_metrics(calls=[], required=["a"], distractors=["d"], precedence=[],
                             reference_order=["a"], handle_args=[], usage={})
    assert silent["tool_precision"] is None and silent["sequencing_accuracy"] is None
    worked = process_metrics(calls=[call(0, "a")], required=["a"], distractors=[], precedence=[("a", "a")],
                             reference_order=["a"], handle_args=[], usage={})
    assert worked["tool_precision"] == 1.0
    assert mean_applicable([None, 0.5, float("nan"), 1.0]) == (0.75, 2)
    assert mean_applicable([None]) == (None, 1)
    records = [{"agent": "x", "model": "m", "mode": "tools_provided", "task_type": "cost_benefit",
                "scenario_id": f"s{i}", "status": "scored", "success": False,
                "failure": {"primary": "reasoning", "flags": []},
                "metrics": {"n_tool_calls": 0, "n_llm_turns": 1, "tool_precision": None, "tool_recall": 0.0,
                            "distractor_rate": 0.0, "sequencing_accuracy": None}} for i in range(2)]
    row = summarise(records)[0]
    assert row["tool_precision"] is None and row["sequencing_accuracy"] is None
    assert row["metrics_not_applicable"] == "tool_precision 2, sequencing_accuracy 2"
    header, _rule, line = to_markdown([row]).splitlines()
    cells = dict(zip(header.strip("| ").split(" | "), line.strip("| ").split(" | "), strict=True))
    assert cells["tool_precision"] == "n/a" and cells["sequencing_accuracy"] == "n/a"
    assert cells["tool_recall"] == "0.000"


def test_precedence_is_violated_only_when_the_later_end_ran_first() -> None:
    def flagged(calls: list[Any]) -> bool:
        failure = classify_failure(success=False, calls=calls, answer={}, stop_reason="final",
                                   required=["load", "predict"], distractors=[], precedence=[("load", "predict")],
                                   handle_args=[], output_template={"type": "object"})
        return "precedence_violated" in failure["flags"]

    assert not flagged([])                                        # neither end called
    assert not flagged([call(0, "web_search")])
    assert not flagged([call(0, "load")])                         # later end never called: recall, not order
    assert flagged([call(0, "predict")])                          # later end without the earlier one
    assert flagged([call(0, "predict"), call(1, "load")])         # later end before the earlier one
    assert flagged([call(0, "load", "invalid_arguments"), call(1, "predict")])  # earlier end never ok
    assert not flagged([call(0, "load"), call(1, "predict")])


def test_answer_operators_derive_values_from_tool_outputs() -> None:
    saved = {"a": {"cost": 38000.0, "p": 0.0}, "b": {"cost": 114000.0, "status": "Imminent Failure",
                                                     "level": "SIL 3", "rows": [{"r": "high"}, {"r": "low"}]}}

    def resolve(ref: str) -> Any:
        name, _, key = ref.partition("/")
        return saved[name][key]

    def value(leaf: Any) -> Any:
        return evaluate_leaf(leaf, resolve)

    assert value({"$argmin": [["q", {"$ref": "a/cost"}], ["m", {"$ref": "b/cost"}]]}) == "q"
    assert value({"$argmax": [[1, {"$ref": "a/cost"}], [2, {"$ref": "b/cost"}]]}) == 2
    assert value({"$nearest": [100000, [["q", {"$ref": "a/cost"}], ["m", {"$ref": "b/cost"}]]]}) == "m"
    assert value({"$gt": [{"$ref": "a/p"}, 0]}) is False
    assert value({"$all": [{"$lt": [{"$ref": "a/p"}, 1]}, {"$eq": [{"$ref": "b/status"}, "Imminent Failure"]}]})
    assert value({"$count_in": [{"$ref": "b/rows"}, ["high", "critical"], "r"]}) == 1
    assert value({"$lookup": [{"$ref": "b/status"}, {"Imminent Failure": "C"}]}) == "C"
    assert value({"$parse_int": {"$ref": "b/level"}}) == 3
    assert value({"$sub": [{"$ref": "b/cost"}, {"$ref": "a/cost"}]}) == 76000.0
    assert value({"$argmin": [["q", {"$ref": "a/missing"}]]}) is None   # unresolvable: null, not a guess
    assert value({"$parse_int": "no digits"}) is None
    assert value({"$mul": [{"$ref": "a/cost"}, 2, 0.5]}) == 38000.0
    assert value({"$div": [{"$ref": "b/cost"}, {"$ref": "a/cost"}]}) == 3.0
    assert value({"$div": [{"$ref": "b/cost"}, {"$ref": "a/p"}]}) is None  # division by zero: null
    assert value({"$not": {"$gt": [{"$ref": "a/p"}, 0]}}) is True
    assert value({"$not": {"$ref": "a/cost"}}) is None  # not a boolean


def _template_answers(schema: Any) -> list[Any]:
    """Every answer the template alone gives: each enum value, both booleans, 0, "", [], {}."""
    if not isinstance(schema, Mapping):
        return [None]
    if "enum" in schema:
        return list(schema["enum"])
    kind = schema.get("type")
    kind = kind[0] if isinstance(kind, list) else kind
    if kind == "object":
        properties = schema.get("properties") or {}
        keys = list(properties)
        return [dict(zip(keys, combo, strict=True))
                for combo in itertools.product(*(_template_answers(properties[k]) for k in keys))]
    return {"boolean": [True, False], "number": [0], "integer": [0], "string": [""],
            "array": [[]]}.get(str(kind), [None])


def test_template_only_answers_pass_at_most_five_scenarios(scenarios: list[Scenario]) -> None:
    # Trace checks are left out (a constant agent could make the calls and ignore their output):
    # what is counted is whether the answer needs a value that only the tools or the arithmetic give.
    passable = set()
    for scenario in scenarios:
        answers = _template_answers(dict(scenario.output_template))
        assert 1 <= len(answers) <= 10_000, scenario.id
        checks = _answer_checks(scenario)
        if any(evaluate_validators(checks, _context(scenario, answer))[0] for answer in answers):
            passable.add(scenario.id)
    assert len(scenarios) == 104
    assert passable == TEMPLATE_PASSABLE, sorted(passable)
    assert len(passable) <= 5
