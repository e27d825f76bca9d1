"""Run keys: every setting of a run that changes its numbers.

A run's key is its resolved configuration without the settings that never change a number (chunking, devices,
progress, folders, caches, figures, overwrite), plus the block size the engine used (it fixes the float rounding)
and the data checksum. Two folders with the same key and the same numbers are one run stored twice; the same key
with different numbers is an error naming both (`run_folder.loading.gather_runs`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import numpy as np

from sfbench_jax.faults.registry import SCENARIO_KEYS

#: Resolved settings that never change a number (dotted names in the manifest's config).
SETTINGS_WITHOUT_EFFECT = frozenset({
    "eval.chunk_size", "eval.num_devices", "eval.progress", "eval.memory_budget_mb", "eval.block_size",
    "train.group_size", "train.num_devices", "train.store_dir", "train.progress",
    "data_root", "cache_dir", "compilation_cache", "figures", "overwrite",
    "tracking.backend", "tracking.uri", "tracking.experiment",
})


def flatten(mapping: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """Nested mapping -> `{dotted.name: value}` (lists become tuples so values are hashable)."""
    flat: dict[str, Any] = {}
    for key, value in mapping.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping) and value:
            flat.update(flatten(value, f"{name}."))
        else:
            flat[name] = hashable(value)
    return flat


def hashable(value: Any) -> Any:
    """`value` with its mappings and sequences made tuples (a mapping's items sorted by name)."""
    if isinstance(value, Mapping):
        return tuple(sorted((str(k), hashable(v)) for k, v in value.items()))
    if isinstance(value, (list, tuple)):
        return tuple(hashable(v) for v in value)
    return value


def run_key(manifest: Mapping[str, Any], row: Mapping[str, Any]) -> dict[str, Any]:
    """Every setting of a run that changes its numbers, as `{name: value}`.

    The names are the summary's (`dataset`, `architecture`, `method`, `variant`, `selection_metric`,
    `eval_seed`, `rng_mode`, `k`, `channel_fraction`) followed by the remaining resolved config entries in
    dotted form (`train.master_seed`, `model.grid.lr`, ...), the engine's block size and the data checksum.
    """
    config = flatten(manifest.get("config", {}))
    key: dict[str, Any] = {
        "dataset": str(row["dataset"]), "architecture": str(row["architecture"]), "method": str(row["method"]),
        "variant": _text(row.get("variant")), "selection_metric": _text(row.get("selection_metric")),
        "eval_seed": int(row["eval_seed"]), "rng_mode": str(row["rng_mode"]), "k": int(row["k"]),
        "channel_fraction": _number(row.get("channel_fraction")),
    }
    engines = [model.get("engine", {}) for model in manifest.get("models", [])]
    key["engine.block_size"] = engines[0].get("block_size") if engines else None
    key["data.content_sha256"] = manifest.get("data", {}).get("content_sha256")
    already = {"dataset.name", "model.name", "method.name", "eval.seed", "eval.rng_mode", "eval.k",
               "eval.channel_fraction"}
    for name in sorted(config):
        if name not in SETTINGS_WITHOUT_EFFECT and name not in already:
            key[name] = config[name]
    if key.get("eval.scenarios") == SCENARIO_KEYS:  # the default (runs from before the setting existed lack it)
        del key["eval.scenarios"]
    return key


def _text(value: Any) -> str:
    return "" if value is None or (isinstance(value, float) and np.isnan(value)) else str(value)


def _number(value: Any) -> float | None:
    if value is None or value == "" or (isinstance(value, float) and np.isnan(value)):
        return None
    return float(value)


def key_identity(key: Mapping[str, Any]) -> str:
    """A stable text identity of a run key."""
    return json.dumps({name: _jsonable(value) for name, value in key.items()}, sort_keys=True)


def _jsonable(value: Any) -> Any:
    if isinstance(value, tuple):
        return [_jsonable(v) for v in value]
    if isinstance(value, (np.integer, np.floating)):
        return value.item()
    return value
