"""Runner, ToolBox modes, replay / offline re-scoring, report tables and the CLI."""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path
from typing import Any, ClassVar

import pytest
from mcp.server import MCPServer

from sfbench_jax.agent_eval import cli
from sfbench_jax.agent_eval.agents import ReplayAgent, ScriptedAgent
from sfbench_jax.agent_eval.agents.base import AgentResult
from sfbench_jax.agent_eval.report import aggregate, summarise, to_markdown, write_report
from sfbench_jax.agent_eval.runner import execute_run, score_trace
from sfbench_jax.agent_eval.scenario import Scenario, canonical_json
from sfbench_jax.agent_eval.stats import wilson_interval
from sfbench_jax.agent_eval.toolbox import ToolBudgetError, connect
from sfbench_jax.agent_eval.trace import TraceRecorder, read_trace, write_trace

pytestmark = pytest.mark.anyio


def without_timing(record: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in record.items() if k != "timing"}


async def test_rescoring_a_saved_trace_is_byte_identical(
        eval_server: MCPServer, scenario_map: dict[str, Scenario], tmp_path: Path) -> None:
    scenario = scenario_map["fault_cwru_inner_race"]
    async with connect(eval_server) as session:
        events, record = await execute_run(scenario, ScriptedAgent([scenario]), session,
                                           mode="tools_provided", run_index=2, seed=11)
    path = tmp_path / "trace.jsonl"
    write_trace(path, events)
    rescored = score_trace(scenario, read_trace(path))
    assert canonical_json(without_timing(rescored)) == canonical_json(without_timing(record))
    assert rescored["record_hash"] == record["record_hash"]
    assert record["run_id"] == "fault_cwru_inner_race:tools_provided:scripted:2"
    assert record["seed"] == 11 and record["success"] is True
    assert record["versions"]["mcp"].startswith("2.")


async def test_replay_reexecutes_recorded_calls(eval_server: MCPServer,
                                                scenario_map: dict[str, Scenario]) -> None:
    scenario = scenario_map["cost_battery_replacement_schedule"]
    async with connect(eval_server) as session:
        events, original = await execute_run(scenario, ScriptedAgent([scenario]), session,
                                             mode="tools_provided")
        replay_events, replayed = await execute_run(scenario, ReplayAgent([events]), session,
                                                    mode="tools_provided")
    assert replayed["agent"] == "replay" and replayed["success"] is True
    assert replayed["validator_results"] == original["validator_results"]
    assert replayed["metrics"] == original["metrics"]
    original_calls = [e["structured"] for e in events if e["kind"] == "tool_call"]
    replayed_calls = [e["structured"] for e in replay_events if e["kind"] == "tool_call"]
    assert replayed_calls == original_calls


async def test_toolbox_modes_budget_and_statuses(eval_server: MCPServer) -> None:
    async with connect(eval_server) as session:
        recorder = TraceRecorder(run_id="r", scenario_id="s")
        box = session.toolbox(allowed=["assess_safety_risk", "web_search"], recorder=recorder,
                              max_tool_calls=6)
        assert {s.name for s in box.specs()} == {"assess_safety_risk", "web_search"}
        assert {s.server for s in box.specs()} == {"maintenance-server"}
        blocked = await box.call("load_dataset", {"dataset_name": "cmapss_fd001"})
        unknown = await box.call("rm_rf", {})
        bad_json = await box.call("assess_safety_risk", "{not json")
        not_object = await box.call("assess_safety_risk", "[1, 2]")
        invalid = await box.call("assess_safety_risk", {"failure_mode": "x", "severity": 0,
                                                        "probability": 1, "detectability": 1})
        ok = await box.call("assess_safety_risk", '{"failure_mode": "x", "severity": 2, '
                                                  '"probability": 3, "detectability": 4}')
        assert [o.status for o in (blocked, unknown, bad_json, not_object, invalid, ok)] == [
            "blocked", "unknown_tool", "invalid_arguments", "invalid_arguments",
            "invalid_arguments", "ok"]
        assert ok.structured["rpn"] == 24
        with pytest.raises(ToolBudgetError):
            await box.call("web_search", {"query": "x"})
        assert len([e for e in recorder.events if e["kind"] == "tool_call"]) == 6
        everything = session.toolbox(allowed=None, recorder=recorder)
        assert len(everything.specs()) == len(session.catalog)
        domain = await everything.call("optimize_replacement_age", {
            "weibull_shape": 2, "weibull_scale": 100, "preventive_cost": 5, "failure_cost": 1})
        assert domain.status == "domain_error" and "[domain_error]" in domain.text


