"""Eager (NumPy) input checks shared by the kernel validators, plus the float-dtype helper.

The ``validate_*`` functions of every family are built from these helpers. They run on concrete
values before any jitted core is called, so they may raise; each message names the argument, the
offending value and the fix. ``as_float`` is the one JAX helper here: cores call it to cast inputs
to the default float dtype (float64 when ``jax_enable_x64`` is on, float32 otherwise). No kernel
logic lives in this module.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from phm_kernels.errors import (
    DomainError,
    InsufficientDataError,
    NonFiniteInputError,
    PHMInputError,
    ShapeMismatchError,
    UnknownOptionError,
)


def as_float(value: Any) -> jax.Array:
    """Casts ``value`` to a JAX array of the default float dtype (respects jax_enable_x64)."""
    return jnp.asarray(value, dtype=jnp.result_type(float))


def _show(values: np.ndarray, limit: int = 6) -> str:
    flat = np.ravel(values)
    text = ", ".join(f"{v:.6g}" if isinstance(v, (float, np.floating)) else str(v)
                     for v in flat[:limit].tolist())
    return f"[{text}{', ...' if flat.size > limit else ''}]"


def to_numpy(name: str, value: Any, *, ndim: int | None = None, min_ndim: int | None = None,
             allow_empty: bool = False) -> np.ndarray:
    """Converts an argument to a float64 NumPy array and checks its rank.

    Args:
        name: Argument name used in error messages.
        value: Scalar, sequence or array.
        ndim: Exact rank required, if given.
        min_ndim: Minimum rank required, if given.
        allow_empty: Whether a zero-size array is accepted.

    Returns:
        The value as a float64 ``np.ndarray``.

    Raises:
        DomainError: If the value is not numeric.
        ShapeMismatchError: If the rank is wrong, the input is ragged, or it is empty.
    """
    if isinstance(value, jax.core.Tracer):
        raise PHMInputError(
            f"{name} is a JAX tracer: public kernels validate concrete values eagerly. Call the "
            "matching `*_core` function inside jit/vmap instead.")
    try:
        arr = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        if isinstance(value, (list, tuple)):
            raise ShapeMismatchError(
                f"{name} must be a rectangular numeric array; got a ragged or non-numeric "
                f"sequence ({exc}). Pass equal-length lists of numbers.") from None
        raise DomainError(f"{name} must be numeric; got {value!r}.") from None
    if ndim is not None and arr.ndim != ndim:
        raise ShapeMismatchError(
            f"{name} must have rank {ndim}; got shape {arr.shape}. "
            + ("Pass a scalar." if ndim == 0 else f"Pass a {ndim}-D array."))
    if min_ndim is not None and arr.ndim < min_ndim:
        raise ShapeMismatchError(
            f"{name} must have rank >= {min_ndim}; got shape {arr.shape}.")
    if not allow_empty and arr.size == 0:
        raise ShapeMismatchError(f"{name} is empty; pass at least one value.")
    return arr


def require_finite(name: str, arr: np.ndarray) -> None:
    """Raises NonFiniteInputError if ``arr`` holds NaN or inf."""
    bad = ~np.isfinite(arr)
    if np.any(bad):
        idx = np.argwhere(bad)[0]
        where = f" at index {tuple(int(i) for i in idx)}" if arr.ndim else ""
        raise NonFiniteInputError(
            f"{name} must be finite; found {np.ravel(arr[bad])[0]}{where}. Drop or impute "
            "missing values before calling the kernel.")


def require_range(name: str, arr: np.ndarray, *, lo: float | None = None,
                  hi: float | None = None, lo_open: bool = False, hi_open: bool = False,
                  hint: str = "") -> None:
    """Raises DomainError unless every element lies in the given interval."""
    bad = np.zeros(arr.shape, dtype=bool)
    if lo is not None:
        bad |= (arr <= lo) if lo_open else (arr < lo)
    if hi is not None:
        bad |= (arr >= hi) if hi_open else (arr > hi)
    if np.any(bad):
        left = "(" if lo_open else "["
        right = ")" if hi_open else "]"
        lo_s = "-inf" if lo is None else f"{lo:g}"
        hi_s = "+inf" if hi is None else f"{hi:g}"
        raise DomainError(
            f"{name} must lie in {left}{lo_s}, {hi_s}{right}; got {_show(arr[bad])}."
            + (f" {hint}" if hint else ""))


def finite_arrays(values: Mapping[str, Any], **bounds: Any) -> dict[str, np.ndarray]:
    """Converts named arguments with :func:`to_numpy` and checks each is finite (and in range).

    Args:
        values: Argument name -> value.
        **bounds: If given, :func:`require_range` keywords (``lo``, ``hi``, ``lo_open``, ...)
            applied to every argument.

    Returns:
        Argument name -> float64 array, in the given order.

    Raises:
        NonFiniteInputError: NaN or inf. DomainError: a value outside ``bounds``.
    """
    arrays = {name: to_numpy(name, value) for name, value in values.items()}
    for name, arr in arrays.items():
        require_finite(name, arr)
        if bounds:
            require_range(name, arr, **bounds)
    return arrays


def require_integer_valued(name: str, arr: np.ndarray) -> None:
    """Raises DomainError if any element is not a whole number."""
    bad = arr != np.round(arr)
    if np.any(bad):
        raise DomainError(f"{name} must hold whole numbers; got {_show(arr[bad])}.")


def require_same_shape(**arrays: np.ndarray) -> None:
    """Raises ShapeMismatchError unless all arrays share one shape."""
    shapes = {k: v.shape for k, v in arrays.items()}
    if len(set(shapes.values())) > 1:
        text = ", ".join(f"{k}{s}" for k, s in shapes.items())
        raise ShapeMismatchError(f"these arrays must have the same shape: {text}.")


def require_broadcastable(**arrays: np.ndarray) -> tuple[int, ...]:
    """Raises ShapeMismatchError unless the arrays broadcast together; returns the shape."""
    try:
        return np.broadcast_shapes(*(a.shape for a in arrays.values()))
    except ValueError:
        text = ", ".join(f"{k}{v.shape}" for k, v in arrays.items())
        raise ShapeMismatchError(f"these arrays do not broadcast together: {text}.") from None


def require_min_length(name: str, arr: np.ndarray, minimum: int, *, axis: int = -1,
                       why: str = "") -> None:
    """Raises InsufficientDataError if ``arr.shape[axis] < minimum``."""
    if arr.ndim == 0 or arr.shape[axis] < minimum:
        got = 0 if arr.ndim == 0 else arr.shape[axis]
        raise InsufficientDataError(
            f"{name} needs at least {minimum} points along axis {axis}; got {got}."
            + (f" {why}" if why else ""))


def require_increasing(name: str, arr: np.ndarray) -> None:
    """Raises DomainError unless ``arr`` strictly increases along its last axis."""
    if arr.shape[-1] > 1 and np.any(np.diff(arr, axis=-1) <= 0):
        pos = int(np.argwhere(np.diff(arr, axis=-1) <= 0)[0][-1])
        raise DomainError(
            f"{name} must be strictly increasing; it does not increase at position {pos + 1} "
            f"({arr[..., pos].ravel()[0]:g} -> {arr[..., pos + 1].ravel()[0]:g}). Sort by time "
            "and drop duplicate time stamps.")


def option_index(name: str, value: Any, options: Sequence[str]) -> int:
    """Maps an option label (case-insensitive) or a valid int code to its int code.

    Raises:
        UnknownOptionError: If the value is not one of ``options`` (or a valid code).
    """
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        if 0 <= int(value) < len(options):
            return int(value)
    elif isinstance(value, str):
        lowered = [o.lower() for o in options]
        if value.strip().lower() in lowered:
            return lowered.index(value.strip().lower())
    raise UnknownOptionError(
        f"{name}={value!r} is not a valid option; choose one of {list(options)} "
        f"(or an int code 0..{len(options) - 1}).")


def option_codes(name: str, values: Any, options: Sequence[str]) -> np.ndarray:
    """Maps a scalar or sequence of option labels/int codes to an int32 code array."""
    if isinstance(values, (str, int, np.integer)):
        return np.asarray(option_index(name, values, options), dtype=np.int32)
    arr = np.asarray(values)
    if arr.size == 0:
        raise ShapeMismatchError(f"{name} is empty; pass at least one value.")
    if arr.dtype.kind in "iu":
        codes = arr.astype(np.int64)
        bad = (codes < 0) | (codes >= len(options))
        if np.any(bad):
            raise UnknownOptionError(
                f"{name} has invalid codes {_show(codes[bad])}; valid codes are "
                f"0..{len(options) - 1} for {list(options)}.")
        return codes.astype(np.int32)
    flat = [option_index(name, v.item() if hasattr(v, "item") else v, options)
            for v in np.ravel(arr)]
    return np.asarray(flat, dtype=np.int32).reshape(arr.shape)


def require_static_choice(name: str, value: Any, options: Sequence[str]) -> str:
    """Returns the canonical spelling of a static string option or raises UnknownOptionError."""
    return options[option_index(name, value, options)] if isinstance(value, str) else \
        _raise_unknown(name, value, options)


def _raise_unknown(name: str, value: Any, options: Sequence[str]) -> str:
    raise UnknownOptionError(f"{name}={value!r} is not a valid option; choose one of "
                             f"{list(options)}.")
