"""Answers that cannot be copied by name (issue 44 item 3): every scenario asks for at least one validated value
that no tool returns under any key, a decision, a comparison, a unit conversion or a threshold crossing computed
from the tools' outputs, so an agent that copies the output field whose name best matches each answer field
cannot pass it. A metric recomputed from the agent's own reported predictions (``recompute_metric``,
``classification_metrics``) counts too: it must agree with the predictions the agent hands in."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sfbench_jax.agent_eval.answer_ops import OPERATORS
from sfbench_jax.agent_eval.scenario import Scenario
from sfbench_jax.agent_eval.validators import PRESENCE_ONLY, TRACE_KINDS

#: Validator kinds that compare nothing an agent could copy: they recompute a metric from its own answer.
RECOMPUTED = frozenset({"recompute_metric", "classification_metrics"})
_STRUCTURAL = PRESENCE_ONLY | TRACE_KINDS | {"all_of", "any_of", "k_of_n", "field_relation"}


def _walk(specs: Any) -> list[Mapping[str, Any]]:
    out: list[Mapping[str, Any]] = []
    for spec in specs:
        out += [spec, *_walk(spec.get("children", ()))]
    return out


def _computed(leaf: Any) -> bool:
    """Whether a reference-answer value applies an operator to tool outputs (not a bare ``$ref`` copy)."""
    if isinstance(leaf, Mapping):
        if len(leaf) == 1 and next(iter(leaf)) in OPERATORS:
            return True
        return set(leaf) != {"$ref"} and any(_computed(v) for v in leaf.values())
    return isinstance(leaf, list) and any(_computed(v) for v in leaf)


def _asks_for_something_derived(scenario: Scenario) -> bool:
    for spec in _walk(scenario.validators):
        if spec["kind"] in RECOMPUTED:
            return True
        if spec["kind"] in _STRUCTURAL or not str(spec.get("path", "")).startswith("/"):
            continue
        field = spec["path"].split("/")[1]
        if _computed(scenario.reference_answer.get(field)):
            return True
    return False


def test_every_scenario_asks_for_a_value_no_tool_returns(scenarios: list[Scenario]) -> None:
    assert len(scenarios) >= 99
    copyable = sorted(s.id for s in scenarios if not _asks_for_something_derived(s))
    assert copyable == []


def test_the_check_flags_an_answer_made_of_copies(scenario_map: dict[str, Scenario]) -> None:
    outlier = scenario_map["health_battery_b0005_fleet_outlier"]
    assert _asks_for_something_derived(outlier)
    copies_only = {k: v for k, v in outlier.reference_answer.items() if not _computed(v)}
    assert copies_only and not _asks_for_something_derived(
        Scenario(**{**outlier.__dict__, "reference_answer": copies_only}))
