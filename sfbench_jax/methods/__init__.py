"""Robustness-improvement methods (protocol 4): the spec type (`spec`: `MethodSpec`), one module per built-in method
holding its `SPEC` (`baseline`, `adversarial_training`, `ensemble`, ...), the registry (`registry`: the built-in
specs, collected from this package, and the plug-ins), the train-time transforms that act inside the compiled
training step (`training`: PGD, randomized training, fault augmentation, the adaptive robust loss; RevIN wraps the
model), the adaptive loss itself (`barron_nll`) and the post-hoc predict-function wrappers (`wrappers`: ensemble,
randomized smoothing). The training loop and the selection live elsewhere (`train`, `selection`)."""

from sfbench_jax.methods.registry import (
    METHODS,
    InapplicableMethodError,
    applicable_architectures,
    check_method,
    get_method,
    method_grid,
)
from sfbench_jax.methods.spec import MethodSpec
from sfbench_jax.methods.wrappers import check_trimming

__all__ = ["METHODS", "InapplicableMethodError", "MethodSpec", "applicable_architectures", "check_method",
           "check_trimming", "get_method", "method_grid"]
