"""The one-file HTML page of an agent evaluation (`sfbench-agent-eval report RUN_DIR... --html`).

What lives here: the page over run records and their traces: pass@1 and pass-all-n with Wilson 95% intervals
per agent x model x mode, per task type and per asset class (`report.summarise`),
McNemar's exact test between every two groups that ran the same scenarios (`compare.compare_runs`), each
scenario's outcomes, and a replay of every run: the query, each model turn, each tool call with its arguments,
status and result, the final answer beside the expected one, each validator's verdict and the failure label.
What does not: any new statistic (the numbers are the report's and the comparison's), reading files other than
the run folders' records and traces.

Floors: `evaluation_html(..., floor_rows=...)` shows rows with the `report.COLUMNS` keys (e.g. the pass rates
of floor agents) in their own block beside the model's rows, marked as floors; the floors' engineer plugs them in
there.

The page is self-contained (inline style and a few lines of sorting script, no request at view time); every
stored string is escaped.
"""

from __future__ import annotations

import html
import json
from collections import defaultdict
from collections.abc import Mapping, Sequence
from itertools import combinations
from pathlib import Path
from typing import Any

from sfbench_jax.agent_eval.compare import compare_runs
from sfbench_jax.agent_eval.report import summarise
from sfbench_jax.agent_eval.runner import run_file_stem
from sfbench_jax.agent_eval.scenario import ScenarioError
from sfbench_jax.agent_eval.trace import read_trace

__all__ = ["evaluation_html", "read_run_traces", "write_evaluation_html", "write_report_page"]

#: Stored results longer than this are cut on the page (the trace file keeps them whole).
MAX_SHOWN_CHARS = 4000
#: The summary columns shown (rates carry their interval in the same cell).
RATE_COLUMNS = (("pass@1", "pass_at_1"), ("pass-all-n", "pass_all_n"))
COUNT_COLUMNS = ("scenarios", "runs", "runs_per_scenario", "excluded_runs")


def esc(value: Any) -> str:
    """Stored text, escaped for HTML."""
    return html.escape("" if value is None else str(value), quote=True)


def shown_json(value: Any) -> str:
    """A stored value as indented JSON text (cut at `MAX_SHOWN_CHARS`), escaped."""
    text = value if isinstance(value, str) else json.dumps(value, indent=1, sort_keys=True, default=str)
    if len(text) > MAX_SHOWN_CHARS:
        text = text[:MAX_SHOWN_CHARS] + f"\n... ({len(text) - MAX_SHOWN_CHARS} more characters in the trace file)"
    return f"<pre>{esc(text)}</pre>"


def rate_cell(value: Any, low: Any, high: Any) -> str:
    """A rate with its Wilson interval; `data-value` holds the exact stored number."""
    if value is None:
        return '<td data-value="">–</td>'
    interval = f'<br><span class="ci">[{low:.3f}, {high:.3f}]</span>' if low is not None else ""
    return f'<td data-value="{value!r}">{value:.3f}{interval}</td>'


def sortable(table_id: str, headers: Sequence[str], rows: Sequence[str], caption: str = "") -> str:
    """A table whose headers sort it."""
    head = "".join(f'<th scope="col">{esc(name)}</th>' for name in headers)
    caption_html = f"<caption>{esc(caption)}</caption>" if caption else ""
    return (f'<div class="scroll"><table class="sortable" id="{esc(table_id)}">{caption_html}<thead><tr>{head}'
            f"</tr></thead><tbody>{''.join(rows)}</tbody></table></div>")


def summary_row(row: Mapping[str, Any], kind: str = "model") -> str:
    """One `report.summarise` row (or a floor's row with the same keys)."""
    cells = [f"<td>{esc(row.get(name))}</td>" for name in ("agent", "model", "mode", "split", "task_type")]
    cells += [rate_cell(row.get(column), row.get(f"{column}_ci_low"), row.get(f"{column}_ci_high"))
              for _, column in RATE_COLUMNS]
    cells += [f"<td>{esc(row.get(name))}</td>" for name in COUNT_COLUMNS]
    return f'<tr data-kind="{esc(kind)}">' + "".join(cells) + "</tr>"


