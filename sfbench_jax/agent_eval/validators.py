"""Deterministic answer validators, looked up by name in `VALIDATORS`.

What lives here: one function per validator kind of mcp_agent_eval.md section 5.2, the shared
`ValidationContext` / `ValidatorResult` types and `evaluate_validators`, which applies a
scenario's validators and its pass rule. What does not: trace metrics and the failure taxonomy.

Every validator reads the agent's final answer through JSON pointers (``path``) and the scenario's
ground truth through ``gt_path``; literal ``target`` / ``min`` / ``max`` / ``allowed`` values come
from the scenario file. ``set_overlap`` scores recall and precision (a padded list fails);
``field_relation`` checks a relation the scenario states between two answer fields (a
self-contradictory answer fails). ``recompute_metric`` and ``classification_metrics`` recompute
metrics from the agent's own predictions with the `phm_kernels` metric kernels (the one place
the evaluator touches kernels), so a claimed MAE that does not follow from the claimed
predictions fails.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sfbench_jax.agent_eval.modes import has_domain_tools
from sfbench_jax.agent_eval.scenario import resolve_pointer
from sfbench_jax.agent_eval.trace import ToolCallEvent

__all__ = ["ANSWER_LEVEL_KINDS", "PRESENCE_ONLY", "RELATIONS", "TRACE_KINDS", "VALIDATORS",
           "ValidationContext", "ValidatorResult", "edge_satisfied", "edge_violated", "evaluate_validators",
           "normalise_label"]

PRESENCE_ONLY = frozenset({"required_fields", "trace_called"})
#: Relations ``field_relation`` checks between two answer fields.
RELATIONS = ("count_of", "member_of", "subset_of", "equals", "less_equal", "greater_equal")
#: Validators that read the answer only (no ground truth): they refuse an answer that contradicts
#: itself or the template; their failures are answer-level (``taxonomy`` flags them).
ANSWER_LEVEL_KINDS = frozenset({"required_fields", "field_relation"})
#: Validators that inspect the domain-tool trace; not applicable in the ablation modes, which
#: withhold the domain tools by design (``agent_eval.modes``).
TRACE_KINDS = frozenset({"trace_called", "trace_order"})


@dataclass(frozen=True)
class ValidationContext:
    """Everything a validator may look at.

    Attributes:
        answer: The agent's final answer (any JSON value, usually an object).
        ground_truth: The scenario's ground-truth document.
        calls: Tool calls of the run, in order.
        output_template: The scenario's answer schema.
        precedence: The scenario's precedence edges.
        pass_rule: The scenario's pass rule.
        mode: The evaluation mode of the run (trace checks do not apply in ablation modes).
    """

    answer: Any
    ground_truth: Mapping[str, Any]
    calls: Sequence[ToolCallEvent]
    output_template: Mapping[str, Any]
    precedence: Sequence[tuple[str, str]]
    pass_rule: str
    mode: str = "tools_provided"


@dataclass(frozen=True)
class ValidatorResult:
    """Outcome of one validator.

    Attributes:
        kind: Validator kind.
        path: Answer pointer it read ("" if none).
        passed: Whether it passed.
        observed: What was found in the answer (JSON-able).
        expected: What was required (JSON-able).
        detail: One line explaining a failure ("" when passed).
    """

    kind: str
    path: str
    passed: bool
    observed: Any
    expected: Any
    detail: str = ""

    def to_json(self) -> dict[str, Any]:
        """As a plain dict for run records."""
        return {"kind": self.kind, "path": self.path, "passed": self.passed,
                "observed": self.observed, "expected": self.expected, "detail": self.detail}


class _Missing(Exception):
    """The answer lacks a value the validator needs (a validation failure, not a crash)."""


def _answer_value(ctx: ValidationContext, path: str) -> Any:
    try:
        value = resolve_pointer(ctx.answer, path)
    except KeyError as exc:
        raise _Missing(f"answer has no {path}: {exc}") from None
    if value is None:
        raise _Missing(f"answer {path} is null")
    return value


def _gt_value(ctx: ValidationContext, pointer: str) -> Any:
    # A bad gt_path is a scenario bug: let KeyError escape as an evaluator error.
    return resolve_pointer(ctx.ground_truth, pointer)


def _as_number(value: Any, where: str) -> float:
    if isinstance(value, bool):
        raise _Missing(f"{where} is a boolean, expected a number")
    if isinstance(value, int | float):
        number = float(value)
    elif isinstance(value, str):
        try:
            number = float(value.strip().rstrip("%"))
        except ValueError:
            raise _Missing(f"{where}={value!r} is not a number") from None
    else:
        raise _Missing(f"{where} is a {type(value).__name__}, expected a number")
    if not math.isfinite(number):
        raise _Missing(f"{where} is not finite")
    return number


def normalise_label(value: Any, synonyms: Mapping[str, str] | None = None) -> str:
    """Case-fold, strip, unify separators and map through synonyms.

    Args:
        value: A label (string, number or bool).
        synonyms: Optional map from normalised variants to canonical labels.

    Returns:
        The canonical label.
    """
    text = str(value).strip().casefold()
    text = re.sub(r"[\s\-]+", "_", text)
    if synonyms:
        table = {normalise_label(k): normalise_label(v) for k, v in synonyms.items()}
        text = table.get(text, text)
    return text


def _norm_item(value: Any) -> Any:
    if isinstance(value, bool):
        return str(value).casefold()
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str):
        stripped = value.strip()
        if re.fullmatch(r"[+-]?\d+", stripped):
            return int(stripped)
        return normalise_label(stripped)
    return value


def _result(kind: str, spec: Mapping[str, Any], passed: bool, observed: Any, expected: Any,
            detail: str) -> ValidatorResult:
    return ValidatorResult(kind=kind, path=str(spec.get("path", "")), passed=passed,
                           observed=observed, expected=expected, detail="" if passed else detail)


def _required_fields(spec: Mapping[str, Any], ctx: ValidationContext) -> ValidatorResult:
    required = list(ctx.output_template.get("required", []))
    default_min = 0.8 if ctx.pass_rule == "completeness_80_and_gt" else 1.0
    threshold = float(spec.get("min", default_min))
    if not isinstance(ctx.answer, Mapping):
        return _result("required_fields", spec, False, type(ctx.answer).__name__, required,
                       "the final answer is not a JSON object")
    present = [k for k in required if ctx.answer.get(k) is not None]
    fraction = len(present) / len(required) if required else 1.0
    missing = [k for k in required if k not in present]
    return _result("required_fields", spec, fraction >= threshold, round(fraction, 6),
                   {"min_fraction": threshold, "fields": required},
                   f"missing fields {missing}")


def _bounds(spec: Mapping[str, Any], ctx: ValidationContext) -> tuple[float, float]:
    """Inclusive [min, max] from the spec, or from ``range_gt_path`` in the ground truth."""
    if "range_gt_path" in spec:
        lo, hi = _gt_value(ctx, spec["range_gt_path"])
        return float(lo), float(hi)
    return float(spec.get("min", -math.inf)), float(spec.get("max", math.inf))


def _numeric_range(spec: Mapping[str, Any], ctx: ValidationContext) -> ValidatorResult:
    value = _as_number(_answer_value(ctx, spec["path"]), spec["path"])
    lo, hi = _bounds(spec, ctx)
    return _result("numeric_range", spec, lo <= value <= hi, value, [lo, hi],
                   f"{value} outside [{lo}, {hi}]")


def _target(spec: Mapping[str, Any], ctx: ValidationContext) -> Any:
    if "gt_path" in spec:
        return _gt_value(ctx, spec["gt_path"])
    if "target" in spec:
        return spec["target"]
    raise KeyError(f"{spec['kind']} validator needs 'target' or 'gt_path'")


def _numeric_close(spec: Mapping[str, Any], ctx: ValidationContext) -> ValidatorResult:
    target = float(_target(spec, ctx))
    value = _as_number(_answer_value(ctx, spec["path"]), spec["path"])
    rtol, atol = float(spec.get("rtol", 0.0)), float(spec.get("atol", 0.0))
    tolerance = atol + rtol * abs(target)
    return _result("numeric_close", spec, abs(value - target) <= tolerance, value,
                   {"target": target, "rtol": rtol, "atol": atol},
                   f"|{value} - {target}| > {tolerance:.6g}")


def _categorical(spec: Mapping[str, Any], ctx: ValidationContext) -> ValidatorResult:
    synonyms = spec.get("synonyms")
    raw = _answer_value(ctx, spec["path"])
    if isinstance(raw, bool | int | float) or not isinstance(raw, str):
        return _result("categorical", spec, False, raw, spec.get("allowed"),
                       f"{spec['path']} must be a category string, got {type(raw).__name__}")
    allowed_raw = spec["allowed"] if "allowed" in spec else _target(spec, ctx)
    allowed_list = allowed_raw if isinstance(allowed_raw, list) else [allowed_raw]
    allowed = sorted({normalise_label(a, synonyms) for a in allowed_list})
    observed = normalise_label(raw, synonyms)
    return _result("categorical", spec, observed in allowed, observed, allowed,
                   f"{observed!r} not in {allowed}")


def _mcq(spec: Mapping[str, Any], ctx: ValidationContext) -> ValidatorResult:
    raw = _answer_value(ctx, spec["path"])
    match = re.fullmatch(r"\s*(?:answer\s*[:=]?\s*)?\(?([A-Za-z])\)?[.)]?\s*", str(raw),
                         flags=re.IGNORECASE)
    observed = match.group(1).upper() if match else None
    expected = str(_target(spec, ctx)).strip().upper()
    return _result("mcq", spec, observed == expected, observed, expected,
                   f"choice {raw!r} is not the single letter {expected}")


def _set_overlap(spec: Mapping[str, Any], ctx: ValidationContext) -> ValidatorResult:
    """Recall |observed & reference| / |reference| and precision |observed & reference| / |observed|.

    Both must reach their threshold (``min_overlap`` for recall, ``min_precision`` for precision,
    which defaults to ``min_overlap``), and an answer longer than ``max_items`` (when given)
    fails: listing every candidate cannot pass a "top 10" question.
    """
    raw = _answer_value(ctx, spec["path"])
    if not isinstance(raw, list):
        raise _Missing(f"{spec['path']} must be a list")
    reference = {_norm_item(x) for x in _target(spec, ctx)}
    observed = {_norm_item(x) for x in raw}
    common = len(observed & reference)
    recall = common / len(reference) if reference else 1.0
    precision = common / len(observed) if observed else (1.0 if not reference else 0.0)
    min_recall = float(spec.get("min_overlap", 1.0))
    min_precision = float(spec.get("min_precision", min_recall))
    max_items = spec.get("max_items")
    too_long = max_items is not None and len(raw) > int(max_items)
    passed = recall >= min_recall and precision >= min_precision and not too_long
    problems = [f"recall {recall:.3f} < {min_recall}"] if recall < min_recall else []
    problems += [f"precision {precision:.3f} < {min_precision}"] if precision < min_precision else []
    problems += [f"{len(raw)} items > max_items {max_items}"] if too_long else []
    return _result("set_overlap", spec, passed,
                   {"recall": round(recall, 6), "precision": round(precision, 6), "n_items": len(raw)},
                   {"min_overlap": min_recall, "min_precision": min_precision,
                    "max_items": max_items, "reference_size": len(reference)},
                   "; ".join(problems))


def _relation_holds(relation: str, value: Any, other: Any, where: str) -> bool:
    """Whether ``value`` (at ``path``) stands in ``relation`` to ``other`` (at ``of``)."""
    if relation == "count_of":
        if not isinstance(other, list):
            raise _Missing(f"{where}: the counted field must be a list")
        return _as_number(value, where) == len(other)
    if relation == "member_of":
        if not isinstance(other, list):
            raise _Missing(f"{where}: the field it must belong to is not a list")
        return _norm_item(value) in {_norm_item(x) for x in other}
    if relation == "subset_of":
        if not isinstance(value, list) or not isinstance(other, list):
            raise _Missing(f"{where}: both fields must be lists")
        return {_norm_item(x) for x in value} <= {_norm_item(x) for x in other}
    if relation == "equals":
        return _norm_item(value) == _norm_item(other)
    first, second = _as_number(value, where), _as_number(other, where)
    return first <= second if relation == "less_equal" else first >= second


def _field_relation(spec: Mapping[str, Any], ctx: ValidationContext) -> ValidatorResult:
    """A relation the scenario states between two answer fields (no ground truth involved).

    ``relation`` is one of `RELATIONS`: ``count_of`` (the number at ``path`` is the number of
    items of the list at ``of``), ``member_of``, ``subset_of``, ``equals``,
    ``less_equal``, ``greater_equal``. A self-contradictory answer (7 sensors listed,
    ``n_anomalous_sensors: 3``) fails here even if one of its fields matches the ground truth.
    """
    relation = spec["relation"]
    if relation not in RELATIONS:
        raise KeyError(f"unknown relation {relation!r}; choose from {list(RELATIONS)}")
    value = _answer_value(ctx, spec["path"])
    other = _answer_value(ctx, spec["of"])
    where = f"{spec['path']} {relation} {spec['of']}"
    holds = _relation_holds(relation, value, other, where)
    return _result("field_relation", spec, holds, {"value": value, "of": other},
                   {"relation": relation, "of": spec["of"]},
                   f"the answer contradicts itself: {spec['path']}={value!r} is not {relation} "
                   f"{spec['of']}={other!r}")


def _predictions(ctx: ValidationContext, spec: Mapping[str, Any],
                 ids: Sequence[Any] | None, size: int) -> list[Any]:
    """Read the agent's predictions as a list aligned with the ground truth order."""
    raw = _answer_value(ctx, spec["predictions_path"])
    if isinstance(raw, Mapping):
        if ids is None:
            raise _Missing(f"{spec['predictions_path']} is a mapping but the ground truth has "
                           "no ids to align it with")
        keyed = {_norm_item(k): v for k, v in raw.items()}
        missing = [i for i in ids if _norm_item(i) not in keyed]
        if missing:
            raise _Missing(f"{spec['predictions_path']} lacks {len(missing)} of {len(ids)} ids "
                           f"(first: {missing[0]})")
        return [keyed[_norm_item(i)] for i in ids]
    if not isinstance(raw, list):
        raise _Missing(f"{spec['predictions_path']} must be a list or an id->value mapping")
    if len(raw) != size:
        raise _Missing(f"{spec['predictions_path']} has {len(raw)} items; the ground truth has "
                       f"{size}")
    return list(raw)


