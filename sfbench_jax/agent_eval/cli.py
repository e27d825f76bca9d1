"""``sfbench-agent-eval``: run, re-score, report, lint and preflight from the command line.

What lives here: argument parsing and the few lines that turn arguments into library calls. It
is the only module of the evaluator that reads environment variables (``SFBENCH_DATA_ROOT`` for
the data root, and the variable *named* by the LLM config's ``api_key_env`` for the key).

Subcommands::

    sfbench-agent-eval run    --agent scripted --mode tools_provided --repeats 3 --out runs/ref
    sfbench-agent-eval run    --agent llm --llm-config llm.toml --out runs/my-model
    sfbench-agent-eval run    --agent fault:swap_steps --ids cmapss_fd001_rul_fleet --out runs/f
    sfbench-agent-eval run    --agent replay --traces runs/my-model/traces --out runs/replay
    sfbench-agent-eval score  --traces runs/my-model/traces --out runs/rescored
    sfbench-agent-eval report runs/my-model
    sfbench-agent-eval lint   [--static-only]
    sfbench-agent-eval doctor --llm-config llm.toml
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
from sfbench_jax.agent_eval.scenario import MODES, TASK_TYPES, load_scenarios
from sfbench_jax.agent_eval.toolbox import Session, connect

__all__ = ["main"]


def _data_root(args: argparse.Namespace) -> Path:
    value = args.data_root or os.environ.get("SFBENCH_DATA_ROOT")
    if not value:
        raise SystemExit("no data root: pass --data-root PATH or set SFBENCH_DATA_ROOT")
    return Path(value).expanduser().resolve()


@contextlib.asynccontextmanager
async def _session(args: argparse.Namespace) -> AsyncIterator[Session]:
    if args.server_url:
        async with connect(args.server_url) as session:
            yield session
        return
    root = _data_root(args)
    if args.server == "stdio":
        params = StdioServerParameters(
            command=sys.executable,
            args=["-m", "sfbench_jax.mcp.server", "--data-root", str(root)])
        async with connect(params) as session:
            yield session
        return
    from sfbench_jax.mcp.server import ServerConfig, build_server

    async with connect(build_server(ServerConfig(data_root=root))) as session:
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


def _cmd_run(args: argparse.Namespace) -> int:
    from sfbench_jax.agent_eval.report import to_markdown, write_report
    from sfbench_jax.agent_eval.runner import run_suite

    scenarios = load_scenarios(args.scenarios, ids=args.ids, task_types=args.task_type)
    agent = _make_agent(args, scenarios)
    out = Path(args.out)

    async def go() -> list[dict[str, Any]]:
        async with _session(args) as session:
            return await run_suite(scenarios, agent, session, mode=args.mode,
                                   repeats=args.repeats, seed=args.seed, out_dir=out)

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
    run.add_argument("--scenarios", type=Path, default=None,
                     help="scenario folder (default: the packaged scenarios)")
    run.add_argument("--ids", nargs="+", default=None, help="only these scenario ids")
    run.add_argument("--task-type", nargs="+", choices=TASK_TYPES, default=None)
    run.add_argument("--agent", required=True, choices=AGENT_KINDS)
    run.add_argument("--mode", choices=MODES, default="tools_provided")
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
