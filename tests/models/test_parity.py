"""Parity with the PyTorch reference: the 48 fixtures of the full parity folder (SFBENCH_PARITY_DIR), or the subset kept
in `tests/fixtures/parity` (its README), the other cases then skipped with the reason.

Each fixture's weights are loaded into the JAX module built from the fixture's `meta` through the
registry; the eval-mode forward (and every intermediate) runs in tree mode under plain `jax.jit`
(as the engine runs it) and is compared with the stored reference output, scale-relative:
<= 1e-5, <= 3e-6 for ModernTCN (where tanh-GELU would still pass 1e-5), exact for SeasonalNaive. Every stored `inter/*`
intermediate is compared too (window 0), which pins the layouts stage by stage.
"""

from __future__ import annotations

from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx
from parity_cases import BUNDLED_PARITY, full_parity_dir, parity_case

from sfbench_jax.models.dlinear import DLinear
from sfbench_jax.models.gru import GRU
from sfbench_jax.models.moderntcn import ModernTCN
from sfbench_jax.models.parity import (
    Fixture,
    load_dlinear,
    load_state,
    model_from_fixture,
    parity_error,
    read_fixture,
)
from sfbench_jax.models.patchtst import PatchTST
from sfbench_jax.models.registry import build_model
from sfbench_jax.models.revin import RevIN
from sfbench_jax.models.seasonal_naive import SeasonalNaive
from sfbench_jax.models.tsmixer import TSMixer

pytestmark = pytest.mark.parity

FIXTURES = (
    "dlinear_m7h96_ma25_ind0_iw0", "dlinear_m7h96_ma25_ind0_iw1", "dlinear_m7h96_ma25_ind1_iw0",
    "dlinear_m7h96_ma25_ind1_iw1", "dlinear_m12h6_ma25_ind0_iw0", "dlinear_m12h6_ma25_ind0_iw1",
    "dlinear_m12h6_ma25_ind1_iw0", "dlinear_m12h6_ma25_ind1_iw1",
    "gru_m7h96_direct_l1_h64", "gru_m7h96_direct_l2_h64", "gru_m7h96_ar_l1_h64",
    "gru_m7h96_ar_l2_h64", "gru_m12h6_direct_l1_h64", "gru_m12h6_direct_l2_h64",
    "gru_m12h6_ar_l1_h64", "gru_m12h6_ar_l2_h64",
    "moderntcn_m7h96_d64_b1_L31_S5_ffn1", "moderntcn_m7h96_d64_b1_L31_S5_ffn4",
    "moderntcn_m7h96_d64_b2_L31_S5_ffn1", "moderntcn_m7h96_d64_b2_L31_S5_ffn4",
    "moderntcn_m12h6_d64_b1_L51_S5_ffn1",
    "patchtst_m7h96_d16_h4_ff128_l2_p16s8", "patchtst_m7h96_d16_h4_ff128_l3_p8s4",
    "patchtst_m7h96_d128_h4_ff128_l2_p16s8", "patchtst_m7h96_d128_h4_ff128_l3_p8s4",
    "patchtst_m12h6_d16_h8_ff256_l2_p8s8",
    "tsmixer_m7h96_L_relu_nb2_ff64", "tsmixer_m7h96_L_gelu_nb2_ff64",
    "tsmixer_m7h96_B_relu_nb2_ff64", "tsmixer_m7h96_B_gelu_nb2_ff64",
    "tsmixer_m12h6_L_relu_nb2_ff64", "tsmixer_m12h6_L_gelu_nb2_ff64",
    "tsmixer_m12h6_B_relu_nb2_ff64", "tsmixer_m12h6_B_gelu_nb2_ff64",
    "revin_aff1_dlinear_m7h96_ma25_ind0_iw0", "revin_aff0_dlinear_m7h96_ma25_ind0_iw0",
    "revin_aff1_dlinear_m12h6_ma25_ind0_iw0", "revin_aff0_dlinear_m12h6_ma25_ind0_iw0",
    "revin_aff1_tsmixer_m7h96_B_gelu_nb2_ff64", "revin_aff0_tsmixer_m7h96_B_gelu_nb2_ff64",
    "revin_aff1_tsmixer_m12h6_B_gelu_nb2_ff64", "revin_aff0_tsmixer_m12h6_B_gelu_nb2_ff64",
    "revin_aff1_gru_m12h6_ar_l2_h64", "revin_aff1_moderntcn_m7h96_d64_b1_L31_S5_ffn1",
    "seasonalnaive_m7h96_s1", "seasonalnaive_m7h96_s24", "seasonalnaive_m12h6_s1",
    "seasonalnaive_m12h6_s24",
)

DEFAULT_TOLERANCE = 1e-5
MODERNTCN_TOLERANCE = 3e-6


def _tolerance(fixture: Fixture) -> float:
    return MODERNTCN_TOLERANCE if fixture.meta["architecture"] == "ModernTCN" else DEFAULT_TOLERANCE


