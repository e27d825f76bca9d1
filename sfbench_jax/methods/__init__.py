"""Robustness-improvement methods (spec 4): the registry (`registry`: kind, recipe grid, variant ids,
applicability), the train-time transforms that act inside the compiled training step (`training`: PGD,
randomized training, fault augmentation, the adaptive robust loss; RevIN wraps the model), the adaptive
loss itself (`adaptive_loss`) and the post-hoc predict-function wrappers (`wrappers`: ensemble,
randomized smoothing). The training loop and the selection live elsewhere (`train`, `selection`)."""

from sfbench_jax.methods.registry import (
    METHODS,
    InapplicableMethodError,
    MethodSpec,
    check_method,
    check_trimming,
    get_method,
    method_grid,
)

__all__ = ["METHODS", "InapplicableMethodError", "MethodSpec", "check_method", "check_trimming", "get_method",
           "method_grid"]
