"""What real served models do that well-behaved ones do not, against a loopback chat server.

Tool calls written as text (tagged or bare JSON), unparseable tags, a spent turn budget that forces
the answer, a context-window refusal: each is parsed or classified under the taxonomy, never a crash
or a harness error; a request that times out is a harness error (the endpoint's fault, not the
model's). Tools run on the real MCP server in-process.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from eval_helpers import ChatServer, completion, tool_call
from mcp.server import MCPServer

from sfbench_jax.agent_eval import cli, local_llm
from sfbench_jax.agent_eval.agents.llm import HttpChatBackend, LLMAgent, LLMConfig
from sfbench_jax.agent_eval.agents.tool_text import ContentCall, parse_content_tool_calls
from sfbench_jax.agent_eval.report import aggregate
from sfbench_jax.agent_eval.runner import execute_run
from sfbench_jax.agent_eval.scenario import Scenario
from sfbench_jax.agent_eval.toolbox import connect

FMEA_ARGS = {"failure_mode": "oil pump", "severity": 8, "probability": 5, "detectability": 4}


def agent_for(server: ChatServer, **overrides: Any) -> LLMAgent:
    config = LLMConfig(base_url=server.base_url, model="fallback-test-model", **overrides)
    return LLMAgent(config, HttpChatBackend(config.base_url, api_key=None,
                                            timeout_s=config.timeout_s))


def test_parse_content_tool_calls() -> None:
    names = {"assess_safety_risk"}
    tagged = '<tool_call>\n{"name": "assess_safety_risk", "arguments": {"severity": 8}}\n</tool_call>'
    assert parse_content_tool_calls(tagged, names) == (
        [ContentCall("assess_safety_risk", {"severity": 8})], "content_tagged")
    listed = '<tool_call>[{"name": "a", "arguments": "{\\"x\\": 1}"}, {"name": "b", "parameters": {}}]'
    assert parse_content_tool_calls(listed, names)[0] == [ContentCall("a", {"x": 1}), ContentCall("b", {})]
    assert parse_content_tool_calls('[TOOL_CALLS] [{"name": "a", "arguments": {}}]', names)[1] == "content_tagged"
    assert parse_content_tool_calls("<tool_call>assess_safety_risk(severity=8)</tool_call>", names) == (
        [], "unparsed_tagged")
    fenced = 'I will call it.\n```json\n{"name": "assess_safety_risk", "arguments": {"severity": 8}}\n```'
    assert parse_content_tool_calls(fenced, names)[1] == "content_json"
    bare_call = '{"type": "function", "function": {"name": "other", "parameters": {"k": 2}}}'
    assert parse_content_tool_calls(bare_call, names) == ([ContentCall("other", {"k": 2})], "content_json")
    answer = '{"rpn": 160, "risk_level": "high"}'
    assert parse_content_tool_calls(answer, names) == ([], "none")
    assert parse_content_tool_calls('{"name": "pump", "parameters": 3, "rpn": 1, "x": 2}', names) == ([], "none")
    assert parse_content_tool_calls(None, names) == ([], "none")
    written = 'function.check_compliance:\n{ "standard": "IEC61508", "demand_mode": "low_demand"}'
    assert parse_content_tool_calls(written, names) == (
        [ContentCall("check_compliance", {"standard": "IEC61508", "demand_mode": "low_demand"})], "content_tagged")
    assert parse_content_tool_calls("functions.x:\n{ broken", names) == ([], "unparsed_tagged")


def _tagged_policy(request: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    """A small model's habits: a tagged call in the text, then prose, then the JSON answer."""
    messages = request["messages"]
    tool_messages = [m for m in messages if m["role"] == "tool"]
    if not tool_messages:
        return 200, completion({"content": "<tool_call>\n" + json.dumps(
            {"name": "assess_safety_risk", "arguments": FMEA_ARGS}) + "\n</tool_call>"})
    if messages[-1]["role"] == "tool":
        return 200, completion({"content": "<tool_call>assess_safety_risk(again)</tool_call>"})
    risk = json.loads(tool_messages[-1]["content"])
    return 200, completion({"content": json.dumps({"rpn": risk["rpn"], "risk_level": risk["risk_level"],
                                                   "rpn_points_below_critical": 200 - risk["rpn"]})})