SUMMARY_HEADERS = ("agent", "model", "mode", "split", "task type", *(label for label, _ in RATE_COLUMNS),
                   *COUNT_COLUMNS)


def asset_class_rows(records: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Per asset class, the `report.summarise` row of each agent x model x mode over that class's records (its
    `task_type` column holds the asset class)."""
    rows = []
    for asset in sorted({str(r.get("asset_class", "")) for r in records}):
        members = [r for r in records if str(r.get("asset_class", "")) == asset]
        rows += [{**row, "task_type": asset} for row in summarise(members)
                 if row["task_type"] == "all" and row["split"] == "all"]
    return rows


def rates_section(records: Sequence[Mapping[str, Any]], floor_rows: Sequence[Mapping[str, Any]]) -> str:
    """pass@1 and pass-all-n per agent x model x mode and task type, the floors beside them, and pass@1 per
    asset class."""
    rows = [summary_row(row) for row in summarise(records)]
    rows += [summary_row(row, "floor") for row in floor_rows]
    floors = "" if floor_rows else '<p class="note" id="floors">No floors were given for this page.</p>'
    assets = [summary_row(row) for row in asset_class_rows(records)]
    return ("<h2>Pass rates</h2>" + sortable(
        "pass-rates", SUMMARY_HEADERS, rows,
        "Wilson 95% intervals below each rate (pass@1 over scored runs, pass-all-n over scenarios); rows marked "
        "floor are the floors beside the model.") + floors + sortable(
        "asset-classes", SUMMARY_HEADERS[:4] + ("asset class",) + SUMMARY_HEADERS[5:], assets,
        "Per asset class: pass@1 and pass-all-n with their Wilson 95% intervals."))


def group_label(record: Mapping[str, Any]) -> str:
    """``agent/model/mode`` of a record."""
    return f"{record['agent']}/{record['model']}/{record['mode']}"


def groups_of(records: Sequence[Mapping[str, Any]]) -> dict[str, list[Mapping[str, Any]]]:
    """Records per agent/model/mode, in label order."""
    groups: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    for record in records:
        groups[group_label(record)].append(record)
    return dict(sorted(groups.items()))


def mcnemar_section(records: Sequence[Mapping[str, Any]]) -> str:
    """McNemar's exact test (per scenario, solved on every repeat) between every two groups, e.g. two modes."""
    groups = groups_of(records)
    rows = []
    for (label_a, a), (label_b, b) in combinations(groups.items(), 2):
        try:
            overall = compare_runs(a, b)["rows"][0]
        except ValueError as error:
            rows.append(f"<tr><td>{esc(label_a)}</td><td>{esc(label_b)}</td><td colspan='5'>{esc(error)}</td></tr>")
            continue
        rows.append(f"<tr><td>{esc(label_a)}</td><td>{esc(label_b)}</td><td>{esc(overall['pairs'])}</td>"
                    f"{rate_cell(overall['a_rate'], overall['a_ci_low'], overall['a_ci_high'])}"
                    f"{rate_cell(overall['b_rate'], overall['b_ci_low'], overall['b_ci_high'])}"
                    f"<td>{esc(overall['only_a'])} / {esc(overall['only_b'])}</td>"
                    f"{rate_cell(overall['mcnemar_p'], None, None)}</tr>")
    if not rows:
        return ('<h2>McNemar between modes</h2><p class="note">Only one agent/model/mode in these runs: nothing to '
                "compare.</p>")
    return "<h2>McNemar between modes</h2>" + sortable(
        "mcnemar", ("A", "B", "paired scenarios", "A solved", "B solved", "only A / only B", "exact p"), rows,
        "Paired on scenarios (solved on every scored repeat); McNemar's exact two-sided p-value.")


def outcome_mark(record: Mapping[str, Any]) -> str:
    """✔ solved, ✘ failed (with its label), or the exclusion status."""
    if record["status"] != "scored":
        return f'<span class="excluded">{esc(record["status"])}</span>'
    if record["success"]:
        return '<span class="pass">✔</span>'
    return f'<span class="fail">✘ {esc(record["failure"]["primary"])}</span>'


