"""Robustness-improvement methods (spec 4) by name: the registry `METHODS` with each method's kind
(plain training, train-time transform, post-hoc wrapper) and where it applies. The method
implementations themselves arrive here one module per method."""

from sfbench_jax.methods.registry import METHODS, MethodSpec, get_method

__all__ = ["METHODS", "MethodSpec", "get_method"]
