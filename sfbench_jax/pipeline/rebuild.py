"""Stored runs back in memory, without training: rebuild a run folder's configuration and winner (from the
candidate store, every candidate already finished) and compute from it what the analysis needs beyond the
stored numbers: severity-response curves, per-window fault examples (paper Figures 3/4) and the
selector-pressure re-selection (protocol 5.5: the stored candidates chosen on perturbed validation, the new winner
evaluated in full).

A `RebuildPolicy` makes a rebuild safe for a caller who only names a run folder (the MCP server): the stored
files are data, never code. Only registered architectures and methods are rebuilt, host models (whose manifest
names code to import or files to read) only when the policy allows them, every folder is confined to the
policy's roots (the run folder and its candidate store; the manifest's `data_root` and `cache_dir` are replaced
by the policy's), and the refusal (`UntrustedRunError`) names the setting, never a path. Without a policy (the
CLI, on the user's own runs) the manifest is followed as written.

Part of the pipeline package, above `runner`: it calls `cell`, `runner` and `evaluate`; the CLI, the API and the
MCP tools call it, and the analysis reaches it only through the `Restorer` the command hands it.
"""

from __future__ import annotations

import dataclasses
import json
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd

from sfbench_jax.config import RunConfig
from sfbench_jax.data.prepared import PreparedData
from sfbench_jax.evaluation import score_windows
from sfbench_jax.evaluation.curves import DEFAULT_SEVERITIES, SeverityCurves, severity_curves
from sfbench_jax.evaluation.engine import fault_context
from sfbench_jax.faults.registry import SCENARIOS, perturb
from sfbench_jax.faults.streams import pair_key
from sfbench_jax.methods import METHODS
from sfbench_jax.models.registry import MODELS
from sfbench_jax.pipeline.cell import Selection, candidate_store, evaluate_model, select_model, winner_predictor
from sfbench_jax.pipeline.outputs.tables import candidates_table, per_window_table, summary_table
from sfbench_jax.pipeline.resolved import ResolvedCell, resolve_cell
from sfbench_jax.pipeline.runner import evaluate_anchor, load_data
from sfbench_jax.predictors.protocol import CLEAN_CONTEXT, run_predictor
from sfbench_jax.run_folder.claim import claim_run_folder
from sfbench_jax.run_folder.loading import StoredRun, load_run
from sfbench_jax.run_folder.locks import unlock_run_folder
from sfbench_jax.run_folder.names import CANDIDATES_FILE, MANIFEST_FILE, PER_WINDOW_FILE, SUMMARY_FILE
from sfbench_jax.run_folder.record import seal_run
from sfbench_jax.storage.atomic import write_csv, write_json, write_parquet
from sfbench_jax.training import CandidateStore

Log = Callable[[str], None]
#: Channels left out of the Figure 3 ranking of affected channels (protocol 7.3).
EXAMPLE_EXCLUDED_CHANNELS = {"beijing_air_tiantan": ("CO", "PRES")}


class NotStoredError(RuntimeError):
    """A stored run's candidates are not (all) in the candidate store; using it would mean training."""


#: Hyperparameters that name code to import (`external`'s `target`) or files to read (`chronos2`'s `weights`).
HOST_HYPERPARAMETERS = ("target", "weights")
#: Registered architectures configured by such a hyperparameter: the host models.
HOST_MODELS = frozenset(name for name, spec in MODELS.items()
                        if set(HOST_HYPERPARAMETERS) & set(spec.hyperparameter_names))


#: Where the `sfbench` command keeps finished candidates unless `train.store_dir` is set (conf/train/default.yaml).
DEFAULT_STORE_TEXT = ("the sfbench command's default store is $SFBENCH_STORE_DIR, else "
                      "~/.cache/sfbench-jax/candidates; untrained models such as SeasonalNaive need none")


class UntrustedRunError(ValueError):
    """A stored run asks a guarded rebuild (`RebuildPolicy`) for something it refuses: a model or method outside the
    registries, a host model, or a folder outside the policy's roots. The message names the setting, not a path."""