def _ids_for(ctx: ValidationContext, gt_path: str) -> list[Any] | None:
    parent = gt_path.rsplit("/", 1)[0]
    try:
        ids = resolve_pointer(ctx.ground_truth, f"{parent}/ids")
    except KeyError:
        return None
    return list(ids)


def _regression_metric(metric: str, truth: list[float], pred: list[float]) -> float:
    import numpy as np
    import phm_kernels

    y_true = np.asarray(truth, dtype=np.float64)
    y_pred = np.asarray(pred, dtype=np.float64)
    if metric == "phm08":
        return float(phm_kernels.phm08_score(y_true, y_pred))
    metrics = phm_kernels.regression_metrics(y_true, y_pred)
    return float(getattr(metrics, metric))


def _class_metric(metric: str, truth: list[Any], pred: list[Any]) -> float:
    import numpy as np
    import phm_kernels

    labels = sorted({normalise_label(x) for x in truth} | {normalise_label(x) for x in pred})
    index = {label: i for i, label in enumerate(labels)}
    y_true = np.asarray([index[normalise_label(x)] for x in truth], dtype=np.int32)
    y_pred = np.asarray([index[normalise_label(x)] for x in pred], dtype=np.int32)
    result = phm_kernels.classification_metrics(y_true, y_pred, n_classes=len(labels))
    return float(getattr(result, metric))


