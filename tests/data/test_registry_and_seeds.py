"""Dataset contracts, split arithmetic and seed derivation against the spec's tables (1.1, 1.3, 1.6)."""

from __future__ import annotations

import pytest

from sfbench_jax.data import DATASETS, get_dataset, split_bounds
from sfbench_jax.data.seeds import bootstrap_seed, derive_seed

SPLITS = {  # dataset: (rows, tr, va, starts train/val/test)  -- spec table 1.3
    "beijing_air_tiantan": (24_038, 14_422, 19_230, (14_321, 4_707, 4_707)),
    "penmanshiel_wt08": (25_867, 15_520, 20_693, (15_419, 5_072, 5_073)),
    "etth1": (17_420, 10_452, 13_936, (10_261, 3_293, 3_293)),
    "traffic": (17_544, 10_526, 14_035, (10_335, 3_318, 3_318)),
}

SEEDS = {  # spec table 1.6: signature, data seed, eval seed, CI bootstrap seed
    "beijing_air_tiantan": ("4c5e0908fb1a9097c1bed37a3c29e849947e6fbd5828b63bc6ba2909525a5089", 1806770612,
                            1292018777, 488756983),
    "penmanshiel_wt08": ("d379114cd53cbbe062e0e09b673d66d5a6d103c8d25daba8f040e64926c0f2d0", 1515776824,
                         323808572, 197763195),
    "etth1": ("4a82efae1ffe76a156a2bf948861e2da349ef1c1c994d9f24654525f47fbf14d", 341970080, 1939109219,
              1171440098),
    "traffic": ("41f9af6ab1b86f6fe5ef4323c149934cbaf2f1c6c4b6bb60ffda29c7857cf618", 74851880, 1926766268,
                904321898),
}


@pytest.mark.parametrize("key", sorted(SPLITS))
def test_split_arithmetic(key: str) -> None:
    rows, train_end, val_end, starts = SPLITS[key]
    spec = get_dataset(key)
    bounds = split_bounds(rows, input_len=spec.input_len, horizon=spec.horizon)
    assert (bounds.train_end, bounds.val_end) == (train_end, val_end)
    assert tuple(bounds.num_starts(split) for split in ("train", "val", "test")) == starts


@pytest.mark.parametrize("key", sorted(SEEDS))
def test_signatures_and_seeds(key: str) -> None:
    signature, data_seed, eval_seed, ci_seed = SEEDS[key]
    spec = get_dataset(key)
    assert spec.signature == signature
    assert (spec.seeds.data_seed, spec.seeds.noise_seed) == (data_seed, eval_seed)
    assert bootstrap_seed(spec.seeds.canonical_eval_seed) == ci_seed


def test_sensitivity_bootstrap_seeds() -> None:
    assert [bootstrap_seed(seed) for seed in range(4)] == [829470018, 829470019, 829470020, 829470021]
    assert derive_seed(42, "") == (42 + int("e3b0c442", 16)) % (2**31 - 1)


@pytest.mark.parametrize(("key", "channels", "pool", "targets", "horizon", "batch"), [
    ("beijing_air_tiantan", 12, 11, (0,), 6, 64),
    ("penmanshiel_wt08", 65, 65, (21,), 6, 64),
    ("etth1", 7, 7, tuple(range(7)), 96, 16),
    ("traffic", 862, 862, tuple(range(862)), 96, 16),
    ("traffic_synthetic", 862, 862, tuple(range(862)), 96, 16),
    ("penmanshiel_synthetic", 65, 65, (21,), 6, 64),
])
def test_dataset_contracts(key, channels, pool, targets, horizon, batch) -> None:
    spec = DATASETS[key]
    assert spec.num_channels == channels and len(spec.continuous_pool) == pool
    assert spec.target_indices == targets and spec.horizon == horizon and spec.batch_size == batch
    assert spec.input_len == 96


def test_channel_orders() -> None:
    beijing = DATASETS["beijing_air_tiantan"]
    assert beijing.channels[0] == "PM2.5" and beijing.channels[-1] == "wd"
    assert beijing.continuous_pool == tuple(range(11))
    penmanshiel = DATASETS["penmanshiel_wt08"]
    assert penmanshiel.channels[21] == "Power (kW)" and penmanshiel.channels[-1] == "Drive train acceleration (mm/ss)"
    assert DATASETS["traffic"].channels[:2] == ("0", "1") and DATASETS["traffic"].channels[-1] == "OT"


def test_unknown_dataset_lists_valid_names() -> None:
    with pytest.raises(ValueError, match="Unknown dataset 'ettm1'.*beijing_air_tiantan.*etth1.*traffic"):
        get_dataset("ettm1")
