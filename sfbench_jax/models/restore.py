"""Building an architecture for a prepared dataset and rebuilding a stored candidate from its checkpoint.

What lives here: `build_for` (the registry's `build_model` at the dataset's shape) and `restore_model` (a candidate
rebuilt with its stored weights, in eval mode). Selection, training and the stored-run tools
(`pipeline/rebuild.py`, through `pipeline.cell.winner_predictor`) all rebuild candidates here; what a method puts
around the model (RevIN) comes from the method's spec (`MethodSpec.model_wrapper`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import jax.numpy as jnp
import numpy as np
from flax import nnx

from sfbench_jax.data.prepared import PreparedData
from sfbench_jax.models.hparams import HParams
from sfbench_jax.models.registry import build_model
from sfbench_jax.models.revin import RevINConfig
from sfbench_jax.models.spec import ModelSpec


def build_for(data: PreparedData, model: ModelSpec, hparams: HParams, seed: int,
              revin: RevINConfig | None = None) -> nnx.Module:
    """The architecture `model` for this dataset's shape (train mode), wrapped in RevIN when asked."""
    spec = data.spec
    return build_model(model, dict(hparams), input_len=spec.input_len, horizon=spec.horizon,
                       num_channels=spec.num_channels, target_indices=spec.target_indices, seed=seed, revin=revin)


def _assign_flat(state: Any, flat: Mapping[str, np.ndarray], what: str) -> None:  # an nnx.State of any nesting
    pure = nnx.to_pure_dict(state)
    expected = {".".join(str(part) for part in path): path for path, _ in nnx.to_flat_state(state)}
    if set(expected) != set(flat):
        missing, extra = sorted(set(expected) - set(flat)), sorted(set(flat) - set(expected))
        raise ValueError(f"Checkpoint {what} do not match the model: missing {missing}, unexpected {extra}.")
    for name, path in expected.items():
        node: Any = pure  # a nested pure dict, indexed by the path's keys
        for part in path[:-1]:
            node = node[part]
        value = np.asarray(flat[name])
        if value.shape != np.shape(node[path[-1]]):
            raise ValueError(f"Checkpoint {what} {name!r} has shape {value.shape}, the model expects "
                             f"{np.shape(node[path[-1]])}.")
        node[path[-1]] = jnp.asarray(value)
    nnx.replace_by_pure_dict(state, pure)


def restore_model(data: PreparedData, model: ModelSpec, hparams: HParams, seed: int,
                  checkpoint: Mapping[str, Mapping[str, np.ndarray]], revin: RevINConfig | None = None) -> nnx.Module:
    """Rebuild a stored candidate from its checkpoint (`{"params": ..., "batch_stats": ...}`, flat dotted names),
    in eval mode. A model without trainable weights takes the empty checkpoint.

    Raises:
        ValueError: the checkpoint does not fit the architecture (names or shapes).
    """
    built = build_for(data, model, hparams, seed, revin)
    graphdef, params, batch_stats, other = nnx.split(  # type: ignore[misc]  # flax: a variadic result tuple
        built, nnx.Param, nnx.BatchStat, ...)
    _assign_flat(params, checkpoint["params"], "parameters")
    _assign_flat(batch_stats, checkpoint.get("batch_stats", {}), "batch statistics")
    restored: nnx.Module = nnx.merge(graphdef, params, batch_stats, other)
    restored.eval()
    return restored
