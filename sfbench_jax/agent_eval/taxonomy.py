"""Three-way failure taxonomy of failed runs: reasoning, tool-invocation, orchestration.

What lives here: `classify_failure`, which derives every flag from the client-side trace and
the final answer and assigns the primary label by the first matching rule of
mcp_agent_eval.md section 3.5:

1. ``tool_invocation``: some tool's calls ended in ``invalid_arguments``, ``unknown_tool`` or
   ``blocked`` (a tool the mode does not offer) with no later ok call of that tool; or the model
   wrote a tool call that could not be parsed (``unparsed_tool_call``) and never completed the
   required tools.
2. ``reasoning``: a distractor was called; or the agent chose to stop (``final``) with
   required-tool recall below 1; or the answer fails as an answer (`answer_level_flags`: wrong
   type for the output template, a required field missing, or a stated relation between fields
   contradicted).
3. ``orchestration``: everything else (precedence violated, i.e. an edge's later end called
   with no earlier ok call of its first end; state-dependency violations, step limit or
   timeout, wrong values despite full recall).

Flags name each failure mode seen in real models' traces, so a report can count them
(`FAILURE_MODES`): ``schema_invalid_call`` (arguments that are not JSON or fail the tool's input
schema), ``unknown_tool_called``, ``blocked_tool_called``, ``no_tool_call`` (answered without
calling any tool in a mode that offers tools), ``repeated_call`` (the same tool called again
with the same arguments: a loop), ``no_answer`` (no final answer at all),
``answer_not_json`` (the final reply held no JSON object), ``missing_required_fields``,
``inconsistent_answer`` (a failed ``field_relation`` validator), ``tool_call_in_content`` (calls
recovered from the message text instead of structured ``tool_calls``), ``unparsed_tool_call``,
``forced_final`` (the budget ran out and the answer came from the forced last turn) and
``stopped_<reason>`` for ``max_steps``, ``timeout`` and ``context_exceeded``. `llm_trace_flags`
derives the turn-level ones from the ``llm_response`` events.

The primary pass (`process_check`, applied by ``runner.score_trace``): a run succeeds only when its answer
passes the scenario's validators **and** its process is right: every required tool has at least one ok call,
no distractor was called, and no invocation error was left unrecovered (in the modes that offer the domain
tools; the ablation modes withhold them, and there the answer alone decides). A run whose answer passed but
whose process did not carries ``answer_without_process``.

What does not: the answer validators (only failed runs get a label).
"""

from __future__ import annotations

import json
from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Any

import jsonschema

from sfbench_jax.agent_eval.metrics import state_dependency_violations
from sfbench_jax.agent_eval.trace import ToolCallEvent
from sfbench_jax.agent_eval.validators import edge_violated

__all__ = ["FAILURE_LABELS", "FAILURE_MODES", "PASS_RULE", "answer_level_flags", "classify_failure",
           "llm_trace_flags", "process_check", "unrecovered_invocation_failures"]

#: The primary pass rule in words (the report, the HTML page and docs/mcp_agent_eval.md state it).
PASS_RULE = ("a run passes when its answer passes every validator of the scenario AND every required tool was "
             "called successfully at least once AND no distractor tool was called AND no invocation error was left "
             "unrecovered (tools_provided / unknown_tools; in the ablation modes rag / no_domain_tools, which "
             "withhold the domain tools, the answer alone decides); the answer-only rate (validators alone) is "
             "reported beside it as a secondary, lenient column")

FAILURE_LABELS = ("reasoning", "tool_invocation", "orchestration")
_INVOCATION_STATUSES = frozenset({"invalid_arguments", "unknown_tool", "blocked"})
_STATUS_FLAGS = {"invalid_arguments": "schema_invalid_call", "unknown_tool": "unknown_tool_called",
                 "blocked": "blocked_tool_called"}
#: The failure modes a report counts (run-level flags), in reading order.
FAILURE_MODES = ("schema_invalid_call", "unknown_tool_called", "blocked_tool_called",
                 "unparsed_tool_call", "tool_call_in_content", "no_tool_call", "repeated_call",
                 "truncated_reply", "tool_call_as_answer",
                 "no_answer",
                 "answer_not_json", "wrong_answer_type", "missing_required_fields",
                 "inconsistent_answer", "distractor_called", "premature_stop",
                 "precedence_violated", "state_dependency", "forced_final", "stopped_max_steps",
                 "stopped_timeout", "stopped_context_exceeded", "wrong_value", "answer_without_process")