def scenarios_section(records: Sequence[Mapping[str, Any]]) -> str:
    """Per scenario, each run's outcome per group (linked to its replay)."""
    groups = list(groups_of(records))
    by_scenario: dict[str, dict[str, list[Mapping[str, Any]]]] = defaultdict(lambda: defaultdict(list))
    facts: dict[str, Mapping[str, Any]] = {}
    for record in records:
        by_scenario[record["scenario_id"]][group_label(record)].append(record)
        facts[record["scenario_id"]] = record
    rows = []
    for scenario_id in sorted(by_scenario):
        first = facts[scenario_id]
        cells = [f"<td>{esc(scenario_id)}</td><td>{esc(first['task_type'])}</td><td>{esc(first['asset_class'])}</td>"]
        for label in groups:
            runs = sorted(by_scenario[scenario_id].get(label, []), key=lambda r: r["run_index"])
            links = " ".join(f'<a href="#{esc(anchor(r["run_id"]))}">{outcome_mark(r)}</a>' for r in runs)
            cells.append(f"<td>{links or '–'}</td>")
        rows.append(f'<tr data-scenario="{esc(scenario_id)}">' + "".join(cells) + "</tr>")
    return "<h2>Scenarios</h2>" + sortable("scenarios", ("scenario", "task type", "asset class", *groups), rows,
                                           "Each run's outcome (click for its replay).")


def anchor(run_id: str) -> str:
    """The page anchor of a run's replay."""
    return "run-" + run_file_stem(run_id)


def parsed(value: Any) -> Any:
    """A stored message (a JSON string or a mapping) as a mapping where it is one."""
    if isinstance(value, str):
        try:
            return json.loads(value)
        except json.JSONDecodeError:
            return value
    return value


def step_html(event: Mapping[str, Any]) -> str:
    """One step of a replay: a model turn, a tool call or the final answer (other events as stored)."""
    kind, seq = event.get("kind"), event.get("seq")
    if kind == "llm_request":
        return ""  # the request is the conversation so far; its response is the turn shown
    if kind == "llm_response":
        message = parsed(event.get("message")) or {}
        content = message.get("content") if isinstance(message, Mapping) else message
        calls = message.get("tool_calls") if isinstance(message, Mapping) else None
        body = (f"<div class='said'>{esc(content)}</div>" if content else "") + (
            "<div>asks for: " + esc(", ".join(str(c.get("function", {}).get("name")) for c in calls)) + "</div>"
            if calls else "")
        return (f'<li class="step turn" data-seq="{esc(seq)}" data-kind="llm_response"><b>model turn '
                f"{esc(event.get('turn'))}</b> <span class='meta'>finish {esc(event.get('finish_reason'))}, tokens "
                f"{esc(event.get('tokens_in'))} in / {esc(event.get('tokens_out'))} out"
                f"{', forced final' if event.get('forced_final') else ''}</span>{body}</li>")
    if kind == "tool_call":
        status = str(event.get("status"))
        result = event.get("structured") if status == "ok" else event.get("error_text")
        arguments = event.get("arguments") if event.get("arguments") is not None else event.get("arguments_raw")
        return (f'<li class="step call {"ok" if status == "ok" else "bad"}" data-seq="{esc(seq)}" '
                f'data-kind="tool_call"><b>tool call</b> <code>{esc(event.get("tool"))}</code> '
                f"<span class='meta'>({esc(event.get('server'))})</span> status <b class='status'>{esc(status)}</b>"
                f"<div class='cols'><div>arguments{shown_json(arguments)}</div><div>result{shown_json(result)}</div>"
                "</div></li>")
    if kind == "final":
        return (f'<li class="step final" data-seq="{esc(seq)}" data-kind="final"><b>final answer</b> '
                f"<span class='meta'>stop {esc(event.get('stop_reason'))}</span>"
                f"{shown_json(event.get('final_answer'))}</li>")
    if kind == "run_start":
        return ""
    return (f'<li class="step other" data-seq="{esc(seq)}" data-kind="{esc(kind)}"><b>{esc(kind)}</b>'
            f"{shown_json({k: v for k, v in event.items() if k not in ('run_id', 'scenario_id')})}</li>")