@dataclass(frozen=True)
class RebuildPolicy:
    """How far a rebuild trusts a run folder it is pointed at by name (see the module docstring).

    Attributes:
        roots: folders the run folder and its candidate store (`train.store_dir`, default `<run>/candidates`)
            must resolve inside (symbolic links are resolved first).
        data_root: data folder used instead of the manifest's `data_root` (None: bundled and synthetic data only).
        cache_dir: derived-data cache used instead of the manifest's `cache_dir` (None: no cache).
        allow_host_models: rebuild host models too (`external` imports the manifest's `model.target`, `chronos2`
            reads `model.weights`): only for runs folders whose every manifest the operator trusts.
    """

    roots: tuple[Path, ...]
    data_root: Path | None = None
    cache_dir: Path | None = None
    allow_host_models: bool = False

    def confine(self, path: Path, what: str) -> Path:
        """`path` resolved (links followed), if it lies inside one of the roots.

        Raises:
            UntrustedRunError: it lies outside every root (the message names `what`, not the path).
        """
        resolved = Path(path).expanduser().resolve()
        if not any(resolved.is_relative_to(Path(root).expanduser().resolve()) for root in self.roots):
            raise UntrustedRunError(f"{what} lies outside the folders this rebuild may read (the runs root and the "
                                    "candidate-store roots it was given); only runs and stores inside them are "
                                    "rebuilt. Move the run (and its store) inside, or give the store's folder as "
                                    f"a store root (sfbench-mcp --store-root; {DEFAULT_STORE_TEXT}).")
        return resolved


def check_manifest(manifest: Any, policy: RebuildPolicy) -> None:
    """Refuse a manifest a guarded rebuild must not follow, before anything is built or imported.

    Raises:
        UntrustedRunError: no config mapping, a model or method outside the registries, a host model the policy
            does not allow, or a non-host model carrying a code or file hyperparameter.
    """
    values = manifest.get("config") if isinstance(manifest, dict) else None
    if not isinstance(values, dict):
        raise UntrustedRunError("the run's manifest.json holds no `config` mapping; it is not a run folder sfbench "
                                "wrote. Re-run the job to write it again.")
    model_section, method_section = values.get("model"), values.get("method")
    model = model_section if isinstance(model_section, dict) else {}
    method = method_section if isinstance(method_section, dict) else {}
    name, method_name = model.get("name", "seasonal_naive"), method.get("name", "baseline")
    if not isinstance(name, str) or name not in MODELS:
        raise UntrustedRunError(f"the run's model {str(name)[:64]!r} is not a registered architecture; stored runs "
                                f"are rebuilt only from the registry ({', '.join(sorted(MODELS))}).")
    if not isinstance(method_name, str) or method_name not in METHODS:
        raise UntrustedRunError(f"the run's method {str(method_name)[:64]!r} is not a registered method; stored "
                                f"runs are rebuilt only from the registry ({', '.join(sorted(METHODS))}).")
    if name in HOST_MODELS and not policy.allow_host_models:
        raise UntrustedRunError(f"the run is of the host model {name!r}, whose manifest names code to import or "
                                "files to read (model.target / model.weights); this rebuild does not allow host "
                                "models. Rebuild the run where you trust its manifest (sfbench-report), or allow host "
                                "models (the MCP server's --allow-host-models) only if every manifest under the "
                                "runs root is trusted.")
    named = [f"model.{section}{key}" for section, mapping in (("", model), ("hparams.", model.get("hparams")),
                                                               ("grid.", model.get("grid")))
             if isinstance(mapping, dict) for key in HOST_HYPERPARAMETERS if mapping.get(key) is not None]
    if named and name not in HOST_MODELS:
        raise UntrustedRunError(f"the run's manifest sets {', '.join(named)} for {name!r}, which has no such "
                                "hyperparameter; it is not a manifest sfbench wrote. Re-run the job.")


def _guarded(cfg: RunConfig, policy: RebuildPolicy) -> RunConfig:
    """The manifest's folders replaced by the policy's (`train.store_dir` is confined in `restore_run`), and its
    resource settings that never change a number (chunking, devices, memory budget) by the defaults."""
    defaults = RunConfig().eval
    resources = dataclasses.replace(cfg.eval, chunk_size=defaults.chunk_size, num_devices=defaults.num_devices,
                                    memory_budget_mb=defaults.memory_budget_mb)
    return dataclasses.replace(cfg, data_root=None if policy.data_root is None else str(policy.data_root),
                               cache_dir=None if policy.cache_dir is None else str(policy.cache_dir),
                               compilation_cache=False, eval=resources)


