"""Harness errors apart and loud, budgets that can be met, replies the parser used to miss.

Each test reproduces one defect of issue 33 (items 4, 5, 9) end to end through ``sfbench-agent-eval``:

* a local server process that dies mid-run by a real signal (SIGILL), a request that stalls past its
  timeout, HTTP 5xx answers, a server that fails the health check or is not there: harness errors, not
  model failures, and a command that says so in one line (with the signal) and exits 1. The server is a
  real process (``chat_stub_server.py``, started by ``local --server-command``);
* a fixed turn budget below a scenario's reference calls is refused before any work;
* several calls in one message, a reply cut at the token limit, a forced answer that is a tool call.

Tools run on the real MCP server in-process.
"""

from __future__ import annotations

import json
import platform
import sys
from pathlib import Path
from typing import Any

import pytest
from eval_helpers import ChatServer, completion
from mcp.server import MCPServer

from sfbench_jax.agent_eval import cli, local_llm
from sfbench_jax.agent_eval.agents.llm import HttpChatBackend, LLMAgent, LLMConfig
from sfbench_jax.agent_eval.agents.tool_text import ContentCall, parse_content_tool_calls
from sfbench_jax.agent_eval.runner import execute_run, turn_budget
from sfbench_jax.agent_eval.scenario import Scenario
from sfbench_jax.agent_eval.toolbox import connect

STUB = Path(__file__).with_name("chat_stub_server.py")
IDS = ("health_pump_vibration_zone", "safety_compressor_fmea_ranking", "safety_gearbox_fmea_risk")  # run order


def _local(tmp_path: Path, data_root: Path, stub_args: str, *extra: str) -> tuple[int, Path]:
    out = tmp_path / "run"
    command = f"{sys.executable} {STUB} --port {{port}} {stub_args}"
    try:
        code = cli.main(["local", "--server-command", command, "--ids", *IDS, "--out", str(out),
                         "--data-root", str(data_root), *extra])
    except SystemExit as exc:  # a failed health check exits at once
        code = int(exc.code or 0)
    return code, out


def _records(out: Path) -> list[dict[str, Any]]:
    return [json.loads(p.read_text()) for p in sorted((out / "records").glob("*.json"))]


def _error_line(err: str) -> str:
    lines = [line for line in err.splitlines() if "error:" in line]
    assert len(lines) == 1, err
    return lines[0]