@pytest.mark.anyio
async def test_tagged_tool_call_in_content_is_run_and_flagged(
        eval_server: MCPServer, scenario_map: dict[str, Scenario]) -> None:
    scenario = scenario_map["safety_gearbox_fmea_risk"]
    with ChatServer(_tagged_policy) as chat:
        async with connect(eval_server) as session:
            events, record = await execute_run(scenario, agent_for(chat), session, mode="tools_provided")
    responses = [e for e in events if e["kind"] == "llm_response"]
    assert [r["call_format"] for r in responses] == ["content_tagged", "unparsed_tagged", "none"]
    assert all(r["latency_ms"] > 0 and r["tokens_in"] == 100 for r in responses)
    assert responses[0]["message"]["content"].startswith("<tool_call>")
    assert [e["status"] for e in events if e["kind"] == "tool_call"] == ["ok"]
    assert record["success"] is True
    assert {"tool_call_in_content", "unparsed_tool_call"} <= set(record["failure"]["flags"])
    # the call went back to the model as a structured call and its tool message
    second = chat.requests[1]["messages"]
    assert second[-2]["tool_calls"][0]["function"]["name"] == "assess_safety_risk"
    assert second[-1]["role"] == "tool" and second[-1]["tool_call_id"] == "content_0_0"
    assert chat.requests[2]["messages"][-1]["content"].startswith("Your last reply looks like a tool call")


