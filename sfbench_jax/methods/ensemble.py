"""The ensemble: a wrap-kind method combining the top-k finished baseline candidates (`wrappers.ENSEMBLE`).
Its recipe grid is `conf/method/ensemble.yaml`."""

from __future__ import annotations

from sfbench_jax.methods import recipe_bounds as bounds
from sfbench_jax.methods.spec import MethodSpec, Recipe
from sfbench_jax.methods.wrappers import ENSEMBLE


def variant_id(recipe: Recipe) -> str:
    """E.g. "ensemble_top3_mean"."""
    return f"ensemble_top{recipe['top_k']}_{recipe['combine']}"


SPEC = MethodSpec("ensemble", "wrap", "Ensemble", variant_id, wrapper=ENSEMBLE, bounds=bounds.ENSEMBLE,
                  check=bounds.check_ensemble, display_rank=2)