_STOP_FLAGS = frozenset({"max_steps", "timeout", "context_exceeded"})
#: Answer-level failures (`answer_level_flags`): a run with one of them is a reasoning failure.
_ANSWER_LEVEL = frozenset({"wrong_answer_type", "missing_required_fields", "inconsistent_answer"})


def llm_trace_flags(events: Iterable[Mapping[str, Any]]) -> list[str]:
    """Turn-level failure modes of an LLM agent's trace (none for scripted agents).

    Args:
        events: Trace events (``llm_response`` events carry ``call_format`` and
            ``forced_final``).

    Returns:
        Sorted flags among ``tool_call_in_content``, ``unparsed_tool_call``, ``forced_final``,
        ``truncated_reply`` (a reply cut at the token limit) and ``tool_call_as_answer`` (the
        forced answer turn held tool calls: never run, never taken as the answer).
    """
    flags = set()
    for event in events:
        if event.get("kind") != "llm_response":
            continue
        if event.get("call_format") in {"content_tagged", "content_json"}:
            flags.add("tool_call_in_content")
        if event.get("call_format") == "unparsed_tagged":
            flags.add("unparsed_tool_call")
        if event.get("forced_final"):
            flags.add("forced_final")
        if event.get("finish_reason") == "length":  # a reply cut at the token limit
            flags.add("truncated_reply")
        if event.get("forced_final") and event.get("n_tool_calls"):  # the answer turn held calls, not an answer
            flags.add("tool_call_as_answer")
    return sorted(flags)


def _repeats_a_call(calls: Sequence[ToolCallEvent]) -> bool:
    """Whether some call repeats an earlier call's tool and arguments exactly."""
    keys = [(call.tool, json.dumps(call.arguments, sort_keys=True)) for call in calls]
    return len(set(keys)) < len(keys)


def unrecovered_invocation_failures(calls: Sequence[ToolCallEvent]) -> list[str]:
    """Tools whose last call failed at invocation level with no later ok call.

    Args:
        calls: Tool calls in order.

    Returns:
        Sorted tool names.
    """
    last_status: dict[str, str] = {}
    ever_failed: set[str] = set()
    for call in calls:
        last_status[call.tool] = call.status
        if call.status in _INVOCATION_STATUSES:
            ever_failed.add(call.tool)
    return sorted(t for t in ever_failed if last_status[t] in _INVOCATION_STATUSES)


def process_check(calls: Sequence[ToolCallEvent], *, required: Sequence[str], distractors: Sequence[str],
                  applies: bool = True) -> dict[str, Any]:
    """The process half of the primary pass: what a run did wrong with its tools, whatever its answer.

    Args:
        calls: Tool calls in order.
        required: T_tau (each needs at least one ok call).
        distractors: T_tau^- (none may be called, whatever the call's outcome).
        applies: False in the ablation modes (rag, no_domain_tools), which withhold the domain tools by design:
            the faults are still listed, but the check passes (the answer alone decides there).

    Returns:
        ``{"passed", "required_missing", "distractors_called", "unrecovered"}``: sorted tool names for each
        fault; ``passed`` when there is none (or the check does not apply).
    """
    ok = {c.tool for c in calls if c.ok}
    missing = sorted(set(required) - ok) if applies else []
    called = sorted({c.tool for c in calls} & set(distractors))
    unrecovered = unrecovered_invocation_failures(calls)
    return {"passed": not (missing or called or unrecovered) or not applies, "required_missing": missing,
            "distractors_called": called, "unrecovered": unrecovered}


def answer_level_flags(answer: Any, template: Mapping[str, Any],
                       validator_results: Iterable[Mapping[str, Any]] = ()) -> set[str]:
    """Failures of the answer as an answer, whatever its values: absent, not JSON, of the wrong
    type, lacking required fields, or contradicting itself.

    Args:
        answer: The final answer.
        template: The scenario's output template (a JSON Schema).
        validator_results: The run's validator results (``ValidatorResult.to_json`` dicts); a
            failed ``field_relation`` (nested ones included) means the answer contradicts itself.

    Returns:
        Flags among ``no_answer``, ``answer_not_json``, ``wrong_answer_type``,
        ``missing_required_fields``, ``inconsistent_answer``.
    """
    if answer is None:
        return {"no_answer"}
    flags = {"answer_not_json"} if isinstance(answer, str) else set()
    if not isinstance(answer, Mapping):
        return flags | {"wrong_answer_type"}
    errors = list(jsonschema.Draft202012Validator(dict(template)).iter_errors(answer))
    if any(error.validator in {"type", "enum"} for error in errors):
        flags.add("wrong_answer_type")
    required = [k for k in template.get("required", ()) if answer.get(k) is None]
    if required or any(error.validator == "required" for error in errors):
        flags.add("missing_required_fields")
    if any(r.get("kind") == "field_relation" and not r.get("passed")
           for r in _flatten_results(validator_results)):
        flags.add("inconsistent_answer")
    return flags


