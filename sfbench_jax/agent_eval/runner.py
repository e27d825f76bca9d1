"""Running agents on scenarios and scoring traces into deterministic run records.

What lives here: `execute_run` (one agent on one scenario through a recording ToolBox),
`score_trace` (trace + scenario + ground truth -> run record; used live and for offline
re-scoring, so both give byte-identical records; ``success`` is the primary pass, the answer's validators
and the process check of ``taxonomy.process_check``, ``answer_success`` the validators alone), `run_suite`
(scenarios x query variants x repeats, writing traces and records to a run folder) and the record I/O
helpers. What does not: agents, the metrics themselves, reports.

A run record is deterministic: it is a function of the scenario file, its ground truth and the
trace with timing stripped; ``record_hash`` is the sha256 of its canonical JSON. Timing lives in
a separate ``timing`` block outside the hash.

Harness errors are kept apart from the agent's failures: a run that ends in an exception outside the
agent's control (the chat endpoint unreachable, dead, answering 5xx) or in a timeout (a request that got no
answer in time, or the whole run past its wall-clock budget) gets status ``harness_error``, is not validated
and is left out of every rate. Step budgets: `turn_budget` gives each scenario a turn budget of its
reference solution's calls plus one answer turn plus slack (`budget_slack`); `budget_shortfalls` lists the
scenarios a fixed user budget cannot meet.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import platform
import re
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import anyio

from sfbench_jax.agent_eval.agents.base import AgentResult, AgentTask
from sfbench_jax.agent_eval.metrics import process_metrics
from sfbench_jax.agent_eval.modes import allowed_tools, canonical_mode, has_domain_tools
from sfbench_jax.agent_eval.scenario import Scenario, canonical_json, round_floats
from sfbench_jax.agent_eval.taxonomy import classify_failure, llm_trace_flags, process_check
from sfbench_jax.agent_eval.toolbox import Session, ToolBudgetError
from sfbench_jax.agent_eval.trace import TraceRecorder, tool_calls, write_trace
from sfbench_jax.agent_eval.validators import ValidationContext, evaluate_validators

__all__ = ["HARNESS_STOP_REASONS", "budget_shortfalls", "budget_slack", "execute_run", "read_records",
           "reference_calls", "run_file_stem", "run_id_for", "run_suite", "score_trace", "turn_budget", "versions",
           "write_record"]

#: Stop reasons that make a run a harness error (never scored as the agent's failure).
HARNESS_STOP_REASONS = frozenset({"error", "timeout"})


def reference_calls(scenario: Scenario) -> int:
    """How many tool calls the scenario's reference solution makes."""
    return len(scenario.reference_solution)


