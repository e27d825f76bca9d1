"""A pass means the agent chose its tools and read their answers (issue 44).

Reproductions: a sweep agent (every visible tool once, the query's numbers as arguments, answer fields copied
from the output field whose name best matches) passed 16 of 104 scenarios while pass@1 ignored which tools
ran. Under the primary pass (the answer's validators AND every required tool called successfully AND no
distractor called AND no invocation error left unrecovered) the project's own sweep floor (``floor:sweep``)
and a second sweep written here, independently (other tool order, other argument filling, names matched by
substring), each pass at most 5 of the 104 packaged scenarios in tools_provided. The whole set runs in the
slow suite; a subset of scenarios the sweep's copied answers pass on the lenient rule runs by default.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
from eval_helpers import ChatServer, call, completion, copy_scenario
from mcp.server import MCPServer

from sfbench_jax.agent_eval import cli
from sfbench_jax.agent_eval.agents.base import ZERO_USAGE, AgentResult, AgentTask
from sfbench_jax.agent_eval.agents.floors import SweepAgent, constant_fill, query_numbers, sweep_arguments
from sfbench_jax.agent_eval.agents.scripted import ScriptedAgent
from sfbench_jax.agent_eval.compare import unit_of
from sfbench_jax.agent_eval.report import summarise, to_markdown
from sfbench_jax.agent_eval.runner import execute_run, score_trace
from sfbench_jax.agent_eval.scenario import Scenario, load_scenario
from sfbench_jax.agent_eval.taxonomy import process_check
from sfbench_jax.agent_eval.toolbox import connect
from sfbench_jax.agent_eval.trace import read_trace

#: Scenarios whose answer the sweep's copying got right on the answer-only rule when this test was written
#: (tools_provided, the repository's data; before the answer fields were renamed after the question), and the one
#: the issue names.
SWEEP_SUBSET = ("cost_motor_bearing_age_replacement", "safety_gearbox_fmea_risk", "safety_motor_fmea_override",
                "safety_press_fmea_override", "health_turbofan_hpt_mcq", "health_battery_b0005_fleet_outlier")
MAX_BLIND_PASSES = 5


class SubstringSweep:
    """A sweep written apart from ``floor:sweep``: visible tools in reverse name order, every parameter that
    has no default filled (numbers from the query's last number backwards, arrays with every number, strings
    with the dataset context's first word, ``*handle`` strings with any handle seen), answer fields copied from
    the first output key that contains the field's name or is contained in it, else the first output value of
    the field's type."""

    name = "sweep:substring"
    model = "substring"
    sampling: Mapping[str, Any] = {}

    async def run(self, task: AgentTask, tools: Any) -> AgentResult:
        numbers = [float(x) for x in re.findall(r"\d+(?:\.\d+)?", task.query)][::-1]
        words = (task.dataset_context or "").replace(",", " ").split()
        handles: list[str] = []
        outputs: list[tuple[str, Any]] = []
        for spec in sorted(tools.specs(), key=lambda s: s.name, reverse=True)[:int(task.limits["max_tool_calls"])]:
            arguments, queue = {}, list(numbers)
            for name, schema in (spec.input_schema.get("properties") or {}).items():
                if "default" in schema:
                    continue
                kinds = {schema.get("type")} | {b.get("type") for b in schema.get("anyOf", ())}
                if kinds & {"number", "integer"}:
                    arguments[name] = queue.pop(0) if queue else 1
                elif "array" in kinds:
                    arguments[name] = list(numbers[::-1])
                elif name.endswith("handle"):
                    arguments[name] = handles[0] if handles else ""
                else:
                    arguments[name] = words[0].strip(".") if words else ""
            outcome = await tools.call(spec.name, arguments)
            for key, value in (outcome.structured or {}).items() if outcome.ok else ():
                outputs.append((key, value))
                if "handle" in key and isinstance(value, str):
                    handles.append(value)
        answer = constant_fill(task.output_template)
        for field, schema in (task.output_template.get("properties") or {}).items():
            hits = [v for k, v in outputs if field in k or k in field]
            typed = [v for _, v in outputs if _json_type(v) == schema.get("type")]
            if hits or typed:
                answer[field] = (hits or typed)[0]
        return AgentResult(final_answer=answer, stop_reason="final", usage=dict(ZERO_USAGE))


def _json_type(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    return {str: "string", list: "array", dict: "object"}.get(type(value), "null")


async def _blind_passes(server: MCPServer, scenarios: Sequence[Scenario], agent: Any) -> tuple[list[str], list[str]]:
    """(primary passes, answer-only passes) of an agent, tools_provided, one run per scenario."""
    primary, lenient = [], []
    async with connect(server) as session:
        for scenario in scenarios:
            _, record = await execute_run(scenario, agent, session, mode="tools_provided")
            assert record["status"] == "scored", (scenario.id, record["evaluator_error"])
            primary += [scenario.id] if record["success"] else []
            lenient += [scenario.id] if record["answer_success"] else []
            assert record["success"] == bool(record["answer_success"] and record["process"]["passed"])
    return primary, lenient


@pytest.mark.anyio
@pytest.mark.parametrize("agent", [SweepAgent(), SubstringSweep()], ids=["floor_sweep", "substring_sweep"])
async def test_sweeps_fail_the_primary_pass_where_they_copied_the_answer(
        agent: Any, eval_server: MCPServer, scenario_map: dict[str, Scenario]) -> None:
    primary, _ = await _blind_passes(eval_server, [scenario_map[i] for i in SWEEP_SUBSET], agent)
    assert primary == []


@pytest.mark.slow
@pytest.mark.anyio
@pytest.mark.parametrize("agent", [SweepAgent(), SubstringSweep()], ids=["floor_sweep", "substring_sweep"])
async def test_sweeps_pass_at_most_five_of_all_scenarios(agent: Any, eval_server: MCPServer,
                                                         scenarios: list[Scenario]) -> None:
    assert len(scenarios) == 104
    primary, lenient = await _blind_passes(eval_server, scenarios, agent)
    assert len(primary) <= MAX_BLIND_PASSES, (sorted(primary), f"answer-only: {len(lenient)}")


def test_the_sweep_fills_numbers_in_order_and_keeps_defaults() -> None:
    from sfbench_jax.agent_eval.agents.floors import _SweepInputs

    assert query_numbers("costs 1,500 plus 4 h at 2,000 per hour, p 0.5, cell B0005 of FD001, 462 V") == \
        [1500.0, 4.0, 2000.0, 0.5, 462.0]
    schema = {"type": "object", "required": ["cost", "hours", "volts", "dataset_handle", "name"],
              "properties": {"cost": {"type": "number"}, "hours": {"type": "integer"},
                             "volts": {"anyOf": [{"type": "array", "items": {"type": "number"}}, {"type": "string"}]},
                             "dataset_handle": {"type": "string"}, "name": {"type": "string"},
                             "rate": {"type": "number", "default": 1.0}}}
    inputs = _SweepInputs(numbers=[1500.0, 4.0, 7.5], identifiers=["cwru_bearing_nie"], handles=["ds:a", "ds:b"])
    assert sweep_arguments(schema, inputs) == {"cost": 1500.0, "hours": 4, "volts": [7.5],
                                               "dataset_handle": "ds:b", "name": "cwru_bearing_nie"}


def test_every_scenario_pass_depends_on_each_required_tool(scenarios: list[Scenario]) -> None:
    """Lists every scenario whose process check would pass without one of its required tools succeeding (the
    primary pass is the answer's validators AND this check: `test_a_right_answer_with_the_wrong_process_fails`)."""
    independent = []
    for scenario in scenarios:
        assert scenario.required_tools, scenario.id
        reference = [step["tool"] for step in scenario.reference_solution]
        calls = [call(i, tool) for i, tool in enumerate(reference)]
        assert process_check(calls, required=scenario.required_tools,
                             distractors=scenario.distractor_tools)["passed"], scenario.id
        for tool in scenario.required_tools:
            failed = [call(c.seq, c.tool, "domain_error") if c.tool == tool else c for c in calls]
            dropped = [c for c in calls if c.tool != tool]
            for trace in (failed, dropped):
                check = process_check(trace, required=scenario.required_tools,
                                      distractors=scenario.distractor_tools)
                if check["passed"] or check["required_missing"] != [tool]:
                    independent.append((scenario.id, tool))
        for distractor in scenario.distractor_tools:
            check = process_check([*calls, call(len(calls), distractor)], required=scenario.required_tools,
                                  distractors=scenario.distractor_tools)
            if check["passed"]:
                independent.append((scenario.id, distractor))
    assert independent == []
    assert len(scenarios) == 104


@pytest.mark.anyio
async def test_a_right_answer_with_the_wrong_process_fails(eval_server: MCPServer,
                                                           scenario_map: dict[str, Scenario]) -> None:
    scenario = scenario_map["health_battery_b0005_fleet_outlier"]
    async with connect(eval_server) as session:
        events, record = await execute_run(scenario, ScriptedAgent([scenario]), session, mode="tools_provided")
    assert record["success"] and record["answer_success"] and record["process"] == {
        "passed": True, "required_missing": [], "distractors_called": [], "unrecovered": []}
    calls = [e for e in events if e["kind"] == "tool_call"]
    required = scenario.required_tools[0]
    # the same answer, but the one required tool failed: the answer alone passes, the run does not
    failed = [{**e, "status": "domain_error", "is_error": True, "structured": None} if e.get("tool") == required
              else e for e in events]
    rescored = score_trace(scenario, failed)
    assert rescored["answer_success"] and not rescored["success"]
    assert rescored["process"]["required_missing"] == [required]
    assert "answer_without_process" in rescored["failure"]["flags"] and "wrong_value" not in rescored["failure"][
        "flags"]
    # a distractor called on the side (its result unused)
    side = {**calls[0], "seq": 99, "tool": scenario.distractor_tools[0], "status": "ok"}
    rescored = score_trace(scenario, [*events[:-1], side, events[-1]])
    assert rescored["answer_success"] and not rescored["success"]
    assert rescored["process"]["distractors_called"] == [scenario.distractor_tools[0]]
    assert rescored["failure"]["primary"] == "reasoning"
    # an invocation error never recovered (a required tool called with bad arguments first, then right, recovers)
    bad = {**calls[0], "seq": 98, "tool": "check_voltage_unbalance", "status": "invalid_arguments"}
    assert score_trace(scenario, [*events[:-1], bad, events[-1]])["process"]["unrecovered"] == [
        "check_voltage_unbalance"]
    retried = [events[0], {**calls[0], "seq": 0, "status": "invalid_arguments", "structured": None}, *events[1:]]
    assert score_trace(scenario, retried)["success"]


def test_cli_variant_both_scores_each_phrasing_and_reports_pass_at_1_per_variant(
        tmp_path: Path, data_root: Path, scenario_map: dict[str, Scenario],
        capsys: pytest.CaptureFixture[str]) -> None:
    source = scenario_map["safety_motor_voltage_unbalance"]
    folder = tmp_path / "scenarios"
    folder.mkdir()
    fuzzy = "The cooling-water pump motor's supply looks uneven; is it fit to keep running as it is?"
    copy_scenario(folder, source, {**source.raw, "query_variants": {"fuzzy": fuzzy}})  # a fuzzy text of our own
    assert load_scenario(folder / f"{source.id}.json").query_for("fuzzy") == fuzzy
    out = tmp_path / "run"
    assert cli.main(["run", "--agent", "scripted", "--scenarios", str(folder), "--variant", "both", "--out",
                     str(out), "--data-root", str(data_root)]) == 0
    traces = {p.name: read_trace(p) for p in (out / "traces").glob("*.jsonl")}
    assert sorted(traces) == [f"{source.id}__tools_provided__scripted__0.jsonl",
                              f"{source.id}__tools_provided__scripted__0__fuzzy.jsonl"]
    assert traces[f"{source.id}__tools_provided__scripted__0__fuzzy.jsonl"][0]["variant"] == "fuzzy"
    records = [json.loads(p.read_text()) for p in sorted((out / "records").glob("*.json"))]
    assert [(r["variant"], r["success"]) for r in records] == [("explicit", True), ("fuzzy", True)]
    floors = [json.loads(p.read_text()) for p in (out / "floors" / "records").glob("*.json")]
    assert sorted({r["variant"] for r in floors}) == ["explicit", "fuzzy"] and len(floors) == 6
    summary = json.loads((out / "aggregate.json").read_text())
    by_variant = {r["variant"]: r for r in summary["rows"] if r["task_type"] == "all" and r["split"] == "all"}
    assert set(by_variant) == {"all", "explicit", "fuzzy"}
    assert (by_variant["all"]["scenarios"], by_variant["fuzzy"]["runs"], by_variant["fuzzy"]["pass_at_1"]) == \
        (2, 1, 1.0)
    # the floors pair each phrasing with the same phrasing: two units
    assert {r["scenarios"] for r in summary["floors"] if r["group"] == "all"} == {2}
    capsys.readouterr()
    # an unknown variant is refused before any run
    with pytest.raises(SystemExit) as refused:
        cli.main(["run", "--agent", "scripted", "--ids", source.id, "--variant", "vague", "--out",
                  str(tmp_path / "none"), "--data-root", str(data_root)])
    assert refused.value.code == 2 and not (tmp_path / "none").exists()
    assert "--variant: invalid choice: 'vague'" in capsys.readouterr().err


def test_report_answer_only_rate_and_process_columns() -> None:
    def record(scenario: str, success: bool, answer: bool, unrecovered: list[str], variant: str) -> dict[str, Any]:
        return {"run_id": f"{scenario}:{variant}", "scenario_id": scenario, "task_type": "safety_policy",
                "agent": "a", "model": "m", "mode": "tools_provided", "status": "scored", "variant": variant,
                "success": success, "answer_success": answer, "evaluator_error": "", "run_index": 0,
                "process": {"passed": success, "required_missing": [], "distractors_called": [],
                            "unrecovered": unrecovered},
                "failure": {"primary": None if success else "reasoning", "flags": []},
                "metrics": {"n_tool_calls": 2, "n_llm_turns": 0, "tool_precision": 1.0, "tool_recall": 1.0,
                            "distractor_rate": 0.0 if success else 0.5, "sequencing_accuracy": None}}

    records = [record("s1", True, True, [], "explicit"), record("s2", False, True, ["x"], "explicit"),
               record("s1", False, True, [], "fuzzy"), record("s2", False, False, [], "fuzzy")]
    rows = summarise(records)
    overall = rows[0]
    assert (overall["variant"], overall["scenarios"], overall["pass_at_1"], overall["answer_only_pass_at_1"],
            overall["unrecovered_error_rate"], overall["distractor_rate"]) == ("all", 4, 0.25, 0.75, 0.25, 0.375)
    per_variant = {r["variant"]: r for r in rows[-2:]}
    assert (per_variant["explicit"]["pass_at_1"], per_variant["fuzzy"]["pass_at_1"]) == (0.5, 0.0)
    assert per_variant["fuzzy"]["answer_only_pass_at_1"] == 0.5
    assert "answer_only_pass_at_1" in to_markdown(rows).splitlines()[0]
    assert unit_of(records[2]) == "s1~fuzzy" and unit_of(records[0]) == "s1"


def test_llm_runs_send_and_record_the_seed(tmp_path: Path, data_root: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    def answer(body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        return 200, completion({"content": json.dumps({"risk_level": "low"})})

    out = tmp_path / "llm"
    with ChatServer(answer) as chat:
        assert cli.main(["run", "--agent", "llm", "--base-url", chat.base_url, "--model", "m", "--ids",
                         "safety_gearbox_fmea_risk", "--repeats", "2", "--seed", "5", "--no-floors", "--out",
                         str(out), "--data-root", str(data_root)]) == 0
    assert [r["seed"] for r in chat.requests] == [5, 6]  # seed + repeat index, as sent
    for index in (0, 1):
        start = read_trace(out / "traces" / f"safety_gearbox_fmea_risk__tools_provided__llm__{index}.jsonl")[0]
        assert (start["sampling"]["seed"], start["seed"]) == (5, 5)
    capsys.readouterr()


def test_the_ablation_modes_list_the_process_but_the_answer_decides() -> None:
    calls = [call(0, "capacity_soh_calculator", "blocked"), call(1, "web_search"), call(2, "calculator")]
    check = process_check(calls, required=["capacity_soh_calculator"], distractors=["web_search"], applies=False)
    assert check == {"passed": True, "required_missing": [], "distractors_called": ["web_search"],
                     "unrecovered": ["capacity_soh_calculator"]}
    assert not process_check(calls, required=["capacity_soh_calculator"], distractors=["web_search"])["passed"]


def test_a_floor_runs_on_its_own_from_the_command_line(tmp_path: Path, data_root: Path,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "sweep"
    assert cli.main(["run", "--agent", "floor:sweep", "--ids", "safety_gearbox_fmea_risk", "--out", str(out),
                     "--data-root", str(data_root)]) == 0
    (record,) = [json.loads(p.read_text()) for p in (out / "records").glob("*.json")]
    assert (record["agent"], record["status"], record["success"]) == ("floor:sweep", "scored", False)
    assert record["process"]["distractors_called"] and not (out / "floors").exists()
    capsys.readouterr()
