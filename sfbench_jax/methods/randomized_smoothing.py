"""Randomized smoothing: a wrap-kind method averaging the baseline winner over noisy copies of each input
(`wrappers.SMOOTHING`). Its recipe grid is `conf/method/randomized_smoothing.yaml`."""

from __future__ import annotations

from sfbench_jax.methods import recipe_bounds as bounds
from sfbench_jax.methods.spec import MethodSpec, Recipe
from sfbench_jax.methods.wrappers import SMOOTHING


def variant_id(recipe: Recipe) -> str:
    """E.g. "rs_backbonebaseline_std0.25_samples10_alpha0.25"."""
    return f"rs_backbonebaseline_std{recipe['sigma']}_samples{recipe['samples']}_alpha{recipe['alpha']}"


SPEC = MethodSpec("randomized_smoothing", "wrap", "Rand. Smooth", variant_id, wrapper=SMOOTHING,
                  bounds=bounds.RANDOMIZED_SMOOTHING, check=bounds.check_smoothing, display_rank=4)
