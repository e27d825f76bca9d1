"""The packaged scenarios: coverage, schema and static lint rules, ground-truth reproducibility."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
from mcp.server import MCPServer

from sfbench_jax.agent_eval import cli
from sfbench_jax.agent_eval.lint import lint_static, parameter_order
from sfbench_jax.agent_eval.scenario import (
    QUERY_VARIANTS,
    TASK_TYPES,
    TRANSFER_ASSET_CLASSES,
    TRANSFER_TAG,
    Scenario,
    ScenarioError,
    load_scenario,
)
from sfbench_jax.agent_eval.toolbox import connect


def test_breadth_of_phmforge_v2(scenarios: list[Scenario]) -> None:
    assert len(scenarios) >= 99
    counts = Counter(s.task_type for s in scenarios)
    assert set(counts) == set(TASK_TYPES)
    assert min(counts.values()) >= 15, counts
    classes = Counter(s.asset_class for s in scenarios)
    main_classes = {"turbofan", "li_ion_cell", "rolling_bearing", "induction_motor",
                    "centrifugal_pump", "gearbox", "compressor", "safety_instrumented_system"}
    assert set(classes) >= main_classes and len(classes) >= 8
    assert min(classes[c] for c in main_classes) >= 5, classes
    assert all(2 <= len(s.distractor_tools) <= 4 for s in scenarios)


def test_transfer_split_holds_out_whole_asset_classes(scenarios: list[Scenario]) -> None:
    held_out = {s.asset_class for s in scenarios if s.split == "transfer"}
    assert held_out == set(TRANSFER_ASSET_CLASSES)
    assert all((s.asset_class in held_out) == (TRANSFER_TAG in s.tags) for s in scenarios)
    transfer = [s for s in scenarios if s.split == "transfer"]
    assert len(transfer) >= 15 and len({s.task_type for s in transfer}) == len(TASK_TYPES)


def test_list_summary_prints_the_counts(scenarios: list[Scenario],
                                        capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["list", "--summary"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == f"scenarios: {len(scenarios)}"
    assert lines[1].startswith("task types (5): cost_benefit ")
    n_classes = len({s.asset_class for s in scenarios})
    assert lines[2].startswith(f"asset classes ({n_classes}): ")
    assert lines[3] == ("splits: in_distribution "
                        f"{sum(s.split == 'in_distribution' for s in scenarios)}, transfer "
                        f"{sum(s.split == 'transfer' for s in scenarios)}")
    assert cli.main(["list", "--split", "transfer", "--task-type", "safety_policy"]) == 0
    listed = capsys.readouterr().out.splitlines()
    assert listed and all(line.endswith("\tsafety_policy\t" + line.split("\t")[2] + "\ttransfer")
                          for line in listed)


def test_scenarios_are_on_real_registered_data(scenarios: list[Scenario]) -> None:
    data_scenarios = [s for s in scenarios if s.dataset["name"] != "none"]
    assert len(data_scenarios) >= 15
    families = {s.dataset["name"].split("_")[0] for s in data_scenarios}
    assert families >= {"cmapss", "nasa", "cwru"}


@pytest.mark.anyio
async def test_static_lint_rules_hold(scenarios: list[Scenario], eval_server: MCPServer) -> None:
    async with connect(eval_server) as session:
        catalog = [t.name for t in session.catalog]
        parameters = parameter_order(session.catalog)
    assert lint_static(scenarios, catalog, parameters=parameters) == {}
    assert lint_static(scenarios, catalog) == {}  # the reference steps' own argument order


def test_lint_catches_broken_scenarios(tmp_path: Path, scenarios: list[Scenario]) -> None:
    source = next(s for s in scenarios if s.id == "safety_sis_sil_verification")
    raw = json.loads(json.dumps(source.raw))
    raw.update(id="broken_case", ground_truth_ref="ground_truth/broken_case.gt.json",
               distractor_tools=["calculate_pfd", "teleport", "weather_data_loader",
                                 "check_voltage_unbalance", "assess_noise_exposure"],
               asset_class="gearbox",
               precedence=[["web_search", "check_compliance"]],
               validators=[{"kind": "required_fields"}])
    raw["reference_answer"].pop("meets_sil3")
    (tmp_path / "ground_truth").mkdir()
    (tmp_path / "broken_case.json").write_text(json.dumps(raw))
    broken = load_scenario(tmp_path / "broken_case.json")
    problems = " | ".join(lint_static([broken], ["calculate_pfd", "check_compliance",
                                                 "web_search"])["broken_case"])
    for rule in ("tools_exist: 'teleport'", "disjoint_tools", "substantive_validator",
                 "ground_truth:", "precedence: edge (web_search", "answer lacks required",
                 "distractors: 5 distractor", "transfer_split: asset class 'gearbox'"):
        assert rule in problems, rule
    raw["id"] = "not_the_stem"
    (tmp_path / "other.json").write_text(json.dumps(raw))
    with pytest.raises(ScenarioError, match="file stem"):
        load_scenario(tmp_path / "other.json")
    raw.update(id="other", task_type="vibes")
    (tmp_path / "other.json").write_text(json.dumps(raw))
    with pytest.raises(ScenarioError, match="task_type"):
        load_scenario(tmp_path / "other.json")


def test_query_variants_schema(tmp_path: Path, scenarios: list[Scenario]) -> None:
    """``query`` is the explicit phrasing, ``query_variants.fuzzy`` the fuzzy one; a differing explicit copy,
    an unknown variant and a missing fuzzy phrasing are refused with a message naming the fix."""
    raw = json.loads(json.dumps(next(s for s in scenarios if s.id == "safety_sis_sil_verification").raw))
    raw.update(id="variants_case", query_variants={"fuzzy": "Is the trip   function on this compressor good enough?"})
    path = tmp_path / "variants_case.json"
    path.write_text(json.dumps(raw))
    loaded = load_scenario(path)
    assert loaded.query_for("explicit") == loaded.query == " ".join(str(raw["query"]).split())
    assert loaded.query_for("fuzzy") == "Is the trip function on this compressor good enough?"
    assert tuple(loaded.query_variants) == QUERY_VARIANTS
    with pytest.raises(ScenarioError, match="choose from"):
        loaded.query_for("vague")
    raw["query_variants"]["explicit"] = "Something other than the query field."
    path.write_text(json.dumps(raw))
    with pytest.raises(ScenarioError, match="leave query_variants.explicit out"):
        load_scenario(path)
    raw["query_variants"] = {"explicit": raw["query"]}
    path.write_text(json.dumps(raw))
    with pytest.raises(ScenarioError, match="fuzzy"):
        load_scenario(path)
    del raw["query_variants"]
    path.write_text(json.dumps(raw))
    with pytest.raises(ScenarioError, match="query_variants"):
        load_scenario(path)


def test_agents_never_see_ground_truth(scenarios: list[Scenario]) -> None:
    for scenario in scenarios:
        assert scenario.agent_context("unknown_tools") is None
        context = scenario.agent_context("tools_provided") or ""
        truth = scenario.load_ground_truth()
        assert "gt.json" not in context and scenario.ground_truth_ref not in scenario.query
        assert truth["scenario_id"] == scenario.id