class _Exhausting:
    """An agent that keeps calling a tool until the ToolBox refuses."""

    name = "exhausting"
    model = "none"
    sampling: ClassVar[dict[str, Any]] = {}

    async def run(self, task: Any, tools: Any) -> AgentResult:
        while True:
            await tools.call("assess_safety_risk", {"failure_mode": "x", "severity": 8,
                                                    "probability": 5, "detectability": 4})


async def test_call_budget_stops_the_run(eval_server: MCPServer,
                                         scenario_map: dict[str, Scenario]) -> None:
    scenario = scenario_map["safety_gearbox_fmea_risk"]
    async with connect(eval_server) as session:
        _, record = await execute_run(scenario, _Exhausting(), session, mode="tools_provided")
    assert record["stop_reason"] == "max_steps"
    assert record["metrics"]["n_tool_calls"] == scenario.limits["max_tool_calls"]
    assert record["failure"]["primary"] == "orchestration"


def _record(scenario: str, task: str, success: bool, index: int, label: str | None = None,
            status: str = "scored") -> dict[str, Any]:
    return {"run_id": f"{scenario}:{index}", "scenario_id": scenario, "task_type": task,
            "agent": "a", "model": "m", "mode": "tools_provided", "status": status,
            "success": success if status == "scored" else None, "evaluator_error": "",
            "failure": {"primary": label, "flags": ["x"] if label else []},
            "metrics": {"n_tool_calls": 2, "n_llm_turns": 0, "tool_precision": 1.0,
                        "tool_recall": 1.0 if success else 0.5, "distractor_rate": 0.0,
                        "sequencing_accuracy": 1.0}}


def test_report_rows_markdown_and_csv(tmp_path: Path) -> None:
    records = [_record("s1", "cost_benefit", True, 0), _record("s1", "cost_benefit", True, 1),
               _record("s2", "safety_policy", True, 0),
               _record("s2", "safety_policy", False, 1, "reasoning"),
               _record("s3", "safety_policy", False, 0, "orchestration", status="harness_error")]
    rows = summarise(records)
    overall = rows[0]
    assert (overall["task_type"], overall["scenarios"], overall["runs"]) == ("all", 2, 4)
    assert overall["pass_at_1"] == pytest.approx(3 / 4)
    assert overall["pass_all_n"] == pytest.approx(1 / 2)
    assert overall["pass_hat_2"] == pytest.approx((1 + 0) / 2)
    assert (overall["reasoning"], overall["excluded_runs"]) == (1, 1)
    assert overall["tool_recall"] == pytest.approx(3.5 / 4)
    # Wilson 95% by hand for 3 of 4 runs: centre (p + z^2/2n) / (1 + z^2/n), half-width
    # z sqrt(p(1-p)/n + z^2/4n^2) / (1 + z^2/n).
    z, p, n = 1.959963984540054, 0.75, 4
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    assert overall["pass_at_1_ci_low"] == pytest.approx(centre - half)
    assert overall["pass_at_1_ci_high"] == pytest.approx(centre + half)
    assert overall["split"] == "all"
    assert [r["task_type"] for r in rows] == ["all", "cost_benefit", "safety_policy"]
    paths = write_report(records, tmp_path)
    with paths["csv"].open() as handle:
        table = list(csv.DictReader(handle))
    assert table[1]["task_type"] == "cost_benefit" and float(table[1]["pass_at_1"]) == 1.0
    markdown = paths["markdown"].read_text()
    assert to_markdown(rows) in markdown
    assert "| a | m | tools_provided | explicit | all | all | 2 | 4 | 2 | 0.750 [0.301, 0.954] |" in markdown
    summary = json.loads(paths["json"].read_text())
    assert summary["failure_labels"] == {"reasoning": 1}
    assert summary["excluded"][0]["status"] == "harness_error"


