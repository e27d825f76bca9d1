"""The library's public API, one door for everything above the benchmark (the MCP server, the agent evaluator,
notebooks). The agent side (`mcp/`, `agent_eval/`) imports the benchmark only from here.

What lives here: the table `_EXPORTS` of every public name and the submodule that defines or re-exports it; a name
is imported on first use (PEP 562 `__getattr__`), so importing a light submodule, or this package, imports neither
JAX nor the pipeline. The submodules: `views` (JSON-friendly views of the registries and of stored runs), `runs`
(stored runs as a tool reads them: finding them, the rebuild policy, their errors), `abandon` (an evaluation its
caller gave up on stops at its next chunk), `files` (atomic file writes). To add a name: define or re-export it in a
submodule, add it to `_EXPORTS`, `__all__` and the `TYPE_CHECKING` imports below (the type checker reads those).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sfbench_jax.api.abandon import EvaluationAbandoned, abandonable
    from sfbench_jax.api.files import write_text
    from sfbench_jax.api.runs import (
        DamagedRunError,
        FoundRuns,
        NotStoredError,
        RebuildPolicy,
        RunInProgressError,
        UntrustedRunError,
        check_manifest,
        find_runs,
    )
    from sfbench_jax.api.views import (
        ANCHOR_MODEL,
        curves_summary,
        find_stored_run,
        list_datasets,
        list_methods,
        list_models,
        list_scenarios,
        seasonal_naive_curves,
        seasonal_naive_robustness,
        stored_run_curves,
    )

#: Public name -> the submodule of this package it is imported from on first use.
_EXPORTS: dict[str, str] = {
    # views: the registries and stored runs as JSON-friendly values (imports JAX and the pipeline)
    "ANCHOR_MODEL": "views",
    "curves_summary": "views",
    "find_stored_run": "views",
    "list_datasets": "views",
    "list_methods": "views",
    "list_models": "views",
    "list_scenarios": "views",
    "seasonal_naive_curves": "views",
    "seasonal_naive_robustness": "views",
    "stored_run_curves": "views",
    # runs: stored runs as a tool finds, checks and reads them
    "DamagedRunError": "runs",
    "FoundRuns": "runs",
    "NotStoredError": "runs",
    "RebuildPolicy": "runs",
    "RunInProgressError": "runs",
    "UntrustedRunError": "runs",
    "check_manifest": "runs",
    "find_runs": "runs",
    # abandon: a caller's time budget
    "EvaluationAbandoned": "abandon",
    "abandonable": "abandon",
    # files
    "write_text": "files",
}

__all__ = [  # the names of `_EXPORTS` (a test checks that they agree)
    "ANCHOR_MODEL",
    "DamagedRunError",
    "EvaluationAbandoned",
    "FoundRuns",
    "NotStoredError",
    "RebuildPolicy",
    "RunInProgressError",
    "UntrustedRunError",
    "abandonable",
    "check_manifest",
    "curves_summary",
    "find_runs",
    "find_stored_run",
    "list_datasets",
    "list_methods",
    "list_models",
    "list_scenarios",
    "seasonal_naive_curves",
    "seasonal_naive_robustness",
    "stored_run_curves",
    "write_text",
]


def __getattr__(name: str) -> Any:
    """The public `name`, imported from its submodule on first use (and kept here afterwards)."""
    try:
        submodule = _EXPORTS[name]
    except KeyError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
    value = getattr(importlib.import_module(f"{__name__}.{submodule}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_EXPORTS})
