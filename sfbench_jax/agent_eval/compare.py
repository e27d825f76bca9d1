"""Paired comparison of two recorded runs on the same scenarios (agent vs agent, mode vs mode).

What lives here: `paired_outcomes` (one pass/fail per unit of a run: per scenario, solved on
every scored repeat, as PHMForge v2 pairs pass-all-3; or per scenario-and-repeat), `compare_runs`
(overall, per task type and per split: both pass rates with Wilson 95 % intervals, the 2x2 table
and McNemar's exact p-value, plus the discordant units) and the Markdown / CSV / JSON writers.
What does not: the formulas (``stats.py``), running agents.

Pairing is on the units present in both runs; units only one run has (a scenario missing, or
only excluded runs) are listed as unpaired and left out of every count.
"""

from __future__ import annotations

import csv
import json
from collections import defaultdict
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from sfbench_jax.agent_eval.stats import mcnemar_exact, paired_counts, wilson_interval

__all__ = ["COMPARE_COLUMNS", "PAIR_ON", "compare_runs", "paired_outcomes", "run_label",
           "to_markdown", "unit_of", "write_comparison"]

PAIR_ON = ("scenario", "run")
COMPARE_COLUMNS = ("group", "pairs", "a_passed", "a_rate", "a_ci_low", "a_ci_high", "b_passed",
                   "b_rate", "b_ci_low", "b_ci_high", "both", "only_a", "only_b", "neither",
                   "mcnemar_p")


def run_label(records: Sequence[Mapping[str, Any]]) -> str:
    """``agent/model/mode`` of a run's records (``+``-joined if a folder mixes several)."""
    labels = sorted({f"{r['agent']}/{r['model']}/{r['mode']}" for r in records})
    return "+".join(labels)


def unit_of(record: Mapping[str, Any]) -> str:
    """The scenario unit of a run: its scenario id, with ``~<variant>`` appended for a query variant other than
    ``explicit`` (a scenario asked in the fuzzy phrasing is another unit of the same scenario)."""
    variant = str(record.get("variant") or "explicit")
    return str(record["scenario_id"]) if variant == "explicit" else f"{record['scenario_id']}~{variant}"


def paired_outcomes(records: Sequence[Mapping[str, Any]], *, pair_on: str = "scenario"
                    ) -> tuple[dict[str, bool], dict[str, dict[str, str]]]:
    """One outcome per unit of a run, and each unit's scenario facts.

    Args:
        records: Run records of one run.
        pair_on: ``scenario`` (pass-all-n over the scenario's scored repeats) or ``run``
            (each scenario-and-repeat on its own; key ``<scenario_id>#<run_index>``).

    Returns:
        ``(unit -> passed, unit -> {scenario_id, task_type, split})``.

    Raises:
        ValueError: For an unknown ``pair_on``.
    """
    if pair_on not in PAIR_ON:
        raise ValueError(f"pair_on={pair_on!r}; choose from {list(PAIR_ON)}")
    outcomes: dict[str, list[bool]] = defaultdict(list)
    facts: dict[str, dict[str, str]] = {}
    for record in records:
        if record["status"] != "scored":
            continue
        unit = unit_of(record) if pair_on == "scenario" else f"{unit_of(record)}#{record['run_index']}"
        outcomes[unit].append(bool(record["success"]))
        facts[unit] = {"scenario_id": str(record["scenario_id"]),
                       "task_type": str(record["task_type"]),
                       "split": str(record.get("split") or "in_distribution")}
    return {unit: all(values) for unit, values in outcomes.items()}, facts


def _group_row(group: str, units: Sequence[str], a: Mapping[str, bool],
               b: Mapping[str, bool]) -> dict[str, Any]:
    counts = paired_counts({u: a[u] for u in units}, {u: b[u] for u in units})
    n = counts.n
    a_passed, b_passed = counts.both + counts.only_a, counts.both + counts.only_b
    a_low, a_high = wilson_interval(a_passed, n) if n else (None, None)
    b_low, b_high = wilson_interval(b_passed, n) if n else (None, None)
    return {"group": group, "pairs": n, "a_passed": a_passed, "a_rate": a_passed / n if n else None,
            "a_ci_low": a_low, "a_ci_high": a_high, "b_passed": b_passed,
            "b_rate": b_passed / n if n else None, "b_ci_low": b_low, "b_ci_high": b_high,
            "both": counts.both, "only_a": counts.only_a, "only_b": counts.only_b,
            "neither": counts.neither, "mcnemar_p": mcnemar_exact(counts.only_a, counts.only_b)}


