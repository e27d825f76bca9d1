"""Small library facade for tools (the MCP server, notebooks): JSON-friendly views of the registries and
a one-call SeasonalNaive robustness score. The CLI uses the same functions underneath."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sfbench_jax.config import DatasetConfig, EvalConfig, RunConfig
from sfbench_jax.data import DATASETS, get_dataset, load, prepare
from sfbench_jax.faults import SCENARIOS
from sfbench_jax.selection import select_and_evaluate


def list_datasets() -> list[dict[str, Any]]:
    """Registered forecasting datasets with their shape, targets and windows."""
    return [{"name": spec.key, "label": spec.label, "rows": spec.expected_rows,
             "channels": spec.num_channels, "continuous_channels": len(spec.continuous_pool),
             "targets": list(spec.target_channels) if spec.target_channels else "all",
             "input_len": spec.input_len, "horizon": spec.horizon, "batch_size": spec.batch_size,
             "synthetic": spec.is_synthetic} for spec in DATASETS.values()]


def list_scenarios() -> list[dict[str, Any]]:
    """The eight scored fault scenarios in canonical order."""
    return [{"index": fault.index, "name": fault.key, "display_name": fault.display_name,
             "fault_class": fault.fault_class, "channel_scoped": fault.is_channel_scoped}
            for fault in SCENARIOS]


def seasonal_naive_robustness(dataset: str, *, data_root: Path | None, k: int = 10_000,
                              eval_seed: int | None = None, rng: str = "jax") -> dict[str, Any]:
    """Select SeasonalNaive on clean validation and score it under the eight scenarios.

    Args:
        dataset: registered dataset name.
        data_root: folder laid out like ../shared/data (not needed for etth1 and synthetic sets).
        k: number of test windows.
        eval_seed: evaluation-data seed (None: the dataset's canonical seed).
        rng: "jax" or "reference".

    Returns:
        A small JSON-able dict: season, MSE_c, MSE_w, D_w (with 95% intervals), worst scenario, D-bar,
        mPC and the per-scenario degradation.
    """
    spec = get_dataset(dataset)
    cfg = RunConfig(dataset=DatasetConfig(name=spec.key), eval=EvalConfig(rng=rng, seed=eval_seed, k=k, progress=False))
    data = prepare(load(spec.key, data_root=data_root))
    _, model = select_and_evaluate(data, cfg, store=None, log=lambda message: None)
    scores, ci = model.evaluation.scores, model.evaluation.intervals
    keys = model.evaluation.losses.scenario_keys
    return {
        "dataset": spec.key, "model": "seasonal_naive", "season_length": model.hyperparameters["season_length"],
        "rng": rng, "eval_seed": model.evaluation.options.seed, "k": k,
        "mse_val": round(model.mse_val, 6),
        "mse_c": round(scores.mse_c, 6), "mse_w": round(scores.mse_w, 6),
        "d_w": round(scores.d_w, 6), "d_w_ci": [round(ci.d_w.low, 6), round(ci.d_w.high, 6)],
        "worst_scenario": keys[scores.worst_index], "d_mean": round(scores.d_mean, 6),
        "mpc": round(scores.mpc, 6),
        "degradation": {key: round(float(value), 6) for key, value in zip(keys, scores.d_p, strict=True)},
    }
