"""sfbench-jax: fast, exact SensorFault-Bench in JAX.

`import sfbench_jax as sfb` is cheap (it imports no JAX): the Python front door's names (`sfb.evaluate`, `sfb.train`,
`sfb.load_runs`, `sfb.Result`, `sfb.TrainedModel`, `sfb.EvalConfig`, `sfb.TrainConfig`; docs/python_api.md) come from
`sfbench_jax.api` at their first use. The verbs are the front door's; the engine's packages are nouns
(`sfbench_jax.evaluation`, `sfbench_jax.training`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sfbench_jax.api import EvalConfig, Result, TrainConfig, TrainedModel, evaluate, load_runs, train

__all__ = ["EvalConfig", "Result", "TrainConfig", "TrainedModel", "evaluate", "load_runs", "train"]


def __getattr__(name: str) -> Any:
    """The front door's names, imported from `sfbench_jax.api` when first used (PEP 562)."""
    if name not in __all__:
        raise AttributeError(f"module 'sfbench_jax' has no attribute {name!r}")
    from sfbench_jax import api

    return getattr(api, name)


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
