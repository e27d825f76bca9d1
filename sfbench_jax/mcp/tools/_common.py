"""Shared pieces of the tool adapters: the result base model and scalar conversion.

What lives here: `ToolResult` (every result carries ``tool_version``, ``kernel`` and ``units``),
`scalar` / `maybe_finite` (kernel array -> JSON number), `code_label` (int code -> label from a
kernel's label tuple). What does not: tool declarations.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

__all__ = ["TOOL_VERSION", "ToolResult", "code_label", "flag", "maybe_finite", "scalar"]

TOOL_VERSION = "1"


class ToolResult(BaseModel):
    """Fields common to every tool result."""

    model_config = ConfigDict(extra="forbid")

    kernel: str = Field(description="phm_kernels function(s) that produced the numbers")
    units: dict[str, str] = Field(default_factory=dict, description="unit of each numeric field")
    tool_version: str = Field(default=TOOL_VERSION, description="adapter version")


def scalar(value: Any) -> float:
    """A finite Python float from a 0-d (or size-1) kernel output."""
    return float(np.asarray(value).reshape(-1)[0])


def maybe_finite(value: Any) -> float | None:
    """A Python float, or None when the kernel returned +/-inf or NaN (JSON has no inf)."""
    number = scalar(value)
    return number if math.isfinite(number) else None


def flag(value: Any) -> bool:
    """A Python bool from a 0-d boolean kernel output."""
    return bool(np.asarray(value).reshape(-1)[0])


def code_label(value: Any, labels: Sequence[str]) -> str:
    """The label of an int code returned by a kernel."""
    return str(labels[int(np.asarray(value).reshape(-1)[0])])
