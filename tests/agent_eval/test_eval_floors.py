"""The floor agents and the floors' table: deterministic floors through the real server, the model read
against them with Wilson intervals and McNemar's test (expected values from SciPy and by hand)."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from mcp.server import MCPServer
from scipy.stats import binomtest

from sfbench_jax.agent_eval import cli
from sfbench_jax.agent_eval.agents import AGENT_KINDS, FLOOR_KINDS, RandomToolAgent, TemplateConstantAgent
from sfbench_jax.agent_eval.agents.base import AgentTask
from sfbench_jax.agent_eval.agents.floors import constant_fill, floor_agent, floor_rng, random_fill
from sfbench_jax.agent_eval.floors import floor_rows, floors_markdown
from sfbench_jax.agent_eval.report import aggregate, printed_tables, write_report
from sfbench_jax.agent_eval.runner import execute_run
from sfbench_jax.agent_eval.scenario import Scenario
from sfbench_jax.agent_eval.toolbox import connect

IDS = ("health_turbofan_hpt_mcq", "safety_motor_voltage_unbalance", "cost_compressor_pm_frequency",
       "rul_cmapss_fd001_fleet")
FIXTURE_TRACES = Path(__file__).parent / "fixtures" / "llm_traces"
TEMPLATE = {"type": "object", "required": ["zone", "ok"], "properties": {
    "zone": {"type": "string", "enum": ["B", "A", "C"]},
    "ok": {"type": "boolean"},
    "rul": {"type": "number"},
    "count": {"type": "integer", "minimum": 3},
    "ratio": {"type": "number", "exclusiveMinimum": 0.5, "maximum": 2},
    "note": {"type": "string"},
    "units": {"type": "array", "items": {"type": "integer"}},
    "top": {"type": "array", "minItems": 2, "items": {"type": "string", "enum": ["x", "y"]}},
    "level": {"const": "SIL 2"},
    "nested": {"type": "object", "properties": {"flag": {"type": "boolean"}, "cost": {"type": "number"}}},
}}


def _untimed(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{k: v for k, v in e.items() if k not in ("t_ms", "latency_ms")} for e in events]


def _task(scenario: Scenario, seed: int = 0, run_index: int = 0) -> AgentTask:
    return AgentTask(scenario_id=scenario.id, run_index=run_index, query=scenario.query,
                     output_template=scenario.output_template, dataset_context=None,
                     limits=dict(scenario.limits), seed=seed + run_index)


def test_floors_are_registered_agent_kinds() -> None:
    assert set(FLOOR_KINDS) == {"floor:template_constant", "floor:random_tool", "floor:sweep"}
    assert set(FLOOR_KINDS) <= set(AGENT_KINDS)
    assert isinstance(floor_agent("floor:template_constant"), TemplateConstantAgent)
    assert isinstance(floor_agent("floor:random_tool"), RandomToolAgent)
    with pytest.raises(ValueError, match="choose from"):
        floor_agent("floor:oracle")
    with pytest.raises(ValueError, match="max_calls"):
        RandomToolAgent(max_calls=0)


def test_constant_fill_of_a_hand_made_template() -> None:
    assert constant_fill(TEMPLATE) == {
        "zone": "B", "ok": False, "rul": 0.0, "count": 3, "ratio": 0.5 + 1e-6, "note": "", "units": [],
        "top": ["x", "x"], "level": "SIL 2", "nested": {"flag": False, "cost": 0.0}}
    jsonschema.validate(constant_fill(TEMPLATE), TEMPLATE)


def test_random_fill_is_schema_valid_and_seeded(scenarios: list[Scenario]) -> None:
    draws = [random_fill(TEMPLATE, random.Random(seed)) for seed in range(100)]
    for value in draws:
        jsonschema.validate(value, TEMPLATE)
    assert {d["zone"] for d in draws} == {"A", "B", "C"} and {d["ok"] for d in draws} == {True, False}
    assert all(3 <= d["count"] <= 103 for d in draws if "count" in d)
    assert draws == [random_fill(TEMPLATE, random.Random(seed)) for seed in range(100)]
    for scenario in scenarios:  # every real output template
        jsonschema.validate(random_fill(scenario.output_template, random.Random(1)), scenario.output_template)
        jsonschema.validate(constant_fill(scenario.output_template), scenario.output_template)


@pytest.mark.anyio
async def test_every_tool_schema_gets_valid_random_arguments(eval_server: MCPServer) -> None:
    async with connect(eval_server) as session:
        catalog = session.catalog
    assert len(catalog) > 20
    for spec in catalog:
        for seed in range(5):
            jsonschema.validate(random_fill(spec.input_schema, random.Random(seed)), spec.input_schema)


@pytest.mark.anyio
async def test_template_constant_agent_makes_no_tool_call(eval_server: MCPServer,
                                                          scenario_map: dict[str, Scenario]) -> None:
    async with connect(eval_server) as session:
        for scenario_id in IDS:
            scenario = scenario_map[scenario_id]
            events, record = await execute_run(scenario, TemplateConstantAgent(), session, mode="tools_provided")
            assert [e["kind"] for e in events] == ["run_start", "final"]
            assert record["metrics"]["n_tool_calls"] == 0 and record["status"] == "scored"
            assert events[-1]["final_answer"] == constant_fill(scenario.output_template)
            again, _ = await execute_run(scenario, TemplateConstantAgent(), session, mode="tools_provided", seed=9)
            assert again[-1]["final_answer"] == events[-1]["final_answer"]


@pytest.mark.anyio
async def test_random_tool_agent_same_seed_same_trace(eval_server: MCPServer,
                                                      scenario_map: dict[str, Scenario]) -> None:
    agent = RandomToolAgent()
    traces: dict[tuple[str, int], list[dict[str, Any]]] = {}
    async with connect(eval_server) as session:
        for scenario_id in IDS:
            for seed in (0, 0, 1):
                events, record = await execute_run(scenario_map[scenario_id], agent, session,
                                                   mode="tools_provided", seed=seed)
                calls = [e for e in events if e["kind"] == "tool_call"]
                visible = set(scenario_map[scenario_id].required_tools) | set(
                    scenario_map[scenario_id].distractor_tools)
                assert 1 <= len(calls) <= 3 and {c["tool"] for c in calls} <= visible
                assert all(c["status"] != "blocked" for c in calls) and record["status"] == "scored"
                if (scenario_id, seed) in traces:
                    assert _untimed(events) == _untimed(traces[(scenario_id, seed)])
                traces[(scenario_id, seed)] = events
    differing = [s for s in IDS if _untimed(traces[(s, 0)])[1:] != _untimed(traces[(s, 1)])[1:]]
    assert len(differing) >= 3  # another seed draws other calls or another answer
    # the draws of a run depend on its own seed, scenario and repeat only
    scenario = scenario_map[IDS[0]]
    assert floor_rng(_task(scenario, 0, 1)).random() != floor_rng(_task(scenario, 1, 0)).random()


def _record(scenario: str, agent: str, success: bool, task_type: str = "health_analysis",
            run_index: int = 0, status: str = "scored") -> dict[str, Any]:
    return {"run_id": f"{scenario}:tools_provided:{agent}:{run_index}", "scenario_id": scenario,
            "task_type": task_type, "asset_class": "pump", "split": "in_distribution", "agent": agent,
            "model": agent, "mode": "tools_provided", "run_index": run_index, "seed": 0, "status": status,
            "success": success if status == "scored" else None, "evaluator_error": "",
            "failure": {"primary": None if success else "reasoning", "flags": []},
            "metrics": {"n_tool_calls": 0, "n_llm_turns": 0, "tool_precision": 1.0, "tool_recall": 0.0,
                        "distractor_rate": 0.0, "sequencing_accuracy": 1.0, "n_calls_by_status": {}}}


def _paired_table() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """15 scenarios: both pass 2, only the model 7, only the floor 1, neither 5."""
    cells = [(True, True)] * 2 + [(True, False)] * 7 + [(False, True)] * 1 + [(False, False)] * 5
    model = [_record(f"s{i:02d}", "llm", m, "cost_benefit" if i < 6 else "health_analysis")
             for i, (m, _) in enumerate(cells)]
    floor = [_record(f"s{i:02d}", "floor:template_constant", f, "cost_benefit" if i < 6 else "health_analysis")
             for i, (_, f) in enumerate(cells)]
    model.append(_record("s99", "llm", False, status="harness_error"))  # excluded: not paired, not counted
    return model, floor


def test_mcnemar_against_the_floor_on_a_hand_made_table() -> None:
    model, floor = _paired_table()
    rows = floor_rows(model, floor)
    overall = next(r for r in rows if r["group"] == "all")
    assert (overall["scenarios"], overall["both"], overall["only_model"], overall["only_floor"],
            overall["neither"]) == (15, 2, 7, 1, 5)
    # exact McNemar: 2 * P[Binomial(8, 1/2) <= 1] = 2 * 9 / 256, SciPy's two-sided binomial test agrees
    assert overall["mcnemar_p"] == pytest.approx(18 / 256)
    assert overall["mcnemar_p"] == pytest.approx(binomtest(1, 8, 0.5).pvalue)
    assert overall["pass_at_1"] == pytest.approx(9 / 15) and overall["floor_pass_at_1"] == pytest.approx(3 / 15)
    for rate, low, high in (("pass_at_1", "pass_at_1_ci_low", "pass_at_1_ci_high"),
                            ("floor_pass_at_1", "floor_pass_at_1_ci_low", "floor_pass_at_1_ci_high")):
        expected = binomtest(round(overall[rate] * 15), 15).proportion_ci(method="wilson")
        assert (overall[low], overall[high]) == pytest.approx((expected.low, expected.high), abs=1e-9)
    # cost_benefit = s00..s05: both 2, only model 4 -> p = 2 * 0.5^4
    cost = next(r for r in rows if r["group"] == "task_type=cost_benefit")
    assert (cost["both"], cost["only_model"], cost["only_floor"], cost["neither"]) == (2, 4, 0, 0)
    assert cost["mcnemar_p"] == pytest.approx(2 / 16)


def test_scenario_pairing_over_repeats_and_floor_records_kept_out_of_model_rows() -> None:
    model = [_record("a", "llm", True, run_index=0), _record("a", "llm", False, run_index=1),
             _record("b", "llm", True, run_index=0), _record("b", "llm", True, run_index=1)]
    floor = [_record(s, "floor:random_tool", s == "a", run_index=i) for s in "ab" for i in (0, 1)]
    overall = floor_rows(model, floor)[0]
    # a: model solved 1 of 2 repeats (not solved), floor 2 of 2; b: model solved, floor not
    assert (overall["both"], overall["only_model"], overall["only_floor"], overall["neither"]) == (0, 1, 1, 0)
    assert (overall["runs"], overall["pass_at_1"], overall["floor_pass_at_1"]) == (4, 0.75, 0.5)
    summary = aggregate(model, floor)
    assert {r["agent"] for r in summary["rows"]} == {"llm"} and summary["floors"][0]["floor"] == "floor:random_tool"
    assert floor_rows(model, []) == [] and "No floor runs" in floors_markdown([])


def test_report_shows_the_floors_with_intervals(tmp_path: Path) -> None:
    model, floor = _paired_table()
    paths = write_report(model, tmp_path, floor)
    text = paths["markdown"].read_text()
    row = ("| llm / llm / tools_provided | all | 15 | 0.600 [0.357, 0.802] | floor:template_constant | "
           "0.200 [0.070, 0.452] | 2 | 7 | 1 | 5 | 0.070 |")
    assert "## Floors" in text and row in text
    assert row in printed_tables(json.loads(paths["json"].read_text()))
    assert paths["floors_csv"].read_text().splitlines()[0].startswith("agent,model,mode,floor,group")
    write_report(model, tmp_path)  # without floors: no stale floors table
    assert not (tmp_path / "floors.csv").exists() and "No floor runs" in (tmp_path / "report.md").read_text()


def test_cli_run_score_report_with_floors(tmp_path: Path, data_root: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "ref"
    assert cli.main(["run", "--agent", "scripted", "--ids", *IDS[:2], "--out", str(out),
                     "--data-root", str(data_root)]) == 0
    printed = capsys.readouterr().out
    assert "| scripted / reference_solution / tools_provided | all | 2 | 1.000 [0.342, 1.000] | floor:" in printed
    assert "(6 floor runs in" in printed
    floor_records = {p.name: json.loads(p.read_text()) for p in (out / "floors" / "records").glob("*.json")}
    assert {r["agent"] for r in floor_records.values()} == set(FLOOR_KINDS) and len(floor_records) == 6
    assert len(list((out / "records").glob("*.json"))) == 2  # the model's folder holds only the model
    # score re-scores the stored floor traces next to the traces, byte for byte
    rescored = tmp_path / "rescored"
    assert cli.main(["score", "--traces", str(out / "traces"), "--out", str(rescored)]) == 0
    for name, record in floor_records.items():
        assert json.loads((rescored / "floors" / "records" / name).read_text())["record_hash"] == \
            record["record_hash"]
    assert "floor:template_constant" in capsys.readouterr().out
    assert cli.main(["report", str(out)]) == 0
    floors_section = (out / "report.md").read_text().split("## Floors\n")[1]
    assert "| scripted / reference_solution / tools_provided | all | 2 | 1.000 [0.342, 1.000] |" in floors_section
    assert cli.main(["run", "--agent", "scripted", "--ids", IDS[0], "--no-floors", "--out", str(tmp_path / "n"),
                     "--data-root", str(data_root)]) == 0
    assert not (tmp_path / "n" / "floors").exists()
    capsys.readouterr()


def test_cli_score_of_stored_traces_runs_the_floors(tmp_path: Path, data_root: Path,
                                                    capsys: pytest.CaptureFixture[str],
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    traces = tmp_path / "traces"
    traces.mkdir()
    for path in FIXTURE_TRACES.glob("*.jsonl"):
        (traces / path.name).write_bytes(path.read_bytes())
    monkeypatch.delenv("SFBENCH_DATA_ROOT", raising=False)
    with pytest.raises(SystemExit) as refused:  # the floors need the server: refused before any work
        cli.main(["score", "--traces", str(traces), "--out", str(tmp_path / "none")])
    assert refused.value.code == 2 and not (tmp_path / "none").exists()
    assert "no data root for the floors" in capsys.readouterr().err
    out = tmp_path / "smollm2"
    assert cli.main(["score", "--traces", str(traces), "--out", str(out), "--data-root", str(data_root)]) == 0
    n = len(list(traces.glob("*.jsonl")))
    # the stalled request is a harness error: left out of the pairs, so one scenario fewer is paired
    n_scored = sum(json.loads(path.read_text())["status"] == "scored"
                   for path in FIXTURE_TRACES.glob("*.record.json"))
    assert n_scored == n - 1
    summary = json.loads((out / "aggregate.json").read_text())
    floors = {r["floor"]: r for r in summary["floors"] if r["group"] == "all"}
    assert set(floors) == set(FLOOR_KINDS) and all(r["scenarios"] == n_scored for r in floors.values())
    assert len(list((out / "floors" / "traces").glob("*.jsonl"))) == len(FLOOR_KINDS) * n
    assert "llm / smollm2-135m-instruct / tools_provided | all" in capsys.readouterr().out
    assert cli.main(["score", "--traces", str(traces), "--out", str(tmp_path / "bare"), "--no-floors"]) == 0
    assert json.loads((tmp_path / "bare" / "aggregate.json").read_text())["floors"] == []
    with pytest.raises(SystemExit):
        cli.main(["score", "--traces", str(traces), "--out", str(tmp_path / "x"), "--floor-traces",
                  str(tmp_path / "missing")])
    capsys.readouterr()


def test_doc_table_renders_floors_reference_model_and_the_published_run(load_script: Any) -> None:
    script = load_script("agent_floors_table")
    ids = [f"s{i}" for i in range(10)]
    scripted = [_record(s, "scripted", True) for s in ids]
    floors = [_record(s, "floor:template_constant", s in ("s0", "s1", "s2")) for s in ids]
    floors += [_record(s, "floor:random_tool", False) for s in ids]
    model = [_record(s, "llm", s == "s3") for s in ids[:4]]
    model_floors = [r for r in floors if r["scenario_id"] in ids[:4]]
    table = script.render(aggregate(scripted, floors), aggregate(model, model_floors), published=("full run", 0, 10))
    lines = table.splitlines()
    assert lines[0].count("McNemar p") == 2  # one column per floor given (the sweep's only where it ran)
    assert lines[2].startswith("| floor:template_constant | 10 | 3/10 = 0.300 [")
    assert lines[3].startswith("| floor:random_tool | 10 | 0/10 = 0.000 [0.000, ")
    # scripted vs template floor: only agent 7, only floor 0 -> 2 * 0.5^7; vs random: 2 * 0.5^10
    assert lines[4] == (f"| scripted reference | 10 | 10/10 = 1.000 [{wilson_low(10, 10):.3f}, 1.000] | 10/10 | "
                        f"7 / 0, p = {2 / 2**7:.3f} | 10 / 0, p = {2 / 2**10:.3f} |")
    # the model on s0..s3: passes s3 only; template floor passes s0..s2 -> 1 / 3, p = 2 * P[Bin(4,1/2) <= 1]
    assert lines[5].startswith("| llm / llm (stored traces) | 4 | 1/4 = 0.250 [")
    assert f"1 / 3, p = {binomtest(1, 4, 0.5).pvalue:.3f}" in lines[5]
    assert lines[6].endswith(f"| 0 / 3, p = {2 / 2**3:.3f} | 0 / 0, p = 1.000 |")
    with pytest.raises(ValueError, match="failed every scenario"):
        script.render(aggregate(scripted, floors), aggregate(model, floors), published=("x", 1, 10))


def test_model_traces_that_are_not_a_run_are_refused_before_any_run(load_script: Any, tmp_path: Path) -> None:
    import tarfile

    script = load_script("agent_floors_table")
    with pytest.raises(SystemExit, match="neither a traces folder nor a .tar.xz archive"):
        script.model_traces(tmp_path / "missing.tar.xz", tmp_path)
    (tmp_path / "notes.txt").write_text("not traces")
    with pytest.raises(SystemExit, match="neither a traces folder nor a .tar.xz archive"):
        script.model_traces(tmp_path / "notes.txt", tmp_path)
    with tarfile.open(tmp_path / "records.tar.xz", "w:xz") as archive:  # a run folder's records, not its traces
        archive.add(tmp_path / "notes.txt", arcname="records/notes.txt")
    with pytest.raises(SystemExit, match="the archive holds no traces/ folder"):
        script.model_traces(tmp_path / "records.tar.xz", tmp_path / "scratch")
    assert script.model_traces(tmp_path, tmp_path) == tmp_path  # a folder is taken as it is


def wilson_low(successes: int, n: int) -> float:
    """The Wilson 95% lower end from SciPy."""
    return binomtest(successes, n).proportion_ci(method="wilson").low


@pytest.mark.parametrize("mode", ["rag", "no-domain-tools"])
def test_floors_run_in_the_ablation_modes(mode: str, tmp_path: Path, data_root: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / mode
    assert cli.main(["run", "--agent", "scripted", "--mode", mode, "--ids", IDS[1], "--out", str(out),
                     "--data-root", str(data_root)]) == 0
    records = [json.loads(p.read_text()) for p in sorted((out / "floors" / "records").glob("*.json"))]
    assert [r["agent"] for r in records] == sorted(FLOOR_KINDS) and all(r["status"] == "scored" for r in records)
    assert {r["mode"] for r in records} == {mode.replace("-", "_")}
    random_calls = next(r for r in records if r["agent"] == "floor:random_tool")["metrics"]["n_tool_calls"]
    assert random_calls == 0 if mode == "rag" else 1 <= random_calls <= 3  # rag shows no tool
    assert "floor:random_tool" in (out / "report.md").read_text().split("## Floors")[1]
    capsys.readouterr()
