"""The arithmetic and comparisons a reference answer may apply to tool outputs.

What lives here: `evaluate_leaf`, which turns one leaf of a scenario's ``reference_answer`` into a
value, given a resolver for ``{"$ref": "save_as/pointer"}`` leaves, and `OPERATORS`, the names of
the operators it knows. Every operator is what an analyst does with tool outputs in one line:

* ``{"$sum": [a, b, ...]}``, ``{"$sub": [a, b, ...]}``: a + b + ..., a - b - ...
* ``{"$mul": [a, b, ...]}``, ``{"$div": [a, b]}``: a * b * ..., a / b (a unit conversion, a percentage;
  division by zero gives null).
* ``{"$lt": [a, b]}``, ``{"$gt": [a, b]}``, ``{"$eq": [a, b]}``: comparisons giving a boolean.
* ``{"$all": [a, b, ...]}``: every operand is true; ``{"$not": a}``: a is false (a boolean operand only).
* ``{"$argmin": [[key, value], ...]}``, ``{"$argmax": [[key, value], ...]}``: the key of the
  smallest / largest value (the first on ties).
* ``{"$nearest": [x, [[key, value], ...]]}``: the key whose value is closest to ``x``.
* ``{"$count_in": [items, allowed]}`` or ``{"$count_in": [items, allowed, field]}``: how many items
  (or the items' ``field``) are among ``allowed``.
* ``{"$lookup": [value, {text: result, ...}]}``: ``result`` for ``value`` (an unknown value gives
  null).
* ``{"$parse_int": text}``: the integer written in a text (``"SIL 3"`` -> 3).

Operands are leaves themselves (literals, ``$ref`` or nested operators); an operator whose
operands do not resolve, or have the wrong type, gives null, as an unresolvable ``$ref`` does.
What does not live here: running the reference solution (``agents/scripted.py``) and the lint rule
that a validated field must be derived from a tool's output (``lint.py``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["OPERATORS", "evaluate_leaf", "is_derived"]


class _Unresolved(Exception):
    """An operand is null or of the wrong type: the operator's result is null."""


def _number(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise _Unresolved
    return value


def _pairs(value: Any) -> list[tuple[Any, float]]:
    if not isinstance(value, list) or not value:
        raise _Unresolved
    pairs = []
    for item in value:
        if not isinstance(item, list) or len(item) != 2:
            raise _Unresolved
        pairs.append((item[0], _number(item[1])))
    return pairs


def _count_in(operands: list[Any]) -> int:
    items, allowed, *field = operands
    if not isinstance(items, list) or not isinstance(allowed, list):
        raise _Unresolved
    if field:
        items = [item.get(field[0]) if isinstance(item, Mapping) else None for item in items]
    return sum(1 for item in items if item in allowed)


def _lookup(operands: list[Any]) -> Any:
    value, table = operands
    if not isinstance(table, Mapping):
        raise _Unresolved
    return table.get(str(value))


def _parse_int(text: Any) -> int:
    match = re.search(r"[-+]?\d+", str(text)) if text is not None else None
    if match is None:
        raise _Unresolved
    return int(match.group())


def _div(operands: list[Any]) -> float:
    numerator, denominator = _number(operands[0]), _number(operands[1])
    if denominator == 0:
        raise _Unresolved
    return numerator / denominator


def _not(operand: Any) -> bool:
    if not isinstance(operand, bool):
        raise _Unresolved
    return not operand


def _product(operands: list[Any]) -> float:
    result = 1.0
    for value in operands:
        result *= _number(value)
    return result


_OPS: dict[str, Callable[[Any], Any]] = {
    "$sum": lambda ops: sum(_number(v) for v in ops),
    "$sub": lambda ops: _number(ops[0]) - sum(_number(v) for v in ops[1:]),
    "$mul": _product,
    "$div": _div,
    "$not": _not,
    "$lt": lambda ops: _number(ops[0]) < _number(ops[1]),
    "$gt": lambda ops: _number(ops[0]) > _number(ops[1]),
    "$eq": lambda ops: ops[0] == ops[1],
    "$all": lambda ops: all(bool(v) for v in ops),
    "$argmin": lambda ops: min(_pairs(ops), key=lambda kv: kv[1])[0],
    "$argmax": lambda ops: max(_pairs(ops), key=lambda kv: kv[1])[0],
    "$nearest": lambda ops: min(_pairs(ops[1]), key=lambda kv: abs(kv[1] - _number(ops[0])))[0],
    "$count_in": _count_in,
    "$lookup": _lookup,
    "$parse_int": _parse_int,
}
#: Operator names a reference-answer leaf may use (besides ``$ref``).
OPERATORS = frozenset(_OPS)


def _operator(value: Any) -> str | None:
    if isinstance(value, Mapping) and len(value) == 1:
        name = next(iter(value))
        if name in _OPS:
            return str(name)
    return None


def evaluate_leaf(value: Any, resolve: Callable[[str], Any]) -> Any:
    """The value of one reference-answer leaf.

    Args:
        value: A literal, ``{"$ref": ...}``, an operator mapping, or a dict / list of those.
        resolve: Resolves a ``$ref`` string; raises KeyError when it cannot.

    Returns:
        The value (null where a reference or an operator cannot be resolved).
    """
    if isinstance(value, Mapping):
        if set(value) == {"$ref"}:
            try:
                return resolve(str(value["$ref"]))
            except KeyError:
                return None
        name = _operator(value)
        if name is not None:
            raw = value[name]
            operands = [evaluate_leaf(v, resolve) for v in raw] if isinstance(raw, list) \
                else evaluate_leaf(raw, resolve)
            if isinstance(operands, list) and name != "$count_in" and any(v is None for v in operands):
                return None
            try:
                return _OPS[name](operands)
            except (_Unresolved, ValueError, TypeError, IndexError):
                return None
        return {k: evaluate_leaf(v, resolve) for k, v in value.items()}
    if isinstance(value, list):
        return [evaluate_leaf(v, resolve) for v in value]
    return value


def is_derived(value: Any) -> bool:
    """Whether a reference-answer leaf reads some tool output (holds a ``$ref`` somewhere).

    Args:
        value: A reference-answer value.

    Returns:
        True if a ``$ref`` occurs in it (directly or inside an operator).
    """
    if isinstance(value, Mapping):
        if set(value) == {"$ref"}:
            return True
        return any(is_derived(v) for v in value.values())
    if isinstance(value, list):
        return any(is_derived(v) for v in value)
    return False