def run_config(manifest: dict[str, Any], *, policy: RebuildPolicy | None = None) -> RunConfig:
    """The RunConfig a manifest recorded (unknown keys of newer or older versions are ignored).

    Args:
        manifest: the run's manifest.
        policy: guard for a run named by someone else (see `RebuildPolicy`); None follows the manifest as written.

    Raises:
        UntrustedRunError: the policy refuses the manifest (`check_manifest`).
        ValueError: a recorded setting is invalid.
    """
    if policy is not None:
        check_manifest(manifest, policy)
    values = manifest["config"]
    kwargs: dict[str, Any] = {}
    defaults = RunConfig()
    for item in dataclasses.fields(RunConfig):
        if item.name not in values:
            continue
        default = getattr(defaults, item.name)
        if dataclasses.is_dataclass(default) and not isinstance(default, type):
            known = {f.name for f in dataclasses.fields(default)}
            kwargs[item.name] = type(default)(**{k: v for k, v in values[item.name].items() if k in known})
        else:
            kwargs[item.name] = values[item.name]
    cfg = RunConfig(**kwargs)
    return cfg if policy is None else _guarded(cfg, policy)


@dataclass(frozen=True)
class RestoredRun:
    """A stored run's configuration, data, selection and winner predictor."""

    run: StoredRun
    cfg: RunConfig
    data: PreparedData
    selection: Selection
    store: CandidateStore | None  # None: the rebuild reads no store (an untrained baseline, `reads_store`)
    predict: Any
    state: Any


class StoredOnly(CandidateStore):
    """A candidate store that serves finished candidates and refuses to train: a selection that would train
    raises NotStoredError before any training starts."""

    def ensure_writable(self) -> None:
        """Nothing is written; the store must exist.

        Raises:
            NotStoredError: the folder does not exist.
        """
        if not self.root.is_dir():
            raise NotStoredError(f"The candidate store {self.root} does not exist; point train.store_dir at the store "
                                 "the run used. The analysis never trains.")

    def claim_first_free(self, dataset: str, architecture: str, groups: Sequence[Sequence[str]]) -> Any:
        """Called only for candidates the store lacks: refuse (naming them) instead of training.

        Raises:
            NotStoredError: always.
        """
        missing = [key for group in groups for key in group]
        raise NotStoredError(f"{len(missing)} candidate(s) of this run are not in the candidate store {self.root} "
                             f"({dataset}/{architecture}, e.g. {missing[0]}); the analysis never trains. Point "
                             "train.store_dir at the store the run used, or re-run the job first (a candidate is "
                             "keyed by the code that trained it: after an engine, plug-in or JAX change the stored "
                             "ones are not used).")


def restore_run(run: StoredRun | Path, *, data: PreparedData | None = None, log: Log | None = None,
                policy: RebuildPolicy | None = None) -> RestoredRun:
    """Rebuild a stored run's winner (no training: every candidate must be in the store).

    Args:
        run: the run (or its folder).
        data: the run's prepared data, if already loaded.
        log: progress lines.
        policy: guard for a run named by someone else (see `RebuildPolicy`): the manifest is checked before the
            run is read further, the run folder and its candidate store must lie inside the policy's roots.

    Raises:
        NotStoredError: a candidate is missing from the store.
        UntrustedRunError: the policy refuses the run.
    """
    if policy is not None:
        folder = run.directory if isinstance(run, StoredRun) else Path(run)
        policy.confine(folder, "the run folder")
        if not isinstance(run, StoredRun):
            check_manifest(_read_manifest(folder), policy)  # before the run is loaded any further
    run = run if isinstance(run, StoredRun) else load_run(Path(run))
    cfg = run_config(run.manifest, policy=policy)
    cell = resolve_cell(cfg)  # the names the run's manifest records, looked up once
    data = load_data(cfg) if data is None else data
    store_root = candidate_store(cfg, run.directory).root
    store: StoredOnly | None = StoredOnly(store_root)
    if policy is not None and not reads_store(cell):
        store = None  # an untrained model's baseline reads no store: wherever the run's store lies, none is needed
    elif policy is not None:
        store = StoredOnly(policy.confine(store_root, f"the candidate store (train.store_dir) of the run "
                                                      f"{run.directory.name!r}"))
    selection = select_model(data, cell, store, log or (lambda message: None))
    predict, state = winner_predictor(data, selection, store)
    return RestoredRun(run=run, cfg=cfg, data=data, selection=selection, store=store, predict=predict, state=state)


def reads_store(cell: ResolvedCell) -> bool:
    """Whether rebuilding a run reads its candidate store: a trained model, or a method over stored candidates."""
    return cell.model.is_trainable or cell.method.kind != "baseline"


