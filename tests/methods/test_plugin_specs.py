"""Model and method specs registered from outside flow through applicability, the checks, the training transform,
the wrappers and the report's labels, orders and Table 4, with no table keyed by their names anywhere.

The specs are built here as a plug-in package builds them (importing only `models/spec.py`, `methods/spec.py` and
public building blocks), merged with `plugins.register_specs` into a copy of each registry, and the copy's new
entries put into the live registries for the test's duration (as an entry point does at import)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from sfbench_jax.methods import training
from sfbench_jax.methods.spec import Bound, MethodSpec, WrapperSpec
from sfbench_jax.models import dlinear
from sfbench_jax.models.spec import ModelSpec
from sfbench_jax.plugins.entry_points import PluginError, register_specs

TOY_MODEL = ModelSpec(name="toy_linear", config_cls=dlinear.DLinearConfig, is_valid=dlinear.is_valid,
                      module_cls=dlinear.DLinear, is_trainable=True, is_channel_independent=False,
                      supports_revin=False, label="ToyLinear", family="Toy")
TOY_TRAIN = MethodSpec("toy_noise", "train", "Toy Noise", lambda recipe: f"toy_noise_{recipe['sigma']}",
                       transform=training.randomized_training,
                       bounds={"sigma": Bound(lambda value: value >= 0, "a number >= 0 (the noise level)")})
TOY_WRAP = MethodSpec("toy_pair", "wrap", "Toy Pair", lambda recipe: "toy_pair",
                      applicable=lambda model: model.is_trainable and model.is_channel_independent,
                      wrapper=WrapperSpec(members=lambda recipe, ranked: ranked[:2],
                                          predictor=lambda recipe, members, *, seed: members[0]))


@pytest.fixture
def plugins(monkeypatch):
    from sfbench_jax.methods import METHODS
    from sfbench_jax.models.registry import MODELS

    for live, specs, kind in ((MODELS, [TOY_MODEL], "models"), (METHODS, [TOY_TRAIN, TOY_WRAP], "methods")):
        copy = dict(live)
        register_specs(copy, specs, kind=kind)
        for name in [name for name in copy if name not in live]:
            monkeypatch.setitem(live, name, copy[name])


def test_a_name_taken_is_refused() -> None:
    from sfbench_jax.models.registry import MODELS

    clash = ModelSpec(name="dlinear", config_cls=dlinear.DLinearConfig, is_valid=dlinear.is_valid,
                      module_cls=dlinear.DLinear, is_trainable=True, is_channel_independent=True, supports_revin=True)
    with pytest.raises(PluginError, match="Two models are registered as 'dlinear'"):
        register_specs(dict(MODELS), [clash], kind="models")


def test_a_method_spec_says_what_is_wrong_with_it() -> None:
    with pytest.raises(ValueError, match="kind 'fit'"):
        MethodSpec("bad", "fit", "Bad", lambda recipe: "bad")
    with pytest.raises(ValueError, match="a wrap-kind method needs a `wrapper`"):
        MethodSpec("bad", "wrap", "Bad", lambda recipe: "bad")


@pytest.mark.usefixtures("plugins")
def test_applicability_comes_from_the_model_capabilities() -> None:
    from sfbench_jax.methods import InapplicableMethodError, applicable_architectures, check_method

    assert "toy_linear" in applicable_architectures("adversarial_training")  # trainable
    assert "toy_linear" not in applicable_architectures("revin")  # its spec says RevIN does not fit it
    assert "toy_linear" in applicable_architectures("toy_noise")
    assert applicable_architectures("toy_pair") == ["dlinear", "patchtst"]  # trainable and channel-independent
    with pytest.raises(InapplicableMethodError, match="'toy_noise' does not apply to 'seasonal_naive'"):
        check_method("toy_noise", "seasonal_naive", None, num_baseline_candidates=2)


@pytest.mark.usefixtures("plugins")
def test_the_training_transform_and_the_wrapper_come_from_the_spec() -> None:
    from sfbench_jax.methods import get_method
    from sfbench_jax.methods.training import RandomizedTraining, dataset_facts

    spec = get_method("toy_noise")
    facts = dataset_facts(mean=np.ones(3), std=np.ones(3), pool=(0, 1), input_len=8)
    assert isinstance(spec.transform({"sigma": 0.1}, facts), RandomizedTraining)
    assert spec.model_wrapping({"sigma": 0.1}) is None
    with pytest.raises(ValueError, match=r"method.grid.sigma=\[-1\] for toy_noise: each value must be a number"):
        spec.check_values({"sigma": (-1,)})
    assert get_method("toy_pair").wrapper.members({}, ["first", "second", "third"]) == ["first", "second"]


@pytest.mark.usefixtures("plugins")
def test_report_labels_orders_and_table4_come_from_the_specs() -> None:
    from sfbench_jax.report import paper
    from sfbench_jax.report.architectures import ARCHITECTURE_FAMILIES, ARCHITECTURE_ORDER

    assert list(paper.METHOD_ORDER)[-2:] == ["toy_noise", "toy_pair"]  # built-ins first, then plug-ins
    assert paper.label_of("toy_pair") == "Toy Pair" and paper.label_of("toy_linear") == "ToyLinear"
    assert list(ARCHITECTURE_ORDER)[-1] == "toy_linear" and ARCHITECTURE_FAMILIES["toy_linear"] == "Toy"
    rows = [{"dataset": "etth1", "architecture": name, "method": "baseline", "d_w": d_w, "mse_c": 0.5, "mse_w": 0.6}
            for name, d_w in (("toy_linear", 1.1), ("dlinear", 1.2))]
    block = paper.table4_architecture_block(pd.DataFrame(rows))
    assert list(block.columns) == ["dataset", "measure", "dlinear", "toy_linear", "best"]
    means = pd.DataFrame([{"dataset": "etth1", "method": name, "delta_d_w": -0.1, "delta_mse_c": 0.0,
                           "delta_mse_w": 0.01} for name in ("toy_pair", "adversarial_training")])
    lines = paper.table4_markdown(block, paper.table4_method_block(means)).splitlines()
    assert lines[0] == "| dataset | measure | DLinear | ToyLinear | measure | PGD | Toy Pair |"
    assert lines[2] == "| ETTh1 | D_w | 1.200 | **1.100** | ΔD_w | **-0.100** | **-0.100** |"


@pytest.mark.parametrize(("method", "recipe", "variant"), [
    ("baseline", {}, "baseline"),
    ("revin", {"affine": 1}, "revin_affineTrue_eps1e-5"),
    ("ensemble", {"top_k": 3, "combine": "mean"}, "ensemble_top3_mean"),
    ("adversarial_training", {"eps": 0.05, "steps": 3}, "advtrain_eps0.05_steps3_alpha0.02_channelsall"),
    ("randomized_training", {"sigma": 0.1}, "rt_spaceraw_std0.1_channelscontinuous"),
    ("fault_augmentation", {"profile": "holdout_simple", "p": 0.75, "s_max": 0.75, "frac_max": 0.1},
     "fa_profholdout_simple_mix0.75_sev0.75_frac0.1"),
    ("randomized_smoothing", {"sigma": 0.25, "samples": 10, "alpha": 0.25},
     "rs_backbonebaseline_std0.25_samples10_alpha0.25"),
    ("adaptive_robust_loss", {"alpha_lo": 0.001, "alpha_init": 1.0, "scale_lo": 1e-05, "scale_init": 0.1},
     "arl_alo0.001_ainit1.0_slo1e-05_sinit0.1"),
])
def test_every_built_in_method_names_its_variants(method: str, recipe: dict, variant: str) -> None:
    from sfbench_jax.methods.registry import get_method

    assert get_method(method).variant_id(recipe) == variant


def test_an_extra_fault_may_not_take_a_built_in_stream_id() -> None:
    """The registry's check of each extra fault a plug-in brings (the demo plug-in's end-to-end run: CI's slow step)."""
    import dataclasses

    from sfbench_jax.faults.registry import _checked_extra
    from sfbench_jax.faults.scored import sample_channel_fault
    from sfbench_jax.faults.spec import RESERVED_SCENARIO_IDS, FaultSpec

    extra = FaultSpec(name="sign_flip", label="SignFlip", fault_class="Value", sample=sample_channel_fault,
                      apply=lambda x, params, ctx: -x)
    assert _checked_extra(extra) is extra  # no id: one is derived from the name
    with pytest.raises(PluginError, match="sets scenario_id=3, which is reserved for built-in faults"):
        _checked_extra(dataclasses.replace(extra, scenario_id=3))
    assert _checked_extra(dataclasses.replace(extra, scenario_id=RESERVED_SCENARIO_IDS)).scenario_id == 2**16
