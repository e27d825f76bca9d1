"""Method variants trained as one vectorised group with their recipe values as data: the same curves,
checkpoints and selected variant as training them one after another, the same numbers as the program with
the values as constants, grouping by recipe structure, and a resumable store with one record per variant."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import jax
import numpy as np
import pytest

from sfbench_jax.config import TrainConfig
from sfbench_jax.data import load, prepare
from sfbench_jax.methods.registry import METHODS, method_grid
from sfbench_jax.models.registry import MODELS
from sfbench_jax.training import CandidateStore, run_search, select_winner
from sfbench_jax.training.fit import (
    EpochProgram,
    GroupMember,
    TrainingRecipe,
    build_for,
    epoch_geometry,
    train_group,
    training_recipe,
)
from sfbench_jax.training.loop import CandidateInputs, EpochData, initial_state, make_epoch_fn, split_model
from sfbench_jax.training.sweep import plan_method_search
from sfbench_jax.training.training_seeds import dropout_key, shuffle_key

STEPS = 20
HPARAMS = {"moving_avg": 25, "individual": False, "init_weights": False}
ARL = [{"alpha_lo": 0.001, "alpha_init": 1.0, "scale_lo": 1e-5, "scale_init": 0.1},
       {"alpha_lo": 0.25, "alpha_init": 1.5, "scale_lo": 0.001, "scale_init": 1.0},
       {"alpha_lo": 0.5, "alpha_init": 1.9, "scale_lo": 0.01, "scale_init": 0.1}]


@pytest.fixture(scope="module")
def etth1():
    return prepare(load("etth1"))


def _members(data, method: str, recipes: list[dict], lr: float = 1e-3) -> tuple[list[GroupMember], TrainingRecipe]:
    built = [training_recipe(data, METHODS[method], recipe) for recipe in recipes]
    return ([GroupMember(lr, 100 + i, transform=recipe.transform) for i, recipe in enumerate(built)], built[0])


def _assert_same(ours, theirs, *, rtol: float) -> None:
    for a, b in zip(ours, theirs, strict=True):
        assert a.stopping.epochs_run == b.stopping.epochs_run and a.stopping.best_epoch == b.stopping.best_epoch
        np.testing.assert_allclose(a.val_curve, b.val_curve, rtol=rtol)
        np.testing.assert_allclose(a.train_curve, b.train_curve, rtol=rtol)
        for name, value in a.checkpoint["params"].items():
            reference = b.checkpoint["params"][name]
            assert np.linalg.norm(value - reference) <= 1e-4 * max(np.linalg.norm(reference), 1e-12), name


@pytest.mark.parametrize(("method", "recipes"), [
    ("adaptive_robust_loss", ARL),
    ("randomized_training", [{"sigma": 0.1}, {"sigma": 0.3}]),
    ("fault_augmentation", [{"profile": "holdout_varying", "p": p, "s_max": s, "frac_max": 0.25}
                            for p, s in ((0.75, 1.0), (1.0, 0.75))]),
    ("adversarial_training", [{"eps": 0.05, "steps": 3}, {"eps": 0.2, "steps": 3}]),
])
def test_a_vectorised_variant_group_equals_its_variants_one_after_another(etth1, method, recipes) -> None:
    members, recipe = _members(etth1, method, recipes)
    options = TrainConfig(max_epochs=2, patience=2, steps_per_epoch=STEPS, num_devices=1)
    vectorised = train_group(etth1, MODELS["dlinear"], HPARAMS, members, options, vectorize=True, recipe=recipe)
    sequential = train_group(etth1, MODELS["dlinear"], HPARAMS, members, options, vectorize=False, recipe=recipe)
    assert vectorised[0].group_size == len(recipes)
    assert all(math.isfinite(v) for outcome in vectorised for v in outcome.val_curve)
    # the variants really differ: their values reach the program
    assert len({outcome.val_curve[-1] for outcome in vectorised}) == len(recipes)
    _assert_same(vectorised, sequential, rtol=2e-5)


def test_recipe_values_as_data_round_like_constants(etth1) -> None:
    """The program with the recipe values as data (what groups use) gives the epoch of the program with the values
    as Python constants to float rounding (XLA simplifies around constants differently: ~4e-7 relative after
    20 Adam steps), for every adaptive-loss variant."""
    geometry = epoch_geometry(etth1, TrainConfig(steps_per_epoch=STEPS))
    spec, batch = etth1.spec, etth1.spec.batch_size
    val_starts = etth1.val_starts_drop_last(batch).reshape(-1, batch).astype(np.int32)
    shared = EpochData(series=jax.numpy.asarray(etth1.standardised),
                       train_starts=jax.numpy.asarray(etth1.train_starts.astype(np.int32)),
                       val_starts=jax.numpy.asarray(val_starts), shuffle_key=shuffle_key(spec.seeds.data_seed))
    for recipe in ARL:
        transform = training_recipe(etth1, METHODS["adaptive_robust_loss"], recipe).transform
        train_gd, eval_gd, params, stats, other = split_model(build_for(etth1, MODELS["dlinear"], HPARAMS, 7))
        state = initial_state(params, stats, transform.initial_latents(spec.horizon, len(spec.target_indices)))
        candidate = CandidateInputs(state=state, other=other, dropout_key=dropout_key(7),
                                    learning_rate=np.float32(1e-3), active=np.bool_(True))
        constants = make_epoch_fn(train_gd, eval_gd, geometry, transform=transform)(candidate, shared, np.int32(0))
        data = make_epoch_fn(train_gd, eval_gd, geometry, transform=transform.template())(
            candidate._replace(recipe_values=transform.recipe_values()), shared, np.int32(0))
        for a, b in zip(jax.tree.leaves(constants), jax.tree.leaves(data), strict=True):
            np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-5, atol=1e-7)


def test_variants_group_by_recipe_structure_and_compile_once(etth1) -> None:
    members, recipe = _members(etth1, "adaptive_robust_loss", ARL)
    options = TrainConfig(max_epochs=1, steps_per_epoch=STEPS, num_devices=1)
    programs = [EpochProgram(etth1, MODELS["dlinear"], HPARAMS, [member], options, vectorize=False, recipe=recipe)
                for member in members]
    assert all(program.fn is programs[0].fn for program in programs)  # one program for every variant
    profiles = [training_recipe(etth1, METHODS["fault_augmentation"], {"profile": profile, "p": 1.0, "s_max": 1.0,
                                                                "frac_max": 0.25})
                for profile in ("holdout_simple", "holdout_varying")]
    assert profiles[0].structure != profiles[1].structure  # the transfer families shape the program
    mixed = [GroupMember(1e-3, 1, transform=profiles[1].transform)]
    with pytest.raises(ValueError, match="in more than recipe values; train it in its own group"):
        EpochProgram(etth1, MODELS["dlinear"], HPARAMS, mixed, options, vectorize=False, recipe=profiles[0])


def _search(data, store_root: Path, group_size: int, budget: int = 6):
    options = TrainConfig(max_epochs=3, patience=1, steps_per_epoch=STEPS, group_size=group_size, num_devices=1,
                          candidate_budget=budget, progress=False)
    plan = plan_method_search(data, MODELS["dlinear"], METHODS["adaptive_robust_loss"],
                              recipes=method_grid("adaptive_robust_loss", None),
                              inherited={**HPARAMS, "lr": 0.005}, options=options, budget=budget)
    log: list[str] = []
    results = run_search(data, plan, store=CandidateStore(store_root), options=options, log=log.append)
    return plan, results, log


def test_an_adaptive_loss_search_selects_the_same_variant_vectorised_and_resumes(etth1, tmp_path: Path) -> None:
    plan, vectorised, log = _search(etth1, tmp_path / "vectorised", group_size=40)
    assert sum("group 1/1" in line for line in log) == 1  # six variants, one program
    _, sequential, _ = _search(etth1, tmp_path / "sequential", group_size=1)
    assert all(result.group_size == 6 for result in vectorised) and all(r.group_size == 1 for r in sequential)
    for ours, theirs in zip(vectorised, sequential, strict=True):
        assert (ours.variant, ours.epochs_run, ours.best_epoch) == (theirs.variant, theirs.epochs_run,
                                                                    theirs.best_epoch)
        assert ours.best_val_loss == pytest.approx(theirs.best_val_loss, rel=2e-5)
    assert select_winner(vectorised).variant == select_winner(sequential).variant
    results = sorted((tmp_path / "vectorised").glob("etth1/dlinear/*/result.json"))
    assert len(results) == 6 == len(set(plan.keys))  # each variant its own stored candidate
    _, again, log = _search(etth1, tmp_path / "vectorised", group_size=40)
    assert "6 already in the store, 0 to train" in log[0]
    assert [r.best_val_loss for r in again] == [r.best_val_loss for r in vectorised]


_SHARDED_SCRIPT = """
import json, sys, tempfile
from pathlib import Path
from sfbench_jax.config import TrainConfig
from sfbench_jax.data import load, prepare
from sfbench_jax.methods.registry import METHODS, method_grid
from sfbench_jax.models.registry import MODELS
from sfbench_jax.training import CandidateStore, run_search, select_winner
from sfbench_jax.training.sweep import plan_method_search
data = prepare(load("etth1"))
out = {}
for label, group_size, devices in (("two_devices", 7, 2), ("one_device", 7, 1), ("sequential", 1, 1)):
    options = TrainConfig(max_epochs=5, patience=1, steps_per_epoch=10, group_size=group_size, num_devices=devices,
                          candidate_budget=7, progress=False)
    plan = plan_method_search(data, MODELS["dlinear"], METHODS["adaptive_robust_loss"],
                              recipes=method_grid("adaptive_robust_loss", None),
                              inherited={"moving_avg": 25, "individual": False, "init_weights": False, "lr": 0.05},
                              options=options, budget=7)
    with tempfile.TemporaryDirectory() as root:
        results = run_search(data, plan, store=CandidateStore(Path(root)), options=options)
    out[label] = {"winner": select_winner(results).variant,
                  "records": [[r.variant, r.epochs_run, r.best_epoch, r.best_val_loss, r.val_curve, r.group_size]
                              for r in results]}