def _read_manifest(folder: Path) -> Any:
    try:
        return json.loads((Path(folder) / MANIFEST_FILE).read_text())
    except (OSError, ValueError) as error:
        raise UntrustedRunError(f"the run's {MANIFEST_FILE} cannot be read as JSON ({type(error).__name__}); "
                                "re-run the job to write it again.") from None


def run_severity_curves(run: StoredRun | Path, *, severities: Sequence[float] = DEFAULT_SEVERITIES,
                        eval_overrides: dict[str, Any] | None = None) -> SeverityCurves:
    """Severity curves of a stored run's winner on the run's evaluation settings (JAX RNG mode; overrides e.g.
    `{"k": 2000}`)."""
    restored = restore_run(run)
    options = dataclasses.replace(restored.cfg.eval, rng_mode="jax", progress=False, **(eval_overrides or {}))
    return severity_curves(restored.predict, restored.state, restored.data, options, severities=severities)


def _affected_channels(clean: np.ndarray, faulted: np.ndarray, names: Sequence[str], excluded: Sequence[str],
                       count: int = 3) -> list[int]:
    change = np.abs(faulted - clean).max(axis=0)
    ranked = [int(i) for i in np.argsort(-change, kind="stable") if change[i] > 0 and names[i] not in excluded]
    return ranked[:count] or [int(np.argmax(change))]


def fault_examples(run: StoredRun | Path, *, scenarios: Sequence[str], severity: float = 0.75,
                   sample_id: int = 0) -> list[dict[str, Any]]:
    """One example window per scenario (paper Figures 3/4): the run's test window `sample_id`, the fault drawn
    from that window's JAX-mode stream at a fixed severity, up to three affected channels (largest
    max-|perturbation|; CO and PRES never for Beijing) and the winner's forecasts from the clean and faulted
    inputs (first target channel)."""
    restored = restore_run(run)
    data, options = restored.data, restored.cfg.eval.for_dataset(restored.data.spec)
    spec = data.spec
    assert options.seed is not None  # resolved (EvalConfig.for_dataset)
    start = int(data.test_starts(options.seed, options.k)[sample_id])
    window = data.standardised[start:start + spec.input_len + spec.horizon]
    x, truth = window[:spec.input_len], window[spec.input_len:, spec.target_indices[0]]
    ctx = fault_context(data, options.channel_fraction)
    base = jax.random.key(np.uint32(options.seed))
    examples = []
    for name in scenarios:
        fault = next(f for f in SCENARIOS if f.key == name)
        key = pair_key(base, fault.index, jnp.asarray(sample_id, jnp.int32))
        faulted = np.asarray(perturb(name, jnp.asarray(x), rng_key=key, ctx=ctx, severity=severity))
        channels = _affected_channels(x, faulted, spec.channels, EXAMPLE_EXCLUDED_CHANNELS.get(spec.key, ()))
        rows = (jnp.asarray([CLEAN_CONTEXT, 1 + fault.index], jnp.int32), jnp.full((2,), sample_id, jnp.int32))
        forecasts = np.asarray(run_predictor(restored.predict, restored.state, jnp.asarray(np.stack([x, faulted])),
                                             *rows))[:, :, 0]
        examples.append({"dataset": spec.key, "scenario": fault.display_name, "severity": severity,
                         "channels": [spec.channels[i] for i in channels], "clean": x[:, channels],
                         "faulted": faulted[:, channels], "target_name": spec.channels[spec.target_indices[0]],
                         "truth": truth, "forecast_clean": forecasts[0], "forecast_faulted": forecasts[1],
                         "model": MODELS[restored.run.row["architecture"]].display_label, "start_row": start})
    return examples


# --- selector pressure (protocol 5.5) ------------------------------------------------------------------------

SELECTION_MODES = ("perturbed_worst", "perturbed_mean")


def perturbed_validation_scores(restored: RestoredRun, *, mode: str) -> pd.DataFrame:
    """Every finished candidate of a restored run scored on perturbed validation: the eight scenarios on all
    3,000 validation windows (no drop-last) with the dataset's `noise_seed` and the run's RNG mode; `score` is
    the worst (or mean) scenario's mean perturbed MSE."""
    data, cfg, selection = restored.data, restored.cfg, restored.selection
    options = dataclasses.replace(cfg.eval, seed=data.spec.seeds.noise_seed, k=len(data.val_starts), progress=False,
                                  channel_fraction=None)
    records = []
    for candidate in selection.candidates:
        if not candidate.is_finished:
            continue
        predict, state = winner_predictor(data, dataclasses.replace(selection, winner=candidate), restored.store)
        losses, _ = score_windows(predict, state, data, options, label="perturbed validation",
                                  test_starts=data.val_starts)
        per_scenario = losses.faulted.astype(np.float64).mean(axis=1)
        score = per_scenario.max() if mode == "perturbed_worst" else per_scenario.mean()
        records.append({"candidate_hash": candidate.candidate_hash, "trial_number": candidate.trial_number,
                        "best_val_loss": candidate.best_val_loss, "mse_pert_ws_val": float(per_scenario.max()),
                        "mse_pert_mean_val": float(per_scenario.mean()), "score": float(score)})
    return pd.DataFrame(records)


