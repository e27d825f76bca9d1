"""Argument coercion for the MCP adapter: JSON lists or JSON strings to arrays and label lists.

What lives here: the helpers that accept an array either as a JSON list or as a string holding a
JSON list (PHMForge's tools took strings; LLMs emit both), and turn it into a NumPy array with a
clear error when it cannot. What does not: domain validation (the kernels do that).
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from sfbench_jax.mcp.errors import InvalidArgumentsError

__all__ = ["as_float_array", "as_label_list"]

MAX_ITEMS = 100_000


def _decode(value: Any, argument: str) -> Sequence[Any]:
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError as exc:
            raise InvalidArgumentsError(
                f"{argument} is a string but not valid JSON ({exc.msg} at position {exc.pos}); "
                "pass a JSON array such as [1.0, 2.5] or a list") from exc
    if not isinstance(value, list | tuple):
        raise InvalidArgumentsError(f"{argument} must be a list (or a JSON array string), got "
                                    f"{type(value).__name__}")
    if len(value) > MAX_ITEMS:
        raise InvalidArgumentsError(f"{argument} has {len(value)} items; at most {MAX_ITEMS}")
    return value


def as_float_array(value: Any, *, argument: str, min_items: int = 1) -> np.ndarray:
    """Coerce a list / JSON-string of numbers into a 1-D float64 array.

    Args:
        value: A list of numbers or a string holding a JSON array of numbers.
        argument: Argument name, for messages.
        min_items: Minimum length.

    Returns:
        ``(N,)`` float64 array.

    Raises:
        InvalidArgumentsError: If it is not a flat list of finite numbers of sufficient length.
    """
    items = _decode(value, argument)
    out = np.empty(len(items), dtype=np.float64)
    for index, item in enumerate(items):
        if isinstance(item, bool) or not isinstance(item, int | float):
            raise InvalidArgumentsError(f"{argument}[{index}]={item!r} is not a number")
        if not math.isfinite(item):
            raise InvalidArgumentsError(f"{argument}[{index}] is {item}; values must be finite")
        out[index] = item
    if out.shape[0] < min_items:
        raise InvalidArgumentsError(f"{argument} has {out.shape[0]} values; at least {min_items} "
                                    "are needed")
    return out


def as_label_list(value: Any, *, argument: str) -> list[str]:
    """Coerce a list / JSON-string of labels into a list of normalised strings.

    Labels are stripped and case-folded; integers are accepted and turned into strings.

    Args:
        value: A list of strings/ints or a JSON array string.
        argument: Argument name, for messages.

    Returns:
        The labels.

    Raises:
        InvalidArgumentsError: If it is not a non-empty flat list of strings or integers.
    """
    items = _decode(value, argument)
    labels: list[str] = []
    for index, item in enumerate(items):
        if isinstance(item, bool) or not isinstance(item, str | int):
            raise InvalidArgumentsError(f"{argument}[{index}]={item!r} is not a label string")
        labels.append(str(item).strip().casefold())
    if not labels:
        raise InvalidArgumentsError(f"{argument} is empty")
    return labels
