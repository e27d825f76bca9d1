"""Data layer: dataset registry, loaders and contracts, derivations, splits, standardisation, windows
and seeds. No models, no faults."""

from sfbench_jax.data.errors import ChecksumMismatchWarning, DataContractError
from sfbench_jax.data.loaders import Series, load
from sfbench_jax.data.prepared import PreparedData, prepare
from sfbench_jax.data.registry import DATASETS, DISPLAY_ORDER, DatasetSpec, get_dataset
from sfbench_jax.data.seeds import derive_seed
from sfbench_jax.data.spec import csv_dataset
from sfbench_jax.data.splits import SplitBounds, split_bounds

__all__ = [
    "DATASETS",
    "DISPLAY_ORDER",
    "ChecksumMismatchWarning",
    "DataContractError",
    "DatasetSpec",
    "PreparedData",
    "Series",
    "SplitBounds",
    "csv_dataset",
    "derive_seed",
    "get_dataset",
    "load",
    "prepare",
    "split_bounds",
]
