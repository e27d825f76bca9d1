"""`sfbench-agent-eval report --html` on the recorded real-model traces (SmolLM2 through llama.cpp, fixtures/
llm_traces), opened in headless Chromium: every step of every trace is replayed (each model turn, each tool call
with its arguments, status and result, the final answer beside the expected one, each validator's verdict, the
failure label), the pass rates are the records' own, and the page makes no network request and logs no console
error. A screenshot is kept (tests/browser_check.py)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from browser_check import artifact_folder, opened, screenshot, table_cells

from sfbench_jax.agent_eval.cli import main
from sfbench_jax.agent_eval.compare import compare_runs
from sfbench_jax.agent_eval.compare import to_markdown as compare_markdown
from sfbench_jax.agent_eval.floors import floor_rows, floors_markdown
from sfbench_jax.agent_eval.html import comparison_heading, mcnemar_section, p_text
from sfbench_jax.agent_eval.scenario import load_scenarios
from sfbench_jax.agent_eval.taxonomy import PASS_RULE

FIXTURES = Path(__file__).parent / "fixtures" / "llm_traces"


#: Floor records stored beside the recorded run (made from its records): the sweep floor solves the first scenario.
FLOOR_KINDS_SHOWN = ("floor:template_constant", "floor:sweep")


def recorded_run(folder: Path) -> Path:
    """A run folder (records/, traces/, floors/records/) holding the recorded traces and their records as `run`
    writes them, and floor records on the same scenarios."""
    for index, trace in enumerate(sorted(FIXTURES.glob("*.jsonl"))):
        stem = trace.name.removesuffix(".jsonl")
        (folder / "traces").mkdir(parents=True, exist_ok=True)
        (folder / "records").mkdir(parents=True, exist_ok=True)
        (folder / "floors" / "records").mkdir(parents=True, exist_ok=True)
        shutil.copy2(trace, folder / "traces" / trace.name)
        shutil.copy2(FIXTURES / f"{stem}.record.json", folder / "records" / f"{stem}.json")
        record = json.loads((FIXTURES / f"{stem}.record.json").read_text())
        for kind in FLOOR_KINDS_SHOWN:
            solved = kind == "floor:sweep" and index == 0
            floor = {**record, "agent": kind, "model": kind, "run_id": record["run_id"].replace(":llm:", f":{kind}:"),
                     "status": "scored", "success": solved, "answer_success": solved,
                     "failure": {"primary": None if solved else "reasoning", "flags": []}}
            (folder / "floors" / "records" / f"{stem}_{kind.replace(':', '_')}.json").write_text(json.dumps(floor))
    return folder


#: What the browser shows of each replay (one round trip).
REPLAY_JS = """els => els.map(d => ({run: d.dataset.runId, text: d.innerText,
    steps: Array.from(d.querySelectorAll('li.step')).map(li => [li.dataset.seq, li.dataset.kind]),
    texts: Array.from(d.querySelectorAll('li.step')).map(li => li.innerText),
    query: d.querySelector('blockquote.query').innerText,
    verdicts: Array.from(d.querySelectorAll('table.validators tbody tr')).map(tr => tr.children[2].innerText),
    label: d.querySelector('b.label').innerText}))"""


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


@pytest.fixture(scope="module")
def page_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    run = recorded_run(tmp_path_factory.mktemp("agent_run"))
    assert main(["report", str(run), "--html"]) == 0
    return run / "report.html"


def test_replay_shows_every_step_of_every_recorded_trace(page_file: Path, tmp_path: Path) -> None:
    records = {p.name.removesuffix(".record.json"): json.loads(p.read_text()) for p in FIXTURES.glob("*.record.json")}
    scenarios = {s.id: s for s in load_scenarios(ids=sorted({r["scenario_id"] for r in records.values()}))}
    with opened(page_file) as view:
        view.page.evaluate("document.querySelectorAll('details.replay').forEach(d => d.open = true)")
        replays = {item["run"]: item for item in view.page.eval_on_selector_all("details.replay", REPLAY_JS)}
        assert len(records) == 4 and len(replays) == len(records)
        for stem, record in records.items():
            replay = replays[record["run_id"]]
            events = read_jsonl(FIXTURES / f"{stem}.jsonl")
            steps = [(e["seq"], e["kind"]) for e in events if e["kind"] not in ("run_start", "llm_request")]
            assert [(int(seq), kind) for seq, kind in replay["steps"]] == steps, stem  # every turn, call, answer
            calls = [e for e in events if e["kind"] == "tool_call"]
            call_texts = [text for (_, kind), text in zip(replay["steps"], replay["texts"], strict=True)
                          if kind == "tool_call"]
            for call, text in zip(calls, call_texts, strict=True):
                assert call["tool"] in text and call["status"] in text
                for name, value in (call.get("arguments") or {}).items():
                    assert f'"{name}": {json.dumps(value)}' in text
            assert replay["query"].strip() == scenarios[record["scenario_id"]].query
            assert json.dumps(record["final_answer"], indent=1, sort_keys=True) in replay["text"]
            assert replay["verdicts"] == ["pass" if r["passed"] else "FAIL" for r in record["validator_results"]]
            expected_label = ("harness_error" if record["status"] == "harness_error"  # the stalled request
                              else "solved" if record["success"] else record["failure"]["primary"])
            assert replay["label"] == expected_label
        rates = table_cells(view, "pass-rates")
        scored = [r for r in records.values() if r["status"] == "scored"]
        overall = next(row for row in rates if row["cells"][4]["text"] == "all" and row["cells"][3]["text"] == "all")
        assert float(overall["cells"][5]["value"]) == sum(r["success"] for r in scored) / len(scored)
        assert {row["cells"][4]["text"] for row in rates} == {"all"} | {r["task_type"] for r in records.values()}
        assets = {row["cells"][4]["text"]: row for row in table_cells(view, "asset-classes")}
        assert sorted(assets) == sorted({r["asset_class"] for r in records.values()})
        for asset, row in assets.items():
            members = [r for r in scored if r["asset_class"] == asset]
            if not members:  # only the harness error's class: no rate, shown as such
                assert row["cells"][5]["value"] == "" and "[" not in row["cells"][6]["text"]
                continue
            assert float(row["cells"][5]["value"]) == sum(r["success"] for r in members) / len(members)
            assert "[" in row["cells"][6]["text"]  # pass-all-n with its interval
        outcomes = table_cells(view, "scenarios")
        assert sorted(row["data"]["scenario"] for row in outcomes) == sorted(r["scenario_id"] for r in records.values())
        assert view.refused == [] and view.console_errors == []
        shot = screenshot(view, artifact_folder(tmp_path) / "agent_eval_report.png")
    assert shot.stat().st_size > 10_000


def test_mcnemar_between_modes_is_shown_per_pair_of_groups() -> None:
    records = [json.loads(p.read_text()) for p in sorted(FIXTURES.glob("*.record.json"))]
    # the same scenarios in a second mode, one of them solved there: one discordant scenario, exact p = 1; the
    # stalled request is a harness error in both modes and is left out of the pairs (3 of the 4 scenarios)
    other = [{**r, "mode": "rag", "success": r["scenario_id"] == records[0]["scenario_id"]} for r in records]
    section = mcnemar_section(records + other)
    assert "llm/smollm2-135m-instruct/rag" in section and "llm/smollm2-135m-instruct/tools_provided" in section
    assert sum(r["status"] == "harness_error" for r in records) == 1 and records[0]["status"] == "scored"
    assert "<td>3</td>" in section and "<td>1 / 0</td>" in section and 'data-value="1.0"' in section
    assert "Only one agent/model/mode" in mcnemar_section(records)


def test_p_values_below_a_thousandth_print_in_scientific_notation() -> None:
    assert (p_text(7.9e-31), p_text(0.0005), p_text(0.001), p_text(0.25)) == ("7.90e-31", "5.00e-04", "0.001",
                                                                              "0.250")
    # the Markdown of `compare` and of the floors' table print them the same way: 12 discordant units, all one way
    def run(agent: str, solved: bool) -> list[dict]:
        return [{"scenario_id": f"s{i}", "task_type": "cost_benefit", "agent": agent, "model": agent,
                 "mode": "tools_provided", "status": "scored", "success": solved, "run_index": 0} for i in range(12)]

    assert "| 4.88e-04 |" in compare_markdown(compare_runs(run("a", True), run("b", False)))
    assert "| 4.88e-04 |" in floors_markdown(floor_rows(run("a", True), run("floor:sweep", False)))


def test_the_comparison_heading_names_what_differs() -> None:
    records = [json.loads(p.read_text()) for p in sorted(FIXTURES.glob("*.record.json"))]
    assert comparison_heading(records + [{**r, "mode": "rag"} for r in records]) == "McNemar between modes"
    assert comparison_heading(records + [{**r, "agent": "scripted"} for r in records]) == "McNemar between agents"
    assert comparison_heading(records + [{**r, "agent": "x", "mode": "rag"} for r in records]) == \
        "McNemar between agents and modes"
    assert "<h2 id=\"mcnemar-heading\">McNemar between agents</h2>" in mcnemar_section(
        records + [{**r, "model": "other"} for r in records])


#: The process metrics, failure modes, floors' McNemar rows and marked distractor calls as the browser shows them.
PARTS_JS = """() => ({rule: document.querySelector('#pass-rule').innerText,
    heading: document.querySelector('#mcnemar-heading').innerText,
    distractors: Array.from(document.querySelectorAll('li.step.distractor')).map(li =>
        [li.closest('details').dataset.runId, li.dataset.seq, li.querySelector('.distractor-tag').textContent])})"""


def _visible(view: object, selector: str) -> int:
    return view.page.eval_on_selector_all(selector, "els => els.filter(e => !e.hidden).length")  # type: ignore[attr-defined]


def test_page_shows_the_pass_rule_process_metrics_floors_failure_modes_filter_and_distractors(
        page_file: Path, tmp_path: Path) -> None:
    records = [json.loads(p.read_text()) for p in sorted(FIXTURES.glob("*.record.json"))]
    scored = [r for r in records if r["status"] == "scored"]
    scenarios = {s.id: s for s in load_scenarios(ids=sorted({r["scenario_id"] for r in records}))}
    with opened(page_file) as view:
        parts = view.page.evaluate(PARTS_JS)
        assert PASS_RULE in parts["rule"] and parts["heading"] == "McNemar between modes"
        rates = table_cells(view, "pass-rates")
        overall = next(row for row in rates if row["data"]["kind"] == "model"
                       and row["cells"][4]["text"] == "all" and row["cells"][3]["text"] == "all")
        answer_only, recall, distractor, unrecovered = (float(c["value"]) for c in overall["cells"][7:11])
        assert answer_only == sum(bool(r["answer_success"]) for r in scored) / len(scored)
        assert recall == sum(r["metrics"]["tool_recall"] for r in scored) / len(scored)
        assert distractor == sum(r["metrics"]["distractor_rate"] for r in scored) / len(scored)
        assert unrecovered == sum(bool(r["process"]["unrecovered"]) for r in scored) / len(scored)
        floors = {row["cells"][0]["text"] for row in rates if row["data"]["kind"] == "floor"}
        assert floors == set(FLOOR_KINDS_SHOWN)
        # McNemar of the model against each floor: 3 paired scenarios (the harness error is left out)
        against = {row["cells"][1]["text"]: row for row in table_cells(view, "floors-mcnemar")}
        assert set(against) == set(FLOOR_KINDS_SHOWN)
        assert [c["text"] for c in against["floor:sweep"]["cells"][2:3]] == ["3"]
        assert against["floor:sweep"]["cells"][5]["text"] == "0 / 1" and against["floor:sweep"]["cells"][6][
            "text"] == "1.000"
        modes = {row["cells"][0]["text"]: row["cells"][1]["text"] for row in table_cells(view, "failure-modes")}
        for flag in ("distractor_called", "forced_final", "answer_without_process"):
            assert int(modes[flag]) == sum(flag in r["failure"]["flags"] for r in scored)
        assert int(modes["failed_runs"]) == sum(not r["success"] for r in scored)
        # every call to one of the scenario's distractors is marked, and no other call
        expected = []
        for record in records:
            stem = record["run_id"].replace(":", "__")
            for event in read_jsonl(FIXTURES / f"{stem}.jsonl"):
                if event["kind"] == "tool_call" and event["tool"] in scenarios[record["scenario_id"]].distractor_tools:
                    expected.append([record["run_id"], str(event["seq"]), "distractor"])
        assert sorted(parts["distractors"]) == sorted(expected) and expected
        # the filter: by task type, asset class and outcome, on the scenarios and the replays
        assert _visible(view, "details.replay") == len(records)
        view.page.select_option("#filters select[name=task_type]", "cost_benefit")
        assert _visible(view, "details.replay") == _visible(view, "#scenarios tbody tr") == sum(
            r["task_type"] == "cost_benefit" for r in records)
        view.page.select_option("#filters select[name=outcome]", "tool_invocation")
        assert _visible(view, "details.replay") == sum(
            r["task_type"] == "cost_benefit" and r["failure"]["primary"] == "tool_invocation" for r in scored)
        assert view.page.inner_text("#filter-count") == str(_visible(view, "details.replay"))
        view.page.select_option("#filters select[name=task_type]", "")
        view.page.select_option("#filters select[name=outcome]", "")
        view.page.select_option("#filters select[name=asset_class]", "turbofan")
        assert _visible(view, "details.replay") == sum(r["asset_class"] == "turbofan" for r in records) == 1
        assert view.refused == [] and view.console_errors == []
        screenshot(view, artifact_folder(tmp_path) / "agent_eval_report_parts.png")
