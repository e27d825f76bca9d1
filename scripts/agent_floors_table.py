"""Regenerate the floors' table of docs/agent_eval_llm.md (section 3.6) with the evaluator's own commands.

Two commands make every number (no model is needed: the floors are cheap, the model's traces are stored):

1. ``sfbench-agent-eval run --agent scripted --out OUT/scripted``: the scripted reference on every
   packaged scenario (tools_provided, seed 0, one repeat); the floor agents run beside it on the same
   scenarios (``OUT/scripted/floors``), so the floors' rows cover all of them;
2. ``sfbench-agent-eval score --traces MODEL/traces --out OUT/model``: the stored real-model traces re-scored
   offline, beside the floor traces stored with them (``MODEL/floors/traces``, the same scenarios). The default
   is the SmolLM2 run of section 3, ``tests/agent_eval/fixtures/smollm2_v2.tar.xz``, unpacked into a
   temporary folder; ``--model-traces`` takes another archive or a run folder's ``traces`` folder.

The table is rendered from the two ``aggregate.json`` files (``floors`` rows of group ``all``; the list of
scenarios a floor passed from the floor records of the fresh run folder) and written
between the ``<!-- floors-table:begin -->`` / ``<!-- floors-table:end -->`` markers of the doc. `render` can add
a row for a published run whose traces are not stored, if it failed every scenario (McNemar's p then follows
from the floors' per-scenario outcomes alone, `stats.mcnemar_exact`); the doc's table has none now.

Usage::

    python scripts/agent_floors_table.py --data-root ../shared/data            # rewrite the doc's table
    python scripts/agent_floors_table.py --data-root ../shared/data --check    # fail if the doc is stale
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import sys
import tarfile
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from sfbench_jax.agent_eval import cli
from sfbench_jax.agent_eval.agents import FLOOR_KINDS
from sfbench_jax.agent_eval.stats import mcnemar_exact, wilson_interval

REPO = Path(__file__).resolve().parents[1]
DOC = REPO / "docs" / "agent_eval_llm.md"
#: The SmolLM2 run of docs/agent_eval_llm.md section 3: ``traces/`` and ``floors/traces/`` in one archive.
MODEL_TRACES = REPO / "tests" / "agent_eval" / "fixtures" / "smollm2_v2.tar.xz"
BEGIN, END = "<!-- floors-table:begin -->", "<!-- floors-table:end -->"


def _fmt(value: float) -> str:
    return f"{value:.2e}" if 0.0 < value < 0.001 else f"{value:.3f}"


def _rate(passed: int, n: int) -> str:
    low, high = wilson_interval(passed, n)
    return f"{passed}/{n} = {_fmt(passed / n)} [{_fmt(low)}, {_fmt(high)}]"


def _versus(row: Mapping[str, Any]) -> str:
    return f"{row['only_model']} / {row['only_floor']}, p = {_fmt(row['mcnemar_p'])}"


def _all_rows(summary: Mapping[str, Any]) -> dict[str, dict[str, dict[str, Any]]]:
    """``agent / model`` -> floor kind -> its ``all`` row of an ``aggregate.json``'s floors."""
    rows: dict[str, dict[str, dict[str, Any]]] = {}
    for row in summary["floors"]:
        if row["group"] == "all":
            rows.setdefault(f"{row['agent']} / {row['model']}", {})[row["floor"]] = row
    return rows


def floor_passes(run_dir: Path, field: str = "success") -> dict[str, list[str]]:
    """Per floor kind, the scenarios it passed (``success``: the primary pass; ``answer_success``: on the answer
    alone), from a fresh run folder's floor records."""
    passed: dict[str, list[str]] = {kind: [] for kind in FLOOR_KINDS}
    for path in sorted((run_dir / "floors" / "records").glob("*.json")):
        record = json.loads(path.read_text(encoding="utf-8"))
        if record.get(field):
            passed[record["agent"]].append(f"`{record['scenario_id']}`")
    return passed