Path(sys.argv[1]).write_text(json.dumps(out))
"""


@pytest.mark.slow  # three searches in a fresh two-device process: ~35 s of CPU
def test_a_variant_group_split_over_two_devices_selects_the_same_variant(tmp_path: Path) -> None:
    """Seven adaptive-loss variants (padded to eight) split over two CPU devices, on one device, and one after
    another: the same selected variant, epochs and validation curves to 1e-5 relative, through early stopping and
    the narrower programs a group continues in as its members stop."""
    environment = dict(os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=2", JAX_PLATFORMS="cpu")
    out = tmp_path / "searches.json"
    completed = subprocess.run([sys.executable, "-c", _SHARDED_SCRIPT, str(out)], env=environment,
                               capture_output=True, text=True, timeout=600, check=False)
    assert completed.returncode == 0, completed.stderr[-3000:]
    searches = json.loads(out.read_text())
    reference = searches["sequential"]
    assert len({record[1] for record in reference["records"]}) > 1  # members stop at different epochs
    for label in ("two_devices", "one_device"):
        assert searches[label]["winner"] == reference["winner"]
        for ours, theirs in zip(searches[label]["records"], reference["records"], strict=True):
            assert ours[:3] == theirs[:3] and ours[5] == 7 and theirs[5] == 1
            np.testing.assert_allclose(ours[3], theirs[3], rtol=1e-5)
            np.testing.assert_allclose(ours[4], theirs[4], rtol=1e-5)
