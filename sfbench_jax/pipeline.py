"""`run(cfg, output_dir)`: the one path every `sfbench` run takes.

load + validate data -> prepare windows -> select the model on clean validation (SeasonalNaive: its
season grid; trainable architectures: a resumable random-subgrid sweep through the candidate store,
spec 5.3-5.4) -> evaluate the winner under the eight scenarios -> write summary.csv,
per_window.parquet, manifest.json and the heatmap (plus candidates.csv and training_curves.parquet
for trained architectures). Every step is a plain library call; nothing is written outside
`output_dir` except finished candidates in the candidate store (`train.store_dir`) and, under
`cache_dir`, derived data files and compiled programs (`compilation_cache`).
"""

from __future__ import annotations

import json
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jax
import pandas as pd
from jax.experimental.compilation_cache import compilation_cache

from sfbench_jax.config import RunConfig
from sfbench_jax.data import load, prepare
from sfbench_jax.data.prepared import PreparedData
from sfbench_jax.evaluate import EvalOptions, evaluate_predictor, predict_fn, validation_mse
from sfbench_jax.models.seasonal_naive import SeasonalNaive
from sfbench_jax.report.figures import scenario_heatmap
from sfbench_jax.report.io import ensure_writable_dir, write_csv, write_json, write_parquet
from sfbench_jax.report.manifest import (
    code_revision,
    device_description,
    package_versions,
    to_plain,
)
from sfbench_jax.report.tables import EvaluatedModel, per_window_table, summary_table
from sfbench_jax.train import (
    CandidateResult,
    CandidateStore,
    TrainOptions,
    plan_search,
    restore_model,
    run_search,
    select_winner,
)
from sfbench_jax.train.sweep import SearchPlan

#: Candidates trained together under vmap when `train.group_size` is null, per JAX backend. On CPU the
#: epoch is compute-bound: 8 candidates split over the cores train 1.1-2.4x faster than one after another
#: (benchmarks/training.py), but a group runs until its last member stops, so a sweep's learning-rate
#: siblings gain little; on accelerators one small candidate leaves the device mostly idle.
AUTO_GROUP_SIZE = {"cpu": 1}
AUTO_GROUP_SIZE_ACCELERATOR = 8


@dataclass(frozen=True)
class RunResult:
    """What a run produced: the evaluated models and the files written."""

    models: list[EvaluatedModel]
    files: dict[str, Path]
    candidates: list[CandidateResult] = field(default_factory=list)


def _log(message: str, enabled: bool) -> None:
    if enabled:
        print(f"[sfbench] {message}", file=sys.stderr, flush=True)


def eval_options(cfg: RunConfig, data: PreparedData) -> EvalOptions:
    """Engine options from the config (canonical eval seed = the dataset's data seed)."""
    seed = data.spec.seeds.canonical_eval_data_seed if cfg.eval.seed is None else cfg.eval.seed
    return EvalOptions(eval_data_seed=seed, rng=cfg.eval.rng, num_windows=cfg.eval.k,
                       chunk_size=cfg.eval.chunk_size, block_size=cfg.eval.block_size,
                       fixed_fraction=cfg.eval.channel_fraction,
                       memory_budget_mb=cfg.eval.memory_budget_mb, num_devices=cfg.eval.num_devices,
                       progress=cfg.eval.progress)


def select_seasonal_naive(data: PreparedData, season_grid: tuple[int, ...]) -> tuple[int, dict[int, float]]:
    """Pick the season with the lowest clean validation MSE (ties: first in grid order)."""
    spec = data.spec
    scores: dict[int, float] = {}
    for season in season_grid:
        model = SeasonalNaive(season_length=int(season), input_len=spec.input_len, horizon=spec.horizon,
                              target_indices=spec.target_indices)
        predict, state = predict_fn(model)
        scores[int(season)] = validation_mse(predict, state, data)
    best = min(scores, key=lambda season: (scores[season], list(scores).index(season)))
    return best, scores


def evaluate_seasonal_naive(data: PreparedData, cfg: RunConfig) -> EvaluatedModel:
    """Select SeasonalNaive's season on clean validation and evaluate the winner."""
    spec = data.spec
    season, val_scores = select_seasonal_naive(data, cfg.model.season_grid)
    _log(f"SeasonalNaive: validation MSE per season {({s: round(v, 4) for s, v in val_scores.items()})}; "
         f"selected season {season}", cfg.eval.progress)
    model = SeasonalNaive(season_length=season, input_len=spec.input_len, horizon=spec.horizon,
                          target_indices=spec.target_indices)
    predict, state = predict_fn(model)
    evaluation = evaluate_predictor(predict, state, data, eval_options(cfg, data),
                                    bootstrap_draws=cfg.eval.bootstrap_draws, label="seasonal_naive")
    return EvaluatedModel(dataset=spec.key, architecture="seasonal_naive", method="baseline",
                          hyperparameters={"season_length": season}, mse_val=val_scores[season],
                          evaluation=evaluation)


