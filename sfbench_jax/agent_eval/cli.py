"""``sfbench-agent-eval``: run, re-score, report, lint and preflight from the command line.

What lives here: argument parsing and the few lines that turn arguments into library calls. It
is the only module of the evaluator that reads environment variables (``SFBENCH_DATA_ROOT`` for
the data root, and the variable *named* by the LLM config's ``api_key_env`` for the key).

Subcommands::

    sfbench-agent-eval run     --agent scripted --mode tools_provided --repeats 3 --out runs/ref
    sfbench-agent-eval run     --agent llm --llm-config llm.toml --mode rag --out runs/rag
    sfbench-agent-eval run     --agent llm --llm-config llm.toml --mode no-domain-tools --out r/n
    sfbench-agent-eval run     --agent fault:swap_steps --ids cmapss_fd001_rul_fleet --out runs/f
    sfbench-agent-eval run     --agent replay --traces runs/my-model/traces --out runs/replay
    sfbench-agent-eval score   --traces runs/my-model/traces --out runs/rescored
    sfbench-agent-eval report  runs/my-model
    sfbench-agent-eval compare runs/rag runs/my-model [--pair-on scenario|run] [--out DIR]
    sfbench-agent-eval list    [--summary]
    sfbench-agent-eval lint    [--static-only]
    sfbench-agent-eval doctor  --llm-config llm.toml
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

import anyio
from mcp import StdioServerParameters

from sfbench_jax.agent_eval.agents import AGENT_KINDS
from sfbench_jax.agent_eval.modes import MODES, canonical_mode
from sfbench_jax.agent_eval.scenario import SPLITS, TASK_TYPES, Scenario, load_scenarios
from sfbench_jax.agent_eval.toolbox import ServerTarget, Session, connect

__all__ = ["main", "scenario_summary"]


def _data_root(args: argparse.Namespace) -> Path:
    value = args.data_root or os.environ.get("SFBENCH_DATA_ROOT")
    if not value:
        raise SystemExit("no data root: pass --data-root PATH or set SFBENCH_DATA_ROOT")
    return Path(value).expanduser().resolve()


def _optional_data_root(args: argparse.Namespace) -> Path | None:
    value = args.data_root or os.environ.get("SFBENCH_DATA_ROOT")
    return Path(value).expanduser().resolve() if value else None


def _generic_target(args: argparse.Namespace, root: Path | None) -> ServerTarget:
    if args.server == "stdio":
        extra = ["--data-root", str(root)] if root is not None else []
        return StdioServerParameters(command=sys.executable,
                                     args=["-m", "sfbench_jax.agent_eval.generic_server", *extra])
    from sfbench_jax.agent_eval.generic_server import build_generic_server

    return build_generic_server(root)


@contextlib.asynccontextmanager
async def _session(args: argparse.Namespace, *, generic: bool = False) -> AsyncIterator[Session]:
    """Connect the domain server (and the generic-tools server for no_domain_tools)."""
    targets: list[ServerTarget] = []
    if args.server_url:
        targets.append(args.server_url)
        root = _optional_data_root(args)
    else:
        root = _data_root(args)
        if args.server == "stdio":
            targets.append(StdioServerParameters(
                command=sys.executable,
                args=["-m", "sfbench_jax.mcp.server", "--data-root", str(root)]))
        else:
            from sfbench_jax.mcp.server import ServerConfig, build_server

            targets.append(build_server(ServerConfig(data_root=root)))
    if generic:
        targets.append(_generic_target(args, root))
    async with connect(targets) as session:
        yield session


def _llm_agent(args: argparse.Namespace) -> Any:
    from sfbench_jax.agent_eval.agents.llm import HttpChatBackend, LLMAgent, LLMConfig

    if not args.llm_config:
        raise SystemExit("--agent llm needs --llm-config FILE.toml (base_url, model, api_key_env)")
    config = LLMConfig.from_toml(Path(args.llm_config))
    api_key = None
    if config.api_key_env:
        api_key = os.environ.get(config.api_key_env)
        if not api_key:
            raise SystemExit(f"environment variable {config.api_key_env} (api_key_env) is not set")
    backend = HttpChatBackend(config.base_url, api_key=api_key, timeout_s=config.timeout_s)
    return config, LLMAgent(config, backend)


def _make_agent(args: argparse.Namespace, scenarios: Sequence[Any]) -> Any:
    from sfbench_jax.agent_eval.agents import FaultInjectingAgent, ReplayAgent, ScriptedAgent
    from sfbench_jax.agent_eval.trace import read_trace

    if args.agent == "scripted":
        return ScriptedAgent(scenarios)
    if args.agent.startswith("fault:"):
        return FaultInjectingAgent(scenarios, args.agent.removeprefix("fault:"))
    if args.agent == "replay":
        if not args.traces:
            raise SystemExit("--agent replay needs --traces DIR (a run folder's traces/)")
        return ReplayAgent([read_trace(p) for p in sorted(Path(args.traces).glob("*.jsonl"))])
    return _llm_agent(args)[1]


def _mode(value: str) -> str:
    try:
        return canonical_mode(value)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _select(args: argparse.Namespace) -> list[Scenario]:
    scenarios = load_scenarios(args.scenarios, ids=args.ids, task_types=args.task_type)
    if args.split:
        scenarios = [s for s in scenarios if s.split in set(args.split)]
    if args.asset_class:
        scenarios = [s for s in scenarios if s.asset_class in set(args.asset_class)]
    if not scenarios:
        raise SystemExit("no scenario matches the selection (--ids / --task-type / --split / "
                         "--asset-class); `sfbench-agent-eval list --summary` shows what exists")
    return scenarios


def _evidence(args: argparse.Namespace) -> Any:
    from sfbench_jax.agent_eval.evidence import EvidenceLibrary

    root = _optional_data_root(args)
    if root is None:
        raise SystemExit("--mode rag renders the real data as text: pass --data-root PATH or set "
                         "SFBENCH_DATA_ROOT (also with --server-url)")
    return EvidenceLibrary(root, top_k=args.rag_top_k)


def _cmd_run(args: argparse.Namespace) -> int:
    from sfbench_jax.agent_eval.report import to_markdown, write_report
    from sfbench_jax.agent_eval.runner import run_suite

    scenarios = _select(args)
    agent = _make_agent(args, scenarios)
    evidence = _evidence(args) if args.mode == "rag" else None
    out = Path(args.out)

    async def go() -> list[dict[str, Any]]:
        async with _session(args, generic=args.mode == "no_domain_tools") as session:
            return await run_suite(scenarios, agent, session, mode=args.mode,
                                   repeats=args.repeats, seed=args.seed, out_dir=out,
                                   evidence=evidence)

    records = anyio.run(go)
    paths = write_report(records, out)
    print(to_markdown(json.loads(paths["json"].read_text())["rows"]), end="")
    print(f"wrote {len(records)} run records, traces and report to {out}")
    return 0


def _cmd_score(args: argparse.Namespace) -> int:
    from sfbench_jax.agent_eval.report import to_markdown, write_report
    from sfbench_jax.agent_eval.runner import run_file_stem, score_trace, write_record
    from sfbench_jax.agent_eval.trace import read_trace

    scenarios = {s.id: s for s in load_scenarios(args.scenarios)}
    out = Path(args.out)
    records = []
    for path in sorted(Path(args.traces).glob("*.jsonl")):
        events = read_trace(path)
        scenario_id = str(events[0]["scenario_id"])
        if scenario_id not in scenarios:
            where = args.scenarios or "the packaged scenarios"
            raise SystemExit(f"{path}: scenario {scenario_id!r} is not in {where}")
        record = score_trace(scenarios[scenario_id], events)
        write_record(out / "records" / f"{run_file_stem(record['run_id'])}.json", record)
        records.append(record)
    if not records:
        raise SystemExit(f"{args.traces} holds no *.jsonl traces")
    paths = write_report(records, out)
    print(to_markdown(json.loads(paths["json"].read_text())["rows"]), end="")
    return 0


def _cmd_report(args: argparse.Namespace) -> int:
    from sfbench_jax.agent_eval.report import to_markdown, write_report
    from sfbench_jax.agent_eval.runner import read_records

    records = read_records(Path(args.run_dir))
    paths = write_report(records, Path(args.run_dir))
    print(to_markdown(json.loads(paths["json"].read_text())["rows"]), end="")
    return 0


def _cmd_compare(args: argparse.Namespace) -> int:
    from sfbench_jax.agent_eval.compare import compare_runs, to_markdown, write_comparison
    from sfbench_jax.agent_eval.runner import read_records

    run_a, run_b = Path(args.run_a), Path(args.run_b)
    try:
        comparison = compare_runs(read_records(run_a), read_records(run_b), pair_on=args.pair_on)
    except (FileNotFoundError, ValueError) as exc:
        raise SystemExit(f"compare: {exc}") from None
    out = Path(args.out) if args.out else run_b / f"compare_vs_{run_a.resolve().name}"
    paths = write_comparison(comparison, out)
    print(to_markdown(comparison), end="")
    print(f"wrote {paths['markdown']}, {paths['csv'].name} and {paths['json'].name}")
    return 0


def scenario_summary(scenarios: list[Scenario]) -> str:
    """Counts of a scenario set: total, per task type, per asset class, per split, data use.

    Args:
        scenarios: Loaded scenarios.

    Returns:
        Plain text, one fact per line.
    """
    from collections import Counter

    def counts(values: list[str]) -> str:
        return ", ".join(f"{k} {v}" for k, v in sorted(Counter(values).items()))

    on_data = sum(s.dataset.get("name", "none") != "none" for s in scenarios)
    classes = Counter(s.asset_class for s in scenarios)
    lines = [f"scenarios: {len(scenarios)}",
             f"task types ({len({s.task_type for s in scenarios})}): "
             f"{counts([s.task_type for s in scenarios])}",
             f"asset classes ({len(classes)}): {counts([s.asset_class for s in scenarios])}",
             f"splits: {counts([s.split for s in scenarios])}",
             f"transfer (held-out) asset classes: "
             f"{', '.join(sorted({s.asset_class for s in scenarios if s.split == 'transfer'}))}",
             f"on registered real data: {on_data}; standards / formula based: "
             f"{len(scenarios) - on_data}"]
    return "\n".join(lines) + "\n"


def _cmd_list(args: argparse.Namespace) -> int:
    scenarios = _select(args)
    if args.summary:
        print(scenario_summary(scenarios), end="")
        return 0
    for scenario in scenarios:
        print(f"{scenario.id}\t{scenario.task_type}\t{scenario.asset_class}\t{scenario.split}")
    return 0


def _cmd_lint(args: argparse.Namespace) -> int:
    from sfbench_jax.agent_eval.lint import check_reference_solutions, lint_static

    scenarios = load_scenarios(args.scenarios)

    async def go() -> dict[str, list[str]]:
        async with _session(args) as session:
            problems = lint_static(scenarios, [t.name for t in session.catalog])
            if not args.static_only:
                dynamic = await check_reference_solutions(scenarios, session,
                                                          repeats=args.repeats)
                for key, values in dynamic.items():
                    problems.setdefault(key, []).extend(values)
            return problems

    problems = anyio.run(go)
    for scenario_id, items in sorted(problems.items()):
        for item in items:
            print(f"{scenario_id}: {item}")
    print(f"{len(scenarios)} scenarios, {len(problems)} with problems")
    return 1 if problems else 0


def _cmd_doctor(args: argparse.Namespace) -> int:
    from sfbench_jax.agent_eval.agents.llm import preflight

    config, agent = _llm_agent(args)
    result = anyio.run(preflight, config, agent.backend)
    print(json.dumps(result, sort_keys=True))
    return 0


def _add_selection_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--scenarios", type=Path, default=None,
                        help="scenario folder (default: the packaged scenarios)")
    parser.add_argument("--ids", nargs="+", default=None, help="only these scenario ids")
    parser.add_argument("--task-type", nargs="+", choices=TASK_TYPES, default=None)
    parser.add_argument("--split", nargs="+", choices=SPLITS, default=None,
                        help="only this side of the cross-equipment split (transfer = held-out "
                             "asset classes)")
    parser.add_argument("--asset-class", nargs="+", default=None,
                        help="only these asset classes, e.g. li_ion_cell")


def _add_server_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--server", choices=("inprocess", "stdio"), default="inprocess",
                        help="start sfbench-mcp in this process (default) or as a stdio "
                             "subprocess")
    parser.add_argument("--server-url", default=None,
                        help="use a running streamable-HTTP server instead, e.g. "
                             "http://127.0.0.1:8765/mcp")
    parser.add_argument("--data-root", default=None,
                        help="shared data folder for the server; defaults to $SFBENCH_DATA_ROOT")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="sfbench-agent-eval",
                                     description="Evaluate tool-using agents on PHM scenarios "
                                                 "served by sfbench-mcp.")
    sub = parser.add_subparsers(dest="command", required=True)

    run = sub.add_parser("run", help="run an agent on scenarios and write traces, records, "
                                     "report")
    _add_selection_args(run)
    run.add_argument("--agent", required=True, choices=AGENT_KINDS)
    run.add_argument("--mode", type=_mode, default="tools_provided",
                     help=f"one of {', '.join(MODES)} (hyphens accepted: no-domain-tools)")
    run.add_argument("--rag-top-k", type=int, default=6,
                     help="chunks retrieved into the prompt in --mode rag (default 6)")
    run.add_argument("--repeats", type=int, default=1, help="runs per scenario (PHMForge: 3)")
    run.add_argument("--seed", type=int, default=0)
    run.add_argument("--out", required=True, help="run folder to write")
    run.add_argument("--llm-config", default=None, help="TOML file for --agent llm")
    run.add_argument("--traces", default=None, help="trace folder for --agent replay")
    _add_server_args(run)
    run.set_defaults(func=_cmd_run)

    score = sub.add_parser("score", help="re-score saved traces offline (no tool calls)")
    score.add_argument("--traces", required=True)
    score.add_argument("--scenarios", type=Path, default=None)
    score.add_argument("--out", required=True)
    score.set_defaults(func=_cmd_score)

    report = sub.add_parser("report", help="(re)write report.md/.csv/aggregate.json of a run")
    report.add_argument("run_dir")
    report.set_defaults(func=_cmd_report)

    compare = sub.add_parser("compare", help="paired comparison of two run folders: Wilson "
                                             "intervals and McNemar's exact test")
    compare.add_argument("run_a", help="run folder A (written by `run`)")
    compare.add_argument("run_b", help="run folder B")
    compare.add_argument("--pair-on", choices=("scenario", "run"), default="scenario",
                         help="unit of pairing: scenario (pass-all-n, default) or run")
    compare.add_argument("--out", default=None,
                         help="output folder (default: RUN_B/compare_vs_<name of RUN_A>)")
    compare.set_defaults(func=_cmd_compare)

    listing = sub.add_parser("list", help="list scenarios, or count them with --summary")
    _add_selection_args(listing)
    listing.add_argument("--summary", action="store_true",
                         help="counts per task type, asset class and split")
    listing.set_defaults(func=_cmd_list)

    lint = sub.add_parser("lint", help="check scenario files and their reference solutions")
    lint.add_argument("--scenarios", type=Path, default=None)
    lint.add_argument("--static-only", action="store_true",
                      help="skip running the reference solutions")
    lint.add_argument("--repeats", type=int, default=3)
    _add_server_args(lint)
    lint.set_defaults(func=_cmd_lint)

    doctor = sub.add_parser("doctor", help="preflight an OpenAI-compatible endpoint")
    doctor.add_argument("--llm-config", required=True)
    doctor.set_defaults(func=_cmd_doctor)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Console entry point ``sfbench-agent-eval``.

    Args:
        argv: Arguments (``sys.argv[1:]`` if None).

    Returns:
        Exit status.
    """
    args = _parser().parse_args(argv)
    return int(args.func(args))


if __name__ == "__main__":
    sys.exit(main())
