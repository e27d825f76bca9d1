"""Replies constrained by a JSON Schema (``reply_format = "json_schema"``, the ``local`` default).

`reply_schema` is checked with an independent validator (the ``jsonschema`` library): it admits one call
of an offered tool with arguments valid under that tool's schema, or the answer, and nothing else. Then
the agent against a scripted chat server on loopback (real HTTP, real MCP tools in-process): every
request carries the schema as ``response_format``, the forced last turn admits the answer only, a call
the server returns as a JSON object in the text (what llama.cpp's server does under the schema) is run,
and the setting is written into the trace's ``run_start``.
"""

from __future__ import annotations

import json
from typing import Any

import jsonschema
import pytest
from eval_helpers import ChatServer, completion
from mcp.server import MCPServer

from sfbench_jax.agent_eval.agents.llm import HttpChatBackend, LLMAgent, LLMConfig, reply_schema
from sfbench_jax.agent_eval.runner import execute_run
from sfbench_jax.agent_eval.scenario import Scenario
from sfbench_jax.agent_eval.toolbox import connect

FMEA_ARGS = {"failure_mode": "oil pump", "severity": 8, "probability": 5, "detectability": 4}
ANSWER = {"type": "object", "required": ["rpn", "risk_level"],
          "properties": {"rpn": {"type": "number"}, "risk_level": {"type": "string", "enum": ["low", "high"]}}}
TOOLS = [{"type": "function", "function": {"name": "assess_safety_risk", "description": "FMEA",
                                           "parameters": {"type": "object", "required": ["severity"],
                                                          "properties": {"severity": {"type": "integer"}}}}},
         {"type": "function", "function": {"name": "echo", "description": "echo",
                                           "parameters": {"type": "object", "properties": {"text": {
                                               "type": "string"}}}}}]


def _valid(instance: Any, schema: dict[str, Any]) -> bool:
    return jsonschema.Draft202012Validator(schema).is_valid(instance)


def test_reply_schema_admits_one_offered_call_or_the_answer() -> None:
    schema = reply_schema(TOOLS, ANSWER)
    jsonschema.Draft202012Validator.check_schema(schema)
    assert _valid({"name": "assess_safety_risk", "arguments": {"severity": 8}}, schema)
    assert _valid({"name": "echo", "arguments": {"text": "ping"}}, schema)
    assert _valid({"rpn": 160, "risk_level": "high"}, schema)
    refused = [{"name": "delete_everything", "arguments": {}},                 # not an offered tool
               {"name": "assess_safety_risk", "arguments": {"severity": "8"}},  # argument of the wrong type
               {"name": "assess_safety_risk", "arguments": {}},                # required argument missing
               {"name": "echo", "arguments": {}, "comment": "extra key"},      # a call holds name and arguments only
               {"rpn": 160, "risk_level": "medium"},                           # answer outside its enum
               "The RPN is 160.", [{"name": "echo", "arguments": {}}]]         # prose; several calls at once
    assert [_valid(r, schema) for r in refused] == [False] * len(refused)
    assert reply_schema([], ANSWER) == ANSWER  # a turn without tools admits the answer only


@pytest.mark.anyio
async def test_requests_carry_the_schema_and_the_forced_turn_admits_the_answer_only(
        eval_server: MCPServer, scenario_map: dict[str, Scenario]) -> None:
    scenario = scenario_map["safety_gearbox_fmea_risk"]

    def constrained(request: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        """What llama.cpp's server returns under the schema: the call, or the answer, as JSON text."""
        if request["tool_choice"] == "none":
            risk = json.loads([m for m in request["messages"] if m["role"] == "tool"][-1]["content"])
            return 200, completion({"content": json.dumps({"rpn": risk["rpn"], "risk_level": risk["risk_level"],
                                                           "rpn_points_below_critical": 200 - risk["rpn"]})})
        return 200, completion({"content": json.dumps({"name": "assess_safety_risk", "arguments": FMEA_ARGS})})

    config = LLMConfig(base_url="http://127.0.0.1:1/v1", model="schema-test-model", reply_format="json_schema",
                       max_llm_turns=2)
    with ChatServer(constrained) as chat:
        agent = LLMAgent(config, HttpChatBackend(chat.base_url, api_key=None))
        async with connect(eval_server) as session:
            events, record = await execute_run(scenario, agent, session, mode="tools_provided")
    first, forced = chat.requests
    offered = [t["function"]["name"] for t in first["tools"]]
    options = first["response_format"]["json_schema"]["schema"]["anyOf"]
    assert first["response_format"]["type"] == "json_schema"
    assert [o["properties"]["name"]["const"] for o in options[:-1]] == offered
    assert options[-1] == scenario.output_template
    assert forced["tool_choice"] == "none"
    assert forced["response_format"]["json_schema"]["schema"] == scenario.output_template
    calls = [e for e in events if e["kind"] == "tool_call"]
    assert [(c["tool"], c["status"]) for c in calls] == [("assess_safety_risk", "ok")]
    formats = [e["call_format"] for e in events if e["kind"] == "llm_response"]
    assert formats == ["content_json", "none"]
    assert events[0]["sampling"]["reply_format"] == "json_schema"
    assert record["success"] is True, record["validator_results"]


def test_unknown_reply_format_is_refused() -> None:
    with pytest.raises(ValueError, match="reply_format 'grammar'; use one of free, json_schema"):
        LLMConfig(base_url="http://127.0.0.1:1/v1", model="m", reply_format="grammar")
