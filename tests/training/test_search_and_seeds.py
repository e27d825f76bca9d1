"""Random-subgrid search (protocol 5.3) and training seeds (protocol 1.6), checked against the stdlib and
hashlib written out here, not against the code under test."""

from __future__ import annotations

import hashlib
import itertools
import random

import pytest

from sfbench_jax.data.registry import DATASETS
from sfbench_jax.models.registry import MODELS, expand_grid
from sfbench_jax.training.search import expand_space, random_subgrid, search_space
from sfbench_jax.training.training_seeds import model_seed, tuning_seed

ETTH1_SIGNATURE = "4a82efae1ffe76a156a2bf948861e2da349ef1c1c994d9f24654525f47fbf14d"


def _derive(base: int, key: str) -> int:
    return (base + int(hashlib.sha256(key.encode()).hexdigest()[:8], 16)) % (2**31 - 1)


@pytest.mark.parametrize(("architecture", "count"), [("dlinear", 84), ("gru", 72), ("moderntcn", 192),
                                                      ("patchtst", 384), ("tsmixer", 324)])
def test_expansion_matches_registry_order_and_counts(architecture: str, count: int) -> None:
    combos = expand_space(MODELS[architecture], search_space(MODELS[architecture]), input_len=96)
    assert len(combos) == count
    assert combos == expand_grid(architecture, input_len=96)
    keys = list(MODELS[architecture].grid)
    assert all(list(combo) == keys for combo in combos)


def test_seeds_follow_the_spec_strings() -> None:
    spec = DATASETS["etth1"]
    assert spec.signature == ETTH1_SIGNATURE
    assert model_seed(spec, "dlinear") == _derive(42, "model:ETTh1:DLinear:baseline:baseline:train")
    assert tuning_seed(spec, "patchtst") == _derive(
        42, f"tuning:ETTh1:PatchTST:{ETTH1_SIGNATURE}:baseline:train:random_subgrid")
    beijing = DATASETS["beijing_air_tiantan"]
    assert model_seed(beijing, "gru") == _derive(42, "model:BeijingAir_Tiantan:GRU:baseline:baseline:train")
    # the model seed does not depend on hyperparameters; another master seed gives another replicate
    assert model_seed(spec, "dlinear", master_seed=7) == _derive(7, "model:ETTh1:DLinear:baseline:baseline:train")


@pytest.mark.parametrize("architecture", ["dlinear", "gru", "tsmixer"])
def test_random_subgrid_is_pythons_shuffle(architecture: str) -> None:
    spec = DATASETS["etth1"]
    seed = _derive(42, f"tuning:ETTh1:{MODELS[architecture].config_cls.__name__[:-6]}:{ETTH1_SIGNATURE}:"
                       "baseline:train:random_subgrid")
    assert seed == tuning_seed(spec, architecture)
    combos = expand_grid(architecture)
    indices = list(range(len(combos)))
    random.Random(seed).shuffle(indices)
    candidates = random_subgrid(combos, tuning_seed=seed, budget=40)
    assert [c.grid_index for c in candidates] == indices[:40]
    assert [c.trial_number for c in candidates] == list(range(1, 41))
    assert all(c.hparams == combos[i] for c, i in zip(candidates, indices[:40], strict=True))


def test_budget_is_capped_by_the_valid_count() -> None:
    combos = [{"lr": 0.1}, {"lr": 0.2}, {"lr": 0.3}]
    assert len(random_subgrid(combos, tuning_seed=5, budget=40)) == 3
    with pytest.raises(ValueError, match="budget must be >= 1"):
        random_subgrid(combos, tuning_seed=5, budget=0)


def test_pinned_hyperparameters_restrict_the_space() -> None:
    space = search_space(MODELS["gru"], fixed={"n_layers": 2, "lr": 0.001})
    combos = expand_space(MODELS["gru"], space, input_len=96)
    expected = [dict(zip(space, values, strict=True)) for values in itertools.product(*space.values())]
    assert combos == expected  # with two layers every dropout is valid
    assert len(combos) == 4 * 2 * 2 and {c["lr"] for c in combos} == {0.001}
    # one layer: dropout 0.1 is removed before sampling
    one_layer = expand_space(MODELS["gru"], search_space(MODELS["gru"], fixed={"n_layers": 1}), input_len=96)
    assert all(c["dropout"] == 0.0 for c in one_layer) and len(one_layer) == 4 * 2 * 3


@pytest.mark.parametrize(("grid", "fixed", "message"), [
    (None, {"d_hiden": 64}, r"Unknown hyperparameter\(s\) \['d_hiden'\] in model.hparams for 'gru'"),
    ({"d_hidden": [64]}, None, "has no learning rate"),
    ({"d_hidden": [], "lr": [0.001]}, None, r"empty value lists for \['d_hidden'\]"),
])
def test_search_space_errors(grid: dict | None, fixed: dict | None, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        search_space(MODELS["gru"], grid, fixed)