def validators_html(results: Sequence[Mapping[str, Any]]) -> str:
    """Each validator's verdict."""
    rows = [f"<tr class='{'pass' if r.get('passed') else 'fail'}'><td>{esc(r.get('kind'))}</td>"
            f"<td>{esc(r.get('path'))}</td><td>{'pass' if r.get('passed') else 'FAIL'}</td>"
            f"<td>{esc(json.dumps(r.get('expected'), default=str))}</td><td>{esc(r.get('observed'))}</td>"
            f"<td>{esc(r.get('detail'))}</td></tr>" for r in results]
    return ("<div class='scroll'><table class='validators'><thead><tr><th>validator</th><th>path</th>"
            "<th>verdict</th><th>expected</th>"
            f"<th>observed</th><th>detail</th></tr></thead><tbody>{''.join(rows)}</tbody></table></div>")


def replay_html(record: Mapping[str, Any], events: Sequence[Mapping[str, Any]] | None,
                query: str | None, expected: Any) -> str:
    """A run's replay: the query, every step of its trace, the final answer beside the expected one, the
    validators' verdicts and the failure label."""
    failure = record.get("failure") or {}
    label = "solved" if record.get("success") else (failure.get("primary") or record.get("status"))
    steps = ("".join(step_html(event) for event in events) if events is not None
             else "<li class='note'>no trace file for this run</li>")
    return (f'<details class="replay" id="{esc(anchor(record["run_id"]))}" data-run-id="{esc(record["run_id"])}">'
            f"<summary>{outcome_mark(record)} {esc(record['run_id'])} <span class='meta'>"
            f"({esc(record['task_type'])}, {esc(record['asset_class'])})</span></summary>"
            f"<p><b>query</b></p><blockquote class='query'>{esc(query or '(scenario not found)')}</blockquote>"
            f"<ol class='steps'>{steps}</ol>"
            f"<div class='cols'><div><b>final answer</b>{shown_json(record.get('final_answer'))}</div>"
            f"<div><b>expected</b>{shown_json(expected)}</div></div>"
            f"{validators_html(record.get('validator_results') or [])}"
            f"<p>outcome: <b class='label'>{esc(label)}</b>; flags: {esc(', '.join(failure.get('flags') or []))}; "
            f"stop: {esc(record.get('stop_reason'))}</p></details>")


STYLE = """
body{font:14px/1.4 system-ui,sans-serif;margin:1.5em auto;max-width:1280px;padding:0 1em;color:#222}
h2{font-size:1.2em;margin-top:2em;border-bottom:1px solid #ccc}
table{border-collapse:collapse;font-size:13px;margin:.5em 0}
th,td{border:1px solid #ddd;padding:3px 6px;vertical-align:top}th{background:#f4f4f4;cursor:pointer}
caption{text-align:left;color:#555}.scroll{overflow-x:auto;max-width:100%}.ci{color:#777;font-size:11px}td[data-value]{text-align:right}
.pass{color:#17661b}.fail{color:#a11}.excluded{color:#a60}.note{color:#666;font-style:italic}.meta{color:#777}
.replay{border:1px solid #ddd;margin:.4em 0;padding:.3em .6em}.replay summary{cursor:pointer}
.steps{padding-left:1.5em}.step{margin:.4em 0}.call.ok{border-left:3px solid #393;padding-left:.4em}
.call.bad{border-left:3px solid #d33;padding-left:.4em}.turn{border-left:3px solid #36c;padding-left:.4em}
.cols{display:flex;gap:1em}.cols>div{flex:1;min-width:0}pre{background:#f7f7f7;padding:.4em;overflow:auto;
max-height:20em;font-size:12px;white-space:pre-wrap;word-break:break-all}blockquote{margin:.3em 1em;color:#333}
"""