def _flatten_results(results: Iterable[Mapping[str, Any]]) -> Iterable[Mapping[str, Any]]:
    for result in results:
        yield result
        if result.get("kind") in {"all_of", "any_of", "k_of_n"} and isinstance(result.get("observed"), list):
            yield from _flatten_results(result["observed"])


def classify_failure(*, success: bool, calls: Sequence[ToolCallEvent], answer: Any,
                     stop_reason: str, required: Sequence[str], distractors: Sequence[str],
                     precedence: Sequence[tuple[str, str]], handle_args: Sequence[str],
                     output_template: Mapping[str, Any], mode: str = "tools_provided",
                     trace_flags: Collection[str] = (),
                     validator_results: Sequence[Mapping[str, Any]] = (),
                     answer_passed: bool | None = None) -> dict[str, Any]:
    """Failure flags and primary label of a run.

    Args:
        success: Whether the validators passed (successful runs get no primary label).
        calls: Tool calls in order.
        answer: The final answer.
        stop_reason: ``final``, ``max_steps``, ``timeout`` or ``error``.
        required: T_tau.
        distractors: T_tau^-.
        precedence: Precedence edges.
        handle_args: Handle argument names.
        output_template: The answer schema.
        mode: The evaluation mode (``no_tool_call`` is not a failure mode in ``rag``).
        trace_flags: Turn-level flags from `llm_trace_flags`.
        validator_results: The run's validator results (for ``inconsistent_answer``).
        answer_passed: Whether the answer alone passed the validators (None: the same as ``success``); a
            failed run with a passing answer is flagged ``answer_without_process``, not ``wrong_value``.

    Returns:
        ``{"primary": label or None, "flags": sorted flag names}``.
    """
    flags = set(trace_flags) | _call_flags(calls, mode, distractors)
    flags |= answer_level_flags(answer, output_template, validator_results)
    unrecovered = unrecovered_invocation_failures(calls)
    if unrecovered:
        flags.add("invocation_unrecovered")
    ok_required = {c.tool for c in calls if c.ok and c.tool in set(required)}
    recall_complete = ok_required == set(required)
    if not recall_complete:
        flags.add("incomplete_recall")
    if any(edge_violated(calls, edge) for edge in precedence):
        flags.add("precedence_violated")
    if state_dependency_violations(calls, handle_args):
        flags.add("state_dependency")
    if stop_reason in _STOP_FLAGS:
        flags.add(f"stopped_{stop_reason}")
    if stop_reason == "final" and not recall_complete:
        flags.add("premature_stop")
    answer_ok = success if answer_passed is None else answer_passed
    if recall_complete and not answer_ok:
        flags.add("wrong_value")
    if answer_ok and not success:
        flags.add("answer_without_process")
    if success:
        return {"primary": None, "flags": sorted(flags)}
    return {"primary": _primary(flags, bool(unrecovered), recall_complete, stop_reason), "flags": sorted(flags)}


def _call_flags(calls: Sequence[ToolCallEvent], mode: str, distractors: Sequence[str]) -> set[str]:
    """Flags read from the tool calls alone: their statuses, none at all, repeats, distractors."""
    flags = {_STATUS_FLAGS[c.status] for c in calls if c.status in _STATUS_FLAGS}
    if not calls and mode != "rag":
        flags.add("no_tool_call")
    if _repeats_a_call(calls):
        flags.add("repeated_call")
    if any(c.status in _INVOCATION_STATUSES for c in calls):
        flags.add("invocation_error")
    if any(c.tool in set(distractors) for c in calls):
        flags.add("distractor_called")
    return flags


def _primary(flags: set[str], unrecovered: bool, recall_complete: bool, stop_reason: str) -> str:
    """The primary failure label of an unsuccessful run."""
    if unrecovered or ("unparsed_tool_call" in flags and not recall_complete):
        return "tool_invocation"
    if ("distractor_called" in flags or flags & _ANSWER_LEVEL
            or (stop_reason == "final" and not recall_complete)):
        return "reasoning"
    return "orchestration"
