"""The library's public API, one door for everything above the benchmark (the MCP server, the agent evaluator,
notebooks): JSON-friendly views of the registries and of stored runs (`views.py`)."""

from sfbench_jax.api.views import (
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

__all__ = [
    "curves_summary",
    "find_stored_run",
    "list_datasets",
    "list_methods",
    "list_models",
    "list_scenarios",
    "seasonal_naive_curves",
    "seasonal_naive_robustness",
    "stored_run_curves",
]
