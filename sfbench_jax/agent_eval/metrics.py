"""Process metrics of one run and pass metrics over repeated runs.

What lives here: tool precision / recall / distractor rate, sequencing accuracy (precedence
edges) and normalised LCS against the reference order, state-dependency violations, trajectory
length (mcp_agent_eval.md section 3.5), and the aggregate pass metrics: pass@1, pass-all-n and
tau-bench's unbiased pass^k = mean over scenarios of C(c, k) / C(n, k). A metric that is
undefined for a run (tool precision with no calls, sequencing accuracy with no precedence edges)
is None, "not applicable", never a vacuous 1.0; `mean_applicable` averages the applicable values
and counts the others. What does not: answer validation and failure labels.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from sfbench_jax.agent_eval.trace import ToolCallEvent
from sfbench_jax.agent_eval.validators import edge_satisfied

__all__ = ["is_not_applicable", "lcs_ratio", "mean_applicable", "pass_all", "pass_at_1", "pass_hat_k",
           "process_metrics", "state_dependency_violations"]


def lcs_ratio(observed: Sequence[str], reference: Sequence[str]) -> float:
    """Length of the longest common subsequence divided by the reference length.

    Args:
        observed: The agent's ok-call tool sequence.
        reference: The reference tool order.

    Returns:
        A value in [0, 1] (1.0 when the reference is empty).
    """
    if not reference:
        return 1.0
    previous = [0] * (len(reference) + 1)
    for item in observed:
        current = [0]
        for j, ref in enumerate(reference, start=1):
            current.append(previous[j - 1] + 1 if item == ref else max(previous[j], current[j - 1]))
        previous = current
    return previous[-1] / len(reference)


def _string_leaves(value: Any) -> Iterable[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, Mapping):
        for item in value.values():
            yield from _string_leaves(item)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from _string_leaves(item)


def state_dependency_violations(calls: Sequence[ToolCallEvent],
                                handle_args: Sequence[str]) -> list[dict[str, Any]]:
    """Handle arguments whose value no earlier ok call returned.

    Args:
        calls: Tool calls in order.
        handle_args: Argument names declared as handles by the scenario.

    Returns:
        One ``{seq, tool, argument, value}`` entry per violation.
    """
    produced: set[str] = set()
    violations: list[dict[str, Any]] = []
    for call in calls:
        for name in handle_args:
            if call.arguments is None or name not in call.arguments:
                continue
            value = call.arguments[name]
            # Only handle strings are checked; literal arrays are a legitimate alternative form.
            if isinstance(value, str) and not value.lstrip().startswith("[") \
                    and value not in produced:
                violations.append({"seq": call.seq, "tool": call.tool, "argument": name,
                                   "value": value})
        if call.ok and call.structured is not None:
            produced.update(_string_leaves(call.structured))
    return violations


def process_metrics(*, calls: Sequence[ToolCallEvent], required: Sequence[str],
                    distractors: Sequence[str], precedence: Sequence[tuple[str, str]],
                    reference_order: Sequence[str], handle_args: Sequence[str],
                    usage: Mapping[str, Any]) -> dict[str, Any]:
    """Trajectory metrics of one run (deterministic; no timing).

    Args:
        calls: Tool calls in order.
        required: T_tau.
        distractors: T_tau^-.
        precedence: Precedence edges.
        reference_order: Reference tool order for the LCS measure.
        handle_args: Handle argument names.
        usage: The agent's usage (``llm_turns``, ``tokens_in``, ``tokens_out``).

    Returns:
        The metrics dict of a run record.
    """
    called = {c.tool for c in calls}
    required_set, distractor_set = set(required), set(distractors)
    ok_required = {c.tool for c in calls if c.ok and c.tool in required_set}
    satisfied = [edge_satisfied(calls, edge) for edge in precedence]
    ok_sequence = [c.tool for c in calls if c.ok]
    return {
        # Undefined metrics are None ("n/a"), never a free 1.0: precision with no calls,
        # sequencing with no ordering edges.
        "tool_precision": len(called & required_set) / len(called) if called else None,
        "tool_recall": len(ok_required) / len(required_set) if required_set else 1.0,
        "distractor_rate": len(called & distractor_set) / max(1, len(called)),
        "sequencing_accuracy": sum(satisfied) / len(satisfied) if satisfied else None,
        "order_lcs": lcs_ratio(ok_sequence, list(reference_order)),
        "n_tool_calls": len(calls),
        "n_ok_calls": sum(c.ok for c in calls),
        "n_invalid_calls": sum(c.status in {"invalid_arguments", "unknown_tool"} for c in calls),
        "n_calls_by_status": dict(sorted(Counter(c.status for c in calls).items())),
        "n_state_dependency_violations": len(state_dependency_violations(calls, handle_args)),
        "n_llm_turns": int(usage.get("llm_turns", 0)),
        "tokens_in": int(usage.get("tokens_in", 0)),
        "tokens_out": int(usage.get("tokens_out", 0)),
    }


def is_not_applicable(value: Any) -> bool:
    """Whether a metric value means "not applicable" (None or NaN).

    Args:
        value: A metric value.

    Returns:
        True for None and NaN.
    """
    return value is None or (isinstance(value, float) and math.isnan(value))


def mean_applicable(values: Iterable[Any]) -> tuple[float | None, int]:
    """Mean of the applicable values and how many were not applicable.

    Args:
        values: Metric values of several runs (None / NaN where the metric is undefined).

    Returns:
        ``(mean or None when no value applies, number of not-applicable values)``.
    """
    values = list(values)
    applicable = [float(v) for v in values if not is_not_applicable(v)]
    mean = sum(applicable) / len(applicable) if applicable else None
    return mean, len(values) - len(applicable)


def pass_at_1(successes_by_scenario: Mapping[str, Sequence[bool]]) -> float:
    """Mean success over all runs of all scenarios.

    Args:
        successes_by_scenario: Scenario id -> success of each run.

    Returns:
        pass@1 in [0, 1] (NaN when there are no runs).
    """
    runs = [s for values in successes_by_scenario.values() for s in values]
    return sum(runs) / len(runs) if runs else math.nan


def pass_all(successes_by_scenario: Mapping[str, Sequence[bool]]) -> float:
    """Fraction of scenarios solved on every one of their runs (pass-all-n).

    Args:
        successes_by_scenario: Scenario id -> success of each run.

    Returns:
        pass-all-n in [0, 1] (NaN when there are no scenarios).
    """
    values = [all(v) for v in successes_by_scenario.values() if v]
    return sum(values) / len(values) if values else math.nan


def pass_hat_k(successes_by_scenario: Mapping[str, Sequence[bool]], k: int) -> float:
    """tau-bench's unbiased pass^k: mean over scenarios of C(c, k) / C(n, k).

    Args:
        successes_by_scenario: Scenario id -> success of each run (n runs, c successes).
        k: Number of runs that must all succeed; 1 <= k <= n for every scenario.

    Returns:
        pass^k in [0, 1] (equals pass-all-n when k == n).

    Raises:
        ValueError: If some scenario has fewer than k runs.
    """
    scores = []
    for scenario, values in successes_by_scenario.items():
        n, c = len(values), sum(values)
        if not 1 <= k <= n:
            raise ValueError(f"pass^{k} needs at least {k} runs; {scenario} has {n}")
        scores.append(math.comb(c, k) / math.comb(n, k))
    return sum(scores) / len(scores) if scores else math.nan