def _recompute_metric(spec: Mapping[str, Any], ctx: ValidationContext) -> ValidatorResult:
    metric = spec["metric"]
    truth = list(_gt_value(ctx, spec["gt_path"]))
    predictions = _predictions(ctx, spec, _ids_for(ctx, spec["gt_path"]), len(truth))
    if metric in {"accuracy", "macro_f1"}:
        recomputed = _class_metric(metric, truth, predictions)
    else:
        numbers = [_as_number(p, f"{spec['predictions_path']}[{i}]")
                   for i, p in enumerate(predictions)]
        recomputed = _regression_metric(metric, [float(t) for t in truth], numbers)
    lo, hi = _bounds(spec, ctx)
    in_range = lo <= recomputed <= hi
    expected: dict[str, Any] = {"metric": metric, "range": [lo, hi],
                                "recomputed": round(recomputed, 9)}
    if "path" not in spec:
        return _result("recompute_metric", spec, in_range, recomputed, expected,
                       f"recomputed {metric} {recomputed:.6g} outside [{lo}, {hi}]")
    claimed = _as_number(_answer_value(ctx, spec["path"]), spec["path"])
    rtol, atol = float(spec.get("rtol", 0.01)), float(spec.get("atol", 1e-6))
    consistent = abs(claimed - recomputed) <= atol + rtol * abs(recomputed)
    detail = (f"claimed {metric} {claimed:.6g} does not follow from the reported predictions "
              f"({recomputed:.6g})" if not consistent else
              f"recomputed {metric} {recomputed:.6g} outside [{lo}, {hi}]")
    expected.update(rtol=rtol, atol=atol)
    return _result("recompute_metric", spec, consistent and in_range, claimed, expected, detail)


