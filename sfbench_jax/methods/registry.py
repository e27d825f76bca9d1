"""Registry of robustness methods by name (spec 4).

What lives here: `MethodSpec` (name, kind) and `METHODS`. A method of kind "baseline" trains the
architecture plainly; "train" methods change the training step; "wrap" methods wrap stored
predictors. Only the baseline is registered in this build.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class MethodSpec:
    """One robustness method.

    Attributes:
        name: registry key (the `method` column of the results).
        kind: "baseline", "train" or "wrap".
    """

    name: str
    kind: str


METHODS: dict[str, MethodSpec] = {"baseline": MethodSpec(name="baseline", kind="baseline")}


def get_method(name: str) -> MethodSpec:
    """Look up a method; unknown names raise a ValueError listing the valid ones."""
    if name not in METHODS:
        raise ValueError(f"Unknown or unsupported method {name!r}. Valid methods: {', '.join(METHODS)}.")
    return METHODS[name]
