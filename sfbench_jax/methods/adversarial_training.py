"""PGD adversarial training: a train-kind method whose step fits PGD-perturbed batches (`training.AdversarialTraining`).
Its recipe grid is `conf/method/adversarial_training.yaml`."""

from __future__ import annotations

from collections.abc import Sequence

from sfbench_jax.methods import recipe_bounds as bounds
from sfbench_jax.methods import training
from sfbench_jax.methods.spec import MethodSpec, Recipe


def variant_id(recipe: Recipe) -> str:
    """E.g. "advtrain_eps0.05_steps3_alpha0.02_channelsall"."""
    return f"advtrain_eps{recipe['eps']}_steps{recipe['steps']}_alpha0.02_channelsall"


def _adaptive_loss_keys(unknown: Sequence[str]) -> str | None:
    if set(unknown) & set(bounds.ADAPTIVE_ROBUST_LOSS):
        return ("PGD adversarial training cannot be combined with the adaptive robust loss (protocol 4.4: only MSE or "
                "MAE training losses); run method=adaptive_robust_loss separately.")
    return None


SPEC = MethodSpec("adversarial_training", "train", "PGD", variant_id, transform=training.adversarial_training,
                  bounds=bounds.PGD, unknown_keys=_adaptive_loss_keys, display_rank=1,
                  trajectory_data_file="pgd_trajectory_data.csv")
