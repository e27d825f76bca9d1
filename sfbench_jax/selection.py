"""Clean-validation selection of one (dataset, architecture, method) cell (spec 5.3-5.4), the same path for
every model: sample the candidates, fit the trainable ones through the resumable candidate store (a
model without trainable weights skips fitting and is scored on clean validation as built), pick the
winner, rebuild its predictor and evaluate it with the fused engine.

This module joins training and evaluation (it sits above both); what each step does lives in
`sfbench_jax.train` and `sfbench_jax.evaluate`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from flax import nnx

from sfbench_jax.config import RunConfig
from sfbench_jax.data.prepared import PreparedData
from sfbench_jax.evaluate import Evaluation, evaluate_predictor, predict_fn, validation_mse
from sfbench_jax.evaluate.kernel import PredictFn
from sfbench_jax.models.registry import get_spec
from sfbench_jax.train import (
    CandidateResult,
    CandidateStore,
    SearchPlan,
    plan_search,
    restore_model,
    run_search,
    select_winner,
    untrained_record,
)
from sfbench_jax.train.fit import build_for

#: The checkpoint of a model without trainable weights.
NO_WEIGHTS: dict[str, dict] = {"params": {}, "batch_stats": {}}

Log = Callable[[str], None]


@dataclass(frozen=True)
class Selection:
    """The outcome of a cell's clean-validation selection.

    Attributes:
        plan: the sampled candidates and their identities.
        candidates: every candidate's record, in trial order.
        winner: the selected candidate.
        is_trained: whether the candidates were trained (their weights are in the store).
    """

    plan: SearchPlan
    candidates: list[CandidateResult] = field(repr=False)
    winner: CandidateResult
    is_trained: bool


@dataclass(frozen=True)
class EvaluatedModel:
    """One evaluated model and how it was chosen."""

    dataset: str
    architecture: str
    method: str
    hyperparameters: dict[str, Any]
    mse_val: float
    evaluation: Evaluation


def candidate_store(cfg: RunConfig, output_dir: Path) -> CandidateStore:
    """The candidate store of a run (`train.store_dir`, default `<run dir>/candidates`)."""
    root = Path(cfg.train.store_dir).expanduser() if cfg.train.store_dir else Path(output_dir) / "candidates"
    return CandidateStore(root)


def select_model(data: PreparedData, cfg: RunConfig, store: CandidateStore | None, log: Log) -> Selection:
    """Fit (trainable) or score (untrained) every sampled candidate on clean validation; pick the winner.

    Raises:
        ValueError: a trainable model without a candidate store.
    """
    name = cfg.model.name
    plan = plan_search(data, name, options=cfg.train, grid=cfg.model.grid or None, fixed=cfg.model.hparams,
                       method=cfg.method.name)
    is_trained = get_spec(name).is_trainable
    if is_trained:
        if store is None:
            raise ValueError(f"{name} is trained: give a candidate store (train.store_dir).")
        candidates = run_search(data, plan, store=store, options=cfg.train, log=log)
    else:
        candidates = score_untrained(data, plan)
    winner = select_winner(candidates)
    failed = sum(not result.is_finished for result in candidates)
    settings = ", ".join(f"{key}={value}" for key, value in winner.hparams.items())
    log(f"{name}: selected trial {winner.trial_number} ({settings}; validation loss {winner.best_val_loss:.5f}) "
        f"of {len(candidates)} candidate(s), {failed} failed")
    return Selection(plan=plan, candidates=candidates, winner=winner, is_trained=is_trained)


def score_untrained(data: PreparedData, plan: SearchPlan) -> list[CandidateResult]:
    """Records of candidates without trainable weights: each scored on clean validation as built."""
    records = []
    for position, candidate in enumerate(plan.candidates):
        model = build_for(data, plan.architecture, candidate.architecture_hparams, plan.model_seed)
        records.append(untrained_record(plan, position, validation_mse(*predict_fn(model), data), data))
    return records


def winner_model(data: PreparedData, selection: Selection, store: CandidateStore | None) -> nnx.Module:
    """The selected candidate rebuilt with its weights, in eval mode."""
    winner = selection.winner
    weights = store.restore(winner) if selection.is_trained else NO_WEIGHTS
    hparams = {key: value for key, value in winner.hparams.items() if key != "lr"}
    return restore_model(data, winner.architecture, hparams, winner.model_seed, weights)


def evaluate_selection(data: PreparedData, cfg: RunConfig, selection: Selection,
                       store: CandidateStore | None) -> EvaluatedModel:
    """Evaluate the winner under the eight scenarios (with its clean validation MSE)."""
    predict, state = predict_fn(winner_model(data, selection, store))
    return evaluate_model(data, cfg, predict, state, hyperparameters=dict(selection.winner.hparams))


def evaluate_model(data: PreparedData, cfg: RunConfig, predict: PredictFn, state: Any, *,
                   hyperparameters: dict[str, Any]) -> EvaluatedModel:
    """Clean validation MSE and the fused evaluation of one predictor, as a summary-ready record."""
    mse_val = validation_mse(predict, state, data)
    evaluation = evaluate_predictor(predict, state, data, cfg.eval, label=cfg.model.name)
    return EvaluatedModel(dataset=data.spec.key, architecture=cfg.model.name, method=cfg.method.name,
                          hyperparameters=hyperparameters, mse_val=mse_val, evaluation=evaluation)


def select_and_evaluate(data: PreparedData, cfg: RunConfig, store: CandidateStore | None,
                        log: Log) -> tuple[Selection, EvaluatedModel]:
    """The whole cell: select on clean validation, then evaluate the winner."""
    selection = select_model(data, cfg, store, log)
    return selection, evaluate_selection(data, cfg, selection, store)
