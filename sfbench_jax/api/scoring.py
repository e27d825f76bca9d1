"""The Python front door's two verbs: `train` (one cell's selection under the protocol, the candidate store and all,
as `sfbench` selects it) and `evaluate` (a registered model, a `TrainedModel`, a Flax NNX module or a predict
function scored by the fused engine under the eight scenarios, with the anchor's normalised scores, as `sfbench`
scores it). Both build the run's `RunConfig` and call the pipeline's own steps (`pipeline.runner`,
`pipeline.cell`); nothing here trains, scores or writes by itself.

A trainable registered model (dlinear, gru, ...) is never trained behind `evaluate`'s back: `evaluate("dlinear")`
is refused in one line pointing to `sfb.train`, whose result `evaluate` then scores. A registered model without
weights to train (seasonal_naive, and external / chronos2 through `train(..., hparams=...)`) is selected and scored
in one call. The store `train` uses by default is the one `sfbench` uses (`$SFBENCH_STORE_DIR`, else
`~/.cache/sfbench-jax/candidates`), so a cell trained by either is never trained again by the other.
"""

from __future__ import annotations

import dataclasses
import os
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import pandas as pd

from sfbench_jax.api.results import Result
from sfbench_jax.api.user_models import EXTERNAL, UserModel, model_name, user_model, user_selection
from sfbench_jax.config import DatasetConfig, EvalConfig, MethodConfig, ModelConfig, RunConfig, TrainConfig
from sfbench_jax.data.prepared import PreparedData
from sfbench_jax.methods import get_method
from sfbench_jax.models.registry import MODELS, get_spec
from sfbench_jax.pipeline.cell import EvaluatedModel, Selection, evaluate_selection, evaluate_winner, select_model
from sfbench_jax.pipeline.contracts import check_run_data_contracts
from sfbench_jax.pipeline.outputs.tables import candidates_table
from sfbench_jax.pipeline.resolved import resolve_cell
from sfbench_jax.pipeline.runner import (
    PhaseClock,
    check_cell,
    evaluate_anchor,
    is_anchor_run,
    load_data,
    log_to_stderr,
)
from sfbench_jax.training import CandidateStore

#: The dataset `sfbench` uses when none is named.
DEFAULT_DATASET = "etth1"
#: Anchors (the dataset's SeasonalNaive winner on a run's windows and faults) kept per process: a notebook scoring
#: several models on one dataset and evaluation selects and scores the anchor once (it is deterministic).
ANCHORS_KEPT = 8
_ANCHORS: OrderedDict[tuple[Any, ...], EvaluatedModel] = OrderedDict()

Options = TypeVar("Options", EvalConfig, TrainConfig)


@dataclass(frozen=True, repr=False)
class TrainedModel:
    """A cell selected under the protocol (`sfb.train`): what `sfb.evaluate` scores without training again.

    Attributes:
        config: the cell's settings (`RunConfig`: dataset, model, method, training; `train.store_dir` the store).
        selection: every candidate's record and the winner (`pipeline.cell.Selection`).
        data: the prepared dataset.
        timings: the load and selection phases' wall seconds.
        notes: contract checks that could not apply.
    """

    config: RunConfig
    selection: Selection
    data: PreparedData
    timings: Mapping[str, float] = field(default_factory=dict)
    notes: tuple[str, ...] = ()

    @property
    def candidates(self) -> pd.DataFrame:
        """One row per candidate (the columns of candidates.csv), the winner marked in `is_winner`."""
        return candidates_table(self.selection)

    @property
    def hyperparameters(self) -> dict[str, Any]:
        """The winner's hyperparameters and method recipe."""
        winner = self.selection.winner
        return {**winner.hparams, **winner.recipe}

    @property
    def store(self) -> CandidateStore | None:
        """The candidate store holding the winner's weights (None when nothing was trained)."""
        return CandidateStore(Path(self.config.train.store_dir)) if self.config.train.store_dir else None

    def __repr__(self) -> str:
        cfg, winner = self.config, self.selection.winner
        return (f"TrainedModel({cfg.dataset.name} / {cfg.model.name} / {cfg.method.name}: trial "
                f"{winner.trial_number} of {len(self.selection.candidates)}, {self.selection.selection_metric} "
                f"{winner.best_val_loss:.5f})")


def options(kind: type[Options], given: Options | Mapping[str, Any] | None, **defaults: Any) -> Options:
    """`given` as `kind` (`EvalConfig` or `TrainConfig`): the object itself, or a mapping of its settings (unknown
    names refused in one line listing the valid ones); None takes `kind`'s defaults (with `defaults`)."""
    if isinstance(given, kind):
        return given
    if given is None:
        return kind(**defaults)
    if not isinstance(given, Mapping):
        raise TypeError(f"expected {kind.__name__} or a mapping of its settings, got {type(given).__name__}.")
    valid = [item.name for item in dataclasses.fields(kind)]
    unknown = sorted(set(given) - set(valid))
    if unknown:
        raise ValueError(f"Unknown {kind.__name__} setting(s) {unknown}; valid: {valid}.")
    return kind(**{**defaults, **given})


