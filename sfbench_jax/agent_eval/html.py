"""The one-file HTML page of an agent evaluation (`sfbench-agent-eval report RUN_DIR... --html`).

What lives here: the page over run records and their traces: pass@1 and pass-all-n with Wilson 95% intervals
per agent x model x mode, per task type and per asset class (`report.summarise`),
McNemar's exact test between every two groups that ran the same scenarios (`compare.compare_runs`), each
scenario's outcomes, and a replay of every run: the query, each model turn, each tool call with its arguments,
status and result, the final answer beside the expected one, each validator's verdict and the failure label.
The page states the pass rule (`taxonomy.PASS_RULE`) and shows beside pass@1 the lenient answer-only rate and
the process metrics (required-tool recall, distractor rate, share of runs with an unrecovered invocation error),
the failure-mode counts (`report.failure_modes`), McNemar's test of every model against every floor
(`floors.floor_rows`), a filter of the scenarios and replays by task type, asset class and outcome, and marks
each distractor call in the replay. p-values below 0.001 are printed in scientific notation.
What does not: any new statistic (the numbers are the report's and the comparison's), reading files other than
the run folders' records and traces.

Floors: `evaluation_html(..., floor_records=...)` shows the floors' pass rates in their own rows beside the
model's, marked as floors, and the floors' McNemar table (``floor_rows`` takes rows with the `report.COLUMNS`
keys directly, without the McNemar table).

The page is self-contained (inline style and a few lines of sorting and filter script, no request at view time;
the page kit both HTML pages share, `sfbench_jax.api.html_page`); every stored string is escaped.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Mapping, Sequence
from itertools import combinations
from pathlib import Path
from typing import Any

from sfbench_jax.agent_eval.compare import compare_runs
from sfbench_jax.agent_eval.floors import floor_rows as paired_floor_rows
from sfbench_jax.agent_eval.report import answer_passed, failure_modes, summarise, variant_of
from sfbench_jax.agent_eval.runner import run_file_stem
from sfbench_jax.agent_eval.scenario import ScenarioError
from sfbench_jax.agent_eval.taxonomy import FAILURE_MODES, PASS_RULE
from sfbench_jax.agent_eval.trace import read_trace
from sfbench_jax.api.html_page import esc, page_html, sortable_table, write_page

__all__ = ["evaluation_html", "p_text", "read_run_traces", "write_evaluation_html", "write_report_page"]

#: Stored results longer than this are cut on the page (the trace file keeps them whole).
MAX_SHOWN_CHARS = 4000
#: The summary columns shown (rates carry their interval in the same cell).
RATE_COLUMNS = (("pass@1", "pass_at_1"), ("pass-all-n", "pass_all_n"))
#: Process metrics shown beside pass@1 (label, `report.COLUMNS` key).
PROCESS_COLUMNS = (("answer-only pass@1 (lenient)", "answer_only_pass_at_1"), ("required-tool recall", "tool_recall"),
                   ("distractor rate", "distractor_rate"), ("unrecovered errors", "unrecovered_error_rate"))
COUNT_COLUMNS = ("scenarios", "runs", "runs_per_scenario", "excluded_runs", "variant")


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


def p_text(value: float) -> str:
    """A p-value as printed: scientific notation below 0.001 (``7.89e-31``), else three decimals."""
    return f"{value:.2e}" if 0.0 < value < 0.001 else f"{value:.3f}"


def p_cell(value: Any) -> str:
    """A p-value cell; `data-value` holds the exact stored number."""
    if value is None:
        return '<td data-value="">–</td>'
    return f'<td class="p" data-value="{value!r}">{p_text(float(value))}</td>'


def metric_cell(value: Any) -> str:
    """A process metric (three decimals; n/a when undefined)."""
    if value is None:
        return '<td data-value="">n/a</td>'
    return f'<td data-value="{value!r}">{value:.3f}</td>'


def summary_row(row: Mapping[str, Any], kind: str = "model") -> str:
    """One `report.summarise` row (or a floor's row with the same keys)."""
    cells = [f"<td>{esc(row.get(name))}</td>" for name in ("agent", "model", "mode", "split", "task_type")]
    cells += [rate_cell(row.get(column), row.get(f"{column}_ci_low"), row.get(f"{column}_ci_high"))
              for _, column in RATE_COLUMNS]
    cells += [metric_cell(row.get(column)) for _, column in PROCESS_COLUMNS]
    cells += [f"<td>{esc(row.get(name))}</td>" for name in COUNT_COLUMNS]
    return f'<tr data-kind="{esc(kind)}">' + "".join(cells) + "</tr>"


SUMMARY_HEADERS = ("agent", "model", "mode", "split", "task type", *(label for label, _ in RATE_COLUMNS),
                   *(label for label, _ in PROCESS_COLUMNS), *COUNT_COLUMNS)


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
    return ("<h2>Pass rates</h2>" + f'<p id="pass-rule"><b>Pass rule:</b> {esc(PASS_RULE)}.</p>' + sortable_table(
        "pass-rates", SUMMARY_HEADERS, rows,
        "Wilson 95% intervals below each rate (pass@1 over scored runs, pass-all-n over scenarios); beside them "
        "the answer-only rate (validators alone, lenient) and the process metrics: required-tool recall, "
        "distractor rate, share of runs leaving an invocation error unrecovered; rows marked floor are the "
        "floors beside the model.") + floors + sortable_table(
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


def comparison_heading(records: Sequence[Mapping[str, Any]]) -> str:
    """"McNemar between agents", "... between modes" or "... between agents and modes": what the groups differ in."""
    agents = {(r["agent"], r["model"]) for r in records}
    modes = {r["mode"] for r in records}
    if len(agents) > 1 and len(modes) > 1:
        return "McNemar between agents and modes"
    return "McNemar between agents" if len(agents) > 1 else "McNemar between modes"


def mcnemar_section(records: Sequence[Mapping[str, Any]]) -> str:
    """McNemar's exact test (per scenario, solved on every repeat) between every two groups (agents, modes)."""
    groups = groups_of(records)
    heading = comparison_heading(records)
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
                    f"{p_cell(overall['mcnemar_p'])}</tr>")
    if not rows:
        return (f'<h2 id="mcnemar-heading">{heading}</h2><p class="note">Only one agent/model/mode in these runs: '
                "nothing to compare.</p>")
    return f'<h2 id="mcnemar-heading">{heading}</h2>' + sortable_table(
        "mcnemar", ("A", "B", "paired scenarios", "A solved", "B solved", "only A / only B", "exact p"), rows,
        "Paired on scenarios (solved on every scored repeat); McNemar's exact two-sided p-value.")


def floors_mcnemar_section(records: Sequence[Mapping[str, Any]], floor_records: Sequence[Mapping[str, Any]]) -> str:
    """Every model against every floor of its mode (`floors.floor_rows`, group ``all``): both pass@1 with their
    Wilson intervals, the discordant scenarios and McNemar's exact p."""
    rows = []
    for row in paired_floor_rows(records, floor_records):
        if row["group"] != "all":
            continue
        rows.append(f'<tr><td>{esc(row["agent"])}/{esc(row["model"])}/{esc(row["mode"])}</td>'
                    f"<td>{esc(row['floor'])}</td><td>{esc(row['scenarios'])}</td>"
                    + rate_cell(row["pass_at_1"], row["pass_at_1_ci_low"], row["pass_at_1_ci_high"])
                    + rate_cell(row["floor_pass_at_1"], row["floor_pass_at_1_ci_low"], row["floor_pass_at_1_ci_high"])
                    + f"<td>{esc(row['only_model'])} / {esc(row['only_floor'])}</td>{p_cell(row['mcnemar_p'])}</tr>")
    if not rows:
        return ('<h2>McNemar against the floors</h2><p class="note" id="floors-mcnemar-none">No floor runs on these '
                "scenarios.</p>")
    return "<h2>McNemar against the floors</h2>" + sortable_table(
        "floors-mcnemar", ("model", "floor", "paired scenarios", "model pass@1", "floor pass@1",
                           "only model / only floor", "exact p"), rows,
        "Each model against each floor agent on the scenarios both scored (solved on every scored repeat); "
        "McNemar's exact two-sided p-value.")


def failure_modes_section(records: Sequence[Mapping[str, Any]]) -> str:
    """The failure-mode counts (`report.failure_modes`): per group, how many scored runs carry each flag, and the
    tool calls by status."""
    table = failure_modes(records)
    if not table:
        return ""
    keys = ["runs", "failed_runs", "calls", *sorted({k for row in table for k in row if k.startswith("calls_")}),
            *FAILURE_MODES]
    rows = [f'<tr data-mode="{esc(key)}"><td>{esc(key)}</td>'
            + "".join(f'<td data-value="{row.get(key, 0)}">{esc(row.get(key, 0))}</td>' for row in table) + "</tr>"
            for key in keys]
    return "<h2>Failure modes</h2>" + sortable_table(
        "failure-modes", ("count", *(f"{r['agent']}/{r['model']}/{r['mode']}" for r in table)), rows,
        "Each flag counts the scored runs that carry it (answer_without_process: the answer passed, the process "
        "did not); calls_<status> counts tool calls by outcome.")


def outcome_key(record: Mapping[str, Any]) -> str:
    """The outcome a filter selects: solved, the failure's primary label, or the exclusion status."""
    if record["status"] != "scored":
        return str(record["status"])
    return "solved" if record["success"] else str(record["failure"]["primary"])


FILTER_SCRIPT = """
function sfbFilter(){var f={};document.querySelectorAll('#filters select').forEach(function(s){f[s.name]=s.value;});
var keep=function(el){return(!f.task_type||el.dataset.taskType===f.task_type)&&(!f.asset_class||
el.dataset.assetClass===f.asset_class)&&(!f.outcome||(' '+el.dataset.outcomes+' ').indexOf(' '+f.outcome+' ')>=0);};
var shown=0;document.querySelectorAll('[data-outcomes]').forEach(function(el){var k=keep(el);el.hidden=!k;
if(k&&el.matches('details.replay'))shown++;});document.getElementById('filter-count').textContent=shown;}
document.querySelectorAll('#filters select').forEach(function(s){s.addEventListener('change',sfbFilter);});
"""


def filters_html(records: Sequence[Mapping[str, Any]]) -> str:
    """Three selects that hide the scenarios and replays not of a task type, asset class or outcome."""
    def select(name: str, label: str, values: Sequence[str]) -> str:
        options = "".join(f'<option value="{esc(v)}">{esc(v)}</option>' for v in values)
        return (f'<label>{esc(label)} <select name="{esc(name)}"><option value="">all</option>{options}'
                "</select></label> ")

    return ('<div id="filters"><b>Filter</b> '
            + select("task_type", "task type", sorted({str(r["task_type"]) for r in records}))
            + select("asset_class", "asset class", sorted({str(r.get("asset_class", "")) for r in records}))
            + select("outcome", "outcome", sorted({outcome_key(r) for r in records}))
            + f'<span class="meta"><span id="filter-count">{len(records)}</span> replay(s) shown</span></div>')


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
        outcomes = set()
        for label in groups:
            runs = sorted(by_scenario[scenario_id].get(label, []), key=lambda r: (r["run_index"], variant_of(r)))
            outcomes |= {outcome_key(r) for r in runs}
            links = " ".join(f'<a href="#{esc(anchor(r["run_id"]))}">{outcome_mark(r)}</a>' for r in runs)
            cells.append(f"<td>{links or '–'}</td>")
        rows.append(f'<tr data-scenario="{esc(scenario_id)}" data-task-type="{esc(first["task_type"])}" '
                    f'data-asset-class="{esc(first.get("asset_class", ""))}" '
                    f'data-outcomes="{esc(" ".join(sorted(outcomes)))}">' + "".join(cells) + "</tr>")
    return "<h2>Scenarios</h2>" + sortable_table("scenarios", ("scenario", "task type", "asset class", *groups),
                                                 rows, "Each run's outcome (click for its replay).")


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


def step_html(event: Mapping[str, Any], distractors: frozenset[str] = frozenset()) -> str:
    """One step of a replay: a model turn, a tool call (a distractor's marked as such) or the final answer (other
    events as stored)."""
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
        distractor = event.get("tool") in distractors
        mark = (" <b class='distractor-tag' title='a distractor: a tool this task does not need'>distractor</b>"
                if distractor else "")
        return (f'<li class="step call {"ok" if status == "ok" else "bad"}{" distractor" if distractor else ""}" '
                f'data-seq="{esc(seq)}" data-kind="tool_call"><b>tool call</b> <code>{esc(event.get("tool"))}</code>'
                f"{mark} <span class='meta'>({esc(event.get('server'))})</span> status "
                f"<b class='status'>{esc(status)}</b>"
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
                query: str | None, expected: Any, distractors: frozenset[str] = frozenset()) -> str:
    """A run's replay: the query, every step of its trace (distractor calls marked), the final answer beside the
    expected one, the validators' verdicts, the process check and the failure label."""
    failure = record.get("failure") or {}
    label = "solved" if record.get("success") else (failure.get("primary") or record.get("status"))
    steps = ("".join(step_html(event, distractors) for event in events) if events is not None
             else "<li class='note'>no trace file for this run</li>")
    process = record.get("process") or {}
    faults = "; ".join(f"{name.replace('_', ' ')}: {', '.join(process[name])}"
                       for name in ("required_missing", "distractors_called", "unrecovered") if process.get(name))
    process_text = (f"process: {'right' if process.get('passed') else faults}; answer alone: "
                    f"{'passes' if answer_passed(record) else 'fails'}") if process else ""
    return (f'<details class="replay" id="{esc(anchor(record["run_id"]))}" data-run-id="{esc(record["run_id"])}" '
            f'data-task-type="{esc(record["task_type"])}" data-asset-class="{esc(record.get("asset_class", ""))}" '
            f'data-outcomes="{esc(outcome_key(record))}">'
            f"<summary>{outcome_mark(record)} {esc(record['run_id'])} <span class='meta'>"
            f"({esc(record['task_type'])}, {esc(record['asset_class'])})</span></summary>"
            f"<p><b>query</b></p><blockquote class='query'>{esc(query or '(scenario not found)')}</blockquote>"
            f"<ol class='steps'>{steps}</ol>"
            f"<div class='cols'><div><b>final answer</b>{shown_json(record.get('final_answer'))}</div>"
            f"<div><b>expected</b>{shown_json(expected)}</div></div>"
            f"{validators_html(record.get('validator_results') or [])}"
            f"<p>outcome: <b class='label'>{esc(label)}</b>; flags: {esc(', '.join(failure.get('flags') or []))}; "
            f"stop: {esc(record.get('stop_reason'))}</p>"
            f"<p class='process'>{esc(process_text)}</p></details>")


#: The agent page's own classes (the style both pages share is `api.html_page.STYLE`).
PAGE_STYLE = """
.pass{color:#17661b}.fail{color:#a11}.excluded{color:#a60}
.replay{border:1px solid #ddd;margin:.4em 0;padding:.3em .6em}.replay summary{cursor:pointer}
.steps{padding-left:1.5em}.step{margin:.4em 0}.call.ok{border-left:3px solid #393;padding-left:.4em}
.call.bad{border-left:3px solid #d33;padding-left:.4em}.turn{border-left:3px solid #36c;padding-left:.4em}
.distractor{border-left:3px solid #e80!important;background:#fff6e8}.distractor-tag{color:#b50}
#filters{margin:.6em 0}#filters label{margin-right:1em}
.cols{display:flex;gap:1em}.cols>div{flex:1;min-width:0}pre{background:#f7f7f7;padding:.4em;overflow:auto;
max-height:20em;font-size:12px;white-space:pre-wrap;word-break:break-all}blockquote{margin:.3em 1em;color:#333}
"""


def expected_answer(scenario: Any) -> Any:
    """A scenario's ground truth, or a line saying why it cannot be shown."""
    if scenario is None:
        return "(scenario not found among the scenarios given)"
    try:
        return scenario.load_ground_truth()
    except ScenarioError as error:
        return f"(ground truth not available: {error})"


def _query(scenario: Any, record: Mapping[str, Any]) -> str | None:
    """The query the run was asked (its variant's text), or None without the scenario."""
    if scenario is None:
        return None
    try:
        return str(scenario.query_for(variant_of(record)))
    except ScenarioError:
        return str(scenario.query)


def evaluation_html(records: Sequence[Mapping[str, Any]], traces: Mapping[str, Sequence[Mapping[str, Any]]],
                    scenarios: Mapping[str, Any], *, floor_rows: Sequence[Mapping[str, Any]] = (),
                    floor_records: Sequence[Mapping[str, Any]] = (),
                    title: str = "sfbench agent evaluation") -> str:
    """The whole page.

    Args:
        records: Run records (`runner.read_records`).
        traces: run id -> its trace events (runs without a trace say so in their replay).
        scenarios: scenario id -> `Scenario` (its query, distractors and ground truth are shown; missing ones are
            named).
        floor_rows: rows with the `report.COLUMNS` keys shown beside the model's, marked as floors.
        floor_records: the floors' run records: their rows beside the model's and McNemar against each floor.
        title: the page title.
    """
    replays = []
    for record in sorted(records, key=lambda r: r["run_id"]):
        scenario = scenarios.get(record["scenario_id"])
        expected = expected_answer(scenario)
        distractors = frozenset(scenario.distractor_tools) if scenario is not None else frozenset()
        replays.append(replay_html(record, traces.get(record["run_id"]), _query(scenario, record), expected,
                                   distractors))
    shown_floors = [*floor_rows, *summarise(floor_records)]
    body = (f"<h1>{esc(title)}</h1><p>{len(records)} run record(s), {len(traces)} trace(s).</p>"
            + rates_section(records, shown_floors) + floors_mcnemar_section(records, floor_records)
            + mcnemar_section(records) + failure_modes_section(records) + filters_html(records)
            + scenarios_section(records)
            + '<h2>Trace replay</h2><div id="replays">' + "".join(replays) + "</div>")
    return page_html(title, body, style=PAGE_STYLE, script=FILTER_SCRIPT)


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
                          scenarios: Mapping[str, Any], floor_rows: Sequence[Mapping[str, Any]] = (),
                          floor_records: Sequence[Mapping[str, Any]] = ()) -> Path:
    """Write the page of these records (traces read from the run folders) to `target` atomically."""
    text = evaluation_html(records, read_run_traces(run_dirs, records), scenarios, floor_rows=floor_rows,
                           floor_records=floor_records)
    return write_page(text, target)


def write_report_page(run_dirs: Sequence[Path], records: Sequence[Mapping[str, Any]], out_dir: Path, *,
                      floor_rows: Sequence[Mapping[str, Any]] = (),
                      floor_records: Sequence[Mapping[str, Any]] = ()) -> Path:
    """`OUT_DIR/report.html` over the records of `run_dirs`, with the packaged scenarios (`report --html`);
    `floor_rows` (rows with the `report.COLUMNS` keys) are shown beside the model's as floors, `floor_records`
    as floors and in the floors' McNemar table."""
    from sfbench_jax.agent_eval.scenario import load_scenarios

    scenarios = {scenario.id: scenario for scenario in load_scenarios()}
    return write_evaluation_html(run_dirs, records, Path(out_dir) / "report.html", scenarios=scenarios,
                                 floor_rows=floor_rows, floor_records=floor_records)
