"""The library's public API, one door for everything above the benchmark (the MCP server, the agent evaluator,
notebooks). The agent side (`mcp/`, `agent_eval/`) imports the benchmark only from here.

What lives here: the table `_EXPORTS` of every public name and the submodule that defines or re-exports it; a name
is imported on first use (PEP 562 `__getattr__`), so importing a light submodule, or this package, imports neither
JAX nor the pipeline. The submodules: `views` (JSON-friendly views of the registries and of stored runs), `runs`
(stored runs as a tool reads them: finding them, the rebuild policy, their errors), `abandon` (an evaluation its
caller gave up on stops at its next chunk), `html_page` (the HTML page kit), and the Python front door that
`import sfbench_jax as sfb` exposes (docs/python_api.md): `scoring` (`evaluate`, `train`, `TrainedModel`, and the
`EvalConfig` / `TrainConfig` they take), `results` (`Result`, `load_runs`), `user_models` (a user's predict function or
NNX module, checked). To add a name: define or re-export it in a
submodule, add it to `_EXPORTS`, `__all__` and the `TYPE_CHECKING` imports below (the type checker reads those).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sfbench_jax.api.abandon import EvaluationAbandoned, abandonable
    from sfbench_jax.api.results import Result, load_runs
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
    from sfbench_jax.api.scoring import EvalConfig, TrainConfig, TrainedModel, evaluate, train
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
    # the Python front door (`import sfbench_jax as sfb`)
    "EvalConfig": "scoring",
    "TrainConfig": "scoring",
    "TrainedModel": "scoring",
    "evaluate": "scoring",
    "train": "scoring",
    "Result": "results",
    "load_runs": "results",
}

__all__ = [  # the names of `_EXPORTS` (a test checks that they agree)
    "ANCHOR_MODEL",
    "DamagedRunError",
    "EvalConfig",
    "EvaluationAbandoned",
    "FoundRuns",
    "NotStoredError",
    "RebuildPolicy",
    "Result",
    "RunInProgressError",
    "TrainConfig",
    "TrainedModel",
    "UntrustedRunError",
    "abandonable",
    "check_manifest",
    "curves_summary",
    "evaluate",
    "find_runs",
    "find_stored_run",
    "list_datasets",
    "list_methods",
    "list_models",
    "list_scenarios",
    "load_runs",
    "seasonal_naive_curves",
    "seasonal_naive_robustness",
    "stored_run_curves",
    "train",
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
