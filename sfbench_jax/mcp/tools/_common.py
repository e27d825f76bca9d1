"""What every tool family shares: the tool declaration, the result base model and post-processing.

What lives here: `ToolDef` (one tool: a module-level function, its group, an optional warm-up,
whether it is an offline stub), `ToolResult` (every result carries ``tool_version``, ``kernel``
and ``units``), the shared argument type `NonNegative`, `kernel_label` (the registered names of
the kernels behind a result), the kernel-output conversions `scalar` / `maybe_finite` / `flag` /
`code_label`, and the anomaly post-processing shared by the C-MAPSS and battery detectors
(`column_anomalies`, `first_flagged`). What does not: tool declarations (the family modules) and
their registry (``tools/__init__.py``).
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Annotated, Any, NamedTuple, TypeVar

import numpy as np
from phm_kernels.registry import qualified_name
from pydantic import BaseModel, ConfigDict, Field

from sfbench_jax.mcp.datasets import DataStore

__all__ = [
    "TOOL_VERSION",
    "ColumnAnomalies",
    "NonNegative",
    "ToolDef",
    "ToolResult",
    "code_label",
    "column_anomalies",
    "first_flagged",
    "flag",
    "kernel_label",
    "maybe_finite",
    "scalar",
]

TOOL_VERSION = "1"

#: A finite, non-negative number argument (costs, rates, hours).
NonNegative = Annotated[float, Field(ge=0, allow_inf_nan=False)]


@dataclass(frozen=True)
class ToolDef:
    """One tool declaration.

    Attributes:
        fn: The module-level tool function; its typed parameters become the input schema, its
            pydantic return model the output schema, its docstring the description. A tool that
            reads data takes the server's `DataStore` as its first parameter, named ``store``;
            the server binds it, so it never appears in the schema.
        group: Server group (``prognostics``, ``maintenance``, ``battery``, ``benchmark``).
        warmup: Optional call, given the store, that compiles the kernels behind the tool.
        is_offline_stub: True for distractor tools that never do real work (e.g. web_search).
        is_exclusive: True for the costly tools (forecasting evaluations: seconds and up to a GB per call),
            which the server runs one at a time.
    """

    fn: Callable[..., Any]
    group: str
    warmup: Callable[[DataStore], object] | None = None
    is_offline_stub: bool = False
    is_exclusive: bool = False

    @property
    def name(self) -> str:
        """Tool name (the function's name)."""
        return self.fn.__name__

    @property
    def takes_store(self) -> bool:
        """Whether the function's first parameter is the data store."""
        parameters = list(inspect.signature(self.fn).parameters)
        return bool(parameters) and parameters[0] == "store"


class ToolResult(BaseModel):
    """Fields common to every tool result."""

    model_config = ConfigDict(extra="forbid")

    kernel: str = Field(description="phm_kernels function(s) that produced the numbers")
    units: dict[str, str] = Field(default_factory=dict, description="unit of each numeric field")
    tool_version: str = Field(default=TOOL_VERSION, description="adapter version")


def kernel_label(*kernels: Callable[..., Any]) -> str:
    """The ``family.name`` of each kernel behind a result, from the kernel registry.

    Args:
        *kernels: Public `phm_kernels` functions, in the order they ran.

    Returns:
        E.g. ``"trends.mann_kendall, trends.trend_fit"``.
    """
    return ", ".join(qualified_name(kernel) for kernel in kernels)


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


Label = TypeVar("Label", bound=str)


def code_label(value: Any, labels: Sequence[Label]) -> Label:
    """The label of an int code returned by a kernel (typed as the labels are: a kernel's `Literal` labels give
    the answer field's `Literal`)."""
    return labels[int(np.asarray(value).reshape(-1)[0])]


def first_flagged(flags: Any, cycles: np.ndarray) -> int | None:
    """The cycle of the first raised flag of a 1-D flag series, or None if none is raised."""
    hits = np.flatnonzero(np.asarray(flags))
    return int(cycles[hits[0]]) if hits.size else None


class ColumnAnomalies(NamedTuple):
    """Anomaly events of one column (sensor or feature) of a rolling z-score result."""

    n_events: int
    first_flagged_cycle: int | None
    n_flagged_cycles: int


def column_anomalies(result: Any, cycles: np.ndarray) -> list[ColumnAnomalies]:
    """Per-column events of a `phm_kernels.trends.MultiAnomalyResult`, in column order.

    Args:
        result: The detector's result (``flags`` of shape (time, columns), ``n_events``).
        cycles: Cycle number of each time step.

    Returns:
        One `ColumnAnomalies` per column.
    """
    flags = np.asarray(result.flags)
    n_events = np.asarray(result.n_events)
    return [ColumnAnomalies(int(n_events[j]), first_flagged(flags[:, j], cycles),
                            int(np.count_nonzero(flags[:, j])))
            for j in range(flags.shape[1])]
