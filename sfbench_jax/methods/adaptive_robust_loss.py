"""The adaptive robust loss: a train-kind method training on the adaptive NLL with its alpha and scale latents
(`training.AdaptiveRobustLoss`, the loss in `barron_nll`). Its recipe grid is
`conf/method/adaptive_robust_loss.yaml`."""

from __future__ import annotations

from sfbench_jax.methods import recipe_bounds as bounds
from sfbench_jax.methods import training
from sfbench_jax.methods.spec import MethodSpec, Recipe


def variant_id(recipe: Recipe) -> str:
    """E.g. "arl_alo0.001_ainit1.0_slo1e-05_sinit0.1"."""
    return (f"arl_alo{recipe['alpha_lo']}_ainit{recipe['alpha_init']}_slo{recipe['scale_lo']}"
            f"_sinit{recipe['scale_init']}")


SPEC = MethodSpec("adaptive_robust_loss", "train", "ARL", variant_id, transform=training.adaptive_robust_loss,
                  bounds=bounds.ADAPTIVE_ROBUST_LOSS, check=bounds.check_adaptive_pairs, display_rank=5)
