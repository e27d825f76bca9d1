"""JSON-friendly views for tools (the MCP server, notebooks): the registries as lists of dicts, a one-call
SeasonalNaive robustness score, and severity-response curves of SeasonalNaive or of a stored run. The CLI uses the
same functions underneath."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from sfbench_jax.config import ANCHOR_MODEL, DatasetConfig, EvalConfig, RunConfig
from sfbench_jax.data import DATASETS, get_dataset, load, prepare
from sfbench_jax.faults import SCENARIOS
from sfbench_jax.faults.registry import extra_scenarios
from sfbench_jax.methods.registry import METHODS
from sfbench_jax.models.registry import MODELS
from sfbench_jax.pipeline.cell import select_and_evaluate
from sfbench_jax.pipeline.resolved import resolve_cell
from sfbench_jax.plugins.entry_points import origin_of


def list_datasets() -> list[dict[str, Any]]:
    """Registered forecasting datasets with their shape, targets and windows."""
    return [{"name": spec.key, "label": spec.label, "rows": spec.expected_rows,
             "channels": spec.num_channels, "continuous_channels": len(spec.continuous_pool),
             "targets": list(spec.target_channels) if spec.target_channels else "all",
             "input_len": spec.input_len, "horizon": spec.horizon, "batch_size": spec.batch_size,
             "synthetic": spec.is_synthetic} for spec in DATASETS.values()]


def list_scenarios() -> list[dict[str, Any]]:
    """The eight scored fault scenarios in canonical order (`extra` false: they make D_w), then the extra scenarios
    of this package's modules and the installed plug-ins (`extra` true: scored only when `eval.scenarios` names
    them, never in D_w), each with where it came from."""
    return [{"index": fault.index, "name": fault.key, "display_name": fault.display_name,
             "fault_class": fault.fault_class, "channel_scoped": fault.is_channel_scoped, "extra": extra,
             "origin": origin_of(fault).describe()}
            for extra, faults in ((False, SCENARIOS), (True, extra_scenarios())) for fault in faults]


def list_models() -> list[dict[str, Any]]:
    """The registered architectures in registry order (the built-ins, then the plug-ins), with their labels,
    capabilities, grid keys and where each came from."""
    return [{"name": spec.name, "label": spec.display_label, "family": spec.family,
             "trainable": spec.is_trainable, "channel_independent": spec.is_channel_independent,
             "channel_sparse": spec.channel_sparse, "supports_revin": spec.supports_revin,
             "hyperparameters": list(spec.hyperparameter_names), "origin": origin_of(spec).describe(),
             "plugin": bool(origin_of(spec).entry_point)} for spec in MODELS.values()]


def list_methods() -> list[dict[str, Any]]:
    """The registered robustness methods in registry order, with their kind, label, the architectures they apply
    to, their recipe keys and where each came from. A method whose own code fails while it is described (its
    `applicable` raises, its preset cannot be read) is still listed, with what it applies to left empty and
    `problem` naming the method, where it came from and the error: the others are listed as usual."""
    return [_method_entry(spec) for spec in METHODS.values()]


def _method_entry(spec: Any) -> dict[str, Any]:
    """One method's entry of `list_methods` (with `problem` where its own code failed)."""
    origin = origin_of(spec)
    entry: dict[str, Any] = {"name": spec.name, "label": spec.display_label, "kind": spec.kind, "applies_to": [],
                             "recipe_keys": [], "origin": origin.describe(), "plugin": bool(origin.entry_point)}
    failed: list[str] = []
    for model in MODELS:
        try:
            if spec.applies_to(model):
                entry["applies_to"].append(model)
        except Exception as error:  # noqa: BLE001 - a plug-in's predicate: named, never fatal to the listing
            failed.append(f"its `applicable` raised {type(error).__name__} ({_first_line(error)}) for {model}")
    try:
        entry["recipe_keys"] = list(spec.grid)
    except Exception as error:  # noqa: BLE001 - a plug-in's preset: named, never fatal to the listing
        failed.append(f"its recipe grid cannot be read: {type(error).__name__} ({_first_line(error)})")
    if failed:
        entry["problem"] = (f"method {spec.name!r} ({origin.describe()}) is broken: " + "; ".join(failed[:3])
                            + (f"; and {len(failed) - 3} more" if len(failed) > 3 else "")
                            + ". Fix or uninstall it; it cannot be used until then")
    return entry