def _classification_metrics(spec: Mapping[str, Any], ctx: ValidationContext) -> ValidatorResult:
    metric = spec.get("metric", "accuracy")
    truth = list(_gt_value(ctx, spec["gt_path"]))
    spec_for_pred = {**spec, "predictions_path": spec["path"]}
    predictions = _predictions(ctx, spec_for_pred, _ids_for(ctx, spec["gt_path"]), len(truth))
    value = _class_metric(metric, truth, predictions)
    lo, hi = _bounds(spec, ctx)
    return _result("classification_metrics", spec, lo <= value <= hi, round(value, 9),
                   {"metric": metric, "range": [lo, hi]},
                   f"{metric} {value:.4f} outside [{lo}, {hi}]")


_TRUE = {"true", "yes", "compliant", "pass", "1"}
_FALSE = {"false", "no", "non_compliant", "noncompliant", "fail", "0"}


def _as_bool(value: Any, where: str) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str):
        label = normalise_label(value)
        if label in _TRUE:
            return True
        if label in _FALSE:
            return False
    raise _Missing(f"{where}={value!r} is not a boolean")


def _boolean(spec: Mapping[str, Any], ctx: ValidationContext) -> ValidatorResult:
    value = _as_bool(_answer_value(ctx, spec["path"]), spec["path"])
    target = _as_bool(_target(spec, ctx), "target")
    return _result("boolean", spec, value == target, value, target, f"{value} != {target}")


