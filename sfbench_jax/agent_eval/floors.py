"""Floors beside every model: run the floor agents on a run's scenarios and read the model against them.

What lives here: `run_floors` (the floor agents of ``agents.floors`` through the same runner and MCP
session as the model, same scenarios, mode, repeats and seed, written to ``<run folder>/floors``),
`read_floor_records`, `is_floor`, `floor_rows` (per model x floor: both pass@1 with Wilson 95 %
intervals, the paired 2x2 table over scenarios and McNemar's exact p-value, for all scenarios, each task
type and, when transfer-tagged scenarios are present, each split) and `floors_markdown`. What does not:
the floor agents (``agents/floors.py``), the formulas (``stats.py``), the report's other tables.

Pairing follows ``compare.py``: a scenario is one unit, passed when every scored repeat passed
(pass-all-n; with one repeat the same as pass@1), and only scenarios scored by both the model and the
floor count. pass@1 is the mean success over the scored runs of those scenarios.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from sfbench_jax.agent_eval.agents.floors import FLOOR_KINDS, floor_agent
from sfbench_jax.agent_eval.compare import paired_outcomes, unit_of
from sfbench_jax.agent_eval.runner import run_suite
from sfbench_jax.agent_eval.stats import mcnemar_exact, paired_counts, wilson_interval

__all__ = ["FLOOR_COLUMNS", "FLOOR_DIR", "floor_rows", "floors_markdown", "is_floor", "read_floor_records",
           "run_floors"]

#: Sub-folder of a run folder that holds the floors' ``traces/`` and ``records/``.
FLOOR_DIR = "floors"
FLOOR_COLUMNS = ("agent", "model", "mode", "floor", "group", "scenarios", "runs", "pass_at_1",
                 "pass_at_1_ci_low", "pass_at_1_ci_high", "floor_runs", "floor_pass_at_1",
                 "floor_pass_at_1_ci_low", "floor_pass_at_1_ci_high", "both", "only_model", "only_floor",
                 "neither", "mcnemar_p", "answer_only_pass_at_1", "floor_answer_only_pass_at_1")


def is_floor(record: Mapping[str, Any]) -> bool:
    """Whether a run record is a floor agent's."""
    return str(record.get("agent", "")).startswith("floor:")


async def run_floors(scenarios: Sequence[Any], session: Any, *, mode: str, out_dir: Path, repeats: int = 1,
                     seed: int = 0, evidence: Any = None, kinds: Sequence[str] = FLOOR_KINDS,
                     progress: Any = None, variants: Sequence[str] = ("explicit",)) -> list[dict[str, Any]]:
    """Run every floor agent on the scenarios, as a model's run was made.

    Args:
        scenarios: The scenarios the model ran.
        session: The connected MCP session the model used.
        mode: The model's mode.
        out_dir: The model's run folder; floors go to ``out_dir / FLOOR_DIR``.
        repeats: Runs per scenario (the model's).
        seed: Base seed (the model's; the random floor draws from it).
        evidence: The ``EvidenceLibrary`` (rag mode).
        kinds: Floor kinds to run.
        progress: Called with each record as it is written.
        variants: The query phrasings the model was asked in (the floors are asked the same).

    Returns:
        The floors' run records.
    """
    records: list[dict[str, Any]] = []
    for kind in kinds:
        records += await run_suite(scenarios, floor_agent(kind), session, mode=mode, repeats=repeats, seed=seed,
                                   out_dir=Path(out_dir) / FLOOR_DIR, evidence=evidence, progress=progress,
                                   variants=variants)
    return records


def read_floor_records(run_dir: Path) -> list[dict[str, Any]]:
    """The floor records stored with a run (``run_dir/floors/records``; none if the folder is absent)."""
    files = sorted((Path(run_dir) / FLOOR_DIR / "records").glob("*.json"))
    return [json.loads(path.read_text(encoding="utf-8")) for path in files]


def _answer_only(records: Sequence[Mapping[str, Any]]) -> float | None:
    """The lenient answer-only pass@1 of records (validators alone; ``success`` for older records)."""
    scored = [r for r in records if r["status"] == "scored"]
    if not scored:
        return None
    return sum(bool(r.get("answer_success", r["success"])) for r in scored) / len(scored)


def _rate(records: Sequence[Mapping[str, Any]]) -> tuple[int, float | None, float | None, float | None]:
    """(scored runs, pass@1, Wilson low, Wilson high) of records."""
    scored = [r for r in records if r["status"] == "scored"]
    if not scored:
        return 0, None, None, None
    passed = sum(bool(r["success"]) for r in scored)
    low, high = wilson_interval(passed, len(scored))
    return len(scored), passed / len(scored), low, high


