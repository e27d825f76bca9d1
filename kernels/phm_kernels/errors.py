"""Exception hierarchy for PHM kernel input errors.

Every public kernel validates its inputs eagerly (outside ``jax.jit``) and raises one of these.
All of them derive from :class:`PHMInputError`, itself a :class:`ValueError`, so callers (the MCP
adapter in particular) can catch the root and show ``str(exc)`` to the user: each message names
the argument, the bad value and how to fix it. Nothing here imports JAX.
"""

from __future__ import annotations

__all__ = [
    "DomainError",
    "InsufficientDataError",
    "NonFiniteInputError",
    "PHMInputError",
    "ShapeMismatchError",
    "UnknownOptionError",
]


class PHMInputError(ValueError):
    """Root of all kernel input errors (bad arguments or malformed data files)."""


class ShapeMismatchError(PHMInputError):
    """Arrays that must align differ in length or rank, or an array is empty."""


class NonFiniteInputError(PHMInputError):
    """NaN or +/-inf found where finite values are required."""


class DomainError(PHMInputError):
    """A value lies outside its physical or defined domain (negative speed, p > 1, ...)."""


class UnknownOptionError(PHMInputError):
    """An enum-like argument is not one of its allowed values."""


class InsufficientDataError(PHMInputError):
    """Too few points for a fit or a statistical test."""