def _trace_called(spec: Mapping[str, Any], ctx: ValidationContext) -> ValidatorResult:
    tool = spec["tool"]
    ok_calls = sum(1 for c in ctx.calls if c.tool == tool and c.ok)
    return ValidatorResult(kind="trace_called", path="", passed=ok_calls > 0,
                           observed=ok_calls, expected={"tool": tool, "min_ok_calls": 1},
                           detail="" if ok_calls else f"{tool} was never called successfully")


def edge_satisfied(calls: Sequence[ToolCallEvent], edge: tuple[str, str]) -> bool:
    """Whether the first ok call of ``a`` precedes the first call of ``b``.

    Args:
        calls: Tool calls in order.
        edge: ``(a, b)``.

    Returns:
        False when either end never appears as required.
    """
    first, second = edge
    first_ok = next((c.seq for c in calls if c.tool == first and c.ok), None)
    first_b = next((c.seq for c in calls if c.tool == second), None)
    return first_ok is not None and first_b is not None and first_ok < first_b


def edge_violated(calls: Sequence[ToolCallEvent], edge: tuple[str, str]) -> bool:
    """Whether ``b`` was called with no earlier ok call of ``a`` (the order was broken).

    Unlike ``not edge_satisfied``, an edge whose later end ``b`` was never called is not
    violated: nothing was done out of order (a missing call is a recall failure, not an order
    failure).

    Args:
        calls: Tool calls in order.
        edge: ``(a, b)``.

    Returns:
        True when ``b`` appears and no ok call of ``a`` precedes its first call.
    """
    first, second = edge
    first_b = next((c.seq for c in calls if c.tool == second), None)
    if first_b is None:
        return False
    return not any(c.tool == first and c.ok and c.seq < first_b for c in calls)