def _groups(facts: Mapping[str, Mapping[str, str]], units: Sequence[str]) -> list[tuple[str, list[str]]]:
    """``all``, then ``task_type=...`` and (with transfer scenarios) ``split=...`` unit lists."""
    groups = [("all", list(units))]
    for task_type in sorted({facts[u]["task_type"] for u in units}):
        groups.append((f"task_type={task_type}", [u for u in units if facts[u]["task_type"] == task_type]))
    if any(facts[u]["split"] == "transfer" for u in units):
        for split in ("in_distribution", "transfer"):
            groups.append((f"split={split}", [u for u in units if facts[u]["split"] == split]))
    return groups


def _pair_row(key: tuple[str, str, str], floor: str, group: str, units: Sequence[str],
              model: Sequence[Mapping[str, Any]], floors: Sequence[Mapping[str, Any]],
              model_units: Mapping[str, bool], floor_units: Mapping[str, bool]) -> dict[str, Any]:
    chosen = set(units)
    mine = [r for r in model if unit_of(r) in chosen]
    theirs = [r for r in floors if unit_of(r) in chosen]
    runs, rate, low, high = _rate(mine)
    f_runs, f_rate, f_low, f_high = _rate(theirs)
    counts = paired_counts({u: model_units[u] for u in units}, {u: floor_units[u] for u in units})
    return {"agent": key[0], "model": key[1], "mode": key[2], "floor": floor, "group": group,
            "scenarios": counts.n, "runs": runs, "pass_at_1": rate, "pass_at_1_ci_low": low,
            "pass_at_1_ci_high": high, "floor_runs": f_runs, "floor_pass_at_1": f_rate,
            "floor_pass_at_1_ci_low": f_low, "floor_pass_at_1_ci_high": f_high, "both": counts.both,
            "only_model": counts.only_a, "only_floor": counts.only_b, "neither": counts.neither,
            "mcnemar_p": mcnemar_exact(counts.only_a, counts.only_b), "answer_only_pass_at_1": _answer_only(mine),
            "floor_answer_only_pass_at_1": _answer_only(theirs)}


def floor_rows(records: Sequence[Mapping[str, Any]],
               floor_records: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Every model read against every floor of its mode, paired by scenario.

    Args:
        records: The models' run records (floor records among them are ignored).
        floor_records: The floors' run records.

    Returns:
        `FLOOR_COLUMNS` rows per (agent, model, mode) x floor: ``all``, each task type and, with
        transfer scenarios, each split; none for a model whose mode has no floor run on its scenarios.
    """
    models: dict[tuple[str, str, str], list[Mapping[str, Any]]] = defaultdict(list)
    for record in records:
        if not is_floor(record):
            models[(str(record["agent"]), str(record["model"]), str(record["mode"]))].append(record)
    floors: dict[tuple[str, str], list[Mapping[str, Any]]] = defaultdict(list)
    for record in floor_records:
        floors[(str(record["agent"]), str(record["mode"]))].append(record)
    rows = []
    for key, members in sorted(models.items()):
        model_units, facts = paired_outcomes(members)
        for (floor, mode), floor_members in sorted(floors.items()):
            if mode != key[2]:
                continue
            floor_units, _ = paired_outcomes(floor_members)
            shared = sorted(set(model_units) & set(floor_units))
            for group, units in _groups(facts, shared) if shared else []:
                rows.append(_pair_row(key, floor, group, units, members, floor_members, model_units,
                                      floor_units))
    return rows


def _fmt(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.2e}" if 0.0 < value < 0.001 else f"{value:.3f}"
    return str(value)


def _with_interval(rate: Any, low: Any, high: Any) -> str:
    return "-" if rate is None else f"{_fmt(rate)} [{_fmt(low)}, {_fmt(high)}]"


def floors_markdown(rows: Sequence[Mapping[str, Any]], *, groups: Sequence[str] | None = None) -> str:
    """`floor_rows` as a Markdown table: the model's and the floor's pass@1 [Wilson 95 %], the paired
    counts and McNemar's exact p.

    Args:
        rows: From `floor_rows`.
        groups: Only these groups (e.g. ``["all"]``); every group if None.

    Returns:
        The table text (a one-line note when there are no rows).
    """
    shown = [r for r in rows if groups is None or r["group"] in groups]
    if not shown:
        return "No floor runs on these scenarios (`run` runs them unless --no-floors; `score` re-scores or " \
               "runs them).\n"
    header = ["agent / model / mode", "group", "scenarios", "pass@1 [95% CI]", "floor", "floor pass@1 [95% CI]",
              "both", "only model", "only floor", "neither", "McNemar p"]
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    for r in shown:
        cells = [f"{r['agent']} / {r['model']} / {r['mode']}", r["group"], str(r["scenarios"]),
                 _with_interval(r["pass_at_1"], r["pass_at_1_ci_low"], r["pass_at_1_ci_high"]), r["floor"],
                 _with_interval(r["floor_pass_at_1"], r["floor_pass_at_1_ci_low"], r["floor_pass_at_1_ci_high"]),
                 str(r["both"]), str(r["only_model"]), str(r["only_floor"]), str(r["neither"]),
                 _fmt(r["mcnemar_p"])]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"
