"""A restricted numeric expression evaluator: the generic server's stand-in for code execution.

What lives here: `evaluate_expression`, which parses one Python-syntax expression with `ast`,
allows only numbers, lists, named variables, arithmetic, comparisons, indexing and a fixed table
of NumPy functions (`FUNCTIONS`), and evaluates it in float64; and `CalculatorError`. What does
not: any PHM algorithm (the point of the no_domain_tools mode is that the agent must build those
from arithmetic itself), file or network access, attribute access, or statements.

Safety: there is no ``eval``; the tree is walked node by node and anything outside the
whitelist is refused by name. Integers are evaluated as floats (so ``10**10**10`` overflows to
an error instead of running forever) and array-producing functions are capped at
`MAX_ELEMENTS` elements.
"""

from __future__ import annotations

import ast
import math
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

__all__ = ["FUNCTIONS", "MAX_ELEMENTS", "MAX_EXPRESSION_CHARS", "CalculatorError",
           "evaluate_expression"]

MAX_ELEMENTS = 100_000
MAX_EXPRESSION_CHARS = 4_000


class CalculatorError(ValueError):
    """The expression is malformed, uses something not allowed, or has no finite result."""


def _capped_count(count: Any) -> int:
    number = int(count)
    if not 0 <= number <= MAX_ELEMENTS:
        raise CalculatorError(f"array length {number} is outside 0..{MAX_ELEMENTS}")
    return number


def _linspace(start: float, stop: float, num: float = 50) -> np.ndarray:
    return np.linspace(start, stop, _capped_count(num))


def _arange(*args: float) -> np.ndarray:
    start, stop, step = (0.0, args[0], 1.0) if len(args) == 1 else (*args, 1.0)[:3]
    if step == 0:
        raise CalculatorError("arange step must not be 0")
    _capped_count(max(0.0, math.ceil((stop - start) / step)))
    return np.arange(start, stop, step)


def _norm_cdf(x: Any) -> Any:
    return 0.5 * (1.0 + np.vectorize(math.erf)(np.asarray(x, float) / math.sqrt(2.0)))


#: Callable names an expression may use.
FUNCTIONS: dict[str, Callable[..., Any]] = {
    "abs": np.abs, "sqrt": np.sqrt, "exp": np.exp, "log": np.log, "log10": np.log10,
    "log2": np.log2, "sin": np.sin, "cos": np.cos, "tan": np.tan, "arctan": np.arctan,
    "floor": np.floor, "ceil": np.ceil, "round": np.round, "min": np.min, "max": np.max,
    "sum": np.sum, "prod": np.prod, "mean": np.mean, "median": np.median, "std": np.std,
    "var": np.var, "len": len, "cumsum": np.cumsum, "diff": np.diff, "sort": np.sort,
    "argmin": np.argmin, "argmax": np.argmax, "percentile": np.percentile,
    "polyfit": np.polyfit, "polyval": np.polyval, "interp": np.interp, "where": np.where,
    "clip": np.clip, "count_nonzero": np.count_nonzero, "any": np.any, "all": np.all,
    "dot": np.dot, "array": lambda values: np.asarray(values, dtype=float),
    "linspace": _linspace, "arange": _arange, "erf": np.vectorize(math.erf),
    "gamma": np.vectorize(math.gamma), "norm_cdf": _norm_cdf, "minimum": np.minimum,
    "maximum": np.maximum,
}
_CONSTANTS = {"pi": math.pi, "e": math.e, "True": True, "False": False}
_KEYWORDS = frozenset({"ddof", "deg", "q", "axis", "decimals"})

_BINARY: dict[type, Callable[[Any, Any], Any]] = {
    ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b, ast.Mult: lambda a, b: a * b,
    ast.Div: lambda a, b: a / b, ast.Pow: lambda a, b: a ** b, ast.Mod: lambda a, b: a % b,
    ast.FloorDiv: lambda a, b: a // b,
}
_COMPARE: dict[type, Callable[[Any, Any], Any]] = {
    ast.Lt: lambda a, b: a < b, ast.LtE: lambda a, b: a <= b, ast.Gt: lambda a, b: a > b,
    ast.GtE: lambda a, b: a >= b, ast.Eq: lambda a, b: a == b, ast.NotEq: lambda a, b: a != b,
}


def _as_operand(value: Any) -> Any:
    if isinstance(value, list | tuple):
        array = np.asarray(value, dtype=float)
        if array.size > MAX_ELEMENTS:
            raise CalculatorError(f"a list holds more than {MAX_ELEMENTS} numbers")
        return array
    return value


