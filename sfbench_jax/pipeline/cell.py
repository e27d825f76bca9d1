"""Clean-validation selection of one (dataset, architecture, method) cell (protocol 4, 5.3-5.4) and the
evaluation of its winner: the same path for every model and method.

* baseline: sample the architecture's candidates, fit the trainable ones through the resumable candidate
  store (a model without trainable weights skips fitting and is scored on clean validation as built), pick
  the lowest validation loss;
* train-kind method: select the baseline first (from the store), then sample the method's recipe variants,
  each inheriting the baseline winner's hyperparameters, train them from scratch through the store (the
  method acts inside the compiled step) and pick the lowest validation loss;
* wrap-kind method: select the baseline first, wrap stored baseline predictors with every recipe variant
  (ensemble, randomized smoothing) and pick the lowest clean validation MSE of the wrapper.

The names a run's config gives (dataset, model, method) are looked up once, where the run starts (`resolve_cell`),
and the specs travel down from there in a `ResolvedCell` and in each `SearchPlan`: nothing below looks a name up
again; names are what is written (records, tables). The winner is then rebuilt as a predictor and scored by the fused
engine. This module joins training and
evaluation (it sits above both); what each step does lives in `sfbench_jax.training`, `sfbench_jax.methods`
and `sfbench_jax.evaluation`.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from flax import nnx

from sfbench_jax.config import RunConfig
from sfbench_jax.data.prepared import PreparedData
from sfbench_jax.evaluation import Evaluation, evaluate_predictor, predict_fn, validation_mse, validation_mses
from sfbench_jax.methods import method_grid
from sfbench_jax.methods.spec import MethodSpec, read_only
from sfbench_jax.models.restore import build_for, restore_model
from sfbench_jax.models.spec import ModelSpec
from sfbench_jax.pipeline.contracts import ignores_its_input, probe_windows
from sfbench_jax.pipeline.resolved import ResolvedCell
from sfbench_jax.predictors.protocol import Predictor
from sfbench_jax.training import (
    CandidateResult,
    CandidateStore,
    SearchPlan,
    plan_search,
    run_search,
    select_winner,
    selection_key,
    untrained_record,
)
from sfbench_jax.training.sweep import plan_method_search

#: How many distinct validation windows an input-blind forecast is confirmed on.
INPUT_PROBE_WINDOWS = 16
#: The checkpoint of a model without trainable weights.
NO_WEIGHTS: dict[str, dict] = {"params": {}, "batch_stats": {}}

Log = Callable[[str], None]


@dataclass(frozen=True)
class Selection:
    """The outcome of a cell's clean-validation selection.

    Attributes:
        plan: the sampled candidates (or method variants) and their identities.
        candidates: every candidate's record, in trial order.
        winner: the selected candidate.
        kind: "trained" (weights in the store), "untrained" (SeasonalNaive) or "wrapped" (a wrapper of
            stored baseline predictors).
        baseline: the cell's baseline selection (method cells only).
    """

    plan: SearchPlan
    candidates: list[CandidateResult] = field(repr=False)
    winner: CandidateResult
    kind: str
    baseline: Selection | None = None

    @property
    def is_trained(self) -> bool:
        """Whether the candidates were trained (their weights are in the store)."""
        return self.kind == "trained"

    @property
    def selection_metric(self) -> str:
        """What the winner was selected by."""
        return "mse_val" if self.kind in ("untrained", "wrapped") else "best_val_loss"


@dataclass(frozen=True)
class EvaluatedModel:
    """One evaluated model and how it was chosen.

    Attributes:
        variant: the spec's variant id of a method winner ("baseline" for the baseline).
        selection_metric, selection_value: what the winner was selected by, and its value.
        ignores_input: its forecast is the same for every input (`contracts.ignores_its_input`): flagged in the
            summary, Table 4 and the report page, never marked best.
    """

    dataset: str
    architecture: str
    method: str
    hyperparameters: dict[str, Any]
    mse_val: float
    evaluation: Evaluation
    variant: str = "baseline"
    selection_metric: str = "best_val_loss"
    selection_value: float | None = None
    ignores_input: bool = False


def candidate_store(cfg: RunConfig, output_dir: Path) -> CandidateStore:
    """The candidate store of a run (`train.store_dir`, default `<run dir>/candidates`)."""
    root = Path(cfg.train.store_dir).expanduser() if cfg.train.store_dir else Path(output_dir) / "candidates"
    return CandidateStore(root)


def select_model(data: PreparedData, cell: ResolvedCell, store: CandidateStore | None, log: Log) -> Selection:
    """Select the cell's winner on clean validation (by the method's kind)."""
    return SELECTORS[cell.method.kind](data, cell, store, log)


def select_baseline(data: PreparedData, cell: ResolvedCell, store: CandidateStore | None, log: Log) -> Selection:
    """Fit (trainable) or score (untrained) every sampled baseline candidate; pick the winner.

    Raises:
        ValueError: a trainable model without a candidate store.
    """
    cfg, name = cell.cfg, cell.model.name
    plan = plan_search(data, cell.model, options=cfg.train, grid=cfg.model.grid or None, fixed=cfg.model.hparams)
    if cell.model.is_trainable:
        candidates = run_search(data, plan, store=_required(store, name), options=cfg.train, log=log)
        kind = "trained"
    else:
        candidates = score_untrained(data, plan)
        kind = "untrained"
    return _announce(Selection(plan=plan, candidates=candidates, winner=select_winner(candidates), kind=kind), log)


def select_trained_method(data: PreparedData, cell: ResolvedCell, store: CandidateStore | None,
                          log: Log) -> Selection:
    """Train the method's recipe variants (inheriting the baseline winner's hyperparameters); pick the winner."""
    cfg = cell.cfg
    baseline = _baseline_of(data, cell, store, log)
    recipes = method_grid(cell.method, cfg.method.grid)
    budget = min(cfg.train.candidate_budget, baseline.plan.num_valid, math.prod(len(v) for v in recipes.values()))
    plan = plan_method_search(data, cell.model, cell.method, recipes=recipes, inherited=baseline.winner.hparams,
                              options=cfg.train, budget=budget)
    candidates = run_search(data, plan, store=_required(store, cell.model.name), options=cfg.train, log=log)
    selection = Selection(plan=plan, candidates=candidates, winner=select_winner(candidates), kind="trained",
                          baseline=baseline)
    return _announce(selection, log)


def select_wrapper(data: PreparedData, cell: ResolvedCell, store: CandidateStore | None, log: Log) -> Selection:
    """Wrap stored baseline predictors with every recipe variant; pick the lowest clean validation MSE."""
    cfg = cell.cfg
    baseline = _baseline_of(data, cell, store, log)
    plan = plan_method_search(data, cell.model, cell.method, recipes=method_grid(cell.method, cfg.method.grid),
                              inherited=baseline.winner.hparams, options=cfg.train, budget=None)
    stored = StoredPredictors(data, _required(store, cell.model.name), baseline.plan)
    records = []
    for position, candidate in enumerate(plan.candidates):
        predict, state = wrapped_predictor(data, cell.method, candidate.recipe, baseline, stored)
        records.append(untrained_record(plan, position, validation_mse(predict, state, data), data))
    selection = Selection(plan=plan, candidates=records, winner=select_winner(records), kind="wrapped",
                          baseline=baseline)
    return _announce(selection, log)


#: Method kind -> how its cell is selected.
SELECTORS: dict[str, Callable[..., Selection]] = {
    "baseline": select_baseline, "train": select_trained_method, "wrap": select_wrapper,
}


def _baseline_of(data: PreparedData, cell: ResolvedCell, store: CandidateStore | None, log: Log) -> Selection:
    log(f"{cell.method.name}: the baseline winner of {cell.model.name} first (from the candidate store)")
    return select_baseline(data, cell.baseline(), store, log)


def _required(store: CandidateStore | None, name: str) -> CandidateStore:
    if store is None:
        raise ValueError(f"{name} is trained: give a candidate store (train.store_dir).")
    return store


def _announce(selection: Selection, log: Log) -> Selection:
    winner, candidates = selection.winner, selection.candidates
    failed = sum(not result.is_finished for result in candidates)
    settings = ", ".join(f"{key}={value}" for key, value in {**winner.hparams, **winner.recipe}.items())
    variant = "" if winner.method == "baseline" else f" {winner.variant}"
    log(f"{winner.architecture} {winner.method}:{variant} selected trial {winner.trial_number} ({settings}; "
        f"{selection.selection_metric} {winner.best_val_loss:.5f}) of {len(candidates)} candidate(s), {failed} failed")
    return selection


def score_untrained(data: PreparedData, plan: SearchPlan) -> list[CandidateResult]:
    """Records of candidates without trainable weights: all scored on clean validation as built, in one pass."""
    model, _ = plan_specs(plan)
    sparse = model.channel_sparse
    models = [predict_fn(build_for(data, model, candidate.architecture_hparams, seed),
                         channel_sparse=sparse)
              for candidate, seed in zip(plan.candidates, plan.candidate_seeds, strict=True)]
    return [untrained_record(plan, position, loss, data)
            for position, loss in enumerate(validation_mses(models, data))]


def plan_specs(plan: SearchPlan) -> tuple[ModelSpec, MethodSpec]:
    """The model and method specs a plan of registered ones carries (`training.plan_search`, `plan_method_search`)."""
    if plan.model is None or plan.method_spec is None:
        raise ValueError(f"The plan of {plan.architecture!r} names no registered model and method (a model outside "
                         "the registry): score it with its own predictor.")
    return plan.model, plan.method_spec


class StoredPredictors:
    """Predictors of the stored candidates of one plan (a wrapper's baseline), each restored from the store once (a
    wrapper's variants share them)."""

    def __init__(self, data: PreparedData, store: CandidateStore, plan: SearchPlan) -> None:
        self.data, self.store = data, store
        self.model, self.method = plan_specs(plan)
        self._cache: dict[str, tuple[Predictor, Any]] = {}

    def get(self, result: CandidateResult) -> tuple[Predictor, Any]:
        """`(predict, state)` of a finished candidate of the plan."""
        if result.candidate_hash not in self._cache:
            self._cache[result.candidate_hash] = candidate_predictor(
                self.data, result, self.store.restore(result), self.model, self.method)
        return self._cache[result.candidate_hash]


def trained_model(data: PreparedData, result: CandidateResult, weights: dict, model: ModelSpec,
                  method: MethodSpec) -> nnx.Module:
    """A candidate of `model` and `method` rebuilt with its weights (in what the method's spec puts around the
    model), in eval mode."""
    hparams = {key: value for key, value in result.hparams.items() if key != "lr"}
    return restore_model(data, model, hparams, result.model_seed, weights,
                         revin=method.model_wrapping(result.recipe))


def candidate_predictor(data: PreparedData, result: CandidateResult, weights: dict, model: ModelSpec,
                        method: MethodSpec) -> tuple[Predictor, Any]:
    """`(predict, state)` of a rebuilt candidate of `model` and `method`; the channel-sparse form where the model's
    spec allows (a model a method wraps runs in full)."""
    sparse = model.channel_sparse and not method.model_wrapping(result.recipe)
    return predict_fn(trained_model(data, result, weights, model, method), channel_sparse=sparse)


def wrapped_predictor(data: PreparedData, method: MethodSpec, recipe: dict[str, Any], baseline: Selection,
                      stored: StoredPredictors) -> tuple[Predictor, Any]:
    """The wrap-kind variant's predictor: the method's wrapper over the stored baseline candidates it chooses from
    the finished ones ranked by the selection key (the first is the baseline winner)."""
    wrapper = method.wrapper
    assert wrapper is not None  # a wrap-kind method (the only kind this is called for) has a wrapper
    ranked = sorted((r for r in baseline.candidates if r.is_finished), key=selection_key)
    members = [stored.get(result) for result in wrapper.members(read_only(recipe), ranked)]
    return wrapper.predictor(read_only(recipe), members, seed=data.spec.seeds.noise_seed)


def winner_predictor(data: PreparedData, selection: Selection, store: CandidateStore | None) -> tuple[Predictor, Any]:
    """The selected candidate as a predictor with its state."""
    winner = selection.winner
    model, method = plan_specs(selection.plan)
    if selection.kind == "wrapped":
        assert selection.baseline is not None  # a wrapped selection chose from the baseline's candidates
        return wrapped_predictor(data, method, winner.recipe, selection.baseline,
                                 StoredPredictors(data, _required(store, winner.architecture),
                                                  selection.baseline.plan))
    weights = _required(store, winner.architecture).restore(winner) if selection.is_trained else NO_WEIGHTS
    return candidate_predictor(data, winner, weights, model, method)


def evaluate_selection(data: PreparedData, cfg: RunConfig, selection: Selection,
                       store: CandidateStore | None) -> EvaluatedModel:
    """Evaluate the winner (rebuilt from the specs its plan carries) under the eight scenarios, with `cfg`'s
    evaluation settings (and its clean validation MSE)."""
    predict, state = winner_predictor(data, selection, store)
    return evaluate_winner(data, cfg, selection, predict, state)


def evaluate_winner(data: PreparedData, cfg: RunConfig, selection: Selection, predict: Predictor,
                    state: Any) -> EvaluatedModel:
    """Evaluate the selection's winner, given as `(predict, state)`, under the eight scenarios (with its clean
    validation MSE and the selection record); the Python API's own models (`sfbench_jax.api`) come this way."""
    winner = selection.winner
    evaluated = evaluate_model(data, cfg, predict, state, hyperparameters={**winner.hparams, **winner.recipe})
    return dataclasses.replace(evaluated, variant=winner.variant, selection_metric=selection.selection_metric,
                               selection_value=winner.best_val_loss)


def evaluate_model(data: PreparedData, cfg: RunConfig, predict: Predictor, state: Any, *,
                   hyperparameters: dict[str, Any]) -> EvaluatedModel:
    """Clean validation MSE and the fused evaluation of one predictor, as a summary-ready record."""
    mse_val = validation_mse(predict, state, data)
    evaluation = evaluate_predictor(predict, state, data, cfg.eval, label=cfg.model.name)
    return EvaluatedModel(dataset=data.spec.key, architecture=cfg.model.name, method=cfg.method.name,
                          hyperparameters=hyperparameters, mse_val=mse_val, evaluation=evaluation,
                          ignores_input=scored_forecast_ignores_input(data, predict, state, evaluation))


def scored_forecast_ignores_input(data: PreparedData, predict: Predictor, state: Any, evaluation: Evaluation) -> bool:
    """Whether the scored predictor forecasts the same for every input. Only a predictor whose faulted losses all
    equal its clean ones (every D exactly 1, as an input-blind forecast's are) is run again, on distinct real windows
    (`contracts.ignores_its_input`): the check costs nothing for any other."""
    losses = evaluation.losses
    if not np.allclose(losses.faulted, np.broadcast_to(losses.clean, losses.faulted.shape), rtol=1e-5, atol=0.0,
                       equal_nan=True):
        return False
    return ignores_its_input(predict, state, probe_windows(data, INPUT_PROBE_WINDOWS))


def select_and_evaluate(data: PreparedData, cell: ResolvedCell, store: CandidateStore | None,
                        log: Log) -> tuple[Selection, EvaluatedModel]:
    """The whole cell: select on clean validation, then evaluate the winner."""
    selection = select_model(data, cell, store, log)
    return selection, evaluate_selection(data, cell.cfg, selection, store)