def run_config(dataset: str, data_root: str | Path | None, cache_dir: str | Path | None, **parts: Any) -> RunConfig:
    """The `RunConfig` of a front-door call: `parts` (model, method, train, eval) on `dataset`, with `data_root` and
    `cache_dir` as `sfbench` resolves them (`SFBENCH_DATA_ROOT`, `SFBENCH_CACHE_DIR`, else `~/.cache/sfbench-jax`),
    given ones first."""
    root = data_root if data_root is not None else os.environ.get("SFBENCH_DATA_ROOT")
    cache = cache_dir if cache_dir is not None else os.environ.get(
        "SFBENCH_CACHE_DIR", str(Path(os.environ.get("HOME", ".")) / ".cache" / "sfbench-jax"))
    return RunConfig(dataset=DatasetConfig(name=dataset), data_root=None if root is None else str(root),
                     cache_dir=str(cache), **parts)


def default_store() -> Path:
    """The candidate store `sfbench` uses: `$SFBENCH_STORE_DIR`, else `~/.cache/sfbench-jax/candidates`."""
    return Path(os.environ.get("SFBENCH_STORE_DIR",
                               str(Path(os.environ.get("HOME", ".")) / ".cache" / "sfbench-jax" / "candidates")))


def train(model: str, *, dataset: str = DEFAULT_DATASET, method: str = "baseline",
          hparams: Mapping[str, Any] | None = None, grid: Mapping[str, Any] | None = None,
          train: TrainConfig | Mapping[str, Any] | None = None, store: str | Path | None = None,
          data_root: str | Path | None = None, cache_dir: str | Path | None = None) -> TrainedModel:
    """Select one cell (dataset, registered model, method) on clean validation, exactly as `sfbench` does: the
    seeded random subgrid of candidates, each trained (or, without weights, scored as built) through the
    resumable candidate store, the winner by `(validation loss, trial, candidate hash)`; a method cell first
    selects its baseline.

    Args:
        model: a registered model name (`sfbench_jax.api.list_models()`).
        dataset: a registered dataset key.
        method: a robustness method (baseline, adversarial_training, ..., ensemble, randomized_smoothing).
        hparams: hyperparameters pinned to one value each (`model.hparams`; e.g. `{"target": "pkg.mod:predict"}`
            for `external`).
        grid: the search space `{hyperparameter: [values]}` (`model.grid`; default: the model's preset grid).
        train: `TrainConfig` or a mapping of its settings (e.g. `{"max_epochs": 5, "candidate_budget": 4}`).
        store: the candidate store (finished candidates are never retrained); default: `sfbench`'s
            (`default_store`).
        data_root, cache_dir: as `sfbench`'s `data_root` / `cache_dir` (needed for datasets not shipped).

    Raises:
        ValueError: an unknown name or setting, a method that does not apply, a search space without a valid
            candidate, a store that cannot be written (one line each, before any training).
    """
    clock = PhaseClock()
    settings = options(TrainConfig, train)
    if settings.store_dir is None or store is not None:
        settings = dataclasses.replace(settings, store_dir=str(Path(store if store is not None else default_store())))
    model_grid, pins = dict(grid) if grid else preset_grid(get_spec(model).grid), dict(hparams or {})
    cfg = run_config(dataset, data_root, cache_dir, train=settings,
                     model=ModelConfig(name=model, grid=model_grid, hparams=pins, target=pins.get("target"),
                                       weights=pins.get("weights")),
                     method=MethodConfig(name=method, grid=preset_grid(get_method(method).grid)))
    cell = resolve_cell(cfg)  # the one lookup of the names; the specs travel down from here
    notes = check_cell(cell)
    data = load_data(cfg)
    notes += check_run_data_contracts(cell, data)
    clock.lap("load")
    candidate_store = CandidateStore(Path(str(settings.store_dir)))
    if cell.model.is_trainable:
        candidate_store.ensure_writable()
    selection = select_model(data, cell, candidate_store, log_to_stderr(settings.progress))
    clock.lap("select")
    return TrainedModel(config=cfg, selection=selection, data=data, timings=dict(clock.seconds), notes=notes)


def preset_grid(grid: Mapping[str, Any]) -> dict[str, list[Any]]:
    """A spec's grid as `sfbench`'s preset states it (`model.grid`, `method.grid`: lists), so a run's key is the
    command's."""
    return {key: list(values) for key, values in grid.items()}


