"""Registry: grids in the spec's key order, validity rules, flags, and clear errors on bad input.

Expected grids are written out from protocol 3 / 5.3 here, independently of the code.
"""

from __future__ import annotations

import dataclasses
import itertools

import jax.numpy as jnp
import pytest

from sfbench_jax.models.registry import (
    MODELS,
    build_model,
    expand_grid,
    is_valid_combination,
    make_config,
)
from sfbench_jax.models.revin import RevIN, RevINConfig

SPEC_GRIDS = {
    "dlinear": {
        "moving_avg": (9, 13, 17, 21, 25, 29, 33), "individual": (False, True),
        "init_weights": (False, True), "lr": (1e-3, 1e-4, 5e-4)},
    "gru": {
        "d_hidden": (64, 128, 256, 512), "n_layers": (1, 2), "autoregressive": (False, True),
        "dropout": (0.0, 0.1), "lr": (1e-3, 1e-4, 5e-4)},
    "moderntcn": {
        "d_model": (64, 128), "num_blocks": (1, 2), "large_size": (31, 51), "small_size": (5,),
        "ffn_ratio": (1, 4), "patch_size": (8,), "patch_stride": (4,), "dropout": (0.1, 0.3),
        "head_dropout": (0.0, 0.1), "individual": (False,), "lr": (1e-3, 5e-4, 1e-4)},
    "patchtst": {
        "d_model": (16, 128), "d_ff": (128, 256), "n_layers_enc": (2, 3), "n_heads": (4, 8),
        "patch_len": (8, 16), "stride": (4, 8), "dropout": (0.1, 0.3), "factor": (1,),
        "activation": ("gelu",), "lr": (1e-3, 5e-4, 1e-4)},
    "tsmixer": {
        "n_block": (2, 4, 8), "ff_dim": (64, 128, 256), "norm_type": ("L", "B"),
        "activation": ("relu", "gelu"), "dropout": (0.0, 0.1, 0.3), "lr": (1e-3, 5e-4, 1e-4)},
    "seasonal_naive": {"season_length": (1, 2, 3, 6, 12, 16, 24, 36, 48, 90)},
}
SPEC_COUNTS = {"dlinear": 84, "gru": 72, "moderntcn": 192, "patchtst": 384, "tsmixer": 324,
               "seasonal_naive": 10}


def _spec_invalid(name: str, c: dict) -> bool:
    if name == "gru":
        return c["dropout"] > 0 and c["n_layers"] == 1
    if name == "patchtst":
        return c["d_model"] % c["n_heads"] != 0 or c["patch_len"] > 96
    if name == "moderntcn":
        return c["small_size"] > c["large_size"] or c["patch_stride"] > c["patch_size"]
    return False


def test_registry_names() -> None:
    assert sorted(MODELS) == sorted([*SPEC_GRIDS, "chronos2", "external"])  # + the host models (no grid)
    assert expand_grid("chronos2") == expand_grid("external") == [{}]


@pytest.mark.parametrize("name", sorted(SPEC_GRIDS))
def test_grid_matches_spec_in_key_order(name: str) -> None:
    grid = MODELS[name].grid
    assert list(grid) == list(SPEC_GRIDS[name])
    assert {k: tuple(v) for k, v in grid.items()} == SPEC_GRIDS[name]


@pytest.mark.parametrize("name", sorted(SPEC_GRIDS))
def test_expand_grid_order_and_counts(name: str) -> None:
    keys = list(SPEC_GRIDS[name])
    expected = [dict(zip(keys, values, strict=True)) for values in itertools.product(*SPEC_GRIDS[name].values())]
    expected = [c for c in expected if not _spec_invalid(name, c)]
    got = expand_grid(name)
    assert len(got) == SPEC_COUNTS[name]
    assert got == expected
    assert all(list(c) == keys for c in got)


