"""RevIN: a train-kind method that puts reversible instance normalisation around the model (`training.revin`
gives the `RevINConfig`); it applies to trainable architectures whose spec supports it. Its recipe grid is
`conf/method/revin.yaml`."""

from __future__ import annotations

from sfbench_jax.methods import recipe_bounds as bounds
from sfbench_jax.methods import training
from sfbench_jax.methods.spec import MethodSpec, Recipe
from sfbench_jax.models.spec import ModelSpec


def variant_id(recipe: Recipe) -> str:
    """E.g. "revin_affineTrue_eps1e-5"."""
    return f"revin_affine{bool(recipe['affine'])}_eps1e-5"


def _revin_compatible(model: ModelSpec) -> bool:
    return model.is_trainable and model.supports_revin


SPEC = MethodSpec("revin", "train", "RevIN", variant_id, applicable=_revin_compatible, model_wrapper=training.revin,
                  bounds=bounds.REVIN, display_rank=6)