def evaluate(model: object, *, dataset: str | None = None, eval: EvalConfig | Mapping[str, Any] | None = None,
             name: str | None = None, data_root: str | Path | None = None,
             cache_dir: str | Path | None = None) -> Result:
    """Score a model under the eight scenarios on the dataset's K test windows, as `sfbench` scores it (the same
    windows, fault keys, engine, scores, 95% intervals and the anchor's normalised scores).

    Args:
        model: a registered model name without weights to train (e.g. "seasonal_naive": selected, then scored);
            a `TrainedModel` from `sfb.train`; a Flax NNX module mapping standardised windows `(B, input_len,
            channels)` to `(B, horizon, targets)` (put in eval mode; its weights as they are); or a predict
            function doing the same on float32 NumPy arrays (the `external` model: NumPy, PyTorch, any host code).
        dataset: a registered dataset key (default: the `TrainedModel`'s, else etth1).
        eval: `EvalConfig` or a mapping of its settings, e.g. `{"k": 1000}` (default: the protocol's, K = 10,000).
        name: the summary's `architecture` of an NNX module (default: its class name in lower case) or of a predict
            function (default: external); never a registered model's.
        data_root, cache_dir: as `sfbench`'s (needed for datasets not shipped).

    Raises:
        TypeError / ValueError: an unknown model or dataset, a trainable model name (train it first), a model whose
            output has the wrong shape, a bad setting: one line naming the problem and the fix, before any work.
        HostModelError: a predict function failed on a block of windows (one line).
    """
    settings = options(EvalConfig, eval)
    if isinstance(model, str):
        model = _untrained(model, dataset, data_root, cache_dir)
    if isinstance(model, TrainedModel):
        return _evaluate_trained(model, dataset, settings)
    summary_name = model_name(model, name)
    cfg = run_config(dataset or DEFAULT_DATASET, data_root, cache_dir, eval=settings)
    clock = PhaseClock()
    data = load_data(cfg)
    clock.lap("load")
    user = user_model(model, data, name=summary_name)
    cfg = dataclasses.replace(cfg, model=_model_config(user))
    selection = user_selection(user, data, cfg.train)
    clock.lap("select")
    evaluated = evaluate_winner(data, cfg, selection, user.predict, user.state)
    return _finished(cfg, data, evaluated, selection, clock, ())


def _model_config(user: UserModel) -> ModelConfig:
    if user.target is not None and user.name == EXTERNAL:
        return ModelConfig(name=user.name, target=user.target)  # as `sfbench model=external model.target=...`
    return ModelConfig(name=user.name, hparams=dict(user.hyperparameters))


def _untrained(model: str, dataset: str | None, data_root: str | Path | None,
               cache_dir: str | Path | None) -> TrainedModel:
    spec = MODELS.get(model)
    if spec is not None and spec.is_trainable:
        raise ValueError(f"sfb.evaluate: {model!r} is trained under the protocol before it is scored; train it first, "
                         f"trained = sfb.train({model!r}, dataset={dataset or DEFAULT_DATASET!r}), then "
                         "sfb.evaluate(trained, eval=...).")
    return train(model, dataset=dataset or DEFAULT_DATASET, data_root=data_root, cache_dir=cache_dir)


def _evaluate_trained(trained: TrainedModel, dataset: str | None, settings: EvalConfig) -> Result:
    if dataset is not None and dataset != trained.config.dataset.name:
        raise ValueError(f"sfb.evaluate: the TrainedModel was selected on {trained.config.dataset.name!r}, not "
                         f"{dataset!r}; leave dataset out, or train on {dataset!r} first.")
    cfg = dataclasses.replace(trained.config, eval=settings)
    clock = PhaseClock()
    clock.seconds.update(trained.timings)
    evaluated = evaluate_selection(trained.data, cfg, trained.selection, trained.store)
    return _finished(cfg, trained.data, evaluated, trained.selection, clock, trained.notes)


def _finished(cfg: RunConfig, data: PreparedData, evaluated: EvaluatedModel, selection: Selection,
              clock: PhaseClock, notes: tuple[str, ...]) -> Result:
    """The evaluated model with its anchor (kept per process: `ANCHORS_KEPT`) as a `Result`."""
    clock.lap("evaluate")
    if is_anchor_run(cfg):
        anchor = evaluated
    else:
        key = (data.spec.key, data.series.content_sha256, dataclasses.replace(cfg.eval, progress=False),
               cfg.train.candidate_budget, cfg.train.master_seed)
        kept = _ANCHORS.pop(key, None)
        anchor = kept if kept is not None else evaluate_anchor(data, cfg, evaluated)
        _ANCHORS[key] = anchor
        while len(_ANCHORS) > ANCHORS_KEPT:
            _ANCHORS.popitem(last=False)
    clock.lap("anchor")
    return Result(config=cfg, evaluated=evaluated, selection=selection, anchor=anchor, data=data,
                  timings=clock.timings(evaluated), notes=notes)