def train_options(cfg: RunConfig) -> TrainOptions:
    """Training options from the config (null group size: per backend, see AUTO_GROUP_SIZE)."""
    group_size = cfg.train.group_size
    if group_size is None:
        group_size = AUTO_GROUP_SIZE.get(jax.default_backend(), AUTO_GROUP_SIZE_ACCELERATOR)
    return TrainOptions(max_epochs=cfg.train.max_epochs, patience=cfg.train.patience,
                        min_delta=cfg.train.min_delta, steps_per_epoch=cfg.train.steps_per_epoch,
                        group_size=group_size, devices=cfg.train.devices, progress=cfg.train.progress)


def candidate_store(cfg: RunConfig, output_dir: Path) -> CandidateStore:
    """The candidate store of a run (`train.store_dir`, default `<run dir>/candidates`)."""
    root = Path(cfg.train.store_dir).expanduser() if cfg.train.store_dir else Path(output_dir) / "candidates"
    return CandidateStore(root)


@dataclass(frozen=True)
class TrainedSelection:
    """The outcome of a trained architecture's search: the evaluated winner and every candidate."""

    model: EvaluatedModel
    plan: SearchPlan
    candidates: list[CandidateResult]
    winner: CandidateResult
    store: CandidateStore


def evaluate_trained(data: PreparedData, cfg: RunConfig, store: CandidateStore) -> TrainedSelection:
    """Sweep the random subgrid (resuming from the store), select on clean validation, evaluate."""
    name = cfg.model.name
    options = train_options(cfg)
    plan = plan_search(data, name, options=options, budget=cfg.train.candidate_budget, grid=cfg.model.grid or None,
                       fixed=cfg.model.hparams, method=cfg.method.name, master_seed=cfg.train.master_seed)
    candidates = run_search(data, plan, store=store, options=options,
                            log=lambda message: _log(message, cfg.eval.progress))
    winner = select_winner(candidates)
    failed = sum(not result.is_finished for result in candidates)
    _log(f"{name}: selected trial {winner.trial_number} {winner.hparams} (best validation loss "
         f"{winner.best_val_loss:.5f}, epoch {winner.best_epoch + 1}); {failed} failed candidate(s)",
         cfg.eval.progress)
    architecture_hparams = {key: value for key, value in winner.hparams.items() if key != "lr"}
    model = restore_model(data, name, architecture_hparams, winner.model_seed, store.restore(winner))
    predict, state = predict_fn(model)
    mse_val = validation_mse(predict, state, data)
    evaluation = evaluate_predictor(predict, state, data, eval_options(cfg, data),
                                    bootstrap_draws=cfg.eval.bootstrap_draws, label=name)
    evaluated = EvaluatedModel(dataset=data.spec.key, architecture=name, method=cfg.method.name,
                               hyperparameters=dict(winner.hparams), mse_val=mse_val, evaluation=evaluation)
    return TrainedSelection(model=evaluated, plan=plan, candidates=candidates, winner=winner, store=store)


def candidates_table(selection: TrainedSelection) -> pd.DataFrame:
    """One row per candidate of the search: identity, outcome and whether it won."""
    rows = [{
        "dataset": result.dataset, "architecture": result.architecture, "method": result.method,
        "trial_number": result.trial_number, "grid_index": result.grid_index,
        "candidate_hash": result.candidate_hash, "hyperparameters": json.dumps(result.hparams, sort_keys=True),
        "lr": float(result.hparams["lr"]), "model_seed": result.model_seed, "status": result.status,
        "best_val_loss": result.best_val_loss, "best_epoch": result.best_epoch, "epochs_run": result.epochs_run,
        "stop_reason": result.stop_reason, "train_seconds": result.train_seconds,
        "group_size": result.group_size, "is_winner": result.candidate_hash == selection.winner.candidate_hash,
    } for result in selection.candidates]
    frame = pd.DataFrame(rows)
    for column in ("dataset", "architecture", "method", "status", "stop_reason"):
        frame[column] = frame[column].astype("string")
    return frame


def training_curves_table(selection: TrainedSelection) -> pd.DataFrame:
    """Per-candidate validation and training loss per epoch (tidy)."""
    rows: list[dict[str, Any]] = []
    for result in selection.candidates:
        for epoch, (val, train) in enumerate(zip(result.val_curve, result.train_curve, strict=True)):
            rows.append({"trial_number": result.trial_number, "candidate_hash": result.candidate_hash,
                         "epoch": epoch, "val_loss": float("nan") if val is None else val,
                         "train_loss": float("nan") if train is None else train})
    frame = pd.DataFrame(rows, columns=["trial_number", "candidate_hash", "epoch", "val_loss", "train_loss"])
    return frame.astype({"trial_number": "int32", "epoch": "int32", "val_loss": "float64",
                         "train_loss": "float64"})


#: Programs that compile faster than this are not worth a cache file (JAX's default is 1 s, which would
#: leave out the season-selection and bootstrap programs of a SeasonalNaive run).
MIN_CACHED_COMPILE_SECONDS = 0.1


