"""Real SmolLM2 runs, recorded through llama.cpp's server, replayed offline (no model, no network).

Each fixture under ``fixtures/llm_traces/`` is one run of the experiment in docs/agent_eval_llm.md:
its trace (``*.jsonl``, the model's replies included) and the run record it scored to
(``*.record.json``). Two replays per fixture:

* the trace re-scores to the recorded record, byte for byte (``record_hash``);
* the recorded replies re-drive the current LLM agent (`RecordedChatBackend`) against the real MCP
  server in-process: the same tool calls with the same results and the same score and failure
  label, and every request it sends passes llama-cpp-python's request schema for assistant
  messages (string content; a null content was a real HTTP 500 in the first runs).

The fixtures cover the failure modes the real traces showed (see ``settings.json`` for the command),
and a request that stalled until its 300 s timeout: recorded as the model's failure (``orchestration``)
at the time, it re-scores as a harness error, left out of the rates.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from mcp.server import MCPServer

from sfbench_jax.agent_eval.agents.llm import LLMAgent, LLMConfig
from sfbench_jax.agent_eval.agents.replay import RecordedChatBackend
from sfbench_jax.agent_eval.runner import execute_run, score_trace
from sfbench_jax.agent_eval.scenario import Scenario
from sfbench_jax.agent_eval.toolbox import connect, error_status
from sfbench_jax.agent_eval.trace import read_trace

FIXTURES = Path(__file__).parent / "fixtures" / "llm_traces"
TRACES = sorted(FIXTURES.glob("*.jsonl"))
SCORED_KEYS = ("success", "status", "failure", "metrics", "final_answer", "stop_reason",
               "validator_results")


def _recorded(path: Path) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    return read_trace(path), json.loads(path.with_name(path.stem + ".record.json").read_text())


def _calls(events: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    return [(e["tool"], e["status"], json.dumps(e["arguments"], sort_keys=True),
             json.dumps(e["structured"], sort_keys=True)) for e in events if e["kind"] == "tool_call"]


def test_fixtures_cover_the_failure_modes_seen() -> None:
    assert len(TRACES) == 4
    flags = set()
    for path in TRACES:
        flags.update(_recorded(path)[1]["failure"]["flags"])
    assert {"schema_invalid_call", "forced_final", "unparsed_tool_call", "repeated_call"} <= flags


def test_stalled_request_rescores_as_a_harness_error(scenario_map: dict[str, Scenario]) -> None:
    events, _ = _recorded(FIXTURES / "rul_cmapss_fd001_fleet__tools_provided__llm__0.jsonl")
    assert [e["stop_reason"] for e in events if e["kind"] == "llm_error"] == ["timeout"]
    record = score_trace(scenario_map["rul_cmapss_fd001_fleet"], events)
    assert (record["status"], record["success"], record["failure"]["primary"]) == ("harness_error", None, None)
    assert "got no answer within 300.0 s" in record["evaluator_error"]


@pytest.mark.parametrize("path", TRACES, ids=lambda p: p.stem)
def test_recorded_trace_rescores_to_the_recorded_record(path: Path,
                                                       scenario_map: dict[str, Scenario]) -> None:
    events, record = _recorded(path)
    rescored = score_trace(scenario_map[record["scenario_id"]], events)
    assert rescored["record_hash"] == record["record_hash"]


@pytest.mark.anyio
@pytest.mark.parametrize("path", TRACES, ids=lambda p: p.stem)
async def test_recorded_replies_redrive_the_agent_to_the_same_score(
        path: Path, eval_server: MCPServer, scenario_map: dict[str, Scenario]) -> None:
    events, record = _recorded(path)
    settings = json.loads((FIXTURES / "settings.json").read_text())["llm"]
    config = LLMConfig.from_mapping({"base_url": "http://127.0.0.1:9/v1", "model": record["model"],
                                     **settings})
    backend = RecordedChatBackend(events)
    async with connect(eval_server) as session:
        replayed, again = await execute_run(scenario_map[record["scenario_id"]],
                                            LLMAgent(config, backend), session, mode=record["mode"])
    assert {k: again[k] for k in SCORED_KEYS} == {k: record[k] for k in SCORED_KEYS}
    assert _calls(replayed) == _calls(events)
    for request in backend.requests:
        for message in request["messages"]:
            assert isinstance(message.get("content"), str), message


def test_sdk_validation_errors_are_invalid_arguments() -> None:
    """From the real run of health_turbofan_hpc_component (tools_provided, the 64-scenario part of
    docs/agent_eval_llm.md): the MCP SDK rejects arguments outside a tool's input schema with pydantic's
    "N validation errors for ..." (plural for two or more fields), which was counted as a tool crash. A schema
    violation is the model's invalid arguments, whatever the number of fields."""
    recorded = ("Error executing tool diagnose_timing_issues: 2 validation errors for diagnose_timing_issuesArguments\n"
                "efficiency_deviation\n  Input should be less than or equal to 0.5 [type=less_than_equal, "
                "input_value=0.8, input_type=float]\n    For further information visit "
                "https://errors.pydantic.dev/2.14/v/less_than_equal\nflow_deviation\n  Input should be less than or "
                "equal to 0.5 [type=less_than_equal, input_value=1.2, input_type=float]\n    For further information "
                "visit https://errors.pydantic.dev/2.14/v/less_than_equal")
    assert error_status(recorded) == "invalid_arguments"
    assert error_status(recorded.replace("2 validation errors", "1 validation error")) == "invalid_arguments"
    assert error_status("Error executing tool diagnose_timing_issues: division by zero") == "tool_crash"