def _trace_order(spec: Mapping[str, Any], ctx: ValidationContext) -> ValidatorResult:
    edges = [tuple(e) for e in spec.get("edges", ctx.precedence)]
    violated = [list(e) for e in edges if not edge_satisfied(ctx.calls, e)]
    return ValidatorResult(kind="trace_order", path="", passed=not violated,
                           observed={"violated": violated}, expected={"edges": edges},
                           detail="" if not violated else f"precedence violated: {violated}")


def _combine(kind: str, spec: Mapping[str, Any], ctx: ValidationContext) -> ValidatorResult:
    children = [apply_validator(child, ctx) for child in spec["children"]]
    passed_count = sum(c.passed for c in children)
    if kind == "all_of":
        passed = passed_count == len(children)
    elif kind == "any_of":
        passed = passed_count >= 1
    else:
        passed = passed_count >= int(spec["k"])
    return ValidatorResult(kind=kind, path="", passed=passed,
                           observed=[c.to_json() for c in children],
                           expected={"k": spec.get("k")} if kind == "k_of_n" else None,
                           detail="" if passed else f"{passed_count}/{len(children)} children "
                                                    "passed")


VALIDATORS: dict[str, Callable[[Mapping[str, Any], ValidationContext], ValidatorResult]] = {
    "required_fields": _required_fields,
    "numeric_range": _numeric_range,
    "numeric_close": _numeric_close,
    "categorical": _categorical,
    "mcq": _mcq,
    "set_overlap": _set_overlap,
    "field_relation": _field_relation,
    "recompute_metric": _recompute_metric,
    "classification_metrics": _classification_metrics,
    "boolean": _boolean,
    "trace_called": _trace_called,
    "trace_order": _trace_order,
    "all_of": lambda spec, ctx: _combine("all_of", spec, ctx),
    "any_of": lambda spec, ctx: _combine("any_of", spec, ctx),
    "k_of_n": lambda spec, ctx: _combine("k_of_n", spec, ctx),
}


def apply_validator(spec: Mapping[str, Any], ctx: ValidationContext) -> ValidatorResult:
    """Run one validator; a missing or mistyped answer value is a failure, not an error.

    Args:
        spec: The validator spec from the scenario.
        ctx: Validation context.

    Returns:
        The result.

    Raises:
        KeyError: For an unknown kind or a bad ground-truth pointer (a scenario bug; the runner
            records it as ``evaluator_error``).
    """
    kind = spec["kind"]
    if kind not in VALIDATORS:
        raise KeyError(f"unknown validator kind {kind!r}; choose from {sorted(VALIDATORS)}")
    if kind in TRACE_KINDS and not has_domain_tools(ctx.mode):
        return ValidatorResult(kind=kind, path="", passed=True, observed="not_applicable",
                               expected={"not_applicable_in_mode": ctx.mode})
    try:
        return VALIDATORS[kind](spec, ctx)
    except _Missing as exc:
        return ValidatorResult(kind=kind, path=str(spec.get("path", "")), passed=False,
                               observed=None, expected=None, detail=str(exc))


def evaluate_validators(validators: Sequence[Mapping[str, Any]],
                        ctx: ValidationContext) -> tuple[bool, list[ValidatorResult]]:
    """Apply all validators and the pass rule.

    Under ``all`` every validator must pass. Under ``completeness_80_and_gt`` the
    ``required_fields`` validators need a fraction of at least 0.8 (their own threshold) and
    every other validator (the ground-truth checks) must pass; both reduce to "all pass" given
    the per-validator thresholds, which is why the rule only changes ``required_fields``'
    default threshold.

    Args:
        validators: Validator specs.
        ctx: Validation context.

    Returns:
        ``(success, results)``.
    """
    results = [apply_validator(spec, ctx) for spec in validators]
    return all(r.passed for r in results), results