def reselect_on_perturbed_validation(run: StoredRun | Path, output_dir: Path, *, mode: str = "perturbed_worst",
                                     log: Log | None = None) -> Path:
    """Re-select a stored run's candidates by perturbed validation and evaluate the new winner in full on the
    run's evaluation settings; write a run folder (summary with `selection_metric` = mode and
    `selection_value`, per-window losses, candidates with their perturbed scores, manifest).

    Raises:
        ValueError: an unknown mode.
        NotStoredError: a candidate is missing from the store.
    """
    if mode not in SELECTION_MODES:
        raise ValueError(f"Unknown selection mode {mode!r}; use one of {list(SELECTION_MODES)}.")
    started = time.perf_counter()
    restored = restore_run(run, log=log)
    folder = claim_run_folder(Path(output_dir), overwrite=True)  # an earlier re-selection there is replaced whole
    scores = perturbed_validation_scores(restored, mode=mode)
    best = scores.sort_values(["score", "trial_number", "candidate_hash"]).iloc[0]
    winner = next(c for c in restored.selection.candidates if c.candidate_hash == best["candidate_hash"])
    selection = dataclasses.replace(restored.selection, winner=winner)
    predict, state = winner_predictor(restored.data, selection, restored.store)
    model = evaluate_model(restored.data, restored.cfg, predict, state,
                           hyperparameters={**winner.hparams, **getattr(winner, "recipe", {})})
    summary = summary_table([model], evaluate_anchor(restored.data, restored.cfg, model))
    # the stored run's labels stay (its method; the new winner's variant)
    summary["method"] = restored.run.row["method"]
    summary["variant"] = getattr(winner, "variant", None) or restored.run.row.get("variant") or winner.method
    summary["selection_metric"], summary["selection_value"] = mode, float(best["score"])
    candidates = candidates_table(selection).merge(scores.drop(columns=["trial_number", "best_val_loss"]),
                                                   on="candidate_hash", how="left")
    write_csv(summary, folder.work / SUMMARY_FILE)
    write_parquet(per_window_table([model]), folder.work / PER_WINDOW_FILE)
    write_csv(candidates, folder.work / CANDIDATES_FILE)
    written = {"summary": SUMMARY_FILE, "per_window": PER_WINDOW_FILE, "candidates": CANDIDATES_FILE}
    manifest = {**restored.run.manifest, "timings": {"reselect_seconds": time.perf_counter() - started},
                "files": written,
                "selection_pressure": {
        "mode": mode, "source_run": str(restored.run.directory), "winner": winner.candidate_hash,
        "clean_winner": restored.selection.winner.candidate_hash, "changed": winner.candidate_hash !=
        restored.selection.winner.candidate_hash, "noise_seed": restored.data.spec.seeds.noise_seed}}
    write_json(manifest, folder.work / MANIFEST_FILE)
    seal_run(folder.work, names=[*written.values(), MANIFEST_FILE])  # last: the completion record
    folder.commit(keep_replaced=False)
    unlock_run_folder(folder.target)
    return folder.target


def reselect_runs(runs: Sequence[StoredRun], output_root: Path, *, mode: str = "perturbed_worst",
                  log: Log | None = None) -> list[Path]:
    """`reselect_on_perturbed_validation` for each run, into `output_root/<the run folder's path below the runs'
    common folder>`."""
    written = []
    common = Path(os.path.commonpath([run.directory.resolve() for run in runs])) if runs else Path(".")
    for run in runs:
        relative = run.directory.resolve().relative_to(common) if len(runs) > 1 else Path(run.directory.name)
        target = reselect_on_perturbed_validation(run, Path(output_root) / relative, mode=mode, log=log)
        changed = json.loads((target / MANIFEST_FILE).read_text())["selection_pressure"]["changed"]
        if log is not None:
            log(f"selector pressure: {run.directory.name} -> {target} ({'new' if changed else 'same'} winner)")
        written.append(target)
    return written
