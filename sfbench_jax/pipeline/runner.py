"""`run(cfg, output_dir)`: the one path every `sfbench` run takes, as a list of library calls.

check the config against the registries -> load and validate the data, check the model on its windows (a contract
that needs data: `check_run_data`, before the folder is claimed) -> prepare windows -> select the model on clean
validation (every model the same way; trainable ones through the resumable candidate store) -> evaluate the winner under
the eight scenarios -> write summary.csv, per_window.parquet, candidates.csv, training_curves.parquet (trained models),
manifest.json and the heatmap, and last the completion record that vouches for exactly them
(`run_folder.record.seal_run`). The run claims its folder before any training, under an exclusive writer lock held
until the seal (a second writer is refused): a folder holding a completed run is refused, or with `overwrite` replaced
in one atomic swap at the end; a sweep job's `cell.json` is kept. The summary's reference-normalised scores (mCE,
relative mCE) need the dataset's SeasonalNaive winner on the same windows and faults: it is selected and evaluated in
the same run (no training; the run's own model when it is that winner). Nothing is written outside `output_dir` except
finished candidates in the candidate store (`train.store_dir`) and derived data files under `cache_dir`. """

from __future__ import annotations

import dataclasses
import json
import sys
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from sfbench_jax.config import ANCHOR_MODEL, MethodConfig, ModelConfig, RunConfig
from sfbench_jax.data import load, prepare
from sfbench_jax.data.prepared import PreparedData
from sfbench_jax.methods import check_method
from sfbench_jax.models.registry import MODELS
from sfbench_jax.pipeline.cell import (
    EvaluatedModel,
    Selection,
    candidate_store,
    evaluate_selection,
    select_and_evaluate,
    select_model,
)
from sfbench_jax.pipeline.contracts import check_run_contracts, check_run_data_contracts
from sfbench_jax.pipeline.outputs.heatmap import scenario_heatmap
from sfbench_jax.pipeline.outputs.manifest import run_manifest
from sfbench_jax.pipeline.outputs.tables import (
    candidates_table,
    per_window_table,
    summary_table,
    training_curves_table,
)
from sfbench_jax.pipeline.resolved import ResolvedCell, resolve_cell
from sfbench_jax.run_folder.claim import RunFolder, claim_run_folder
from sfbench_jax.run_folder.locks import unlock_run_folder
from sfbench_jax.run_folder.names import (
    CANDIDATES_FILE,
    JOB_FILE,
    MANIFEST_FILE,
    PER_WINDOW_FILE,
    SUMMARY_FILE,
    TRAINING_CURVES_FILE,
)
from sfbench_jax.run_folder.record import seal_run
from sfbench_jax.storage.atomic import write_csv, write_json, write_parquet
from sfbench_jax.training import CandidateResult, check_search_space, expand_space, search_space


@dataclass(frozen=True)
class RunResult:
    """What a run produced: the evaluated models, the files written (in the run folder) and, when it replaced a
    completed run (`overwrite`), the folder that earlier run was moved to."""

    models: list[EvaluatedModel]
    files: dict[str, Path]
    candidates: list[CandidateResult] = field(default_factory=list)
    replaced: Path | None = None


def log_to_stderr(enabled: bool) -> Callable[[str], None]:
    """A progress logger: one `[sfbench]` line per message on stderr (silent when disabled)."""

    def log(message: str) -> None:
        if enabled:
            print(f"[sfbench] {message}", file=sys.stderr, flush=True)

    return log


def check_run_config(cfg: RunConfig) -> tuple[str, ...]:
    """The checks `config.py` cannot make, because they need the registries (model, search space,
    method): `check_cell` of the cell `cfg` names. Raises a ValueError naming the problem before any work; returns
    the contract checks' notes on checks that cannot apply to a spec (`contracts.check_run_contracts`)."""
    return check_cell(resolve_cell(cfg))


def check_cell(cell: ResolvedCell) -> tuple[str, ...]:
    """`check_run_config` of a resolved cell: its search space, method setting and contracts."""
    cfg, model = cell.cfg, cell.model
    check_search_space(model, cfg.model.grid or None, cfg.model.hparams, spec=cell.dataset)
    space = search_space(model, cfg.model.grid or None, cfg.model.hparams)
    baseline_candidates = min(cfg.train.candidate_budget,
                              len(expand_space(model, space, input_len=cell.dataset.input_len)))
    check_method(cell.method, model.name, cfg.method.grid, num_baseline_candidates=baseline_candidates)
    return check_run_contracts(cell)  # the model's, method's and faults' outputs and the faults' meaning (contracts.py)


