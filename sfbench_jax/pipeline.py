"""`run(cfg, output_dir)`: the one path every `sfbench` run takes.

load + validate data -> prepare windows -> select the model on clean validation -> evaluate the winner
under the eight scenarios -> write summary.csv, per_window.parquet, manifest.json and the heatmap.
Every step is a plain library call; nothing is written outside `output_dir`.
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass
from pathlib import Path

from sfbench_jax.config import RunConfig
from sfbench_jax.data import load, prepare
from sfbench_jax.data.prepared import PreparedData
from sfbench_jax.evaluate import EvalOptions, evaluate_predictor, predict_fn, validation_mse
from sfbench_jax.models.seasonal_naive import SeasonalNaive
from sfbench_jax.report.figures import scenario_heatmap
from sfbench_jax.report.io import ensure_writable_dir, write_csv, write_json, write_parquet
from sfbench_jax.report.manifest import code_revision, device_description, package_versions, to_plain
from sfbench_jax.report.tables import EvaluatedModel, per_window_table, summary_table


@dataclass(frozen=True)
class RunResult:
    """What a run produced: the evaluated models and the files written."""

    models: list[EvaluatedModel]
    files: dict[str, Path]


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


def run(cfg: RunConfig, output_dir: Path) -> RunResult:
    """Run the benchmark for one dataset and model and write the results into `output_dir`.

    Raises:
        PermissionError: `output_dir` cannot be written (raised before any work).
        ValueError / DataContractError: bad configuration or data (raised before evaluation).
    """
    started = time.perf_counter()
    output_dir = ensure_writable_dir(Path(output_dir))
    timings: dict[str, float] = {}
    series = load(cfg.dataset.name, data_root=None if cfg.data_root is None else Path(cfg.data_root),
                  cache_dir=None if cfg.cache_dir is None else Path(cfg.cache_dir))
    data = prepare(series)
    timings["load_seconds"] = time.perf_counter() - started
    _log(f"{data.spec.label}: {series.num_rows} rows x {data.spec.num_channels} channels, content "
         f"checksum {'matches' if series.matches_reference else 'DIFFERS FROM'} the reference",
         cfg.eval.progress)

    models = [evaluate_seasonal_naive(data, cfg)]
    timings["evaluate_seconds"] = time.perf_counter() - started - timings["load_seconds"]

    files: dict[str, Path] = {}
    summary = summary_table(models)
    files["summary"] = write_csv(summary, output_dir / "summary.csv")
    files["per_window"] = write_parquet(per_window_table(models), output_dir / "per_window.parquet")
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
    files["manifest"] = write_json(manifest, output_dir / "manifest.json")
    row = summary.iloc[0]
    _log(f"done in {timings['total_seconds']:.1f} s: MSE_c {row.mse_c:.3f}, D_w {row.d_w:.3f} "
         f"({row.worst_scenario}), MSE_w {row.mse_w:.3f} -> {output_dir}", cfg.eval.progress)
    return RunResult(models=models, files=files)
