"""Validation helpers for the architectures' frozen hyperparameter dataclasses.

Each architecture module defines its own `...Config` dataclass and grid; the helpers here check
one field at a time and raise `ValueError` messages that name the field and the valid values.
They return the (possibly normalised) value; configs store it with `object.__setattr__`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, TypeGuard

import numpy as np

#: Hyperparameters by name as a preset, a grid or a manifest gives them (int, float, str or bool per name). The
#: values are `Any`: what type each one has is what its config class checks (the helpers below), not the mapping.
HParams = Mapping[str, Any]


def _is_int(value: object) -> TypeGuard[int | np.integer]:
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


def require_int(name: str, value: object, *, minimum: int = 1, odd: bool = False,
                choices: Sequence[int] | None = None) -> int:
    """Return `value` as int; raise unless it is an int >= minimum (and odd / in choices)."""
    if not _is_int(value):
        raise ValueError(f"{name} must be an int, got {value!r} ({type(value).__name__}).")
    value = int(value)
    if choices is not None and value not in choices:
        raise ValueError(f"{name}={value!r} is not supported; valid values: {list(choices)}.")
    if value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}.")
    if odd and value % 2 == 0:
        raise ValueError(f"{name} must be odd, got {value}.")
    return int(value)


def require_bool(name: str, value: object, *, choices: Sequence[bool] = (False, True)) -> bool:
    """Return `value` as bool; raise unless it is a bool among `choices`."""
    if not isinstance(value, (bool, np.bool_)):
        raise ValueError(f"{name} must be a bool (valid values: {list(choices)}), got {value!r}.")
    value = bool(value)
    if value not in choices:
        raise ValueError(f"{name}={value!r} is not supported; valid values: {list(choices)}.")
    return bool(value)


def require_rate(name: str, value: object) -> float:
    """Return a dropout probability as float; raise unless it is a number in [0, 1)."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.number)):
        raise ValueError(f"{name} must be a float in [0, 1), got {value!r}.")
    value = float(value)
    if not 0.0 <= value < 1.0:
        raise ValueError(f"{name} must be in [0, 1), got {value}.")
    return float(value)


def require_choice(name: str, value: object, choices: Sequence[str]) -> str:
    """Return `value`; raise unless it is one of the string `choices`."""
    if not isinstance(value, str) or value not in choices:
        raise ValueError(f"{name}={value!r} is not supported; valid values: {list(choices)}.")
    return value
