"""The OpenAI-compatible LLM agent against a scripted chat-completions server on loopback.

The chat server is real HTTP on 127.0.0.1 (see ``eval_helpers.ChatServer``); its policy decides
each reply from the request it receives, so tool arguments and the final answer are derived from
the tool results the agent actually sent back. Tools run on the real MCP server in-process.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from eval_helpers import ChatServer, completion, tool_call, tool_results
from mcp.server import MCPServer

from sfbench_jax.agent_eval import cli
from sfbench_jax.agent_eval.agents.llm import (
    HttpChatBackend,
    LLMAgent,
    LLMConfig,
    PreflightError,
    extract_json_object,
    preflight,
)
from sfbench_jax.agent_eval.report import aggregate
from sfbench_jax.agent_eval.runner import execute_run
from sfbench_jax.agent_eval.scenario import Scenario
from sfbench_jax.agent_eval.toolbox import connect

pytestmark = pytest.mark.anyio


def agent_for(server: ChatServer, **overrides: Any) -> LLMAgent:
    config = LLMConfig(base_url=server.base_url, model="scripted-test-model", seed=7, **overrides)
    return LLMAgent(config, HttpChatBackend(config.base_url, api_key="sk-test-123"))


def roi_policy(request: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    """Solves cost_pump_pm_program_roi in three turns from the tool results it is sent."""
    results = tool_results(request)
    if not results:
        costs = {"repair_cost": 50000, "downtime_hours": 48, "hourly_rate": 1000,
                 "consequential_cost": 20000}
        return 200, completion({"content": None, "tool_calls": [
            tool_call("c1", "calculate_maintenance_cost", {
                "preventive_cost": 5000, "frequency_per_year": 4, "downtime_hours": 8,
                "hourly_rate": 1000}),
            tool_call("c2", "calculate_failure_cost", {"failure_probability": 1.0, **costs}),
            tool_call("c3", "calculate_failure_cost", {"failure_probability": 0.05, **costs}),
        ]})
    if len(results) == 3:
        pm, reactive, residual = results
        return 200, completion({"content": None, "tool_calls": [tool_call(
            "c4", "calculate_maintenance_roi", {
                "reactive_annual_cost": reactive["expected_annual_cost"],
                "preventive_annual_cost": pm["annual_cost"],
                "residual_failure_annual_cost": residual["expected_annual_cost"],
                "program_cost": 40000})]})
    pm, reactive, _, roi = results
    answer = {"pm_annual_cost": pm["annual_cost"],
              "reactive_annual_cost": reactive["expected_annual_cost"], "roi": roi["roi"],
              "payback_months": roi["payback_months"], "first_year_net_benefit": roi["annual_savings"] - 40000}
    return 200, completion({"content": "Here is the business case:\n```json\n"
                                       + json.dumps(answer) + "\n```"})


async def test_llm_agent_solves_a_scenario_over_http(eval_server: MCPServer,
                                                    scenario_map: dict[str, Scenario]) -> None:
    scenario = scenario_map["cost_pump_pm_program_roi"]
    with ChatServer(roi_policy) as chat:
        async with connect(eval_server) as session:
            events, record = await execute_run(scenario, agent_for(chat), session,
                                               mode="tools_provided")
    assert record["success"] is True, record["validator_results"]
    assert record["failure"]["primary"] is None
    metrics = record["metrics"]
    assert (metrics["n_llm_turns"], metrics["tokens_in"], metrics["tokens_out"]) == (3, 300, 60)
    assert (metrics["tool_recall"], metrics["tool_precision"]) == (1.0, 1.0)
    assert metrics["sequencing_accuracy"] == 1.0
    kinds = [e["kind"] for e in events]
    assert kinds.count("llm_request") == kinds.count("llm_response") == 3
    assert kinds.count("tool_call") == 4 and kinds[0] == "run_start" and kinds[-1] == "final"
    # What the endpoint saw: the allow-list as OpenAI tools, T = 0, the seed, the key.
    first = chat.requests[0]
    offered = {t["function"]["name"] for t in first["tools"]}
    assert offered == set(scenario.required_tools) | set(scenario.distractor_tools)
    assert first["temperature"] == 0.0 and first["seed"] == 7 and first["tool_choice"] == "auto"
    assert first["model"] == "scripted-test-model"
    assert chat.headers[0]["Authorization"] == "Bearer sk-test-123"
    assert scenario.query in first["messages"][1]["content"]
    assert '"required"' in first["messages"][0]["content"]  # the output template is stated
    assert [m["role"] for m in chat.requests[1]["messages"]][-3:] == ["tool", "tool", "tool"]


def fmea_policy(request: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    """Bad JSON first, then a valid call, then prose (corrected), then a bare JSON answer."""
    messages = request["messages"]
    tool_messages = [m for m in messages if m["role"] == "tool"]
    if not tool_messages:
        return 200, completion({"content": None, "tool_calls": [tool_call(
            "b1", "assess_safety_risk", '{"failure_mode": "oil pump", "severity": 8,')]})
    if len(tool_messages) == 1:
        assert tool_messages[0]["content"].startswith("ERROR (invalid_arguments)")
        return 200, completion({"content": None, "tool_calls": [tool_call(
            "b2", "assess_safety_risk", {"failure_mode": "oil pump", "severity": 8,
                                         "probability": 5, "detectability": 4})]})
    if messages[-1]["role"] == "tool":
        return 200, completion({"content": "The risk is high with an RPN of 160."})
    risk = json.loads(tool_messages[-1]["content"])
    return 200, completion({"content": json.dumps({"rpn": risk["rpn"],
                                                   "risk_level": risk["risk_level"],
                                                   "rpn_points_below_critical": 200 - risk["rpn"]})})


async def test_bad_json_arguments_correction_and_recovery(
        eval_server: MCPServer, scenario_map: dict[str, Scenario]) -> None:
    scenario = scenario_map["safety_gearbox_fmea_risk"]
    with ChatServer(fmea_policy) as chat:
        async with connect(eval_server) as session:  # 6 turns: the scenario's own budget (4) forces the 4th
            events, record = await execute_run(scenario, agent_for(chat, max_llm_turns=6), session,
                                               mode="tools_provided")
    calls = [e for e in events if e["kind"] == "tool_call"]
    assert [c["status"] for c in calls] == ["invalid_arguments", "ok"]
    assert calls[0]["arguments"] is None and calls[0]["arguments_raw"].endswith('"severity": 8,')
    assert record["success"] is True and record["metrics"]["n_invalid_calls"] == 1
    assert record["metrics"]["n_llm_turns"] == 4
    assert chat.requests[-1]["messages"][-1]["content"].startswith("Your last reply did not")


async def test_turn_limit_and_unknown_tools_mode(eval_server: MCPServer,
                                                scenario_map: dict[str, Scenario]) -> None:
    scenario = scenario_map["safety_gearbox_fmea_risk"]

    def loop_forever(request: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        return 200, completion({"content": None, "tool_calls": [tool_call(
            f"l{len(request['messages'])}", "assess_safety_risk",
            {"failure_mode": "x", "severity": 8, "probability": 5, "detectability": 4})]})

    with ChatServer(loop_forever) as chat:
        async with connect(eval_server) as session:
            _, record = await execute_run(scenario, agent_for(chat, max_llm_turns=3), session,
                                          mode="unknown_tools")
            catalog = {t.name for t in session.catalog}
    assert record["stop_reason"] == "max_steps" and record["metrics"]["n_llm_turns"] == 3
    assert record["failure"]["primary"] == "orchestration"
    assert "stopped_max_steps" in record["failure"]["flags"]
    offered = {t["function"]["name"] for t in chat.requests[0]["tools"]}
    assert offered == catalog and len(offered) > 30
    assert "Dataset context" not in chat.requests[0]["messages"][1]["content"]


async def test_endpoint_failure_is_a_harness_error(eval_server: MCPServer,
                                                   scenario_map: dict[str, Scenario]) -> None:
    scenario = scenario_map["safety_gearbox_fmea_risk"]
    with ChatServer(lambda request: (500, {"error": "overloaded"})) as chat:
        async with connect(eval_server) as session:
            _, record = await execute_run(scenario, agent_for(chat), session,
                                          mode="tools_provided")
    assert record["status"] == "harness_error" and record["success"] is None
    assert "HTTP 500" in record["evaluator_error"]
    summary = aggregate([record])
    assert summary["rows"][0]["excluded_runs"] == 1 and summary["rows"][0]["runs"] == 0


async def test_preflight() -> None:
    def echo(request: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        assert request["tools"][0]["function"]["name"] == "echo"
        return 200, completion({"content": None,
                                "tool_calls": [tool_call("e1", "echo", {"text": "ping"})]})

    with ChatServer(echo) as chat:
        config = LLMConfig(base_url=chat.base_url, model="m")
        result = await preflight(config, HttpChatBackend(chat.base_url, api_key=None))
    assert result["ok"] and result["tool_call"]["arguments"] == {"text": "ping"}
    with ChatServer(lambda request: (200, completion({"content": "ping"}))) as chat:
        config = LLMConfig(base_url=chat.base_url, model="m")
        with pytest.raises(PreflightError, match="did not return a structured tool call"):
            await preflight(config, HttpChatBackend(chat.base_url, api_key=None))


def test_cli_doctor_and_run_with_llm_agent(tmp_path: Path, data_root: Path,
                                           monkeypatch: pytest.MonkeyPatch,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    with ChatServer(fmea_policy) as chat:
        config = tmp_path / "llm.toml"
        config.write_text(f'[llm]\nbase_url = "{chat.base_url}"\nmodel = "scripted-test-model"\n'
                          'api_key_env = "SFBENCH_TEST_LLM_KEY"\nmax_llm_turns = 8\n')
        monkeypatch.setenv("SFBENCH_TEST_LLM_KEY", "sk-from-env")
        out = tmp_path / "run"
        assert cli.main(["run", "--agent", "llm", "--llm-config", str(config), "--ids",
                         "safety_gearbox_fmea_risk", "--out", str(out), "--data-root",
                         str(data_root)]) == 0
        assert chat.headers[0]["Authorization"] == "Bearer sk-from-env"
    report = (out / "report.csv").read_text().splitlines()
    assert report[0].startswith("agent,model,mode,variant,split,task_type")
    assert report[1].startswith("llm,scripted-test-model,tools_provided,explicit,all,all,1,1,1,1.0")
    monkeypatch.delenv("SFBENCH_TEST_LLM_KEY")
    with pytest.raises(SystemExit, match="SFBENCH_TEST_LLM_KEY"):
        cli.main(["doctor", "--llm-config", str(config)])
    capsys.readouterr()


def test_config_and_json_extraction(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="unknown LLM config key"):
        LLMConfig.from_mapping({"base_url": "http://127.0.0.1:1/v1", "model": "m", "temprature": 0})
    with pytest.raises(ValueError, match="must start with http"):
        LLMConfig(base_url="127.0.0.1:8000", model="m")
    assert extract_json_object('{"a": 1}') == {"a": 1}
    assert extract_json_object('text\n```json\n{"a": {"b": 2}}\n```\nmore') == {"a": {"b": 2}}
    assert extract_json_object('The answer is {"a": 3}.') == {"a": 3}
    assert extract_json_object("no json here") is None
    assert extract_json_object("[1, 2]") is None