@pytest.mark.anyio
async def test_spent_turn_budget_forces_an_answer(eval_server: MCPServer,
                                                 scenario_map: dict[str, Scenario]) -> None:
    scenario = scenario_map["safety_gearbox_fmea_risk"]

    def loop_then_answer(request: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        if request["tool_choice"] == "none":
            risk = json.loads([m for m in request["messages"] if m["role"] == "tool"][-1]["content"])
            return 200, completion({"content": json.dumps({"rpn": risk["rpn"],
                                                           "risk_level": risk["risk_level"],
                                                           "rpn_points_below_critical": 200 - risk["rpn"]})})
        return 200, completion({"content": None, "tool_calls": [
            tool_call(f"l{len(request['messages'])}", "assess_safety_risk", FMEA_ARGS)]})

    with ChatServer(loop_then_answer) as chat:
        async with connect(eval_server) as session:
            _, record = await execute_run(scenario, agent_for(chat, max_llm_turns=3), session,
                                               mode="tools_provided")
    assert [r["tool_choice"] for r in chat.requests] == ["auto", "auto", "none"]
    assert chat.requests[-1]["messages"][-1]["content"].startswith("The step budget is spent")
    assert record["stop_reason"] == "max_steps" and record["success"] is True
    assert {"forced_final", "stopped_max_steps"} <= set(record["failure"]["flags"])
    assert record["metrics"]["n_llm_turns"] == 3


@pytest.mark.anyio
async def test_request_timeout_is_a_harness_error_and_context_refusal_a_scored_failure(
        eval_server: MCPServer, scenario_map: dict[str, Scenario]) -> None:
    scenario = scenario_map["safety_gearbox_fmea_risk"]

    def slow(request: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        time.sleep(1.0)
        return 200, completion({"content": "{}"})

    def refuse(request: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        return 400, {"error": {"message": "Requested tokens (9100) exceed context window of 8192"}}

    records = []
    for policy, overrides in ((slow, {"timeout_s": 0.2}), (refuse, {})):
        with ChatServer(policy) as chat:
            async with connect(eval_server) as session:
                events, record = await execute_run(scenario, agent_for(chat, **overrides), session,
                                                   mode="tools_provided")
        assert [e for e in events if e["kind"] == "llm_error"]
        records.append(record)
    timed_out, refused = records
    assert (timed_out["status"], timed_out["stop_reason"], timed_out["success"]) == ("harness_error", "timeout", None)
    assert "ChatTimeoutError" in timed_out["evaluator_error"] and timed_out["failure"]["primary"] is None
    assert (refused["status"], refused["stop_reason"]) == ("scored", "context_exceeded")
    assert refused["failure"]["primary"] == "orchestration"
    assert "stopped_context_exceeded" in refused["failure"]["flags"]
    summary = aggregate(records)
    modes = summary["failure_modes"][0]
    assert (modes["runs"], modes["failed_runs"], modes["stopped_timeout"], modes["no_tool_call"]) == (1, 1, 0, 1)
    assert summary["rows"][0]["excluded_runs"] == 1


@pytest.mark.parametrize("argv, fragment", [
    (["--ids", "no_such_scenario"], "unknown scenario id(s) ['no_such_scenario']"),
    (["--repeats", "0"], "argument --repeats: --repeats must be >= 1, got 0"),
    (["--rag-top-k", "0"], "argument --rag-top-k: --rag-top-k must be >= 1, got 0"),
    (["--repeats", "two"], "--repeats must be a whole number, got 'two'"),
    (["--run-timeout-s", "nan"], "--run-timeout-s must be a finite number > 0"),
])
def test_bad_run_arguments_are_one_line(argv: list[str], fragment: str, tmp_path: Path, data_root: Path,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["run", "--agent", "scripted", "--out", str(tmp_path / "r"), "--data-root", str(data_root),
                  *argv])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and fragment in err and "Traceback" not in err, err
    assert not (tmp_path / "r").exists()


def test_llm_agent_needs_an_endpoint_and_local_needs_the_extra(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["run", "--agent", "llm", "--model", "m", "--ids", "safety_gearbox_fmea_risk",
                  "--out", str(tmp_path / "r")])
    err = capsys.readouterr().err
    assert exit_info.value.code == 2 and err.count("\n") == 1 and "--base-url URL and --model NAME" in err
    monkeypatch.setattr(local_llm, "EXTRA_MODULES", ("json", "sfbench_no_such_module"))
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["local", "--out", str(tmp_path / "l")])
    err = capsys.readouterr().err
    assert exit_info.value.code == 2 and err.count("\n") == 1
    assert "the 'llm' extra and the model (missing sfbench_no_such_module): pip install 'sfbench-jax[llm]'" in err


def test_stratified_sample_covers_every_task_type_and_spreads_classes(scenarios: list[Scenario]) -> None:
    subset = cli.stratified_sample(scenarios, 4)
    assert len(subset) == 4 * len({s.task_type for s in scenarios})
    for task_type in {s.task_type for s in scenarios}:
        picked = [s for s in subset if s.task_type == task_type]
        available = {s.asset_class for s in scenarios if s.task_type == task_type}
        assert len({s.asset_class for s in picked}) == min(4, len(available))
    assert cli.stratified_sample(scenarios, 4) == subset


def _run(scenario: str, agent: str, mode: str, success: bool, flags: list[str]) -> dict[str, Any]:
    return {"run_id": f"{scenario}:{mode}:{agent}:0", "scenario_id": scenario, "task_type": "safety_policy",
            "asset_class": "pump", "split": "in_distribution", "agent": agent, "model": agent, "mode": mode,
            "status": "scored", "success": success, "evaluator_error": "",
            "failure": {"primary": None if success else "tool_invocation", "flags": flags},
            "metrics": {"n_tool_calls": 1, "n_llm_turns": 2, "tool_precision": 1.0, "tool_recall": 1.0,
                        "distractor_rate": 0.0, "sequencing_accuracy": 1.0,
                        "n_calls_by_status": {"invalid_arguments": 1} if flags else {"ok": 1}}}


def test_combined_report_over_runs_paired_on_common_scenarios(tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    from sfbench_jax.agent_eval.runner import write_record

    reference = [_run(s, "scripted", "tools_provided", True, []) for s in ("s1", "s2", "s3")]
    model = [_run("s2", "llm", "tools_provided", False, ["schema_invalid_call", "no_answer"]),
             _run("s3", "llm", "tools_provided", True, [])]
    for name, records in (("ref", reference), ("llm", model)):
        for record in records:
            write_record(tmp_path / name / "records" / f"{record['scenario_id']}.json", record)
    assert cli.main(["report", str(tmp_path / "ref"), str(tmp_path / "llm"), "--paired",
                     "--out", str(tmp_path / "table")]) == 0
    summary = json.loads((tmp_path / "table" / "aggregate.json").read_text())
    assert [(r["agent"], r["scenarios"]) for r in summary["rows"] if r["task_type"] == "all"] == [
        ("llm", 2), ("scripted", 2)]
    modes = {r["agent"]: r for r in summary["failure_modes"]}
    assert (modes["llm"]["schema_invalid_call"], modes["llm"]["calls_invalid_arguments"]) == (1, 1)
    text = (tmp_path / "table" / "report.md").read_text()
    assert "## Failure modes" in text and "| llm | llm | tools_provided | pump | in_distribution | 2 | 2 |" in text
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["report", str(tmp_path / "ref"), str(tmp_path / "llm")])
    assert exit_info.value.code == 2 and "need --out DIR" in capsys.readouterr().err


def test_repeated_identical_calls_are_flagged() -> None:
    from eval_helpers import call

    from sfbench_jax.agent_eval.taxonomy import classify_failure

    args = {"preventive_cost": 0.2, "frequency_per_year": 15}
    common = {"success": False, "answer": None, "stop_reason": "max_steps", "required": ["t"],
              "distractors": [], "precedence": [], "handle_args": [], "output_template": {"type": "object"}}
    looped = classify_failure(calls=[call(0, "t", arguments=args), call(1, "t", arguments=dict(args))], **common)
    varied = classify_failure(calls=[call(0, "t", arguments=args), call(1, "t", arguments={"x": 1})], **common)
    assert "repeated_call" in looped["flags"] and "repeated_call" not in varied["flags"]
