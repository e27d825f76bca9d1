"""Aggregate run records into the report table (Markdown + CSV) and a JSON summary.

What lives here: `summarise` (per agent x model x mode: an ``all`` row, one row per task type, and
when the run holds transfer-tagged scenarios one row per side of the cross-equipment split),
`aggregate` (the JSON summary with failure-label counts, flag co-occurrence and a per-asset-class
breakdown) and `write_report`. Pass metrics follow mcp_agent_eval.md section 3.3: pass@1 is the
mean success over runs, pass-all-n the fraction of scenarios solved on all n runs, and pass^k
tau-bench's unbiased mean over scenarios of C(c, k) / C(n, k). pass@1 and pass-all-n carry Wilson
95 % intervals (``stats.wilson_interval``; pass@1 over runs, pass-all-n over scenarios). Runs with
``evaluator_error`` or ``harness_error`` are excluded from every rate and counted in their own
columns. With floor records (``floors.py``) the report adds the floors' table: each model's pass@1 beside
each floor's, with intervals and McNemar's exact p paired by scenario. What does not: scoring runs, paired
comparisons (``compare.py``).
"""

from __future__ import annotations

import csv
import json
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from sfbench_jax.agent_eval.compare import unit_of
from sfbench_jax.agent_eval.floors import FLOOR_COLUMNS, floor_rows, floors_markdown
from sfbench_jax.agent_eval.metrics import mean_applicable, pass_all, pass_at_1, pass_hat_k
from sfbench_jax.agent_eval.stats import wilson_interval
from sfbench_jax.agent_eval.taxonomy import FAILURE_LABELS, FAILURE_MODES, PASS_RULE

__all__ = ["COLUMNS", "aggregate", "answer_passed", "asset_class_markdown", "by_asset_class", "common_scenarios",
           "failure_modes", "failure_modes_markdown", "printed_tables", "summarise", "to_markdown",
           "variant_of", "write_report"]

COLUMNS = ("agent", "model", "mode", "variant", "split", "task_type", "scenarios", "runs",
           "runs_per_scenario", "pass_at_1", "pass_at_1_ci_low", "pass_at_1_ci_high",
           "pass_all_n", "pass_all_n_ci_low", "pass_all_n_ci_high", "pass_hat_2", "answer_only_pass_at_1",
           "tool_precision", "tool_recall", "distractor_rate", "unrecovered_error_rate", "sequencing_accuracy",
           "mean_tool_calls", "mean_llm_turns", "reasoning", "tool_invocation", "orchestration",
           "excluded_runs", "metrics_not_applicable")
# Markdown shows each rate with its interval in one cell.
_INTERVALS = {"pass_at_1": ("pass_at_1_ci_low", "pass_at_1_ci_high"),
              "pass_all_n": ("pass_all_n_ci_low", "pass_all_n_ci_high")}

_PROCESS = ("tool_precision", "tool_recall", "distractor_rate", "sequencing_accuracy")
_RATES = ("answer_only_pass_at_1", "unrecovered_error_rate")


def variant_of(record: Mapping[str, Any]) -> str:
    """The query variant a run was asked in (``explicit`` for records written before variants existed)."""
    return str(record.get("variant") or "explicit")


def answer_passed(record: Mapping[str, Any]) -> bool:
    """Whether a scored run's answer alone passed the validators (the lenient, answer-only pass; records
    written before the process check count their ``success``)."""
    value = record.get("answer_success", record.get("success"))
    return bool(value)


def _unrecovered(record: Mapping[str, Any]) -> bool:
    process = record.get("process") or {}
    if "unrecovered" in process:
        return bool(process["unrecovered"])
    return "invocation_unrecovered" in record["failure"]["flags"]


def _mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


def _interval(successes: int, n: int) -> tuple[float | None, float | None]:
    return wilson_interval(successes, n) if n else (None, None)