#: The data a check before the run folder loaded, handed to the run that follows in this process (`checked_data`).
_CHECKED: list[tuple[RunConfig, tuple[str, int, int] | None, PreparedData]] = []


def _source_stat(data: PreparedData) -> tuple[str, int, int] | None:
    path = Path(data.series.source_path)
    try:
        stat = path.stat()
    except (OSError, ValueError):
        return None
    return str(path), stat.st_mtime_ns, stat.st_size


def check_run_data(cfg: RunConfig) -> tuple[PreparedData, tuple[str, ...]]:
    """Load the data and run the contract checks that need its windows (`contracts.check_run_data_contracts`: a model
    whose forecasts depend on their batch is refused). The data is kept for the run of `cfg` that follows in this
    process (`checked_data`), so the CLI's check before the run folder does not load it twice.

    Raises:
        ContractError: a violation (one line); DataContractError: the data cannot be loaded.
    """
    return _check_cell_data(resolve_cell(cfg))


def _check_cell_data(cell: ResolvedCell) -> tuple[PreparedData, tuple[str, ...]]:
    data = load_data(cell.cfg)
    notes = check_run_data_contracts(cell, data)
    _CHECKED[:] = [(cell.cfg, _source_stat(data), data)]
    return data, notes


def checked_data(cell: ResolvedCell) -> tuple[PreparedData, tuple[str, ...]]:
    """`check_run_data` of the cell, or the data the check before the run folder loaded for an equal config (taken
    once, and only while its file is unchanged: same path, size and modification time; a package resource or a
    synthetic set, which has no such file, cannot change); the checks' cached notes either way."""
    if _CHECKED:
        kept_cfg, stat, data = _CHECKED.pop()
        if kept_cfg == cell.cfg and _source_stat(data) == stat:
            return data, check_run_data_contracts(cell, data)
    return _check_cell_data(cell)


def load_data(cfg: RunConfig) -> PreparedData:
    """Load, validate and prepare the configured dataset."""
    series = load(cfg.dataset.name, data_root=None if cfg.data_root is None else Path(cfg.data_root),
                  cache_dir=None if cfg.cache_dir is None else Path(cfg.cache_dir))
    return prepare(series)


def is_anchor_run(cfg: RunConfig) -> bool:
    """Whether the run's model is its dataset's anchor: plain SeasonalNaive over the preset grid."""
    if cfg.model.name != ANCHOR_MODEL or cfg.method.name != "baseline":
        return False
    anchor = MODELS[ANCHOR_MODEL]
    return search_space(anchor, cfg.model.grid or None, cfg.model.hparams) == search_space(anchor)


def evaluate_anchor(data: PreparedData, cfg: RunConfig, model: EvaluatedModel) -> EvaluatedModel:
    """The dataset's SeasonalNaive winner (selected with the run's candidate budget) evaluated on the run's
    windows and faults (same eval settings); the run's own model when it is that winner."""
    if is_anchor_run(cfg):
        return model
    anchor_cfg = dataclasses.replace(cfg, model=ModelConfig(name=ANCHOR_MODEL), method=MethodConfig(),
                                     eval=dataclasses.replace(cfg.eval, progress=False))
    return select_and_evaluate(data, resolve_cell(anchor_cfg), None, lambda message: None)[1]


def write_outputs(cfg: RunConfig, data: PreparedData, model: EvaluatedModel, selection: Selection,
                  output_dir: Path, timings: dict[str, float], anchor: EvaluatedModel | None = None, *,
                  contract_notes: tuple[str, ...] = ()) -> dict[str, Path]:
    """Write the run's tables, figure and manifest into `output_dir` (each file atomically); `anchor` (the
    dataset's SeasonalNaive winner on the same windows and faults) fills the normalised scores; `contract_notes`
    (the contract checks that could not apply) go into the manifest."""
    started = time.perf_counter()
    files: dict[str, Path] = {}
    summary = summary_table([model], anchor)
    files["summary"] = write_csv(summary, output_dir / SUMMARY_FILE)
    files["per_window"] = write_parquet(per_window_table([model]), output_dir / PER_WINDOW_FILE)
    files["candidates"] = write_csv(candidates_table(selection), output_dir / CANDIDATES_FILE)
    if selection.is_trained:
        files["training_curves"] = write_parquet(training_curves_table(selection),
                                                 output_dir / TRAINING_CURVES_FILE)
    if cfg.figures:
        files["heatmap"] = scenario_heatmap(summary, output_dir / "scenario_heatmap.png")
    timings["write_seconds"] = time.perf_counter() - started
    manifest = run_manifest(cfg, data, [model], selection, timings, files, contract_notes=contract_notes)
    files["manifest"] = write_json(manifest, output_dir / MANIFEST_FILE)
    return files