def _intermediates(model: nnx.Module, x: jax.Array) -> dict[str, jax.Array]:
    """Our counterpart of every `inter/*` key, for window 0 (README section 1.4 layouts)."""
    ours: dict[str, jax.Array] = {}
    base = model
    if isinstance(model, RevIN):
        mean, std = model.statistics(x)
        x = model.normalize(x, mean, std)
        ours.update(revin_mean=mean[:1], revin_stdev=std[:1], revin_norm_out=x[:1],
                    revin_denorm_in=model.base(x)[:1])
        base = model.base
    if isinstance(base, GRU):
        sequence, states = base.encode(x)
        ours.update(gru_seq_out=sequence[:1], gru_h_n=states[:, :1])
        if base.config.autoregressive:
            predictions, fed = base.rollout(x)
            ours.update(ar_fed_inputs=fed[:1], post_select=predictions[:1])
    if isinstance(base, DLinear):
        seasonal, trend = base.decompose(x)
        ours.update(seasonal=seasonal[:1], trend=trend[:1])
    if isinstance(base, ModernTCN):
        features = base.stem(x)
        ours["stem_out"] = features[0]
        for i, block in enumerate(base.blocks):
            features = block(features)
            ours[f"block{i}_out"] = features[:1]
        ours["head_out"] = base.head(features)[:1]
    if isinstance(base, PatchTST):
        x_norm, _, _ = base.normalize(x)
        tokens, scores = base.embed_patches(x_norm), None
        ours["patch_embed"] = tokens[0]
        for i, layer in enumerate(base.layers):
            tokens, scores = layer(tokens, scores)
            ours[f"enc{i}_out"], ours[f"enc{i}_scores"] = tokens[0], scores[0]
        ours["head_out"] = base.head(tokens)[:1]
    if isinstance(base, TSMixer):
        hidden = x
        for i, block in enumerate(base.blocks):
            hidden = block(hidden)
            ours[f"block{i}_out"] = hidden[:1]
    if not (isinstance(base, GRU) and base.config.autoregressive):
        ours["pre_select"] = base.predict_all_channels(x)[:1]
        ours["post_select"] = base(x)[:1]
    return ours


def test_fixture_folder_holds_exactly_the_48_cases(parity_dir: Path) -> None:
    found = sorted(p.stem for p in parity_dir.glob("*.npz"))
    if full_parity_dir() is None:  # the repository's subset: listed in its SHA256SUMS, every architecture kept
        sums = (BUNDLED_PARITY / "SHA256SUMS").read_text().splitlines()
        listed = sorted(line.split()[1][:-len(".npz")] for line in sums)
        assert found == listed and set(found) <= set(FIXTURES)
        assert {name.split("_")[0] for name in found} >= {name.split("_")[0] for name in FIXTURES}
        return
    assert found == sorted(FIXTURES)


@pytest.mark.parametrize("name", [parity_case(name) for name in FIXTURES])
def test_output_and_intermediates_match_reference(parity_dir: Path, name: str) -> None:
    fixture = read_fixture(parity_dir / f"{name}.npz")
    model = model_from_fixture(fixture, seed=123)
    graphdef, state = nnx.split(model)

    @jax.jit
    def forward(state, x):
        module = nnx.merge(graphdef, state)
        return module(x), _intermediates(module, x)

    with jax.default_matmul_precision("highest"):
        output, ours = jax.device_get(forward(state, jnp.asarray(fixture.input)))
        assert output.shape == fixture.output.shape
        if isinstance(model, SeasonalNaive):
            np.testing.assert_array_equal(output, fixture.output)
        else:
            error = parity_error(output, fixture.output)
            assert error <= _tolerance(fixture), f"{name}: scale-relative error {error:.3e}"
    missing = sorted(set(fixture.intermediates) - set(ours))
    assert not missing, f"intermediates not checked: {missing}"
    for key, reference in fixture.intermediates.items():
        value = np.asarray(ours[key])
        assert value.shape == reference.shape, f"{name} inter/{key}: {value.shape}"
        if isinstance(model, SeasonalNaive):
            np.testing.assert_array_equal(value, reference)
        else:
            error = parity_error(value, reference)
            assert error <= _tolerance(fixture), f"{name} inter/{key}: error {error:.3e}"


def test_loading_is_strict(parity_dir: Path) -> None:
    fixture = read_fixture(parity_dir / "dlinear_m12h6_ma25_ind0_iw0.npz")
    model = build_model("dlinear", fixture.meta["hyperparameters"], input_len=96, horizon=6,
                        num_channels=12, target_indices=[0], seed=0)
    before = np.asarray(model.trend_kernel[...]).copy()
    state = dict(fixture.state)
    with pytest.raises(ValueError, match=r"missing keys \['Linear_Trend.bias'\]"):
        load_dlinear(model, {k: v for k, v in state.items() if k != "Linear_Trend.bias"})
    with pytest.raises(ValueError, match=r"unexpected keys \['extra.weight'\]"):
        load_dlinear(model, {**state, "extra.weight": np.zeros(3, np.float32)})
    with pytest.raises(ValueError, match=r"Linear_Trend.weight has shape \(6, 95\)"):
        load_dlinear(model, {**state, "Linear_Trend.weight": np.zeros((6, 95), np.float32)})
    # Nothing was written by the failed loads.
    np.testing.assert_array_equal(np.asarray(model.trend_kernel[...]), before)
    with pytest.raises(TypeError, match="no PyTorch loader"):
        load_state(nnx.Linear(2, 2, rngs=nnx.Rngs(0)), state)