class _Evaluator:
    """Walks a parsed expression tree, allowing only whitelisted nodes."""

    def __init__(self, variables: Mapping[str, Any]) -> None:
        self.variables = {name: _as_operand(value) for name, value in variables.items()}

    def visit(self, node: ast.AST) -> Any:
        method = getattr(self, f"_{type(node).__name__}", None)
        if method is None:
            raise CalculatorError(f"{type(node).__name__} is not allowed in an expression "
                                  "(only arithmetic, comparisons, lists, indexing and the "
                                  "listed functions)")
        return method(node)

    def _Expression(self, node: ast.Expression) -> Any:
        return self.visit(node.body)

    def _Constant(self, node: ast.Constant) -> Any:
        if isinstance(node.value, bool):
            return node.value
        if isinstance(node.value, int | float):
            return float(node.value)
        raise CalculatorError(f"constant {node.value!r} is not a number")

    def _Name(self, node: ast.Name) -> Any:
        if node.id in self.variables:
            return self.variables[node.id]
        if node.id in _CONSTANTS:
            return _CONSTANTS[node.id]
        known = sorted([*self.variables, *_CONSTANTS])
        raise CalculatorError(f"unknown name {node.id!r}; variables and constants: {known}")

    def _List(self, node: ast.List) -> Any:
        return _as_operand([self.visit(item) for item in node.elts])

    _Tuple = _List

    def _BinOp(self, node: ast.BinOp) -> Any:
        operator = _BINARY.get(type(node.op))
        if operator is None:
            raise CalculatorError(f"operator {type(node.op).__name__} is not allowed")
        return operator(self.visit(node.left), self.visit(node.right))

    def _UnaryOp(self, node: ast.UnaryOp) -> Any:
        value = self.visit(node.operand)
        if isinstance(node.op, ast.USub):
            return -value
        if isinstance(node.op, ast.UAdd):
            return +value
        if isinstance(node.op, ast.Not):
            return np.logical_not(value)
        raise CalculatorError(f"operator {type(node.op).__name__} is not allowed")

    def _Compare(self, node: ast.Compare) -> Any:
        left, result = self.visit(node.left), True
        for op, right_node in zip(node.ops, node.comparators, strict=True):
            operator = _COMPARE.get(type(op))
            if operator is None:
                raise CalculatorError(f"comparison {type(op).__name__} is not allowed")
            right = self.visit(right_node)
            result = np.logical_and(result, operator(left, right))
            left = right
        return result

    def _BoolOp(self, node: ast.BoolOp) -> Any:
        values = [self.visit(v) for v in node.values]
        combine = np.logical_and if isinstance(node.op, ast.And) else np.logical_or
        result = values[0]
        for value in values[1:]:
            result = combine(result, value)
        return result

    def _IfExp(self, node: ast.IfExp) -> Any:
        return self.visit(node.body) if bool(self.visit(node.test)) else self.visit(node.orelse)

    def _Subscript(self, node: ast.Subscript) -> Any:
        target = self.visit(node.value)
        index = self.visit(node.slice)
        if isinstance(index, float):
            if not index.is_integer():
                raise CalculatorError(f"index {index} is not an integer")
            index = int(index)
        elif isinstance(index, np.ndarray) and index.dtype != bool:
            index = index.astype(int)
        return np.asarray(target)[index]

    def _Slice(self, node: ast.Slice) -> slice:
        def bound(part: ast.AST | None) -> int | None:
            return None if part is None else int(self.visit(part))
        return slice(bound(node.lower), bound(node.upper), bound(node.step))

    def _Call(self, node: ast.Call) -> Any:
        if not isinstance(node.func, ast.Name) or node.func.id not in FUNCTIONS:
            name = node.func.id if isinstance(node.func, ast.Name) else type(node.func).__name__
            raise CalculatorError(f"function {name!r} is not available; use one of "
                                  f"{sorted(FUNCTIONS)}")
        args = [self.visit(a) for a in node.args]
        kwargs = {}
        for keyword in node.keywords:
            if keyword.arg not in _KEYWORDS:
                raise CalculatorError(f"keyword {keyword.arg!r} is not allowed; use one of "
                                      f"{sorted(_KEYWORDS)}")
            value = self.visit(keyword.value)
            kwargs[keyword.arg] = int(value) if keyword.arg in {"ddof", "deg", "axis",
                                                                "decimals"} else value
        if node.func.id in {"polyfit"} and len(args) == 3:
            args[2] = int(args[2])
        return FUNCTIONS[node.func.id](*args, **kwargs)


def _to_json(value: Any) -> float | bool | list[Any]:
    array = np.asarray(value)
    if array.dtype == bool:
        return bool(array) if array.ndim == 0 else array.tolist()
    if not np.issubdtype(array.dtype, np.number):
        raise CalculatorError(f"the result is not numeric ({array.dtype})")
    array = array.astype(float)
    if array.size > MAX_ELEMENTS:
        raise CalculatorError(f"the result holds more than {MAX_ELEMENTS} numbers")
    if not np.all(np.isfinite(array)):
        raise CalculatorError("the result is not finite (division by zero, overflow or log of "
                              "a non-positive number)")
    return float(array) if array.ndim == 0 else array.tolist()


def evaluate_expression(expression: str,
                        variables: Mapping[str, Any] | None = None) -> float | bool | list[Any]:
    """Evaluate one arithmetic expression over numbers and lists.

    Args:
        expression: Python-syntax expression, e.g. ``"mean(x[-10:]) / x[0]"``.
        variables: Name -> number or list of numbers.

    Returns:
        A float, a bool, or a (nested) list of floats.

    Raises:
        CalculatorError: If the expression cannot be parsed, uses anything outside the
            whitelist, or has no finite numeric result.

    Example:
        >>> evaluate_expression("mean(x[-2:]) / x[0]", {"x": [2, 4, 6]})
        2.5
    """
    if len(expression) > MAX_EXPRESSION_CHARS:
        raise CalculatorError(f"the expression is longer than {MAX_EXPRESSION_CHARS} characters")
    for name in variables or {}:
        if not name.isidentifier() or name in FUNCTIONS or name in _CONSTANTS:
            raise CalculatorError(f"variable name {name!r} is not a free identifier")
    try:
        tree = ast.parse(expression.strip(), mode="eval")
    except SyntaxError as exc:
        raise CalculatorError(f"cannot parse the expression: {exc.msg}") from None
    except RecursionError:
        raise CalculatorError("the expression is nested too deeply") from None
    evaluator = _Evaluator(variables or {})
    with np.errstate(all="ignore"):
        try:
            value = evaluator.visit(tree)
        except CalculatorError:
            raise
        except (ArithmeticError, ValueError, TypeError, IndexError, RecursionError) as exc:
            raise CalculatorError(f"{type(exc).__name__}: {exc}") from None
        return _to_json(value)