def write_sealed(cfg: RunConfig, data: PreparedData, model: EvaluatedModel, selection: Selection, work: Path,
                 timings: dict[str, float], anchor: EvaluatedModel | None, *, notes: tuple[str, ...] = (),
                 job_files: Iterable[str] = ()) -> dict[str, Path]:
    """`write_outputs` into a claimed run folder's `work` folder, then its seal: the record names exactly the files
    this run wrote (and the `job_files` written before)."""
    files = write_outputs(cfg, data, model, selection, work, timings, anchor, contract_notes=notes)
    seal_run(work, names=[*job_files, *(path.name for path in files.values())])
    return files


def save_run(cfg: RunConfig, data: PreparedData, model: EvaluatedModel, selection: Selection, output_dir: Path,
             timings: dict[str, float], anchor: EvaluatedModel | None, *,
             notes: tuple[str, ...] = ()) -> RunResult:
    """An evaluated cell (the Python API's `Result.save`) written into `output_dir` as a sealed run folder, the way
    `run` writes one: the folder claimed under its writer lock (`cfg.overwrite` replaces a completed run in one
    atomic swap), the files written and sealed, the lock released.

    Raises:
        RunFolderBusyError / RunFolderTakenError / PermissionError: as `run`, before anything is written.
    """
    folder = claim_run_folder(Path(output_dir), overwrite=cfg.overwrite)
    try:
        files = write_sealed(cfg, data, model, selection, folder.work, timings, anchor, notes=notes)
        replaced = folder.commit()
    finally:
        unlock_run_folder(folder.target)
    return RunResult(models=[model], files={name: folder.target / path.name for name, path in files.items()},
                     candidates=selection.candidates, replaced=replaced)


class PhaseClock:
    """Wall seconds of the phases of a run, in order (`lap("select")` closes the phase "select")."""

    def __init__(self) -> None:
        self.started = self.last = time.perf_counter()
        self.seconds: dict[str, float] = {}

    def lap(self, phase: str) -> None:
        """Close `phase` at this moment."""
        now = time.perf_counter()
        self.seconds[f"{phase}_seconds"] = now - self.last
        self.last = now

    def timings(self, model: EvaluatedModel) -> dict[str, float]:
        """The phases so far, the engine's split of the evaluation and the total (for the manifest)."""
        engine = model.evaluation.engine
        return {**self.seconds, "evaluate_compile_seconds": engine.compile_seconds,
                "evaluate_run_seconds": engine.run_seconds, "bootstrap_seconds": model.evaluation.bootstrap_seconds,
                "total_seconds": time.perf_counter() - self.started}


def phase_line(timings: dict[str, float]) -> str:
    """One line with the phase timings of a run, e.g. for the console."""
    main = ("load", "select", "evaluate", "anchor", "write")
    parts = [f"{phase} {timings[f'{phase}_seconds']:.2f} s" for phase in main if f"{phase}_seconds" in timings]
    split = (f"evaluate = compile {timings['evaluate_compile_seconds']:.2f} + run {timings['evaluate_run_seconds']:.2f}"
             f" + bootstrap {timings['bootstrap_seconds']:.2f} s")
    return "phases: " + ", ".join(parts) + f" ({split})"