def _first_line(error: BaseException) -> str:
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    return (lines[0] if lines else "no message")[:200]


def seasonal_naive_robustness(dataset: str, *, data_root: Path | None, k: int = 10_000,
                              eval_seed: int | None = None, rng_mode: str = "jax") -> dict[str, Any]:
    """Select SeasonalNaive on clean validation and score it under the eight scenarios.

    Args:
        dataset: registered dataset name.
        data_root: folder laid out like ../shared/data (not needed for etth1 and synthetic sets).
        k: number of test windows.
        eval_seed: evaluation-data seed (None: the dataset's canonical seed).
        rng_mode: "jax" or "reference".

    Returns:
        A small JSON-able dict: season, MSE_c, MSE_w, D_w (with 95% intervals), worst scenario, D-bar,
        mPC and the per-scenario degradation.
    """
    spec = get_dataset(dataset)
    cfg = RunConfig(dataset=DatasetConfig(name=spec.key), eval=EvalConfig(rng_mode=rng_mode, seed=eval_seed, k=k,
                                                                                progress=False))
    data = prepare(load(spec.key, data_root=data_root))
    _, model = select_and_evaluate(data, resolve_cell(cfg), store=None, log=lambda message: None)
    scores, ci = model.evaluation.scores, model.evaluation.intervals
    keys = model.evaluation.losses.scenario_keys
    return {
        "dataset": spec.key, "model": ANCHOR_MODEL, "season_length": model.hyperparameters["season_length"],
        "rng_mode": rng_mode, "eval_seed": model.evaluation.options.seed, "k": k,
        "mse_val": round(model.mse_val, 6),
        "mse_c": round(scores.mse_c, 6), "mse_w": round(scores.mse_w, 6),
        "d_w": round(scores.d_w, 6), "d_w_ci": [round(ci.d_w.low, 6), round(ci.d_w.high, 6)],
        "worst_scenario": keys[scores.worst_index], "d_mean": round(scores.d_mean, 6),
        "mpc": round(scores.mpc, 6),
        "degradation": {key: round(float(value), 6) for key, value in zip(keys, scores.d_p, strict=True)},
    }


# --- severity-response curves --------------------------------------------------------------------------

def curves_summary(curves: Any) -> dict[str, Any]:
    """A SeverityCurves as small JSON: the grid, per scenario D_p(s) with its 95% band and the severity average."""
    averages = curves.severity_average()
    return {
        "severities": [round(float(s), 6) for s in curves.severities], "mse_c": round(curves.mse_c, 6),
        "eval_seed": curves.options.seed, "k": curves.options.k, "rng_mode": curves.options.rng_mode,
        "scenarios": {key: {"d": [round(float(v), 6) for v in curves.d[:, index]],
                            "d_ci": [[round(float(lo), 6), round(float(hi), 6)] for lo, hi in
                                     zip(curves.d_ci_lo[:, index], curves.d_ci_hi[:, index], strict=True)],
                            "severity_average": round(float(averages[index]), 6)}
                      for index, key in enumerate(curves.scenario_keys)},
    }