def test_gru_grid_first_entries_vary_last_key_fastest() -> None:
    grid = expand_grid("gru")
    assert grid[0] == {"d_hidden": 64, "n_layers": 1, "autoregressive": False, "dropout": 0.0,
                       "lr": 1e-3}
    assert grid[1]["lr"] == 1e-4 and grid[2]["lr"] == 5e-4
    # dropout 0.1 with one layer is dropped, so the autoregressive block follows directly.
    assert grid[3] == {"d_hidden": 64, "n_layers": 1, "autoregressive": True, "dropout": 0.0,
                       "lr": 1e-3}
    assert grid[-1] == {"d_hidden": 512, "n_layers": 2, "autoregressive": True, "dropout": 0.1,
                        "lr": 5e-4}


def test_flags() -> None:
    assert {n for n, s in MODELS.items() if s.is_trainable} == {
        "dlinear", "gru", "moderntcn", "patchtst", "tsmixer"}
    assert {n for n, s in MODELS.items() if s.is_channel_independent} == {
        "dlinear", "patchtst", "seasonal_naive"}
    assert {n for n, s in MODELS.items() if s.supports_revin} == {
        "dlinear", "gru", "moderntcn", "tsmixer"}


@pytest.mark.parametrize("name,hparams,valid", [
    ("gru", {"dropout": 0.1, "n_layers": 1}, False),
    ("gru", {"dropout": 0.1, "n_layers": 2}, True),
    ("gru", {"dropout": 0.0, "n_layers": 1}, True),
    ("patchtst", {"d_model": 16, "n_heads": 3, "patch_len": 8}, False),
    ("patchtst", {"d_model": 16, "n_heads": 8, "patch_len": 97}, False),
    ("patchtst", {"d_model": 16, "n_heads": 8, "patch_len": 96}, True),
    ("moderntcn", {"small_size": 7, "large_size": 5, "patch_size": 8, "patch_stride": 4}, False),
    ("moderntcn", {"small_size": 5, "large_size": 31, "patch_size": 4, "patch_stride": 8}, False),
    ("moderntcn", {"small_size": 5, "large_size": 5, "patch_size": 8, "patch_stride": 8}, True),
])
def test_validity_predicate(name: str, hparams: dict, valid: bool) -> None:
    assert is_valid_combination(name, hparams) is valid


def test_make_config_typed_frozen_and_ignores_lr() -> None:
    config = make_config("tsmixer", {"n_block": 4, "norm_type": "B", "lr": 1e-3})
    assert (config.n_block, config.norm_type, config.ff_dim) == (4, "B", 64)
    assert isinstance(make_config("gru", {"dropout": 0, "n_layers": 2}).dropout, float)
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.n_block = 2  # type: ignore[misc]


def _build(name: str, hparams: dict, **overrides):
    kwargs = {"input_len": 96, "horizon": 6, "num_channels": 12, "target_indices": [0], "seed": 0}
    kwargs.update(overrides)
    return build_model(name, hparams, **kwargs)


