"""Training-side seeds (protocol 1.6): the model seed and the tuning seed of a (dataset, architecture,
method) search, and the typed JAX keys derived from them.

Only derivations live here (text keys hashed by `derive_seed`); the data seeds are the data layer's.
"""

from __future__ import annotations

import jax

from sfbench_jax.data.registry import DatasetSpec
from sfbench_jax.data.seeds import MASTER_SEED, derive_seed

#: The reference's class names of the built-in architectures; they enter the seed keys (a plug-in: its name).
ARCHITECTURE_NAMES: dict[str, str] = {
    "dlinear": "DLinear", "gru": "GRU", "moderntcn": "ModernTCN", "patchtst": "PatchTST",
    "tsmixer": "TSMixer", "seasonal_naive": "SeasonalNaive",
    "chronos2": "Chronos2", "external": "External",  # host models: no weights to train, the seeds name them only
}

#: Pipeline identity of the baseline (reference `configs/pipelines/baseline.yaml`).
BASELINE_PIPELINE = ("baseline", "baseline", "train")  # (pipeline_id, pipeline_method, pipeline_kind)

#: Key streams folded into a candidate's base key `key(model_seed)`; 0 / 1 are the parameter and
#: dropout streams of `models.registry.model_rngs`.
DROPOUT_STREAM = 1


def reference_architecture(architecture: str) -> str:
    """The name an architecture enters the seed keys with: the reference's class name of a built-in (e.g.
    "dlinear" -> "DLinear"), the registry name of any other (a plug-in's; the registry has checked it)."""
    return ARCHITECTURE_NAMES.get(architecture, architecture)


def model_seed(spec: DatasetSpec, architecture: str, *, pipeline_id: str = "baseline",
               method: str = "baseline", kind: str = "train", master_seed: int = MASTER_SEED) -> int:
    """`derive_seed(master, "model:{dataset}:{arch}:{pipeline_id}:{method}:{kind}")`.

    It does not depend on hyperparameters: all baseline candidates of one architecture share it.
    """
    key = f"model:{spec.reference_key}:{reference_architecture(architecture)}:{pipeline_id}:{method}:{kind}"
    return derive_seed(master_seed, key)


def tuning_seed(spec: DatasetSpec, architecture: str, *, method: str = "baseline", kind: str = "train",
                master_seed: int = MASTER_SEED) -> int:
    """`derive_seed(master, "tuning:{dataset}:{arch}:{signature}:{method}:{kind}:random_subgrid")`."""
    key = (f"tuning:{spec.reference_key}:{reference_architecture(architecture)}:{spec.signature}:"
           f"{method}:{kind}:random_subgrid")
    return derive_seed(master_seed, key)


def shuffle_key(data_seed: int) -> jax.Array:
    """Base key of the training-window shuffling (the data seed, as the reference's loader).

    Epoch `e` draws its permutation from `fold_in(shuffle_key, e)`, the same for every candidate.
    """
    return jax.random.key(data_seed)


def dropout_key(seed: int) -> jax.Array:
    """Base key of a candidate's dropout masks: `fold_in(key(seed), 1)`, the stream `build_model`
    seeds. Epoch `e`, step `t` use `fold_in(fold_in(dropout_key, e), t)`."""
    return jax.random.fold_in(jax.random.key(seed), DROPOUT_STREAM)