def render(reference: Mapping[str, Any], model: Mapping[str, Any],
           published: tuple[str, int, int] | None = None) -> str:
    """The doc's table.

    Args:
        reference: ``aggregate.json`` of the scripted run (with its floors).
        model: ``aggregate.json`` of the re-scored model traces (with their floors).
        published: (label, passed, scenarios) of a published model run without stored traces that failed every
            scenario of the reference's set, or None (no such row).

    Returns:
        Markdown.

    Raises:
        ValueError: If the published run passed any scenario (its pairing then needs its traces).
    """
    (_, scripted), = _all_rows(reference).items()
    kinds = [kind for kind in FLOOR_KINDS if kind in scripted]
    head = ("| agent | scenarios | passed = pass@1 [Wilson 95%] | answer-only pass@1 (lenient) | "
            + " | ".join(f"vs {kind.removeprefix('floor:').replace('_', '-')}: only agent / only floor, McNemar p"
                         for kind in kinds) + " |")
    lines = [head, "|" + "---|" * (4 + len(kinds))]
    for kind in kinds:
        row = scripted[kind]
        passed = round(row["floor_pass_at_1"] * row["floor_runs"])
        lines.append(f"| {kind} | {row['scenarios']} | {_rate(passed, row['floor_runs'])} | "
                     f"{_lenient(row.get('floor_answer_only_pass_at_1'), row['floor_runs'])} | "
                     + " | ".join("-" for _ in kinds) + " |")
    named = [("scripted reference", scripted)]
    named += [(f"{who} (stored traces)", rows) for who, rows in _all_rows(model).items()]
    for name, rows in named:
        first = rows[kinds[0]]
        passed = round(first["pass_at_1"] * first["runs"])
        lines.append(f"| {name} | {first['scenarios']} | {_rate(passed, first['runs'])} | "
                     f"{_lenient(first.get('answer_only_pass_at_1'), first['runs'])} | "
                     + " | ".join(_versus(rows[kind]) for kind in kinds) + " |")
    if published is None:
        return "\n".join(lines) + "\n"
    name, passed, n = published
    if passed != 0 or n != scripted[kinds[0]]["scenarios"]:
        raise ValueError("the published row is derived only for a model that failed every scenario of the set")
    # the model failed everywhere: only-agent 0, only-floor = the floor's solved scenarios (both + only_floor
    # of the reference's pairing, which covers every scenario)
    cells = [f"0 / {scripted[k]['both'] + scripted[k]['only_floor']}, "
             f"p = {_fmt(mcnemar_exact(0, scripted[k]['both'] + scripted[k]['only_floor']))}" for k in kinds]
    lines.append(f"| {name} | {n} | {_rate(passed, n)} | - | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def _lenient(rate: float | None, runs: int) -> str:
    """The answer-only pass count (validators alone) of a row, or ``-`` for rows written before it existed."""
    return "-" if rate is None else f"{round(rate * runs)}/{runs}"


def _run_quietly(argv: Sequence[str]) -> None:
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        status = cli.main(list(argv))
    if status != 0:
        raise SystemExit(f"sfbench-agent-eval {' '.join(argv)} exited {status}")


def model_traces(path: Path, scratch: Path) -> Path:
    """A ``traces`` folder: ``path`` itself, or the ``traces/`` of the archive ``path`` unpacked under ``scratch``.

    Raises:
        SystemExit: If it is neither a folder nor an archive holding ``traces/``.
    """
    if path.is_dir():
        return path
    if not path.is_file() or not tarfile.is_tarfile(path):
        raise SystemExit(f"--model-traces {path}: neither a traces folder nor a .tar.xz archive of one")
    with tarfile.open(path) as archive:
        archive.extractall(scratch / "stored", filter="data")
    traces = scratch / "stored" / "traces"
    if not traces.is_dir():
        raise SystemExit(f"--model-traces {path}: the archive holds no traces/ folder")
    return traces


def _regenerate(args: argparse.Namespace, text: str, out: Path, scratch: Path) -> int:
    reference, model = out / "scripted", out / "model"
    traces = model_traces(args.model_traces, scratch)
    _run_quietly(["run", "--agent", "scripted", "--out", str(reference), "--data-root", args.data_root])
    _run_quietly(["score", "--traces", str(traces), "--out", str(model), "--data-root", args.data_root])
    table = render(json.loads((reference / "aggregate.json").read_text()),
                   json.loads((model / "aggregate.json").read_text()))
    table += "\nScenarios a floor passed: " + "; ".join(
        f"{kind}: {', '.join(ids) or 'none'}" for kind, ids in floor_passes(reference).items()) + ".\n"
    lenient = floor_passes(reference, "answer_success")
    table += "\nPassed on the answer alone (lenient): " + "; ".join(
        f"{kind}: {', '.join(ids) or 'none'}" for kind, ids in lenient.items()) + ".\n"
    before, rest = text.split(BEGIN)
    _, after = rest.split(END)
    updated = f"{before}{BEGIN}\n\n{table}\n{END}{after}"
    print(table, end="")
    if args.check:
        if updated != text:
            print(f"{args.doc}: the floors' table is stale; rerun without --check", file=sys.stderr)
            return 1
        return 0
    temporary = args.doc.with_suffix(".md.tmp")
    temporary.write_text(updated, encoding="utf-8")
    temporary.replace(args.doc)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point (see the module docstring)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-root", default=os.environ.get("SFBENCH_DATA_ROOT"),
                        help="shared data folder (default: $SFBENCH_DATA_ROOT)")
    parser.add_argument("--model-traces", type=Path, default=MODEL_TRACES,
                        help="stored traces of the real model: a .tar.xz holding traces/ and floors/traces/, or a "
                             "traces folder (default: the SmolLM2 run, fixtures/smollm2_v2.tar.xz)")
    parser.add_argument("--out", type=Path, default=None,
                        help="a new folder to keep the runs in (default: a temporary folder)")
    parser.add_argument("--doc", type=Path, default=DOC)
    parser.add_argument("--check", action="store_true", help="fail if the doc's table differs; write nothing")
    args = parser.parse_args(argv)
    if not args.data_root:
        parser.error("no data root: pass --data-root PATH or set SFBENCH_DATA_ROOT")
    text = args.doc.read_text(encoding="utf-8")
    if text.count(BEGIN) != 1 or text.count(END) != 1:
        parser.error(f"{args.doc} needs one {BEGIN} and one {END} line")
    if args.out is not None and args.out.exists():
        parser.error(f"--out {args.out} exists; name a new folder (old records would mix into the table)")
    with tempfile.TemporaryDirectory(prefix="floors-") as scratch:
        return _regenerate(args, text, args.out or Path(scratch) / "runs", Path(scratch))


if __name__ == "__main__":
    sys.exit(main())
