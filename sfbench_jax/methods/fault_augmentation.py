"""Fault augmentation: a train-kind method whose step fits batches with the training-only transfer faults of one
profile mixed in (`training.FaultAugmentation`). Its recipe grid is `conf/method/fault_augmentation.yaml`."""

from __future__ import annotations

from sfbench_jax.methods import recipe_bounds as bounds
from sfbench_jax.methods import training
from sfbench_jax.methods.spec import MethodSpec, Recipe


def variant_id(recipe: Recipe) -> str:
    """E.g. "fa_profholdout_simple_mix0.75_sev0.75_frac0.1"."""
    return f"fa_prof{recipe['profile']}_mix{recipe['p']}_sev{recipe['s_max']}_frac{recipe['frac_max']}"


SPEC = MethodSpec("fault_augmentation", "train", "Fault Aug.", variant_id, transform=training.fault_augmentation,
                  bounds=bounds.FAULT_AUGMENTATION, display_rank=7)
