"""The four evaluation modes: allow-lists, the rag evidence and the generic-tools server, and the
OpenAI-compatible LLM agent driven through rag and no_domain_tools over real loopback HTTP.

The chat server is ``eval_helpers.ChatServer`` (stdlib HTTP on 127.0.0.1); its policies read the
prompt and the tool results the agent really sent, so every number in their answers comes from
the evidence or the generic tools, never from the ground truth.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
from eval_helpers import ChatServer, completion, tool_call, tool_results
from mcp.server import MCPServer

from sfbench_jax.agent_eval import cli
from sfbench_jax.agent_eval.agents.llm import HttpChatBackend, LLMAgent, LLMConfig
from sfbench_jax.agent_eval.calculator import CalculatorError, evaluate_expression
from sfbench_jax.agent_eval.evidence import EvidenceLibrary, dataset_chunks, scenario_datasets
from sfbench_jax.agent_eval.generic_server import build_generic_server
from sfbench_jax.agent_eval.modes import (
    GENERIC_SERVER,
    GENERIC_STUB_TOOLS,
    MODES,
    allowed_tools,
    canonical_mode,
)
from sfbench_jax.agent_eval.runner import execute_run, score_trace
from sfbench_jax.agent_eval.scenario import Scenario
from sfbench_jax.agent_eval.toolbox import connect
from sfbench_jax.mcp.datasets import DataStore

pytestmark = pytest.mark.anyio
GENERIC_TOOLS = {"list_raw_datasets", "read_raw_data", "calculator"}


@pytest.fixture(scope="module")
def generic_server(data_root: Path) -> MCPServer:
    """The generic-tools server on the real data root."""
    return build_generic_server(data_root)


@pytest.fixture(scope="module")
def evidence(data_root: Path) -> EvidenceLibrary:
    """BM25 evidence over the real data."""
    return EvidenceLibrary(data_root)


def agent_for(server: ChatServer) -> LLMAgent:
    config = LLMConfig(base_url=server.base_url, model="scripted-test-model", seed=3)
    return LLMAgent(config, HttpChatBackend(config.base_url, api_key=None))


async def test_mode_names_and_allow_lists(eval_server: MCPServer, generic_server: MCPServer,
                                          scenario_map: dict[str, Scenario]) -> None:
    assert MODES == ("tools_provided", "unknown_tools", "no_domain_tools", "rag")
    assert canonical_mode("no-domain-tools") == "no_domain_tools" == canonical_mode(
        "no_domain_tools")
    with pytest.raises(ValueError, match="unknown mode 'tools'"):
        canonical_mode("tools")
    scenario = scenario_map["safety_gearbox_fmea_risk"]
    async with connect([eval_server, generic_server]) as session:
        catalog = session.catalog
        domain = {s.name for s in catalog if s.server != GENERIC_SERVER}
        assert {s.name for s in catalog if s.server == GENERIC_SERVER} == GENERIC_TOOLS
        assert set(allowed_tools(scenario, "tools_provided", catalog)) == \
            {*scenario.required_tools, *scenario.distractor_tools}
        assert set(allowed_tools(scenario, "unknown_tools", catalog)) == domain
        assert set(allowed_tools(scenario, "no_domain_tools", catalog)) == \
            GENERIC_TOOLS | set(GENERIC_STUB_TOOLS)
        assert allowed_tools(scenario, "rag", catalog) == ()
    async with connect(eval_server) as domain_only:
        assert allowed_tools(scenario, "unknown_tools", domain_only.catalog) is None
        with pytest.raises(ValueError, match="needs the generic-tools server"):
            allowed_tools(scenario, "no_domain_tools", domain_only.catalog)


def test_calculator_allows_arithmetic_only() -> None:
    assert evaluate_expression("polyfit(t, y, 1)[0]", {"t": [1, 2, 3], "y": [2, 4, 6]}) == \
        pytest.approx(2.0)
    assert evaluate_expression("std(x, ddof=1)", {"x": [1, 2, 3, 4]}) == pytest.approx(
        math.sqrt(5 / 3))
    assert evaluate_expression("x[-2:] > 2", {"x": [1, 2, 3, 4]}) == [True, True]
    for expression, message in [("__import__('os')", "not available"),
                                ("x.__class__", "Attribute is not allowed"),
                                ("[i for i in x]", "ListComp is not allowed"),
                                ("10 ** 10 ** 10", "OverflowError"), ("1 / 0", "ZeroDivision"),
                                ("arange(1e9)", "outside 0..100000"), ("log(-1)", "not finite")]:
        with pytest.raises(CalculatorError, match=message):
            evaluate_expression(expression, {"x": [1.0, 2.0]})


async def test_generic_server_serves_raw_rows_never_ground_truth(
        generic_server: MCPServer, data_root: Path) -> None:
    store = DataStore(data_root)
    cell = store.battery("B0005")
    async with connect(generic_server) as session:
        box = session.toolbox(allowed=None, recorder=_recorder())
        page = await box.call("read_raw_data", {"dataset_name": "B0005", "start_row": 98,
                                                "max_rows": 5})
        assert page.ok and page.structured["n_rows_total"] == cell.cycle.shape[0]
        assert page.structured["rows"][1][:2] == [100.0, pytest.approx(cell.capacity_ah[99])]
        assert page.structured["next_start_row"] == 103
        engine = await box.call("read_raw_data", {"dataset_name": "cmapss_fd001", "unit_id": 1})
        assert engine.ok and engine.structured["columns"][:2] == ["cycle", "setting1"]
        fleet = await box.call("read_raw_data", {"dataset_name": "cmapss_fd001"})
        assert fleet.structured["info"]["n_units"] == 100
        assert "rul" not in json.dumps(fleet.structured).lower()
        refused = await box.call("read_raw_data", {"dataset_name": "../phm/cmapss"})
        bad = await box.call("calculator", {"expression": "open('x')"})
        undeclared = await box.call("read_raw_data", {"dataset_name": "B0005", "rows": 3})
        assert (refused.status, bad.status) == ("invalid_arguments", "domain_error")
        assert undeclared.status == "invalid_arguments" and "'rows'" in undeclared.text
    async with connect(build_generic_server(None)) as bare:  # bundled data only
        box = bare.toolbox(allowed=None, recorder=_recorder())
        bundled = await box.call("read_raw_data", {"dataset_name": "cmapss_fd001", "max_rows": 1})
        missing = await box.call("read_raw_data", {"dataset_name": "nasa_battery_b0005"})
        assert bundled.ok and bundled.structured["n_rows_total"] == 100
        assert missing.status == "domain_error" and "[unavailable]" in missing.text


def _recorder() -> Any:
    from sfbench_jax.agent_eval.trace import TraceRecorder

    return TraceRecorder(run_id="r", scenario_id="s")


def test_evidence_renders_the_data_without_labels(data_root: Path,
                                                  scenario_map: dict[str, Scenario]) -> None:
    store = DataStore(data_root)
    chunks = dataset_chunks(store, "nasa_battery_b0005")
    first = next(c for c in chunks if c.chunk_id == "nasa_battery_b0005#discharge-0")
    assert f"{store.battery('B0005').capacity_ah[0]:.6g}" in first.text
    cwru = " ".join(c.text for c in dataset_chunks(store, "cwru_bearing_nie")).lower()
    assert "inner" not in cwru and "12000 hz" in cwru
    assert scenario_datasets(scenario_map["fault_cwru_fleet_classification"]) == [
        "cwru_bearing_epr", "cwru_bearing_nie", "cwru_bearing_ose", "cwru_bearing_vaw"]
    assert scenario_datasets(scenario_map["health_pump_vibration_zone"]) == []


def pump_zone_policy(request: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    """A retrieval-only analyst: reads the ISO 10816-3 note from the passages and converts."""
    assert "tools" not in request
    system, user = (m["content"] for m in request["messages"][:2])
    assert "You have no tools" in system
    assert "Context passages:" in user and "group 2 rigid 1.4, 2.8, 4.5" in user
    velocity = 0.15 * 25.4 / math.sqrt(2.0)  # in/s peak -> mm/s RMS, from the conversion note
    zone = "ABCD"[sum(velocity >= b for b in (1.4, 2.8, 4.5))]
    return 200, completion({"content": json.dumps({"velocity_mm_s_rms": velocity, "zone": zone,
                                                   "percent_of_cd_limit": 100.0 * velocity / 4.5})})


async def test_llm_agent_in_rag_mode_over_http(eval_server: MCPServer, evidence: EvidenceLibrary,
                                               scenario_map: dict[str, Scenario]) -> None:
    scenario = scenario_map["health_pump_vibration_zone"]
    with ChatServer(pump_zone_policy) as chat:
        async with connect(eval_server) as session:
            events, record = await execute_run(scenario, agent_for(chat), session, mode="rag",
                                               evidence=evidence)
    assert record["mode"] == "rag" and record["success"] is True, record["validator_results"]
    retrieval = next(e for e in events if e["kind"] == "retrieval")
    assert retrieval["retriever"] == "bm25s" and len(retrieval["chunks"]) == evidence.top_k
    assert retrieval["chunks"][0]["source"] == "standards"
    trace_checks = [r for r in record["validator_results"] if r["kind"] == "trace_order"]
    assert trace_checks[0]["observed"] == "not_applicable" and trace_checks[0]["passed"]
    assert record["metrics"]["n_tool_calls"] == 0 and len(chat.requests) == 1
    assert score_trace(scenario, events)["record_hash"] == record["record_hash"]  # offline
    async with connect(eval_server) as session:
        with pytest.raises(ValueError, match="needs an EvidenceLibrary"):
            await execute_run(scenario, agent_for(chat), session, mode="rag")


def battery_policy(request: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    """Solves health_battery_soh_stage from raw rows and the calculator (no domain tool)."""
    offered = {t["function"]["name"] for t in request["tools"]}
    assert offered == GENERIC_TOOLS | set(GENERIC_STUB_TOOLS)
    results = tool_results(request)
    if not results:
        return 200, completion({"content": None, "tool_calls": [
            tool_call("d1", "capacity_soh_calculator", {"battery_id": "B0005", "cycle": 100}),
            tool_call("g1", "read_raw_data", {"dataset_name": "nasa_battery_b0005",
                                              "max_rows": 100})]})
    if len(results) == 1:
        capacities = [row[1] for row in results[0]["rows"]]
        return 200, completion({"content": None, "tool_calls": [tool_call(
            "g2", "calculator", {"expression": "[c[99], c[99] / c[0], c[99] / 2.0]",
                                 "variables": {"c": capacities}})]})
    capacity, soh_first, soh_rated = results[1]["result"]
    stage = ("HEALTHY", "EARLY_DEGRADATION", "ACCELERATED_DEGRADATION", "EOL")[
        sum(soh_rated <= edge for edge in (0.9, 0.8, 0.7))]
    return 200, completion({"content": json.dumps({
        "capacity_ah": capacity, "soh_first_cycle": soh_first, "soh_rated": soh_rated,
        "stage": stage, "capacity_fade_pct": 100.0 * (1.0 - soh_first)})})


async def test_llm_agent_in_no_domain_tools_mode_over_http(
        eval_server: MCPServer, generic_server: MCPServer,
        scenario_map: dict[str, Scenario]) -> None:
    scenario = scenario_map["health_battery_soh_stage"]
    with ChatServer(battery_policy) as chat:
        async with connect([eval_server, generic_server]) as session:
            events, record = await execute_run(scenario, agent_for(chat), session,
                                               mode="no-domain-tools")
    assert record["mode"] == "no_domain_tools" and record["success"] is True, \
        record["validator_results"]
    calls = [e for e in events if e["kind"] == "tool_call"]
    assert [(c["tool"], c["status"]) for c in calls] == [
        ("capacity_soh_calculator", "blocked"), ("read_raw_data", "ok"), ("calculator", "ok")]
    assert {c["server"] for c in calls[1:]} == {GENERIC_SERVER}
    assert record["metrics"]["tool_recall"] == 0.0 and record["metrics"]["n_llm_turns"] == 3


def test_cli_drives_the_llm_agent_through_rag_and_no_domain_tools(
        tmp_path: Path, data_root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "llm.toml"
    for mode, policy, scenario_id in [("rag", pump_zone_policy, "health_pump_vibration_zone"),
                                      ("no-domain-tools", battery_policy,
                                       "health_battery_soh_stage")]:
        with ChatServer(policy) as chat:
            config.write_text(f'[llm]\nbase_url = "{chat.base_url}"\nmodel = "m"\n')
            out = tmp_path / mode
            assert cli.main(["run", "--agent", "llm", "--llm-config", str(config), "--mode", mode,
                             "--ids", scenario_id, "--out", str(out), "--data-root",
                             str(data_root)]) == 0
            assert chat.requests, f"the {mode} run never reached the chat server"
        record = json.loads(next((out / "records").glob("*.json")).read_text())
        assert record["success"] is True and record["mode"] == mode.replace("-", "_")
        assert "[0.207, 1.000]" in (out / "report.md").read_text()  # Wilson 95% of 1 of 1
    capsys.readouterr()


def test_scripted_agent_runs_every_scenario_in_the_ablation_modes(
        tmp_path: Path, data_root: Path, scenarios: list[Scenario],
        capsys: pytest.CaptureFixture[str]) -> None:
    # The reference solution is tool use: in the ablation modes its calls are withheld, so it
    # can only pass scenarios whose answer the SME states outright (the multiple-choice ones).
    literal_only = {s.id for s in scenarios
                    if all("$ref" not in json.dumps(v) and "$sum" not in json.dumps(v)
                           for v in s.reference_answer.values())}
    for mode in ("no-domain-tools", "rag"):
        out = tmp_path / mode
        assert cli.main(["run", "--agent", "scripted", "--mode", mode, "--out", str(out), "--no-floors",
                         "--data-root", str(data_root)]) == 0
        records = [json.loads(p.read_text()) for p in (out / "records").glob("*.json")]
        assert len(records) == len(scenarios)
        assert all(r["status"] == "scored" for r in records)
        assert {r["scenario_id"] for r in records if r["success"]} == literal_only
        calls = [c for r in records for c in _tool_calls(out, r)]
        assert calls and all(c["status"] == "blocked" for c in calls)
        table = (out / "report.csv").read_text().splitlines()
        assert "pass_at_1_ci_low" in table[0] and len(table) == 1 + 1 + 5 + 2
    capsys.readouterr()


def _tool_calls(run_dir: Path, record: dict[str, Any]) -> list[dict[str, Any]]:
    from sfbench_jax.agent_eval.runner import run_file_stem
    from sfbench_jax.agent_eval.trace import read_trace

    events = read_trace(run_dir / "traces" / f"{run_file_stem(record['run_id'])}.jsonl")
    if record["mode"] == "rag":
        assert any(e["kind"] == "retrieval" for e in events)
    return [e for e in events if e["kind"] == "tool_call"]


@pytest.mark.slow
def test_scripted_agent_passes_every_scenario_in_the_tool_modes_via_the_cli(
        tmp_path: Path, data_root: Path, checkable_scenarios: list[Scenario],
        capsys: pytest.CaptureFixture[str]) -> None:
    """Every scenario with the full data; with the repository's data, all but the whole-file C-MAPSS ones."""
    assert len(checkable_scenarios) >= 95
    ids = [s.id for s in checkable_scenarios]
    for mode in ("tools-provided", "unknown-tools"):
        out = tmp_path / mode
        assert cli.main(["run", "--agent", "scripted", "--mode", mode, "--out", str(out),
                         "--data-root", str(data_root), "--ids", *ids]) == 0
        summary = json.loads((out / "aggregate.json").read_text())
        overall = summary["rows"][0]
        assert (overall["scenarios"], overall["pass_at_1"]) == (len(ids), 1.0)
        assert overall["pass_at_1_ci_low"] > 0.96
    capsys.readouterr()