def compare_runs(records_a: Sequence[Mapping[str, Any]], records_b: Sequence[Mapping[str, Any]],
                 *, pair_on: str = "scenario") -> dict[str, Any]:
    """Compare two runs unit by unit.

    Args:
        records_a: Records of run A.
        records_b: Records of run B.
        pair_on: ``scenario`` or ``run`` (see `paired_outcomes`).

    Returns:
        ``{run_a, run_b, pair_on, rows, discordant, unpaired_a, unpaired_b, definitions}``;
        ``rows`` has one `COMPARE_COLUMNS` row for ``all``, each task type and, when the runs
        hold transfer-tagged scenarios, each split.

    Raises:
        ValueError: If the runs share no unit.
    """
    a, facts_a = paired_outcomes(records_a, pair_on=pair_on)
    b, _ = paired_outcomes(records_b, pair_on=pair_on)
    shared = sorted(set(a) & set(b))
    if not shared:
        raise ValueError("the two runs share no scored scenario; compare runs made on the same "
                         "scenarios (same --ids / --task-type selection)")
    facts = {unit: facts_a[unit] for unit in shared}
    rows = [_group_row("all", shared, a, b)]
    for task_type in sorted({f["task_type"] for f in facts.values()}):
        rows.append(_group_row(f"task_type={task_type}",
                               [u for u in shared if facts[u]["task_type"] == task_type], a, b))
    if any(f["split"] == "transfer" for f in facts.values()):
        for split in ("in_distribution", "transfer"):
            rows.append(_group_row(f"split={split}",
                                   [u for u in shared if facts[u]["split"] == split], a, b))
    discordant = [{"unit": u, **facts[u], "a": a[u], "b": b[u]} for u in shared if a[u] != b[u]]
    return {"run_a": run_label(records_a), "run_b": run_label(records_b), "pair_on": pair_on,
            "rows": rows, "discordant": discordant,
            "unpaired_a": sorted(set(a) - set(b)), "unpaired_b": sorted(set(b) - set(a)),
            "definitions": {
                "unit": "scenario solved on every scored repeat (pass-all-n)" if pair_on ==
                        "scenario" else "one scenario-and-repeat",
                "ci": "Wilson 95% score interval over the paired units",
                "mcnemar_p": "two-sided exact McNemar: 2 * P[Binomial(only_a + only_b, 1/2) <= "
                             "min(only_a, only_b)], capped at 1"}}


def _fmt(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.2e}" if 0.0 < value < 0.001 else f"{value:.3f}"
    return str(value)


def to_markdown(comparison: Mapping[str, Any]) -> str:
    """Render a comparison as Markdown (rates with their 95 % intervals in brackets).

    Args:
        comparison: From `compare_runs`.

    Returns:
        The text.
    """
    header = ["group", "pairs", "A pass (95% CI)", "B pass (95% CI)", "both", "only A",
              "only B", "neither", "McNemar exact p"]
    lines = [f"# Paired comparison ({comparison['pair_on']} units)", "",
             f"* A: {comparison['run_a']}", f"* B: {comparison['run_b']}", "",
             "| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    for row in comparison["rows"]:
        a = f"{row['a_passed']}/{row['pairs']} = {_fmt(row['a_rate'])} " \
            f"[{_fmt(row['a_ci_low'])}, {_fmt(row['a_ci_high'])}]"
        b = f"{row['b_passed']}/{row['pairs']} = {_fmt(row['b_rate'])} " \
            f"[{_fmt(row['b_ci_low'])}, {_fmt(row['b_ci_high'])}]"
        cells = [row["group"], str(row["pairs"]), a, b, str(row["both"]), str(row["only_a"]),
                 str(row["only_b"]), str(row["neither"]), _fmt(row["mcnemar_p"])]
        lines.append("| " + " | ".join(cells) + " |")
    if comparison["discordant"]:
        lines += ["", "Discordant units:", ""]
        lines += [f"* {d['unit']} ({d['task_type']}): A {'pass' if d['a'] else 'fail'}, "
                  f"B {'pass' if d['b'] else 'fail'}" for d in comparison["discordant"]]
    for side in ("a", "b"):
        if comparison[f"unpaired_{side}"]:
            lines += ["", f"Only in run {side.upper()} (not compared): "
                      + ", ".join(comparison[f"unpaired_{side}"])]
    return "\n".join(lines) + "\n"


def write_comparison(comparison: Mapping[str, Any], out_dir: Path) -> dict[str, Path]:
    """Write ``compare.md``, ``compare.csv`` and ``compare.json`` into ``out_dir``.

    Args:
        comparison: From `compare_runs`.
        out_dir: Output folder (created if needed).

    Returns:
        Format -> written path.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    md = out / "compare.md"
    md.write_text(to_markdown(comparison), encoding="utf-8")
    csv_path = out / "compare.csv"
    with csv_path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=["run_a", "run_b", "pair_on",
                                                    *COMPARE_COLUMNS], lineterminator="\n")
        writer.writeheader()
        for row in comparison["rows"]:
            writer.writerow({"run_a": comparison["run_a"], "run_b": comparison["run_b"],
                             "pair_on": comparison["pair_on"],
                             **{k: "" if row[k] is None else row[k] for k in COMPARE_COLUMNS}})
    json_path = out / "compare.json"
    json_path.write_text(json.dumps(comparison, sort_keys=True, indent=2) + "\n", encoding="utf-8")
    return {"markdown": md, "csv": csv_path, "json": json_path}