def budget_slack(n_calls: int) -> int:
    """Slack turns over a reference of ``n_calls`` calls: max(2, ceil(n_calls / 2)), i.e. +2 or x1.5, the larger."""
    return max(2, -(-n_calls // 2))


def turn_budget(scenario: Scenario) -> int:
    """The scenario's default LLM turn budget: reference calls + 1 answer turn + `budget_slack`.

    A model that makes one call per turn can follow the reference and still retry two calls (more for long
    references); the last turn of the budget is the forced answer. 1 call -> 4 turns, 2 -> 5, 4 -> 7, 13 -> 21.
    """
    calls = reference_calls(scenario)
    return calls + 1 + budget_slack(calls)


def budget_shortfalls(scenarios: Sequence[Scenario], max_llm_turns: int) -> list[tuple[str, int]]:
    """Scenarios whose reference solution a fixed turn budget cannot follow (calls + the answer turn).

    Args:
        scenarios: The selected scenarios.
        max_llm_turns: The user's turn budget for every scenario.

    Returns:
        ``(scenario id, reference calls)`` of each scenario with ``max_llm_turns < calls + 1``.
    """
    return [(s.id, reference_calls(s)) for s in scenarios if max_llm_turns < reference_calls(s) + 1]


def versions() -> dict[str, str]:
    """Package versions recorded in every run."""
    out = {"python": platform.python_version()}
    for package in ("sfbench-jax", "mcp", "jax", "pydantic"):
        try:
            out[package] = importlib.metadata.version(package)
        except importlib.metadata.PackageNotFoundError:
            out[package] = "not installed"
    return out


def run_id_for(scenario_id: str, mode: str, agent_name: str, run_index: int, variant: str = "explicit") -> str:
    """Deterministic run id (``:<variant>`` appended for a query variant other than ``explicit``)."""
    tail = "" if variant == "explicit" else f":{variant}"
    return f"{scenario_id}:{mode}:{agent_name}:{run_index}{tail}"


def run_file_stem(run_id: str) -> str:
    """A filesystem-safe stem for a run id."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "__", run_id)


def _jsonable(value: Any) -> Any:
    try:
        return json.loads(json.dumps(value))
    except (TypeError, ValueError):
        return repr(value)


def _retrieve(scenario: Scenario, evidence: Any, recorder: TraceRecorder,
              context: str | None, query: str) -> tuple[str, ...]:
    query = query if not context else f"{query}\n{context}"
    hits = evidence.retrieve(scenario, query)
    recorder.record("retrieval", retriever="bm25s", top_k=int(evidence.top_k),
                    chunks=[{"chunk_id": chunk.chunk_id, "source": chunk.source, "score": score}
                            for chunk, score in hits])
    return tuple(chunk.text for chunk, _ in hits)


async def execute_run(scenario: Scenario, agent: Any, session: Session, *, mode: str,
                      run_index: int = 0, seed: int = 0, call_timeout_s: float = 120.0,
                      evidence: Any = None, run_timeout_s: float | None = None,
                      variant: str = "explicit") -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Run one agent once on one scenario and score it.

    Args:
        scenario: The scenario.
        agent: An agent (see ``agents.base.Agent``).
        session: Connected MCP session(s) (for no_domain_tools it must include the generic-tools
            server).
        mode: One of ``agent_eval.modes.MODES`` (hyphenated aliases accepted).
        run_index: Repeat index.
        seed: Base seed handed to the agent.
        call_timeout_s: Per-tool-call timeout.
        evidence: An ``evidence.EvidenceLibrary`` (required in rag mode, unused otherwise).
        run_timeout_s: Wall-clock budget of the whole run; None keeps the scenario's
            ``limits.timeout_s`` (a slow local model on a CPU may need more).
        variant: The query phrasing asked (``scenario.QUERY_VARIANTS``).

    Returns:
        ``(trace events, run record)``.

    Raises:
        ValueError: For an unknown mode, rag without evidence, or no_domain_tools without the
            generic-tools server.
    """
    mode = canonical_mode(mode)
    if mode == "rag" and evidence is None:
        raise ValueError("mode rag needs an EvidenceLibrary (sfbench_jax.agent_eval.evidence) "
                         "over the data root; pass evidence=EvidenceLibrary(data_root)")
    query = scenario.query_for(variant)
    allowed = allowed_tools(scenario, mode, session.catalog)
    run_id = run_id_for(scenario.id, mode, agent.name, run_index, variant)
    recorder = TraceRecorder(run_id=run_id, scenario_id=scenario.id)
    recorder.record("run_start", mode=mode, agent=agent.name, model=getattr(agent, "model", ""),
                    sampling=_jsonable(dict(getattr(agent, "sampling", {}) or {})),
                    run_index=run_index, seed=seed, variant=variant, scenario_hash=scenario.hash,
                    versions=versions(), budget={"max_llm_turns": turn_budget(scenario),
                                                 "reference_calls": reference_calls(scenario)})
    limits = scenario.limits
    toolbox = session.toolbox(allowed=allowed, recorder=recorder,
                              max_tool_calls=int(limits["max_tool_calls"]),
                              call_timeout_s=call_timeout_s)
    context = scenario.agent_context(mode)
    retrieved = _retrieve(scenario, evidence, recorder, context, query) if mode == "rag" else ()
    task = AgentTask(scenario_id=scenario.id, run_index=run_index, query=query,
                     output_template=scenario.output_template, dataset_context=context,
                     limits={**limits, "max_llm_turns": turn_budget(scenario)}, seed=seed + run_index, mode=mode,
                     evidence=retrieved)
    result, error = await _agent_result(agent, task, toolbox, float(run_timeout_s or limits["timeout_s"]))
    recorder.record("final", final_answer=_jsonable(result.final_answer),
                    stop_reason=result.stop_reason,
                    usage={k: int(v) for k, v in dict(result.usage).items()}, error=error)
    return recorder.events, score_trace(scenario, recorder.events)


async def _agent_result(agent: Any, task: AgentTask, toolbox: Any, timeout_s: float) -> tuple[AgentResult, str]:
    """The agent's result within `timeout_s`, and the error text of a harness error ('' if none): an exhausted
    tool budget stops as max_steps; a timeout (the run's wall-clock limit, or a request the agent's endpoint left
    unanswered, which the agent raises as a TimeoutError) as timeout, any other failure as error. Both are harness
    errors."""
    try:
        with anyio.fail_after(timeout_s):
            return await agent.run(task, toolbox), ""
    except ToolBudgetError:
        return AgentResult(final_answer=None, stop_reason="max_steps", usage={}), ""
    except TimeoutError as exc:
        text = str(exc) or f"the run passed its wall-clock budget of {timeout_s:g} s (--run-timeout-s)"
        return (AgentResult(final_answer=None, stop_reason="timeout", usage=getattr(exc, "usage", None) or {}),
                f"{type(exc).__name__}: {text}")
    except Exception as exc:  # noqa: BLE001 - any agent/endpoint failure is recorded as harness_error
        return (AgentResult(final_answer=None, stop_reason="error", usage=getattr(exc, "usage", None) or {}),
                f"{type(exc).__name__}: {exc}")


def score_trace(scenario: Scenario, events: Sequence[Mapping[str, Any]], *,
                ground_truth: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Score a trace into a run record (pure; the same trace always gives the same record).

    Args:
        scenario: The scenario the trace belongs to.
        events: Trace events (``run_start`` ... ``final``).
        ground_truth: The scenario's ground truth (read from its file if None).

    Returns:
        The run record, with ``record_hash`` and a ``timing`` block outside the hash.

    Raises:
        ValueError: If the trace lacks ``run_start`` / ``final`` or belongs to another scenario.
    """
    starts = [e for e in events if e.get("kind") == "run_start"]
    finals = [e for e in events if e.get("kind") == "final"]
    if not starts or not finals:
        raise ValueError("a trace needs a 'run_start' and a 'final' event")
    header, final = starts[0], finals[-1]
    if header.get("scenario_id") != scenario.id:
        raise ValueError(f"trace is for scenario {header.get('scenario_id')!r}, "
                         f"not {scenario.id!r}")
    gt = dict(ground_truth) if ground_truth is not None else scenario.load_ground_truth()
    llm_errors = [str(e["error"]) for e in events if e.get("kind") == "llm_error" and e.get("error")]
    if not final.get("error") and llm_errors:  # traces recorded before the final event carried the cause
        final = {**final, "error": llm_errors[-1]}
    calls = tool_calls(events)
    answer = final.get("final_answer")
    stop_reason = str(final.get("stop_reason", "final"))
    usage = dict(final.get("usage") or {})
    status, answer_success, results, evaluator_error = _validated(scenario, header, final, gt, calls)
    process = process_check(calls, required=scenario.required_tools, distractors=scenario.distractor_tools,
                            applies=has_domain_tools(str(header.get("mode") or "tools_provided")))
    success = None if answer_success is None else bool(answer_success and process["passed"])
    metrics = process_metrics(calls=calls, required=scenario.required_tools,
                              distractors=scenario.distractor_tools,
                              precedence=scenario.precedence,
                              reference_order=scenario.reference_order or tuple(
                                  s["tool"] for s in scenario.reference_solution),
                              handle_args=scenario.handle_args, usage=usage)
    failure = _failure(scenario, header, events, calls, bool(success), results, bool(answer_success)) \
        if status == "scored" else {"primary": None, "flags": []}
    record = round_floats(_record(scenario, header, gt) | {
        "status": status,
        "success": success,
        "answer_success": answer_success,
        "process": process if status == "scored" else None,
        "evaluator_error": evaluator_error,
        "validator_results": results,
        "metrics": metrics,
        "failure": failure,
        "final_answer": answer,
        "stop_reason": stop_reason,
        "versions": header.get("versions"),
    })
    record["record_hash"] = hashlib.sha256(canonical_json(record).encode()).hexdigest()
    record["timing"] = _timing(events, final)
    return record


def _timing(events: Sequence[Mapping[str, Any]], final: Mapping[str, Any]) -> dict[str, float]:
    """The record's ``timing`` block (outside the hash): wall time, total tool and model latency."""
    return {
        "wall_s": round(float(final.get("t_ms", 0.0)) / 1000.0, 6),
        "tool_latency_ms_total": round(sum(float(e.get("latency_ms", 0.0)) for e in events
                                           if e.get("kind") == "tool_call"), 3),
        "llm_latency_ms_total": round(sum(float(e.get("latency_ms", 0.0)) for e in events
                                          if e.get("kind") == "llm_response"), 3),
    }


def _failure(scenario: Scenario, header: Mapping[str, Any], events: Sequence[Mapping[str, Any]],
             calls: Sequence[Any], success: bool, results: Sequence[Any] = (),
             answer_success: bool | None = None) -> dict[str, Any]:
    """The failure flags and primary label of a scored run (`taxonomy.classify_failure`)."""
    final = [e for e in events if e.get("kind") == "final"][-1]
    return classify_failure(success=success, calls=calls, answer=final.get("final_answer"),
                            stop_reason=str(final.get("stop_reason", "final")), required=scenario.required_tools,
                            distractors=scenario.distractor_tools,
                            precedence=scenario.precedence, handle_args=scenario.handle_args,
                            output_template=scenario.output_template,
                            mode=str(header.get("mode") or "tools_provided"),
                            trace_flags=llm_trace_flags(events), validator_results=results,
                            answer_passed=answer_success)


def _validated(scenario: Scenario, header: Mapping[str, Any], final: Mapping[str, Any], gt: Mapping[str, Any],
               calls: Sequence[Any]) -> tuple[str, bool | None, list[Any], str]:
    """(status, success, validator results, evaluator error) of a run: a harness error (an endpoint failure or a
    timeout) is not validated, a validator that crashes makes an evaluator error."""
    stop_reason = str(final.get("stop_reason", "final"))
    if stop_reason in HARNESS_STOP_REASONS:
        return "harness_error", None, [], str(final.get("error") or f"the run stopped by {stop_reason}")
    context = ValidationContext(answer=final.get("final_answer"), ground_truth=gt, calls=calls,
                                output_template=scenario.output_template,
                                precedence=scenario.precedence, pass_rule=scenario.pass_rule,
                                mode=str(header.get("mode") or "tools_provided"))
    try:
        success, outcomes = evaluate_validators(scenario.validators, context)
    except Exception as exc:  # noqa: BLE001 - a validator crash is recorded as evaluator_error
        return "evaluator_error", None, [], f"{type(exc).__name__}: {exc}"
    return "scored", success, [r.to_json() for r in outcomes], ""


def _record(scenario: Scenario, header: Mapping[str, Any], gt: Mapping[str, Any]) -> dict[str, Any]:
    """The run record's identity fields: the run, the scenario and its ground truth, the agent."""
    return {
        "run_id": str(header["run_id"]),
        "scenario_id": scenario.id,
        "scenario_hash": scenario.hash,
        "ground_truth_sha256": hashlib.sha256(canonical_json(gt).encode()).hexdigest()[:16],
        "task_type": scenario.task_type,
        "asset_class": scenario.asset_class,
        "split": scenario.split,
        "run_index": int(header.get("run_index", 0)),
        "mode": header.get("mode"),
        "agent": header.get("agent"),
        "model": header.get("model"),
        "sampling": header.get("sampling"),
        "seed": header.get("seed"),
        "variant": str(header.get("variant") or "explicit"),
    }


def write_record(path: Path, record: Mapping[str, Any]) -> None:
    """Write a run record as sorted, indented JSON."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record, sort_keys=True, indent=2) + "\n", encoding="utf-8")


def read_records(run_dir: Path) -> list[dict[str, Any]]:
    """Read every record under ``run_dir/records``.

    Args:
        run_dir: A run folder written by `run_suite`.

    Returns:
        Records sorted by run id.

    Raises:
        FileNotFoundError: If the folder has no records.
    """
    files = sorted((Path(run_dir) / "records").glob("*.json"))
    if not files:
        raise FileNotFoundError(f"{run_dir}/records holds no run records; run "
                                f"`sfbench-agent-eval run --out {run_dir}` first")
    records = [json.loads(p.read_text(encoding="utf-8")) for p in files]
    return sorted(records, key=lambda r: r["run_id"])


async def run_suite(scenarios: Sequence[Scenario], agent: Any, session: Session, *,
                    mode: str, repeats: int = 1, seed: int = 0, out_dir: Path | None = None,
                    evidence: Any = None, run_timeout_s: float | None = None,
                    progress: Any = None, halt: Callable[[], str | None] | None = None,
                    variants: Sequence[str] = ("explicit",)) -> list[dict[str, Any]]:
    """Run an agent on every scenario ``repeats`` times, sequentially.

    Args:
        scenarios: Scenarios.
        agent: The agent.
        session: Connected MCP session(s).
        mode: One of ``agent_eval.modes.MODES``.
        repeats: Runs per scenario (PHMForge uses 3).
        seed: Base seed.
        out_dir: If given, traces go to ``out_dir/traces`` and records to ``out_dir/records``.
        evidence: An ``evidence.EvidenceLibrary`` (rag mode).
        run_timeout_s: Overrides every scenario's wall-clock budget (see `execute_run`).
        progress: Called with each record as it is written (e.g. to print a line).
        halt: Asked before each run; a non-None answer (why, e.g. the local model server died) stops the suite
            there, leaving the remaining runs unstarted.
        variants: The query phrasings each scenario is asked in (each a run of its own per repeat).

    Returns:
        Run records in execution order.
    """
    if repeats < 1:
        raise ValueError(f"repeats must be >= 1, got {repeats}")
    records: list[dict[str, Any]] = []
    for scenario in scenarios:
        for variant in variants:
            scenario.query_for(variant)  # a missing variant text is refused before the runs start
    for scenario in scenarios:
        for variant, run_index in ((v, i) for v in variants for i in range(repeats)):
            if halt is not None and halt() is not None:
                return records
            events, record = await execute_run(scenario, agent, session, mode=mode,
                                               run_index=run_index, seed=seed,
                                               evidence=evidence, run_timeout_s=run_timeout_s, variant=variant)
            if out_dir is not None:
                stem = run_file_stem(record["run_id"])
                write_trace(Path(out_dir) / "traces" / f"{stem}.jsonl", events)
                write_record(Path(out_dir) / "records" / f"{stem}.json", record)
            records.append(record)
            if progress is not None:
                progress(record)
    return records