def seasonal_naive_curves(dataset: str, *, data_root: Path | None, k: int = 2_000, eval_seed: int | None = None,
                          severities: Sequence[float] | None = None) -> dict[str, Any]:
    """Severity curves D_p(s) of the dataset's SeasonalNaive winner (selected on clean validation; JAX RNG mode).

    Args:
        dataset: registered dataset name.
        data_root: folder laid out like ../shared/data (not needed for etth1 and synthetic sets).
        k: number of test windows.
        eval_seed: evaluation-data seed (None: the dataset's canonical seed).
        severities: the grid (default 0, 0.05, ..., 1).
    """
    from sfbench_jax.evaluation.curves import DEFAULT_SEVERITIES, severity_curves
    from sfbench_jax.pipeline.cell import select_model, winner_predictor

    spec = get_dataset(dataset)
    cfg = RunConfig(dataset=DatasetConfig(name=spec.key), eval=EvalConfig(seed=eval_seed, k=k, progress=False))
    data = prepare(load(spec.key, data_root=data_root))
    selection = select_model(data, resolve_cell(cfg), None, lambda message: None)
    predict, state = winner_predictor(data, selection, None)
    curves = severity_curves(predict, state, data, cfg.eval, severities=severities or DEFAULT_SEVERITIES)
    return {"dataset": spec.key, "run": ANCHOR_MODEL, "model": ANCHOR_MODEL,
            "hyperparameters": dict(selection.winner.hparams), **curves_summary(curves)}


def find_stored_run(runs_dir: Path, dataset: str, run: str) -> Path:
    """The run folder named `run` (a folder with summary.csv and manifest.json) of `dataset` under `runs_dir`.

    Raises:
        FileNotFoundError: no such run; the message lists the dataset's run names found there.
    """
    from sfbench_jax.run_folder.finding import find_run_folders
    from sfbench_jax.run_folder.loading import load_run

    folders = find_run_folders([runs_dir]) if Path(runs_dir).is_dir() else []
    of_dataset = [folder for folder in folders if load_run(folder).row["dataset"] == dataset]
    matches = [folder for folder in of_dataset if folder.name == run]
    if len(matches) != 1:
        names = sorted({folder.name for folder in of_dataset})
        found = "several folders have that name" if matches else "no such run"
        raise FileNotFoundError(f"Stored run {run!r} of {dataset} under {runs_dir}: {found}. Runs of {dataset}: "
                                f"{', '.join(names) or 'none'}.")
    return matches[0]


def stored_run_curves(run_dir: Path, *, data_root: Path | None = None, k: int | None = None,
                      severities: Sequence[float] | None = None, policy: Any = None) -> dict[str, Any]:
    """Severity curves of a stored run's winner (rebuilt from the candidate store, never trained) on the run's
    evaluation settings (JAX RNG mode; `k` overrides the number of test windows). `policy`: a
    `sfbench_jax.pipeline.rebuild.RebuildPolicy` for a run named by someone else (the MCP server), checked before
    the run is read any further."""
    from sfbench_jax.evaluation.curves import DEFAULT_SEVERITIES, severity_curves
    from sfbench_jax.pipeline.rebuild import check_manifest, restore_run, run_config
    from sfbench_jax.pipeline.runner import load_data
    from sfbench_jax.run_folder.loading import load_run

    if policy is not None:
        policy.confine(Path(run_dir), "the run folder")
    run = load_run(Path(run_dir))  # verified against its completion record before any field is trusted
    if policy is not None:
        check_manifest(run.manifest, policy)
    cfg = run_config(run.manifest, policy=policy)
    if data_root is not None:
        cfg = dataclasses.replace(cfg, data_root=str(data_root))
    restored = restore_run(run, data=load_data(cfg), policy=policy)
    options = dataclasses.replace(restored.cfg.eval, rng_mode="jax", progress=False)
    if k is not None:
        options = dataclasses.replace(options, k=k)
    curves = severity_curves(restored.predict, restored.state, restored.data, options,
                             severities=severities or DEFAULT_SEVERITIES)
    return {"dataset": run.row["dataset"], "run": run.directory.name, "model": run.row["architecture"],
            "method": run.row["method"], "hyperparameters": json.loads(run.row["hyperparameters"]),
            **curves_summary(curves)}
