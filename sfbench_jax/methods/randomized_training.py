"""Randomized training: a train-kind method whose step fits batches with relative Gaussian noise
(`training.RandomizedTraining`). Its recipe grid is `conf/method/randomized_training.yaml`."""

from __future__ import annotations

from sfbench_jax.methods import recipe_bounds as bounds
from sfbench_jax.methods import training
from sfbench_jax.methods.spec import MethodSpec, Recipe


def variant_id(recipe: Recipe) -> str:
    """E.g. "rt_spaceraw_std0.1_channelscontinuous"."""
    return f"rt_spaceraw_std{recipe['sigma']}_channelscontinuous"


SPEC = MethodSpec("randomized_training", "train", "Rand. Train", variant_id, transform=training.randomized_training,
                  bounds=bounds.RANDOMIZED_TRAINING, display_rank=3)
