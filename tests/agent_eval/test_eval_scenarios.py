"""The packaged scenarios: coverage, schema and static lint rules, ground-truth reproducibility."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
from mcp.server import MCPServer

from sfbench_jax.agent_eval.lint import lint_static
from sfbench_jax.agent_eval.scenario import TASK_TYPES, Scenario, ScenarioError, load_scenario
from sfbench_jax.agent_eval.toolbox import connect


def test_at_least_thirty_scenarios_over_five_categories(scenarios: list[Scenario]) -> None:
    assert len(scenarios) >= 30
    counts = Counter(s.task_type for s in scenarios)
    assert set(counts) == set(TASK_TYPES)
    assert min(counts.values()) >= 5, counts
    assert {s.asset_class for s in scenarios} >= {"turbofan", "li_ion_cell", "rolling_bearing"}


def test_scenarios_are_on_real_registered_data(scenarios: list[Scenario]) -> None:
    data_scenarios = [s for s in scenarios if s.dataset["name"] != "none"]
    assert len(data_scenarios) >= 15
    families = {s.dataset["name"].split("_")[0] for s in data_scenarios}
    assert families >= {"cmapss", "nasa", "cwru"}


@pytest.mark.anyio
async def test_static_lint_rules_hold(scenarios: list[Scenario], eval_server: MCPServer) -> None:
    async with connect(eval_server) as session:
        catalog = [t.name for t in session.catalog]
    assert lint_static(scenarios, catalog) == {}


def test_lint_catches_broken_scenarios(tmp_path: Path, scenarios: list[Scenario]) -> None:
    source = next(s for s in scenarios if s.id == "safety_sis_sil_verification")
    raw = json.loads(json.dumps(source.raw))
    raw.update(id="broken_case", ground_truth_ref="ground_truth/broken_case.gt.json",
               distractor_tools=["calculate_pfd", "teleport"],
               precedence=[["web_search", "check_compliance"]],
               validators=[{"kind": "required_fields"}])
    raw["reference_answer"].pop("meets_sil3")
    (tmp_path / "ground_truth").mkdir()
    (tmp_path / "broken_case.json").write_text(json.dumps(raw))
    broken = load_scenario(tmp_path / "broken_case.json")
    problems = " | ".join(lint_static([broken], ["calculate_pfd", "check_compliance",
                                                 "web_search"])["broken_case"])
    for rule in ("tools_exist: 'teleport'", "disjoint_tools", "substantive_validator",
                 "ground_truth:", "precedence: edge (web_search", "answer lacks required"):
        assert rule in problems, rule
    raw["id"] = "not_the_stem"
    (tmp_path / "other.json").write_text(json.dumps(raw))
    with pytest.raises(ScenarioError, match="file stem"):
        load_scenario(tmp_path / "other.json")
    raw.update(id="other", task_type="vibes")
    (tmp_path / "other.json").write_text(json.dumps(raw))
    with pytest.raises(ScenarioError, match="task_type"):
        load_scenario(tmp_path / "other.json")


def test_agents_never_see_ground_truth(scenarios: list[Scenario]) -> None:
    for scenario in scenarios:
        assert scenario.agent_context("unknown_tools") is None
        context = scenario.agent_context("tools_provided") or ""
        truth = scenario.load_ground_truth()
        assert "gt.json" not in context and scenario.ground_truth_ref not in scenario.query
        assert truth["scenario_id"] == scenario.id
