"""The library's public API, one door for everything above the benchmark (the MCP server, the agent evaluator,
notebooks): JSON-friendly views of the registries and of stored runs (`views.py`); the Python front door
(`scoring.py`: `evaluate`, `train`, `TrainedModel`; `results.py`: `Result`, `load_runs`; `user_models.py`: a user's
NNX module or predict function), which `import sfbench_jax as sfb` exposes (docs/python_api.md)."""

from sfbench_jax.api.results import Result, load_runs
from sfbench_jax.api.scoring import TrainedModel, evaluate, train
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
from sfbench_jax.config import EvalConfig, TrainConfig

__all__ = [
    "EvalConfig",
    "Result",
    "TrainConfig",
    "TrainedModel",
    "curves_summary",
    "evaluate",
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
