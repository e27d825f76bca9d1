"""Forecasting architectures (Flax NNX) and their registry.

Modules: `dlinear`, `gru`, `moderntcn`, `patchtst`, `tsmixer`, `seasonal_naive` (one architecture
each, with its config dataclass and grid), `revin` (the RevIN wrapper), `layers` / `hparams`
(shared blocks and validation), `registry` (lookup by name, grids, `build_model`) and `parity`
(PyTorch weight import). Training loops live in `sfbench_jax.training`, not here.
"""

from sfbench_jax.models.registry import (
    MODELS,
    build_model,
    expand_grid,
    is_valid_combination,
    make_config,
)
from sfbench_jax.models.revin import RevIN, RevINConfig
from sfbench_jax.models.spec import ModelSpec

__all__ = ["MODELS", "ModelSpec", "RevIN", "RevINConfig", "build_model", "expand_grid",
           "is_valid_combination", "make_config"]