def run(cfg: RunConfig, output_dir: Path, *, job_files: dict[str, dict] | None = None) -> RunResult:
    """Run the benchmark for one dataset, model and method and write the results into `output_dir`.

    Args:
        cfg: the run's configuration (`cfg.overwrite` replaces a completed run in `output_dir`).
        output_dir: the run folder.
        job_files: JSON files written into the run folder before any work and covered by its record (a
            multirun job's `cell.json`; None keeps the `cell.json` of a sweep job folder, `sweep_job_files`).

    Raises:
        RunFolderBusyError: another process is writing a run into `output_dir` (before any work).
        RunFolderTakenError: `output_dir` holds a completed run and `cfg.overwrite` is false (before any work).
        PermissionError: `output_dir` or the candidate store cannot be written (before any work).
        ValueError / DataContractError: bad configuration or data (before any training or evaluation).
    """
    clock = PhaseClock()
    log = log_to_stderr(cfg.eval.progress)
    cell = resolve_cell(cfg)  # the run's one lookup of its names; the specs travel down from here
    notes = check_cell(cell)
    job_files = sweep_job_files(cfg, Path(output_dir)) if job_files is None else job_files
    data, data_notes = checked_data(cell)  # before the folder is claimed: a refused model leaves nothing behind
    clock.lap("load")
    folder = claim_run_folder(Path(output_dir), overwrite=cfg.overwrite)
    try:
        return _run_claimed(cell, folder, clock, log, job_files, data, notes + data_notes)
    finally:
        unlock_run_folder(folder.target)


def sweep_job_files(cfg: RunConfig, target: Path) -> dict[str, dict]:
    """A sweep job's `cell.json` kept for a run re-made on its own in the job folder (e.g. with `overwrite=true`,
    the fix a damaged job's message gives), so the folder stays a job of its sweep; {} for any other folder.

    Raises:
        ValueError: the run is of another (dataset, architecture, method) cell than the job (nothing written).
    """
    path = Path(target) / JOB_FILE
    if not path.is_file():
        return {}
    try:
        job = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise ValueError(f"{path} cannot be read ({error}): it was cut or changed. Delete the job folder and re-run "
                         "the sweep, or choose another folder with hydra.run.dir=PATH.") from None
    job = job if isinstance(job, dict) else {}
    cell = {"dataset": cfg.dataset.name, "architecture": cfg.model.name, "method": cfg.method.name}
    recorded = {name: job.get(name) for name in cell}
    if recorded != cell:
        raise ValueError(f"{target} is the sweep job of {recorded} (its {JOB_FILE}); this run is of {cell}. Run "
                         "that job's cell into it, or choose another folder with hydra.run.dir=PATH.")
    return {JOB_FILE: job}


def _run_claimed(cell: ResolvedCell, folder: RunFolder, clock: PhaseClock, log: Callable[[str], None],
                 job_files: dict[str, dict], data: PreparedData, notes: tuple[str, ...]) -> RunResult:
    cfg, output_dir = cell.cfg, folder.target
    for name, payload in job_files.items():
        write_json(payload, folder.work / name)
    store = candidate_store(cfg, folder.work)  # the default store lies in the run folder: it moves with the run
    if cell.model.is_trainable:
        store.ensure_writable()
    for note in notes:
        log(f"contract check not applied: {note}")
    checksum = ("matches the reference" if data.series.matches_reference else
                "DIFFERS FROM the reference" if data.spec.content_sha256 else "has no reference (a user dataset)")
    log(f"{data.spec.label}: {data.series.num_rows} rows x {data.spec.num_channels} channels, content checksum "
        f"{checksum}")
    selection = select_model(data, cell, store, log)
    clock.lap("select")
    model = evaluate_selection(data, cfg, selection, store)
    clock.lap("evaluate")
    anchor = evaluate_anchor(data, cfg, model)
    clock.lap("anchor")
    timings = clock.timings(model)
    files = write_sealed(cfg, data, model, selection, folder.work, timings, anchor, notes=notes, job_files=job_files)
    replaced = folder.commit()
    scores = model.evaluation.scores
    log(phase_line(timings))
    log(f"done in {time.perf_counter() - clock.started:.1f} s: MSE_c {scores.mse_c:.3f}, D_w {scores.d_w:.3f} "
        f"({model.evaluation.losses.scenario_keys[scores.worst_index]}), MSE_w {scores.mse_w:.3f} -> {output_dir}")
    if model.ignores_input:
        log(f"WARNING: {cfg.model.name}'s forecast IGNORES ITS INPUT (the same forecast for every window): its D_w "
            f"{scores.d_w:.3f} says nothing about robustness; flagged as ignores_input in summary.csv, and never "
            "marked best in Table 4 or the report page")
    if replaced is not None:
        log(f"the completed run that was in {output_dir} was moved to {replaced}")
    return RunResult(models=[model], files={name: folder.target / path.name for name, path in files.items()},
                     candidates=selection.candidates, replaced=replaced)
