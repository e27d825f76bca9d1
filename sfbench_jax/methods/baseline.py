"""The baseline (protocol 5.3): the architecture trained plainly and selected on clean validation MSE; every method's
delta is taken against it. Its preset `conf/method/baseline.yaml` has no recipe grid."""

from __future__ import annotations

from sfbench_jax.methods.spec import MethodSpec, Recipe
from sfbench_jax.models.spec import ModelSpec


def variant_id(recipe: Recipe) -> str:
    """The one variant: "baseline"."""
    del recipe
    return "baseline"


def _every_model(model: ModelSpec) -> bool:
    del model
    return True


SPEC = MethodSpec("baseline", "baseline", "Baseline", variant_id, applicable=_every_model, display_rank=0)
