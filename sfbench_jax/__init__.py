"""sfbench-jax: fast, exact SensorFault-Bench in JAX.

`import sfbench_jax as sfb` is cheap (it imports no JAX): the Python front door's names (`sfb.evaluate`, `sfb.train`,
`sfb.load_runs`, `sfb.Result`, `sfb.TrainedModel`, `sfb.EvalConfig`, `sfb.TrainConfig`; docs/python_api.md) come from
`sfbench_jax.api` at their first use.

`sfb.evaluate` and `sfb.train` share their names with the engine's packages `sfbench_jax.evaluate` and
`sfbench_jax.train`, which Python's import system sets as attributes of this package whenever they are imported. So
those two packages are made callable (`VerbPackage`): `sfb.evaluate(...)` calls `sfbench_jax.api.scoring.evaluate`,
while `sfbench_jax.evaluate.evaluate_predictor` and every import of the packages stay what they are. Type checkers
read the functions (the `TYPE_CHECKING` imports below).
"""

from __future__ import annotations

import inspect
import sys
import types
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sfbench_jax.api import EvalConfig, Result, TrainConfig, TrainedModel, evaluate, load_runs, train

__all__ = ["EvalConfig", "Result", "TrainConfig", "TrainedModel", "evaluate", "load_runs", "train"]
#: The front door's verbs that are also the names of the engine's packages.
VERBS = ("evaluate", "train")


def _verb(name: str) -> Any:
    from sfbench_jax.api import scoring

    return getattr(scoring, name)


class VerbPackage(types.ModuleType):
    """`sfbench_jax.evaluate` / `sfbench_jax.train`: the engine's package, which called is the front door's verb of
    the same name (`sfbench_jax.api.scoring.evaluate` / `.train`, imported at the first call)."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return _verb(self.__name__.rpartition(".")[2])(*args, **kwargs)

    @property
    def __signature__(self) -> inspect.Signature:
        """The verb's signature (what `help`, IPython and `inspect.signature` show for a call)."""
        return inspect.signature(_verb(self.__name__.rpartition(".")[2]))


class _Package(types.ModuleType):
    """This package: the engine's packages named like a verb are made `VerbPackage`s as they are set on it."""

    def __setattr__(self, name: str, value: Any) -> None:
        if name in VERBS and isinstance(value, types.ModuleType) and not isinstance(value, VerbPackage):
            value.__class__ = VerbPackage
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package


def __getattr__(name: str) -> Any:
    """The front door's names, imported from `sfbench_jax.api` when first used (PEP 562)."""
    if name not in __all__:
        raise AttributeError(f"module 'sfbench_jax' has no attribute {name!r}")
    from sfbench_jax import api
    from sfbench_jax.api import scoring  # noqa: F401 - its import sets the verb packages on this package

    return globals()[name] if name in VERBS else getattr(api, name)


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