def test_server_killed_mid_run_is_a_harness_error_with_its_signal(
        tmp_path: Path, data_root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # request 1 is the health check, 2 the first scenario's answer; the server dies by SIGILL on request 3
    code, out = _local(tmp_path, data_root, "--die-on 3 --signal SIGILL")
    err = capsys.readouterr().err
    assert code == 1
    line = _error_line(err)
    assert "killed by signal SIGILL (illegal instruction" in line and "local model server (pid" in line, line
    records = _records(out)
    assert records and len(records) <= len(IDS)
    by_id = {r["scenario_id"]: r for r in records}
    assert by_id[IDS[0]]["status"] == "scored"
    assert by_id[IDS[1]]["status"] == "harness_error" and by_id[IDS[1]]["success"] is None
    assert all(r["status"] == "harness_error" for r in records if r["scenario_id"] != IDS[0])
    assert f"{len(records) - 1} of 3 runs are harness errors" in line
    assert f"and {3 - len(records)} were not started" in line
    summary = json.loads((out / "aggregate.json").read_text())
    assert summary["rows"][0]["runs"] == 1 and summary["rows"][0]["excluded_runs"] == len(records) - 1


def test_stalled_request_is_a_harness_error_not_a_model_failure(
        tmp_path: Path, data_root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out = _local(tmp_path, data_root, "--stall-from 2 --stall-s 3", "--llm-timeout-s", "0.5")
    line = _error_line(capsys.readouterr().err)
    assert code == 1 and "3 of 3 runs are harness errors" in line and "no answer within 0.5 s" in line, line
    records = _records(out)
    assert [(r["status"], r["stop_reason"], r["failure"]["primary"]) for r in records] == \
        [("harness_error", "timeout", None)] * 3


def test_http_5xx_is_a_harness_error(tmp_path: Path, data_root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out = _local(tmp_path, data_root, "--status-from 2 --status 503")
    line = _error_line(capsys.readouterr().err)
    assert code == 1 and "3 of 3 runs are harness errors" in line and "HTTP 503" in line, line
    assert {r["status"] for r in _records(out)} == {"harness_error"}


def test_failed_health_check_stops_before_the_first_scenario(
        tmp_path: Path, data_root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out = _local(tmp_path, data_root, "--status-from 1 --status 500")
    line = _error_line(capsys.readouterr().err)
    assert code == 1 and "health check of http://127.0.0.1:" in line and "HTTP 500" in line, line
    assert "no scenario was run" in line and not (out / "records").exists()
    with pytest.raises(SystemExit) as exit_info:  # nothing listens there
        cli.main(["run", "--agent", "llm", "--base-url", f"http://127.0.0.1:{local_llm.free_port()}/v1", "--model", "m",
                  "--ids", IDS[0], "--out", str(tmp_path / "r"), "--data-root", str(data_root)])
    line = _error_line(capsys.readouterr().err)
    assert exit_info.value.code == 1 and "cannot connect" in line and not (tmp_path / "r").exists()


def test_server_that_dies_at_the_health_check_names_its_signal(
        tmp_path: Path, data_root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out = _local(tmp_path, data_root, "--die-on 1 --signal SIGILL")
    line = _error_line(capsys.readouterr().err)
    assert code == 1 and "killed by signal SIGILL" in line and "no scenario was run" in line, line
    assert not (out / "records").exists()


def test_a_server_that_still_answers_is_not_waited_for_and_a_silent_one_is() -> None:
    """After a harness error the exit status is waited for only when the server no longer answers HTTP requests.
    A live server that answered 5xx or stalled is not waited for. A port that takes TCP connections but answers
    nothing (a process writing its core dump still holds its listening socket: CI saw that) is waited for."""
    import http.server
    import socket
    import subprocess
    import threading
    import time

    class Models(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(503)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, format: str, *args: object) -> None:
            del format, args

    answering = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Models)
    threading.Thread(target=answering.serve_forever, daemon=True).start()
    silent = socket.create_server(("127.0.0.1", 0))  # listens, never accepts
    process = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"])
    try:
        server = local_llm.RunningServer(process, f"http://127.0.0.1:{answering.server_address[1]}/v1", None)
        assert server.answers_requests()
        started = time.monotonic()
        assert server.exit_cause(wait_s=60.0) is None and time.monotonic() - started < 30.0  # no 60 s wait
        server = local_llm.RunningServer(process, f"http://127.0.0.1:{silent.getsockname()[1]}/v1", None)
        assert not server.answers_requests()
        threading.Timer(1.0, process.kill).start()  # dies while the caller waits
        assert "was killed by signal SIGKILL" in (server.exit_cause(wait_s=30.0) or "")
    finally:
        answering.shutdown()
        answering.server_close()
        silent.close()
        process.kill()
        process.wait()


def test_turn_budget_below_reference_calls_is_refused(tmp_path: Path, data_root: Path,
                                                      capsys: pytest.CaptureFixture[str],
                                                      scenarios: list[Scenario]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["run", "--agent", "llm", "--base-url", "http://127.0.0.1:9/v1", "--model", "m",
                  "--max-llm-turns", "4", "--ids", "rul_cmapss_fd001_fleet", "safety_gearbox_fmea_risk",
                  "--out", str(tmp_path / "r"), "--data-root", str(data_root)])
    err = capsys.readouterr().err
    assert exit_info.value.code == 2 and err.count("\n") == 1
    assert "--max-llm-turns 4 is below what 1 selected scenario(s) need" in err
    assert "rul_cmapss_fd001_fleet (6 calls)" in err and "safety_gearbox" not in err
    for scenario in scenarios:  # the default budget: reference calls, the answer turn, and at least 2 spare
        calls = len(scenario.reference_solution)
        assert turn_budget(scenario) >= calls + 1 + max(2, (calls + 1) // 2), scenario.id


def test_several_calls_in_one_message_are_parsed() -> None:
    names = {"assess_safety_risk", "check_compliance"}
    a = '{"name": "assess_safety_risk", "arguments": {"severity": 8}}'
    b = '{"name": "check_compliance", "arguments": {"standard": "IEC61508"}}'
    expected = [ContentCall("assess_safety_risk", {"severity": 8}), ContentCall("check_compliance",
                                                                                {"standard": "IEC61508"})]
    assert parse_content_tool_calls(f"{a}\n{b}", names) == (expected, "content_json")
    assert parse_content_tool_calls(f"Two calls:\n```json\n{a}\n{b}\n```", names) == (expected, "content_json")
    assert parse_content_tool_calls(f"```json\n{a}\n```\nthen\n```json\n{b}\n```", names) == (expected,
                                                                                               "content_json")
    assert parse_content_tool_calls(f"<tool_call>\n{a}\n{b}\n</tool_call>", names) == (expected, "content_tagged")
    cut = f"{a}\n{b}\n" + '{"name": "assess_safety_risk", "argu'  # the third call cut at the token limit
    assert parse_content_tool_calls(cut, names) == (expected, "content_json")
    assert parse_content_tool_calls('{"rpn": 160, "risk_level": "high"}', names) == ([], "none")


def _agent(chat: ChatServer, **overrides: Any) -> LLMAgent:
    config = LLMConfig(base_url=chat.base_url, model="parser-test-model", **overrides)
    return LLMAgent(config, HttpChatBackend(config.base_url, api_key=None))


FMEA = {"failure_mode": "oil pump", "severity": 8, "probability": 5, "detectability": 4}


@pytest.mark.anyio
async def test_truncated_reply_is_classified_and_corrected(eval_server: MCPServer,
                                                          scenario_map: dict[str, Scenario]) -> None:
    def cut_then_answer(request: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        if len(request["messages"]) == 2:
            body = completion({"content": '<tool_call>\n{"name": "assess_safety_risk", "arguments": {"fail'})
            body["choices"][0]["finish_reason"] = "length"
            return 200, body
        return 200, completion({"content": '{"rpn": 160, "risk_level": "high"}'})

    with ChatServer(cut_then_answer) as chat:
        async with connect(eval_server) as session:
            events, record = await execute_run(scenario_map["safety_gearbox_fmea_risk"], _agent(chat), session,
                                               mode="tools_provided")
    responses = [e for e in events if e["kind"] == "llm_response"]
    assert [e["call_format"] for e in responses] == ["truncated", "none"]
    assert chat.requests[1]["messages"][-1]["content"].startswith("Your last reply was cut off at the token limit")
    assert record["status"] == "scored" and "truncated_reply" in record["failure"]["flags"]


@pytest.mark.anyio
async def test_several_calls_run_and_a_forced_answer_that_is_a_call_is_never_the_answer(
        eval_server: MCPServer, scenario_map: dict[str, Scenario]) -> None:
    call = json.dumps({"name": "assess_safety_risk", "arguments": FMEA})

    def calls_only(request: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        if request["tool_choice"] == "none":  # the forced answer turn: the model still writes a call
            return 200, completion({"content": call})
        return 200, completion({"content": f"```json\n{call}\n{call}\n```"})

    with ChatServer(calls_only) as chat:
        async with connect(eval_server) as session:
            events, record = await execute_run(scenario_map["safety_gearbox_fmea_risk"],
                                               _agent(chat, max_llm_turns=2), session, mode="tools_provided")
    tool_events = [e for e in events if e["kind"] == "tool_call"]
    assert [e["tool"] for e in tool_events] == ["assess_safety_risk"] * 2  # both calls of the first message ran
    assert record["final_answer"] is None and record["stop_reason"] == "max_steps"
    assert {"tool_call_as_answer", "no_answer", "forced_final"} <= set(record["failure"]["flags"])



@pytest.mark.skipif(platform.machine().lower() not in {"x86_64", "amd64"}, reason="the check reads x86-64 flags")
def test_cpu_without_avx2_is_named_before_the_server_starts(tmp_path: Path) -> None:
    old = tmp_path / "cpuinfo"
    old.write_text("processor\t: 0\nflags\t\t: fpu sse sse2 ssse3 sse4_1 sse4_2 avx\n")
    assert local_llm.missing_cpu_features(old) == ["avx2", "fma", "f16c"]
    new = tmp_path / "cpuinfo_v3"
    new.write_text("flags\t\t: fpu sse2 avx avx2 fma f16c bmi2 avx512f amx_tile\n")
    assert local_llm.missing_cpu_features(new) == []