SORT_SCRIPT = """
document.querySelectorAll('table.sortable th').forEach(function(th){th.addEventListener('click',function(){
var body=th.closest('table').tBodies[0],i=Array.prototype.indexOf.call(th.parentNode.children,th);
var up=th.dataset.order!=='asc';th.dataset.order=up?'asc':'desc';
var key=function(r){var c=r.children[i];if(!c)return '';var v=c.dataset.value;return v!==undefined&&v!==''?
parseFloat(v):c.textContent;};
Array.from(body.rows).sort(function(a,b){var x=key(a),y=key(b);var d=(typeof x==='number'&&typeof y==='number')?
x-y:String(x).localeCompare(String(y));return up?d:-d;}).forEach(function(r){body.appendChild(r);});});});
"""


def expected_answer(scenario: Any) -> Any:
    """A scenario's ground truth, or a line saying why it cannot be shown."""
    if scenario is None:
        return "(scenario not found among the scenarios given)"
    try:
        return scenario.load_ground_truth()
    except ScenarioError as error:
        return f"(ground truth not available: {error})"


def evaluation_html(records: Sequence[Mapping[str, Any]], traces: Mapping[str, Sequence[Mapping[str, Any]]],
                    scenarios: Mapping[str, Any], *, floor_rows: Sequence[Mapping[str, Any]] = (),
                    title: str = "sfbench agent evaluation") -> str:
    """The whole page.

    Args:
        records: Run records (`runner.read_records`).
        traces: run id -> its trace events (runs without a trace say so in their replay).
        scenarios: scenario id -> `Scenario` (its query and ground truth are shown; missing ones are named).
        floor_rows: rows with the `report.COLUMNS` keys shown beside the model's, marked as floors.
        title: the page title.
    """
    replays = []
    for record in sorted(records, key=lambda r: r["run_id"]):
        scenario = scenarios.get(record["scenario_id"])
        expected = expected_answer(scenario)
        replays.append(replay_html(record, traces.get(record["run_id"]),
                                   scenario.query if scenario is not None else None, expected))
    body = (f"<h1>{esc(title)}</h1><p>{len(records)} run record(s), {len(traces)} trace(s).</p>"
            + rates_section(records, floor_rows) + mcnemar_section(records) + scenarios_section(records)
            + '<h2>Trace replay</h2><div id="replays">' + "".join(replays) + "</div>")
    return (f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>{esc(title)}</title>'
            '<meta name="viewport" content="width=device-width,initial-scale=1">'
            f"<style>{STYLE}</style></head><body>{body}<script>{SORT_SCRIPT}</script></body></html>")


def read_run_traces(run_dirs: Sequence[Path], records: Sequence[Mapping[str, Any]]
                    ) -> dict[str, list[dict[str, Any]]]:
    """The trace of every record found in `RUN_DIR/traces/<stem>.jsonl` (runs without one are left out)."""
    traces = {}
    for record in records:
        stem = run_file_stem(record["run_id"])
        for run_dir in run_dirs:
            path = Path(run_dir) / "traces" / f"{stem}.jsonl"
            if path.is_file():
                traces[record["run_id"]] = read_trace(path)
                break
    return traces


def write_evaluation_html(run_dirs: Sequence[Path], records: Sequence[Mapping[str, Any]], target: Path, *,
                          scenarios: Mapping[str, Any], floor_rows: Sequence[Mapping[str, Any]] = ()) -> Path:
    """Write the page of these records (traces read from the run folders) to `target` atomically."""
    from sfbench_jax.storage.atomic import write_text

    text = evaluation_html(records, read_run_traces(run_dirs, records), scenarios, floor_rows=floor_rows)
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    return write_text(text, target)


def write_report_page(run_dirs: Sequence[Path], records: Sequence[Mapping[str, Any]], out_dir: Path, *,
                      floor_rows: Sequence[Mapping[str, Any]] = ()) -> Path:
    """`OUT_DIR/report.html` over the records of `run_dirs`, with the packaged scenarios (`report --html`);
    `floor_rows` (rows with the `report.COLUMNS` keys) are shown beside the model's as floors."""
    from sfbench_jax.agent_eval.scenario import load_scenarios

    scenarios = {scenario.id: scenario for scenario in load_scenarios()}
    return write_evaluation_html(run_dirs, records, Path(out_dir) / "report.html", scenarios=scenarios,
                                 floor_rows=floor_rows)