@pytest.mark.parametrize("name,hparams,message", [
    ("lstm", {}, r"Unknown model 'lstm'. Valid models: chronos2, dlinear, external, gru, moderntcn, "
                 r"patchtst, seasonal_naive, tsmixer\."),
    ("gru", {"d_hiden": 64}, r"Unknown hyperparameter\(s\) \['d_hiden'\] for 'gru'; valid: "
                             r"\['d_hidden', 'n_layers', 'autoregressive', 'dropout'\]"),
    ("gru", {"dropout": 0.1, "n_layers": 1}, r"dropout=0.1 with n_layers=1 is an invalid "
                                             r"combination"),
    ("tsmixer", {"norm_type": "X"}, r"norm_type='X' is not supported; valid values: "
                                    r"\['L', 'B'\]"),
    ("tsmixer", {"activation": "tanh"}, r"valid values: \['relu', 'gelu'\]"),
    ("patchtst", {"activation": "silu"}, r"valid values: \['gelu', 'relu'\]"),
    ("patchtst", {"d_model": 16, "n_heads": 3}, r"not divisible by n_heads=3"),
    ("dlinear", {"moving_avg": 24}, r"moving_avg must be odd"),
    ("dlinear", {"individual": "yes"}, r"individual must be a bool"),
    ("moderntcn", {"individual": True}, r"individual=True is not supported; valid values: "
                                        r"\[False\]"),
    ("moderntcn", {"small_size": 7, "large_size": 5}, r"small_size=7 > large_size=5"),
    ("moderntcn", {"patch_stride": 8, "patch_size": 4}, r"patch_stride=8 > patch_size=4"),
    ("moderntcn", {"dropout": 1.5}, r"dropout must be in \[0, 1\)"),
    ("gru", {"d_hidden": 64.0}, r"d_hidden must be an int"),
    ("seasonal_naive", {"season_length": 0}, r"season_length must be >= 1"),
])
def test_bad_hyperparameters_raise_clear_errors(name: str, hparams: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        _build(name, hparams)


@pytest.mark.parametrize("name,hparams,overrides,message", [
    ("moderntcn", {}, {"input_len": 98}, r"input_len divisible by patch_stride; got "
                                         r"input_len=98, patch_stride=4"),
    ("moderntcn", {"patch_size": 8, "patch_stride": 4}, {"input_len": 4},
     r"patch_size=8 exceeds input_len=4"),
    ("patchtst", {"patch_len": 16, "stride": 4}, {"input_len": 8}, r"gets 0 patches"),
    ("patchtst", {"patch_len": 16, "stride": 8}, {"input_len": 12},
     r"patch_len=16 > input_len=12 is an invalid combination"),
    ("dlinear", {}, {"target_indices": [12]}, r"target_indices \[12\] are outside \[0, 12\)"),
    ("gru", {}, {"target_indices": []}, r"at least one channel"),
    ("tsmixer", {}, {"target_indices": [1, 1]}, r"must not repeat"),
    ("tsmixer", {}, {"horizon": 0}, r"horizon must be a positive int"),
    ("seasonal_naive", {}, {"target_indices": [20]}, r"outside \[0, 12\)"),
])
def test_bad_dataset_shapes_raise_clear_errors(name: str, hparams: dict, overrides: dict,
                                               message: str) -> None:
    with pytest.raises(ValueError, match=message):
        _build(name, hparams, **overrides)


SMALL = {"dlinear": {}, "gru": {"d_hidden": 4}, "moderntcn": {"d_model": 4},
         "patchtst": {"d_model": 4, "n_heads": 2, "d_ff": 4}, "tsmixer": {"ff_dim": 4}}


@pytest.mark.parametrize("name", sorted(SMALL))
def test_input_shape_mismatch_is_rejected(name: str) -> None:
    model = _build(name, SMALL[name])
    with pytest.raises(ValueError, match=r"expects input of shape \(batch, 96, 12\), got "
                                         r"\(2, 95, 12\)"):
        model(jnp.zeros((2, 95, 12)))
    with pytest.raises(ValueError, match=r"got \(2, 96, 7\)"):
        model(jnp.zeros((2, 96, 7)))


def test_revin_only_where_the_spec_allows_it() -> None:
    for name in ("patchtst", "seasonal_naive"):
        with pytest.raises(ValueError, match=r"RevIN cannot wrap '.*'; it applies to "
                                             r"\['dlinear', 'gru', 'moderntcn', 'tsmixer'\]"):
            _build(name, {}, revin=RevINConfig(affine=True))
    model = _build("tsmixer", {}, revin=RevINConfig(affine=False))
    assert isinstance(model, RevIN)
    with pytest.raises(ValueError, match="affine must be a bool"):
        RevINConfig(affine=1)  # type: ignore[arg-type]


@pytest.mark.parametrize("name", sorted(SPEC_GRIDS))
def test_grid_entries_with_lr_build(name: str) -> None:
    candidate = expand_grid(name)[0]
    assert "lr" in candidate or name == "seasonal_naive"
    model = _build(name, candidate)
    assert isinstance(model, MODELS[name].module_cls)
    if name == "seasonal_naive":
        assert model(jnp.zeros((2, 96, 12))).shape == (2, 6, 1)
    else:
        architecture = {k: v for k, v in candidate.items() if k != "lr"}
        assert dataclasses.asdict(model.config) == architecture