def test_report_scores_the_transfer_split_and_asset_classes() -> None:
    records = [dict(_record("s1", "cost_benefit", True, 0), split="in_distribution",
                    asset_class="compressor"),
               dict(_record("s2", "cost_benefit", False, 0, "reasoning"), split="transfer",
                    asset_class="gearbox"),
               dict(_record("s3", "safety_policy", True, 0), split="transfer",
                    asset_class="gearbox")]
    rows = {(r["split"], r["task_type"]): r for r in summarise(records)}
    assert rows[("in_distribution", "all")]["pass_at_1"] == 1.0
    transfer = rows[("transfer", "all")]
    assert (transfer["scenarios"], transfer["pass_at_1"]) == (2, 0.5)
    assert rows[("all", "all")]["scenarios"] == 3
    classes = {r["asset_class"]: r for r in aggregate(records)["by_asset_class"]}
    assert classes["gearbox"]["split"] == "transfer" and classes["gearbox"]["runs"] == 2
    assert classes["gearbox"]["pass_at_1_ci_high"] == pytest.approx(wilson_interval(1, 2)[1])


def test_cli_run_score_report(tmp_path: Path, data_root: Path,
                              capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "scripted"
    ids = ["safety_motor_voltage_unbalance", "health_turbofan_hpt_mcq"]
    assert cli.main(["run", "--agent", "scripted", "--ids", *ids, "--repeats", "2", "--out",
                     str(out), "--data-root", str(data_root)]) == 0
    records = {p.name: json.loads(p.read_text()) for p in (out / "records").glob("*.json")}
    assert len(records) == 4 and all(r["success"] for r in records.values())
    assert len(list((out / "traces").glob("*.jsonl"))) == 4
    rescored = tmp_path / "rescored"
    assert cli.main(["score", "--traces", str(out / "traces"), "--out", str(rescored)]) == 0
    for name, record in records.items():
        again = json.loads((rescored / "records" / name).read_text())
        assert again["record_hash"] == record["record_hash"]
    (out / "report.md").unlink()
    assert cli.main(["report", str(out)]) == 0
    assert "| scripted | reference_solution | tools_provided | explicit | all | all | 2 | 4 | 2 | 1.000 [" in \
        (out / "report.md").read_text()
    fault = tmp_path / "fault"
    assert cli.main(["run", "--agent", "fault:stop_early", "--ids", "cost_pump_pm_program_roi",
                     "--out", str(fault), "--data-root", str(data_root)]) == 0
    assert "| 0.000 |" in (fault / "report.md").read_text()
    capsys.readouterr()


async def test_toolbox_over_three_group_servers(data_root: Path) -> None:
    from sfbench_jax.mcp.server import ServerConfig, build_server

    servers = [build_server(ServerConfig(data_root=data_root, groups=(group,)))
               for group in ("prognostics", "maintenance", "battery")]
    async with connect(servers) as session:
        by_server = {}
        for spec in session.catalog:
            by_server.setdefault(spec.server, set()).add(spec.name)
        assert set(by_server) == {"prognostics-server", "maintenance-server",
                                  "battery-prognostics-server"}
        recorder = TraceRecorder(run_id="r", scenario_id="s")
        box = session.toolbox(allowed=None, recorder=recorder)
        risk = await box.call("assess_safety_risk", {"failure_mode": "x", "severity": 8,
                                                     "probability": 5, "detectability": 4})
        soh = await box.call("capacity_soh_calculator", {"battery_id": "B0018", "cycle": 1})
        assert risk.ok and soh.ok and soh.structured["soh_first_cycle"] == pytest.approx(1.0)
        assert [e["server"] for e in recorder.events] == ["maintenance-server",
                                                          "battery-prognostics-server"]
    async with connect([servers[1], servers[1]]) as twice:
        names = [spec.name for spec in twice.catalog]
        assert len(names) == len(set(names))
        assert "maintenance-server__web_search" in names