def use_compilation_cache(cfg: RunConfig) -> Path | None:
    """Point JAX's persistent compilation cache at `<cache_dir>/xla`, or switch it off
    (`compilation_cache=false` or no `cache_dir`). Returns the folder in use.

    Raises:
        PermissionError: the folder cannot be created or written (before any work).
    """
    folder = None
    if cfg.compilation_cache and cfg.cache_dir is not None:
        folder = ensure_writable_dir(Path(cfg.cache_dir).expanduser() / "xla", what="compilation cache folder",
                                     fix="Set cache_dir=PATH to a writable folder, or compilation_cache=false.")
    wanted = None if folder is None else str(folder)
    if jax.config.jax_compilation_cache_dir != wanted:  # a run in the same process may have set another
        compilation_cache.set_cache_dir(wanted)
        compilation_cache.reset_cache()
    jax.config.update("jax_persistent_cache_min_compile_time_secs", MIN_CACHED_COMPILE_SECONDS)
    return folder


def run(cfg: RunConfig, output_dir: Path) -> RunResult:
    """Run the benchmark for one dataset and model and write the results into `output_dir`.

    Raises:
        PermissionError: `output_dir` cannot be written (raised before any work).
        ValueError / DataContractError: bad configuration or data (raised before evaluation).
    """
    started = time.perf_counter()
    output_dir = ensure_writable_dir(Path(output_dir))
    use_compilation_cache(cfg)
    store = candidate_store(cfg, output_dir) if cfg.model.is_trainable else None
    if store is not None:
        store.ensure_writable()
    timings: dict[str, float] = {}
    series = load(cfg.dataset.name, data_root=None if cfg.data_root is None else Path(cfg.data_root),
                  cache_dir=None if cfg.cache_dir is None else Path(cfg.cache_dir))
    data = prepare(series)
    timings["load_seconds"] = time.perf_counter() - started
    _log(f"{data.spec.label}: {series.num_rows} rows x {data.spec.num_channels} channels, content "
         f"checksum {'matches' if series.matches_reference else 'DIFFERS FROM'} the reference",
         cfg.eval.progress)

    selection: TrainedSelection | None = None
    if store is not None:
        selection = evaluate_trained(data, cfg, store)
        models = [selection.model]
    else:
        models = [evaluate_seasonal_naive(data, cfg)]
    timings["evaluate_seconds"] = time.perf_counter() - started - timings["load_seconds"]

    files: dict[str, Path] = {}
    summary = summary_table(models)
    files["summary"] = write_csv(summary, output_dir / "summary.csv")
    files["per_window"] = write_parquet(per_window_table(models), output_dir / "per_window.parquet")
    if selection is not None:
        files["candidates"] = write_csv(candidates_table(selection), output_dir / "candidates.csv")
        files["training_curves"] = write_parquet(training_curves_table(selection),
                                                 output_dir / "training_curves.parquet")
    if cfg.figures:
        files["heatmap"] = scenario_heatmap(summary, output_dir / "scenario_heatmap.png")
    timings["total_seconds"] = time.perf_counter() - started
    manifest = {
        "config": to_plain(cfg),
        "versions": package_versions(),
        "code_revision": code_revision(Path(__file__).parent),
        "devices": device_description(),
        "data": {"dataset": data.spec.key, "source": series.source_path, "rows": series.num_rows,
                 "content_sha256": series.content_sha256, "matches_reference": series.matches_reference,
                 "signature": data.spec.signature, "data_seed": data.spec.seeds.data_seed},
        "timings": timings,
        "models": [{"architecture": m.architecture, "method": m.method,
                    "hyperparameters": m.hyperparameters, "engine": to_plain(m.evaluation.engine),
                    "bootstrap_seconds": m.evaluation.bootstrap_seconds} for m in models],
        "files": {name: path.name for name, path in files.items()},
    }
    if selection is not None:
        manifest["selection"] = {
            "model_seed": selection.plan.model_seed, "tuning_seed": selection.plan.tuning_seed,
            "valid_candidates": selection.plan.num_valid, "budget": cfg.train.candidate_budget,
            "candidates": len(selection.candidates), "winner": selection.winner.candidate_hash,
            "winner_trial": selection.winner.trial_number, "store": str(selection.store.root),
            "tie_break": "(best_val_loss, trial_number, candidate_hash)",
            "options": to_plain(train_options(cfg)),
        }
    files["manifest"] = write_json(manifest, output_dir / "manifest.json")
    row = summary.iloc[0]
    _log(f"done in {timings['total_seconds']:.1f} s: MSE_c {row.mse_c:.3f}, D_w {row.d_w:.3f} "
         f"({row.worst_scenario}), MSE_w {row.mse_w:.3f} -> {output_dir}", cfg.eval.progress)
    return RunResult(models=models, files=files, candidates=[] if selection is None else selection.candidates)
