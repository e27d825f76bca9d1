"""A run's names are resolved once, at its entry (`pipeline.resolved.resolve_cell`), and the specs travel down as
objects (issue 45): a model spec no registry holds is selected, trained, stored and rebuilt from a `ResolvedCell`,
which works only if no layer below looks its name up again; and no module below the entry calls a registry's
lookup."""

from __future__ import annotations

import ast
import dataclasses
import math
from pathlib import Path

import pytest

from sfbench_jax.config import DatasetConfig, ModelConfig, RunConfig, TrainConfig
from sfbench_jax.data import load, prepare
from sfbench_jax.data.registry import DATASETS
from sfbench_jax.evaluation import validation_mse
from sfbench_jax.methods.registry import METHODS
from sfbench_jax.models.registry import MODELS
from sfbench_jax.pipeline.cell import select_model, winner_predictor
from sfbench_jax.pipeline.resolved import ResolvedCell, resolve_cell
from sfbench_jax.training import CandidateStore

PACKAGE = Path(__file__).resolve().parents[2] / "sfbench_jax"
#: The modules below a run's entry: they take specs (or read them from a `SearchPlan`), never names.
BELOW_THE_ENTRY = (*sorted((PACKAGE / "training").glob("*.py")), PACKAGE / "models" / "restore.py",
                   *(PACKAGE / "pipeline" / name for name in ("cell.py", "contracts.py", "runner.py", "rebuild.py")))
#: The registries' name lookups.
LOOKUPS = {"get_spec", "get_method", "get_dataset", "model_spec", "method_spec"}
HPARAMS = {"moving_avg": 25, "individual": False, "init_weights": False}


@pytest.fixture(scope="module")
def etth1():
    return prepare(load("etth1"))


def test_a_spec_no_registry_holds_is_selected_trained_and_rebuilt_from_its_cell(etth1, tmp_path: Path) -> None:
    renamed = dataclasses.replace(MODELS["dlinear"], name="unregistered_dlinear")
    assert renamed.name not in MODELS  # looking the name up anywhere below the cell would fail
    cfg = RunConfig(dataset=DatasetConfig(name="etth1"),
                    model=ModelConfig(name=renamed.name, grid={**{k: [v] for k, v in HPARAMS.items()}, "lr": [1e-3]}),
                    train=TrainConfig(max_epochs=1, steps_per_epoch=4, candidate_budget=1, progress=False))
    cell = ResolvedCell(cfg=cfg, dataset=DATASETS["etth1"], model=renamed, method=METHODS["baseline"])
    store = CandidateStore(tmp_path / "store")
    selection = select_model(etth1, cell, store, lambda message: None)
    assert selection.is_trained and selection.winner.architecture == "unregistered_dlinear"  # the name is written
    assert selection.plan.model is renamed and selection.plan.method_spec is METHODS["baseline"]
    assert (tmp_path / "store" / "etth1" / "unregistered_dlinear").is_dir()
    predict, state = winner_predictor(etth1, selection, store)  # rebuilt from the plan's spec, weights from the store
    assert math.isfinite(validation_mse(predict, state, etth1))


def test_a_run_resolves_its_names_once_and_an_unknown_one_is_the_registrys_error() -> None:
    cfg = RunConfig(dataset=DatasetConfig(name="etth1"), model=ModelConfig(name="dlinear"))
    cell = resolve_cell(cfg)
    assert (cell.dataset, cell.model, cell.method) == (DATASETS["etth1"], MODELS["dlinear"], METHODS["baseline"])
    assert cell.baseline().method is METHODS["baseline"] and cell.baseline().model is cell.model
    with pytest.raises(ValueError, match="Unknown model 'no_such_model'. Valid models: "):
        resolve_cell(dataclasses.replace(cfg, model=ModelConfig(name="no_such_model")))


def _lookups(path: Path) -> list[str]:
    calls = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Call):
            name = node.func.id if isinstance(node.func, ast.Name) else getattr(node.func, "attr", "")
            if name in LOOKUPS:
                calls.append(f"{path.relative_to(PACKAGE.parent)}:{node.lineno} {name}(...)")
    return calls


def test_no_module_below_the_entry_looks_a_name_up() -> None:
    assert len(BELOW_THE_ENTRY) > 8
    found = [call for path in BELOW_THE_ENTRY for call in _lookups(path)]
    assert not found, f"resolve names once in pipeline/resolved.py and pass the specs down: {found}"
    assert _lookups(PACKAGE / "pipeline" / "resolved.py")  # the one place that does
