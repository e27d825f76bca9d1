"""Seed derivation and data-config signatures (protocol 1.6).

Every seed of the benchmark is derived from the master seed 42 and a text key, so runs are reproducible
without any global random state. Nothing here touches arrays.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass

MASTER_SEED = 42
_SEED_MODULUS = 2**31 - 1


def derive_seed(base: int, key: str) -> int:
    """Derive a child seed: `(base + int(sha256(key)[:8], 16)) mod (2**31 - 1)`."""
    digest = hashlib.sha256(key.encode("utf-8")).hexdigest()
    return (int(base) + int(digest[:8], 16)) % _SEED_MODULUS


def data_config_signature(*, reference_key: str, input_channels: tuple[str, ...],
                          target_channels: tuple[str, ...] | None, input_len: int,
                          horizon: int) -> str:
    """SHA-256 of the compact, key-sorted JSON that identifies a dataset configuration.

    Args:
        reference_key: dataset key as the reference spells it (e.g. "ETTh1").
        input_channels: input channel names (order irrelevant; they are sorted).
        target_channels: target channel names, or None when every channel is a target ("all").
        input_len: window length n.
        horizon: forecast length H.
    """
    payload = {
        "dataset": reference_key,
        "input_channels": sorted(input_channels),
        "target_channels": "all" if target_channels is None else sorted(target_channels),
        "input_len": int(input_len),
        "target_len": int(horizon),
        "train_split": 0.6,
        "val_split": 0.2,
        "strict_iid": False,
        "shuffle_batches_before_split": True,
        "purged_fraction": 0.0,
        "sampling_seed": MASTER_SEED,
    }
    text = json.dumps(payload, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class DatasetSeeds:
    """The seeds one dataset configuration derives from its signature."""

    signature: str
    data_seed: int
    noise_seed: int

    @property
    def canonical_eval_seed(self) -> int:
        """The evaluation seed (`eval.seed`, column `eval_seed`) of the published runs: the data seed (protocol
        1.6). `noise_seed` is another seed: randomized smoothing's noise and the perturbed validation."""
        return self.data_seed


def dataset_seeds(reference_key: str, signature: str) -> DatasetSeeds:
    """Data seed (`data:{key}:{sig}`) and `noise_seed` (`eval:{key}:{sig}`) of a dataset."""
    return DatasetSeeds(
        signature=signature,
        data_seed=derive_seed(MASTER_SEED, f"data:{reference_key}:{signature}"),
        noise_seed=derive_seed(MASTER_SEED, f"eval:{reference_key}:{signature}"),
    )


def bootstrap_seed(eval_seed: int) -> int:
    """Seed of the per-run bootstrap CI resampling (protocol 6.3)."""
    return derive_seed(eval_seed, "bootstrap_ci:degradation:MSE:shared_anchor_percentile")


def perturbation_seed(eval_seed: int, scenario_index: int, sample_id: int) -> int:
    """Seed of the reference's per-(scenario, sample) perturbation generator (protocol 6.2 step 3)."""
    return derive_seed(eval_seed, f"degradation:scenario:{scenario_index}:sample:{sample_id}")