def _row(key: tuple[str, str, str, str, str, str],
         records: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    scored = [r for r in records if r["status"] == "scored"]
    by_scenario: dict[str, list[bool]] = defaultdict(list)
    for record in scored:
        by_scenario[unit_of(record)].append(bool(record["success"]))
    runs_per = sorted({len(v) for v in by_scenario.values()})
    n_min = min(runs_per) if runs_per else 0
    labels = Counter(r["failure"]["primary"] for r in scored if r["failure"]["primary"])
    run_low, run_high = _interval(sum(bool(r["success"]) for r in scored), len(scored))
    solved = sum(all(v) for v in by_scenario.values())
    all_low, all_high = _interval(solved, len(by_scenario))
    row: dict[str, Any] = {
        "agent": key[0], "model": key[1], "mode": key[2], "variant": key[5], "split": key[3], "task_type": key[4],
        "scenarios": len(by_scenario), "runs": len(scored),
        "runs_per_scenario": "/".join(map(str, runs_per)),
        "pass_at_1": pass_at_1(by_scenario) if scored else None,
        "pass_at_1_ci_low": run_low, "pass_at_1_ci_high": run_high,
        "pass_all_n": pass_all(by_scenario) if scored else None,
        "pass_all_n_ci_low": all_low, "pass_all_n_ci_high": all_high,
        "pass_hat_2": pass_hat_k(by_scenario, 2) if n_min >= 2 else None,
        "answer_only_pass_at_1": _mean([float(answer_passed(r)) for r in scored]),
        "unrecovered_error_rate": _mean([float(_unrecovered(r)) for r in scored]),
        "mean_tool_calls": _mean([r["metrics"]["n_tool_calls"] for r in scored]),
        "mean_llm_turns": _mean([r["metrics"]["n_llm_turns"] for r in scored]),
        "excluded_runs": len(records) - len(scored),
    }
    not_applicable = []
    for name in _PROCESS:  # undefined per-run values (None: no calls, no edges) are skipped and counted
        row[name], n_na = mean_applicable(r["metrics"].get(name) for r in scored)
        not_applicable += [f"{name} {n_na}"] if n_na else []
    row["metrics_not_applicable"] = ", ".join(not_applicable)
    for label in FAILURE_LABELS:
        row[label] = labels.get(label, 0)
    return {column: row[column] for column in COLUMNS}


def _split_of(record: Mapping[str, Any]) -> str:
    return str(record.get("split") or "in_distribution")


def summarise(records: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Report rows: per agent x model x mode, one ``all`` row, one row per task type, then (if
    any scenario is transfer-tagged) one ``all`` row for each side of the split, then (if the run asked
    both query variants) one ``all`` row per variant (pass@1 per variant; ``variant`` is ``all`` in the
    rows over both).

    Args:
        records: Run records.

    Returns:
        Rows with the `COLUMNS` keys.
    """
    groups: dict[tuple[str, str, str], list[Mapping[str, Any]]] = defaultdict(list)
    for record in records:
        groups[(str(record["agent"]), str(record["model"]), str(record["mode"]))].append(record)
    rows = []
    for (agent, model, mode), members in sorted(groups.items()):
        variants = sorted({variant_of(r) for r in members})
        shown = variants[0] if len(variants) == 1 else "all"
        rows.append(_row((agent, model, mode, "all", "all", shown), members))
        for task_type in sorted({str(r["task_type"]) for r in members}):
            rows.append(_row((agent, model, mode, "all", task_type, shown),
                             [r for r in members if r["task_type"] == task_type]))
        if any(_split_of(r) == "transfer" for r in members):
            for split in ("in_distribution", "transfer"):
                side = [r for r in members if _split_of(r) == split]
                if side:
                    rows.append(_row((agent, model, mode, split, "all", shown), side))
        if len(variants) > 1:
            for variant in variants:
                rows.append(_row((agent, model, mode, "all", "all", variant),
                                 [r for r in members if variant_of(r) == variant]))
    return rows


def by_asset_class(records: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """pass@1 (with its Wilson interval) per agent x model x mode x asset class.

    Args:
        records: Run records.

    Returns:
        Rows ``{agent, model, mode, asset_class, split, scenarios, runs, pass_at_1,
        pass_at_1_ci_low, pass_at_1_ci_high}``.
    """
    groups: dict[tuple[str, str, str, str], list[Mapping[str, Any]]] = defaultdict(list)
    for record in records:
        if record["status"] == "scored":
            groups[(str(record["agent"]), str(record["model"]), str(record["mode"]),
                    str(record.get("asset_class", "")))].append(record)
    rows = []
    for (agent, model, mode, asset), members in sorted(groups.items()):
        successes = sum(bool(r["success"]) for r in members)
        low, high = wilson_interval(successes, len(members))
        rows.append({"agent": agent, "model": model, "mode": mode, "asset_class": asset,
                     "split": _split_of(members[0]),
                     "scenarios": len({r["scenario_id"] for r in members}),
                     "runs": len(members), "pass_at_1": successes / len(members),
                     "pass_at_1_ci_low": low, "pass_at_1_ci_high": high})
    return rows


def _pass_hat_all_k(records: Sequence[Mapping[str, Any]]) -> dict[str, float]:
    by_scenario: dict[str, list[bool]] = defaultdict(list)
    for record in records:
        if record["status"] == "scored":
            by_scenario[unit_of(record)].append(bool(record["success"]))
    n_min = min((len(v) for v in by_scenario.values()), default=0)
    return {str(k): pass_hat_k(by_scenario, k) for k in range(1, n_min + 1)}


def common_scenarios(records: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """Per mode, only the records of scenarios that every agent x model of that mode ran.

    Args:
        records: Run records (e.g. a reference run and a model's run over a subset).

    Returns:
        The records whose (mode, scenario) was run by every agent x model of the mode.
    """
    ran: dict[str, dict[tuple[str, str], set[str]]] = defaultdict(lambda: defaultdict(set))
    for record in records:
        ran[str(record["mode"])][(str(record["agent"]), str(record["model"]))].add(
            str(record["scenario_id"]))
    common = {mode: set.intersection(*groups.values()) for mode, groups in ran.items()}
    return [r for r in records if str(r["scenario_id"]) in common[str(r["mode"])]]


def asset_class_markdown(rows: Sequence[Mapping[str, Any]]) -> str:
    """`by_asset_class` rows as a Markdown table (pass@1 with its Wilson interval).

    Args:
        rows: Rows from `by_asset_class`.

    Returns:
        The table text.
    """
    lines = ["| agent | model | mode | asset_class | split | scenarios | runs | pass_at_1 |",
             "|---|---|---|---|---|---|---|---|"]
    lines += [f"| {r['agent']} | {r['model']} | {r['mode']} | {r['asset_class']} | {r['split']} | "
              f"{r['scenarios']} | {r['runs']} | {_fmt(r['pass_at_1'])} "
              f"[{_fmt(r['pass_at_1_ci_low'])}, {_fmt(r['pass_at_1_ci_high'])}] |" for r in rows]
    return "\n".join(lines) + "\n"


def failure_modes(records: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Failure-mode counts per agent x model x mode (taxonomy flags and tool-call statuses).

    Args:
        records: Run records.

    Returns:
        Rows ``{agent, model, mode, runs, failed_runs, calls, calls_<status>..., <flag>...}``:
        each flag counts the scored runs that carry it (`taxonomy.FAILURE_MODES`), each
        ``calls_<status>`` the tool calls that ended in that status.
    """
    groups: dict[tuple[str, str, str], list[Mapping[str, Any]]] = defaultdict(list)
    for record in records:
        if record["status"] == "scored":
            groups[(str(record["agent"]), str(record["model"]), str(record["mode"]))].append(record)
    rows = []
    for (agent, model, mode), members in sorted(groups.items()):
        statuses: Counter[str] = Counter()
        for record in members:
            statuses.update(record["metrics"].get("n_calls_by_status") or {})
        row: dict[str, Any] = {"agent": agent, "model": model, "mode": mode, "runs": len(members),
                               "failed_runs": sum(not r["success"] for r in members),
                               "calls": sum(r["metrics"]["n_tool_calls"] for r in members)}
        row.update({f"calls_{k}": v for k, v in sorted(statuses.items())})
        row.update({flag: sum(flag in r["failure"]["flags"] for r in members)
                    for flag in FAILURE_MODES})
        rows.append(row)
    return rows


def failure_modes_markdown(rows: Sequence[Mapping[str, Any]]) -> str:
    """`failure_modes` rows as a Markdown table (one column per agent x model x mode).

    Args:
        rows: Rows from `failure_modes`.

    Returns:
        The table text.
    """
    keys = ["runs", "failed_runs", "calls"]
    keys += sorted({k for row in rows for k in row if k.startswith("calls_")})
    keys += list(FAILURE_MODES)
    header = ["count"] + [f"{r['agent']} / {r['model']} / {r['mode']}" for r in rows]
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join([key] + [str(row.get(key, 0)) for row in rows]) + " |"
              for key in keys]
    return "\n".join(lines) + "\n"


def aggregate(records: Sequence[Mapping[str, Any]],
              floor_records: Sequence[Mapping[str, Any]] = ()) -> dict[str, Any]:
    """JSON summary: rows, failure labels, flag co-occurrence, excluded runs, the floors, the formulas.

    Args:
        records: Run records.
        floor_records: The floor agents' records on the same scenarios (``floors.run_floors``); they
            only enter ``floors`` (`floors.floor_rows`), never the models' rows and counts.

    Returns:
        The summary.
    """
    scored = [r for r in records if r["status"] == "scored"]
    failed = [r for r in scored if not r["success"]]
    co_occurrence: Counter[str] = Counter()
    for record in failed:
        for flag in record["failure"]["flags"]:
            co_occurrence[f"{record['failure']['primary']}|{flag}"] += 1
    groups: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    for record in records:
        groups[f"{record['agent']}|{record['model']}|{record['mode']}"].append(record)
    return {
        "rows": summarise(records),
        "by_asset_class": by_asset_class(records),
        "pass_hat_k": {key: _pass_hat_all_k(members) for key, members in sorted(groups.items())},
        "failure_labels": dict(Counter(r["failure"]["primary"] for r in failed)),
        "failure_modes": failure_modes(records),
        "flag_co_occurrence": dict(sorted(co_occurrence.items())),
        "excluded": [{"run_id": r["run_id"], "status": r["status"],
                      "error": r["evaluator_error"]} for r in records if r["status"] != "scored"],
        "floors": floor_rows(records, floor_records),
        "definitions": {
            "pass_at_1": "mean success over all scored runs",
            "success": PASS_RULE,
            "answer_only_pass_at_1": "mean over scored runs of the answer passing the validators alone "
                                     "(lenient: tool choice and errors ignored)",
            "unit": "a scenario, or a scenario asked in a query variant other than explicit (scenario~fuzzy)",
            "pass_all_n": "fraction of scenarios whose every scored run succeeded",
            "pass_hat_k": "mean over scenarios of C(c,k)/C(n,k) (tau-bench, unbiased)",
            "ci": "Wilson 95% score interval; pass@1 over scored runs, pass_all_n over scenarios",
            "split": "transfer = scenarios tagged 'transfer' (held-out asset classes)",
            "floors": "each model beside each floor agent of its mode on the scenarios both scored: pass@1 "
                      "with Wilson 95% over runs; 2x2 over scenarios (solved on every scored repeat); "
                      "McNemar exact 2 * P[Binomial(only_model + only_floor, 1/2) <= min], capped at 1",
        },
    }


def _fmt(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.3f}"
    return str(value)


def _cell(row: Mapping[str, Any], column: str) -> str:
    if column in _PROCESS and row[column] is None and row.get("runs"):
        return "n/a"
    if column in _INTERVALS and row[column] is not None:
        low, high = (row[c] for c in _INTERVALS[column])
        return f"{_fmt(row[column])} [{_fmt(low)}, {_fmt(high)}]"
    return _fmt(row[column])


def to_markdown(rows: Sequence[Mapping[str, Any]]) -> str:
    """Render report rows as a Markdown table (rates with their 95 % interval in brackets).

    Args:
        rows: Rows from `summarise`.

    Returns:
        The table text.
    """
    hidden = {c for pair in _INTERVALS.values() for c in pair}
    columns = [c for c in COLUMNS if c not in hidden]
    lines = ["| " + " | ".join(columns) + " |", "|" + "|".join("---" for _ in columns) + "|"]
    lines += ["| " + " | ".join(_cell(row, c) for c in columns) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def printed_tables(summary: Mapping[str, Any]) -> str:
    """What the commands print: the report table, then the floors' ``all`` rows (when floors ran).

    Args:
        summary: From `aggregate` (or a written ``aggregate.json``).

    Returns:
        The text.
    """
    text = to_markdown(summary["rows"])
    if summary.get("floors"):
        text += "\nFloors (pass@1 [Wilson 95%], McNemar exact p paired by scenario):\n\n" \
            + floors_markdown(summary["floors"], groups=["all"])
    return text


def write_report(records: Sequence[Mapping[str, Any]], out_dir: Path,
                 floor_records: Sequence[Mapping[str, Any]] = ()) -> dict[str, Path]:
    """Write ``report.md``, ``report.csv`` and ``aggregate.json`` (and ``floors.csv`` when floors ran) into
    ``out_dir``.

    Args:
        records: Run records.
        out_dir: Output folder (created if needed).
        floor_records: The floor agents' records on the same scenarios (see `aggregate`).

    Returns:
        Format -> written path.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    summary = aggregate(records, floor_records)
    rows = summary["rows"]
    md = out / "report.md"
    md.write_text(
        "# Agent evaluation report\n\n" + to_markdown(rows)
        + f"\nPass rule: {PASS_RULE}. answer_only_pass_at_1 is that lenient rate (secondary); "
          "unrecovered_error_rate = fraction of scored runs that left an invocation error unrecovered; "
          "variant = the query phrasing asked (explicit, fuzzy; all = both).\n"
        + "\npass@1 = mean success over scored runs; pass_all_n = fraction of scenarios solved "
          "on every run; brackets hold Wilson 95% intervals (pass@1 over runs, pass_all_n over "
          "scenarios); pass_hat_2 = mean over scenarios of C(c,2)/C(n,2). split: transfer = "
          "held-out asset classes (tag 'transfer'). Failure columns count primary labels of "
          "failed runs; excluded_runs are evaluator/harness errors.\n\n## Failure modes\n\n"
        + failure_modes_markdown(summary["failure_modes"])
        + "\nEach flag counts the scored runs that carry it (taxonomy.FAILURE_MODES); "
          "calls_<status> counts tool calls by outcome.\n\n## pass@1 per asset class\n\n"
        + asset_class_markdown(summary["by_asset_class"])
        + "\n## Floors\n\n" + floors_markdown(summary["floors"])
        + "\nfloor:template_constant answers from the output template alone (first enum value, false, 0, "
          "empty), with no tool call; floor:random_tool calls 1-3 random tools with random schema-valid "
          "arguments and answers at random (seeded); floor:sweep calls every visible tool once with the query's "
          "numbers as arguments in order and copies into each answer field the tool-output field whose name "
          "best matches. pass@1 over scored runs of the scenarios both scored, "
          "Wilson 95% intervals; both / only model / only floor / neither count scenarios (solved on every "
          "scored repeat); McNemar exact two-sided p on the discordant scenarios.\n",
        encoding="utf-8")
    csv_path = out / "report.csv"
    with csv_path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(COLUMNS), lineterminator="\n")
        writer.writeheader()
        for row in rows:
            writer.writerow({k: ("" if row[k] is None else row[k]) for k in COLUMNS})
    paths = {"markdown": md, "csv": csv_path}
    if summary["floors"]:
        paths["floors_csv"] = out / "floors.csv"
        with paths["floors_csv"].open("w", newline="", encoding="utf-8") as handle:
            writer = csv.DictWriter(handle, fieldnames=list(FLOOR_COLUMNS), lineterminator="\n")
            writer.writeheader()
            for row in summary["floors"]:
                writer.writerow({k: ("" if row[k] is None else row[k]) for k in FLOOR_COLUMNS})
    else:
        (out / "floors.csv").unlink(missing_ok=True)  # a rewrite without floors leaves no stale table
    json_path = out / "aggregate.json"
    json_path.write_text(json.dumps(summary, sort_keys=True, indent=2) + "\n", encoding="utf-8")
    return {**paths, "json": json_path}
