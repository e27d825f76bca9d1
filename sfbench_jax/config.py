"""Typed run configuration: the frozen dataclasses that Hydra's YAML presets validate against and that
the library takes as its options (one set of names from the command line to the summary columns).

The CLI composes `conf/config.yaml` and converts it once to `RunConfig` (`OmegaConf.to_object`); library
functions take the parts they need (`evaluate_predictor(..., cfg.eval)`, `plan_search(..., cfg.train)`).
Each dataclass checks its own values in `__post_init__`. Checks that need a registry (model names,
hyperparameter grids, method applicability) belong to the registries' owners and run in
`pipeline.runner.check_run_config` before any work. This module imports nothing from the engine, the models or
training.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import Any

from sfbench_jax.data.registry import DATASETS, DatasetSpec, get_dataset
from sfbench_jax.data.windows import LAYOUTS
from sfbench_jax.faults.registry import SCENARIO_KEYS, scored_scenarios
from sfbench_jax.faults.severity import DEFAULT_CHANNEL_FRACTION

#: `train.group_size` value asking for as many candidates per vectorised group as fit (null is its former spelling).
AUTO = "auto"
#: Evaluation RNG modes: on-device folded keys, or the reference's MT19937 streams (protocol 2.5).
RNG_MODES = ("jax", "reference")
#: Most test windows per evaluation (per-window losses are kept on the host: (1 + 2P) x K numbers).
MAX_WINDOWS = 1_000_000
#: Largest fixed channel fraction q: the severity rule's gamma (protocol 2.1).
MAX_CHANNEL_FRACTION = DEFAULT_CHANNEL_FRACTION
#: Fewest bootstrap draws: the 95% percentile interval's ends are the 2.5% and 97.5% quantiles of the B resampled
#: values, and only from B = 40 on does each 2.5% tail hold at least one draw (below, the ends are the extreme
#: draws; at B = 1 both ends are one resample, an "interval" that need not contain the estimate).
MIN_BOOTSTRAP_DRAWS = 40
#: Most bootstrap draws: the Monte Carlo error of a percentile falls as 1/sqrt(B), at 100,000 draws far below the
#: digits the tables print, while the bootstrap's time grows with B x K (about a minute at K = 10,000).
MAX_BOOTSTRAP_DRAWS = 100_000
#: Loss rows the bootstrap resamples: the clean row and one per scored scenario.
BOOTSTRAP_ROWS = 1 + len(SCENARIO_KEYS)
#: Host bytes the bootstrap's resampling batches may take (`evaluation.scores.bootstrap_means` sizes them to it).
BOOTSTRAP_BATCH_BYTES = 32 * 2**20
#: `eval.layout`: "auto" or one of the layouts (`data.windows.LAYOUTS`).
EVAL_LAYOUTS = ("auto", *LAYOUTS)
#: Temporary bytes per window and window byte of the fused kernel: the factor the engine's own block sizing
#: assumes on accelerators (`evaluation.engine.default_block_size`).
KERNEL_BYTES_PER_WINDOW_BYTE = 16


def bootstrap_bytes(draws: int, windows: int) -> int:
    """Host memory of a bootstrap of `draws` resamples of `windows` test windows: the resampling batches, the
    stacked loss rows (and their copy), and per draw the resampled means and the ratios derived from them."""
    return BOOTSTRAP_BATCH_BYTES + 2 * BOOTSTRAP_ROWS * windows * 8 + 3 * BOOTSTRAP_ROWS * draws * 8


def window_bytes(spec: DatasetSpec) -> int:
    """Bytes of one window's data, `(input_len + horizon) x channels` float32."""
    return (spec.input_len + spec.horizon) * spec.num_channels * 4


@dataclass(frozen=True)
class DatasetConfig:
    """Which dataset to use.

    Attributes:
        name: registry key (etth1, traffic, beijing_air_tiantan, penmanshiel_wt08, traffic_synthetic,
            penmanshiel_synthetic).
        input_len: expected window length; None takes the dataset's (96). A different value is an error
            (the protocol fixes the window), so a config written for another window fails loudly.
        horizon: expected forecast length; None takes the dataset's (96 or 6); a different value is an
            error.
    """

    name: str = "etth1"
    input_len: int | None = None
    horizon: int | None = None

    def __post_init__(self) -> None:
        spec = get_dataset(self.name)  # an unknown name lists the valid ones (or names a broken plug-in's fix)
        for field_name, given, protocol in (("input_len", self.input_len, spec.input_len),
                                            ("horizon", self.horizon, spec.horizon)):
            if given is not None and given != protocol:
                same = sorted(key for key, other in DATASETS.items() if getattr(other, field_name) == given)
                hint = f" Datasets with {field_name}={given}: {', '.join(same)}." if same else ""
                raise ValueError(f"dataset.{field_name}={given} does not match {self.name}'s window "
                                 f"(input_len={spec.input_len}, horizon={spec.horizon}); the benchmark protocol "
                                 f"fixes it. Remove the dataset.{field_name} override.{hint}")

    @property
    def spec(self) -> DatasetSpec:
        """The dataset's registry entry."""
        return DATASETS[self.name]


#: The protocol's anchor model (protocol 3.8): its clean-selected baseline run is the reference every normalised
#: score is taken against, the default model and the one whose curves need no stored run. The one place its name
#: is written; the pipeline, the analysis, the API and the MCP tools compare against this constant.
ANCHOR_MODEL = "seasonal_naive"


@dataclass(frozen=True)
class ModelConfig:
    """Which architecture to evaluate and its search space.

    Attributes:
        name: architecture registry key (seasonal_naive, dlinear, gru, moderntcn, patchtst, tsmixer; the host
            models chronos2 and external).
        grid: search space `{hyperparameter: [values]}` in the spec's key order (first key slowest), `lr`
            included for trainable architectures. The presets in `conf/model/` hold the spec grids.
        hparams: hyperparameters pinned to one value each (the rest of the grid is still searched); a
            fully pinned combination selects exactly that candidate. Empty pins nothing.
        target: `package.module:function` of the predict function `model=external` scores; pinned as the
            hyperparameter `target` (other models have no such hyperparameter and reject it).
        weights: checkpoint folder of `model=chronos2` (null: the Hugging Face cache); pinned as the
            hyperparameter `weights`.
    """

    name: str = ANCHOR_MODEL
    grid: dict[str, Any] = field(default_factory=dict)
    hparams: dict[str, Any] = field(default_factory=dict)
    target: str | None = None
    weights: str | None = None

    def __post_init__(self) -> None:
        self._pin_named_hyperparameters()
        for attribute in ("grid", "hparams"):
            if not isinstance(getattr(self, attribute), dict):
                raise ValueError(f"model.{attribute} must be a mapping of hyperparameter names, got "
                                 f"{getattr(self, attribute)!r}.")
        for key, values in self.grid.items():
            if not isinstance(values, (list, tuple)):
                raise ValueError(f"model.grid.{key} must be a list of values, got {values!r}.")
        learning_rates = [*self.grid.get("lr", ()), *([self.hparams["lr"]] if "lr" in self.hparams else [])]
        for value in learning_rates:
            if not _is_positive_number(value):
                raise ValueError(f"Learning rate lr={value!r} for {self.name!r} must be a finite number > 0.")

    def _pin_named_hyperparameters(self) -> None:
        """`model.target` / `model.weights` reach the model as the pinned hyperparameters of the same name."""
        if not isinstance(self.hparams, dict):
            return  # reported with the other checks
        pinned = dict(self.hparams)
        for key in ("target", "weights"):
            value = getattr(self, key)
            if value is None:
                continue
            if pinned.get(key) not in (None, value):
                raise ValueError(f"model.{key}={value!r} and model.hparams.{key}={pinned[key]!r} disagree; give "
                                 f"model.{key} only.")
            pinned[key] = value
        object.__setattr__(self, "hparams", pinned)


def _is_positive_number(value: Any) -> bool:
    return not isinstance(value, bool) and isinstance(value, (int, float)) and math.isfinite(value) and value > 0


@dataclass(frozen=True)
class MethodConfig:
    """Which robustness method the architecture is trained or wrapped with (protocol 4).

    Attributes:
        name: method registry key: baseline (plain training, protocol 5.3), adversarial_training,
            randomized_training, fault_augmentation, revin, adaptive_robust_loss (train kind: inherit the
            baseline winner's hyperparameters and train each recipe from scratch), ensemble,
            randomized_smoothing (wrap kind: wrap stored baseline predictors).
        grid: recipe grid `{key: [values]}`; empty uses the preset's (`conf/method/<name>.yaml`). A sweep may
            narrow it, e.g. `method.grid.eps=[0.1]`.
    """

    name: str = "baseline"
    grid: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not isinstance(self.grid, dict):
            raise ValueError(f"method.grid must be a mapping of recipe keys to value lists, got {self.grid!r}.")
        for key, values in self.grid.items():
            if not isinstance(values, (list, tuple)):
                raise ValueError(f"method.grid.{key} must be a list of values, got {values!r}.")


@dataclass(frozen=True)
class TrainConfig:
    """Training and selection of trainable architectures (protocol 5.1-5.4).

    Attributes:
        max_epochs: epoch limit (200).
        patience: early-stopping patience in epochs without strict improvement (10).
        min_delta: improvement margin (0).
        candidate_budget: random-subgrid candidates per (dataset, architecture, method) (40).
        steps_per_epoch: optimiser steps per epoch; null = every drop-last batch (625 or 156). Smaller
            values are for smoke tests; they change the candidate identity.
        group_size: most candidates (same architecture hyperparameters, different learning rates; or a method's
            variants differing only in recipe values) trained together under vmap; "auto" (default; null is its
            former spelling and means the same) = on a CPU 1 baseline candidate at a time (vectorising pays little
            there) and all of a method's variants of one structure (at most 40); on an accelerator as many as
            the device's memory holds by the compiled epoch's memory analysis.
        num_devices: devices a vectorised group's candidates are split over; null = every local device, at most
            one per candidate (the `sfbench` CLI exposes every CPU core as a device).
        master_seed: master seed of the model and tuning seeds (protocol 1.6: 42); other values train independent
            replicates on the same data windows.
        store_dir: candidate store (finished candidates are never retrained); null = `candidates/` inside the
            run directory.
        progress: print per-epoch progress lines.
    """

    max_epochs: int = 200
    patience: int = 10
    min_delta: float = 0.0
    candidate_budget: int = 40
    steps_per_epoch: int | None = None
    group_size: int | str | None = AUTO
    num_devices: int | None = None
    master_seed: int = 42
    store_dir: str | None = None
    progress: bool = True

    def __post_init__(self) -> None:
        _require_at_least("train.max_epochs", self.max_epochs, 1)
        _require_at_least("train.patience", self.patience, 1)
        if not (math.isfinite(self.min_delta) and self.min_delta >= 0):
            raise ValueError(f"train.min_delta must be a finite number >= 0, got {self.min_delta}.")
        _require_at_least("train.candidate_budget", self.candidate_budget, 1)
        _require_at_least("train.steps_per_epoch", self.steps_per_epoch, 1, "(or null for full epochs)")
        if isinstance(self.group_size, bool) or (isinstance(self.group_size, str) and self.group_size != AUTO):
            raise ValueError(f"train.group_size must be a whole number >= 1 or {AUTO!r} (as many as fit), got "
                             f"{self.group_size!r}.")
        if not isinstance(self.group_size, str):
            _require_at_least("train.group_size", self.group_size, 1, f"(or {AUTO} for as many as fit)")
        _require_at_least("train.num_devices", self.num_devices, 1, "(or null for every local device)")
        if not 0 <= self.master_seed < 2**31 - 1:
            raise ValueError(f"train.master_seed must be in [0, 2**31 - 1), got {self.master_seed}.")

    def protocol(self) -> dict[str, Any]:
        """The settings that change a trained candidate (part of its identity)."""
        return {"max_epochs": self.max_epochs, "patience": self.patience, "min_delta": self.min_delta,
                "steps_per_epoch": self.steps_per_epoch}


@dataclass(frozen=True)
class EvalConfig:
    """Monte Carlo evaluation settings (protocol 6).

    Attributes:
        rng_mode: "jax" (folded on-device keys; fast) or "reference" (the reference's MT19937 streams; exact);
            summary column `rng_mode`.
        seed: evaluation-data seed (summary column `eval_seed`): it draws the test windows, keys the faults
            and seeds the bootstrap; None uses the dataset's canonical seed.
        k: number of test windows K.
        chunk_size: windows per compiled call (rounded up to whole blocks on every device); None: about 1024
            per device. Never changes a result.
        block_size: windows the compiled program computes at once; None: per platform (cache-sized on CPU,
            memory-budgeted on accelerators), halved until the compiled memory analysis fits
            `memory_budget_mb`. Chunk size and device count never change a result; the block size fixes the
            float rounding of the per-window reductions.
        channel_fraction: fixed channel fraction q of the sensitivity variant (k = ceil(q M) channels for
            s > 0); None uses the severity rule.
        memory_budget_mb: temporary memory per device when choosing the block size; an explicit block size and
            the bootstrap (on the host) are checked against it before any work.
        num_devices: devices to shard windows over; None: all local devices when the evaluation moves enough
            window data to pay for the per-device overhead, else fewer. Never changes a result.
        layout: how the chunk program is laid out (docs/speed.md, "Layouts"): "cpu" walks cache-sized blocks of
            windows and the scenarios in loops; "accelerator" computes a device's whole chunk at once, every
            scenario a static part of the program, the chunk sized from the device's memory; "auto" (default)
            takes "cpu" on a CPU and "accelerator" elsewhere. Both give the same per-window losses (bit for bit
            for the models whose per-window arithmetic does not depend on the batch size; tests/evaluation/
            test_layouts.py).
        bootstrap_draws: bootstrap resamples for the 95% intervals, in [40, 100,000] (`MIN_BOOTSTRAP_DRAWS`,
            `MAX_BOOTSTRAP_DRAWS` say why).
        channel_sparse: run a channel-independent model (DLinear, PatchTST, SeasonalNaive) only on the target
            channels a fault touched; per-window losses equal the full computation to float rounding
            (false: the full computation, e.g. to compare).
        progress: print progress lines to stderr.
        scenarios: the scored scenarios: the paper's eight (always scored, whether listed or not) plus any extra
            scenarios that installed plug-ins register, e.g. `eval.scenarios=[quantisation]`. Extras get their own
            `d_<name>` / `mse_<name>` columns but never enter D_w, MSE_w, D-bar or mPC, and the eight's draws and
            losses do not change. Stored normalised: the eight in canonical order, then the extras as given.
    """

    rng_mode: str = "jax"
    seed: int | None = None
    k: int = 10_000
    chunk_size: int | None = None
    block_size: int | None = None
    channel_fraction: float | None = None
    memory_budget_mb: int = 1024
    num_devices: int | None = None
    layout: str = "auto"
    bootstrap_draws: int = 1000
    channel_sparse: bool = True
    progress: bool = True
    scenarios: tuple[str, ...] = SCENARIO_KEYS

    def __post_init__(self) -> None:
        self._check_scenarios()
        if self.rng_mode not in RNG_MODES:
            raise ValueError(f"Unknown eval.rng_mode {self.rng_mode!r}; use one of {list(RNG_MODES)}.")
        if self.seed is not None and not 0 <= self.seed < 2**32:
            raise ValueError(f"eval.seed must be in [0, 2**32) (or null for the canonical seed), got {self.seed}.")
        if not 1 <= self.k <= MAX_WINDOWS:
            raise ValueError(f"eval.k must be in [1, {MAX_WINDOWS:,}], got {self.k}; the protocol uses 10,000.")
        _require_at_least("eval.chunk_size", self.chunk_size, 1, "(or null for automatic)")
        _require_at_least("eval.block_size", self.block_size, 1, "(or null for automatic)")
        if self.channel_fraction is not None and not 0.0 < self.channel_fraction <= MAX_CHANNEL_FRACTION:
            raise ValueError(f"eval.channel_fraction must lie in (0, {MAX_CHANNEL_FRACTION}] (the fixed channel "
                             f"fraction q, or null for the severity rule), got {self.channel_fraction}.")
        _require_at_least("eval.memory_budget_mb", self.memory_budget_mb, 1)
        _require_at_least("eval.num_devices", self.num_devices, 1, "(or null for automatic)")
        if self.layout not in EVAL_LAYOUTS:
            raise ValueError(f"Unknown eval.layout {self.layout!r}; use one of {list(EVAL_LAYOUTS)} (auto: cpu on a "
                             "CPU, accelerator elsewhere).")
        self._check_bootstrap()

    def _check_scenarios(self) -> None:
        """The eight plus the registered extras named, without repeats; the reference mode only with extras that
        carry a reference-RNG draw."""
        names = [self.scenarios] if isinstance(self.scenarios, str) else list(self.scenarios)
        extras = tuple(dict.fromkeys(name for name in names if name not in SCENARIO_KEYS))
        faults = scored_scenarios(extras)  # unknown names: a ValueError listing the registered extras
        no_reference = [fault.key for fault in faults if fault.reference is None]
        if self.rng_mode == "reference" and no_reference:
            raise ValueError(f"eval.rng_mode=reference reproduces the reference's random streams, which exist for the "
                             f"paper's eight scenarios only; the extra scenario(s) {no_reference} have no "
                             "reference-RNG draw. Use eval.rng_mode=jax, or leave them out of eval.scenarios.")
        object.__setattr__(self, "scenarios", SCENARIO_KEYS + extras)

    @property
    def extra_scenarios(self) -> tuple[str, ...]:
        """The plug-in scenarios scored beside the paper's eight (empty by default)."""
        return self.scenarios[len(SCENARIO_KEYS):]

    def _check_bootstrap(self) -> None:
        """Draws enough for a 95% percentile interval, not more than the time and the memory budget allow."""
        draws = self.bootstrap_draws
        if isinstance(draws, bool) or not isinstance(draws, int) \
                or not MIN_BOOTSTRAP_DRAWS <= draws <= MAX_BOOTSTRAP_DRAWS:
            raise ValueError(
                f"eval.bootstrap_draws must be in [{MIN_BOOTSTRAP_DRAWS}, {MAX_BOOTSTRAP_DRAWS:,}], got {draws}: a 95% "
                f"percentile interval needs at least one draw in each 2.5% tail (B >= {MIN_BOOTSTRAP_DRAWS}), and "
                f"beyond {MAX_BOOTSTRAP_DRAWS:,} draws the bootstrap costs minutes without changing a printed digit.")
        needed = bootstrap_bytes(draws, self.k)
        if needed > self.memory_budget_mb * 2**20:
            raise ValueError(
                f"eval.bootstrap_draws={draws} with eval.k={self.k} needs about {math.ceil(needed / 2**20)} MiB for "
                f"the bootstrap, over eval.memory_budget_mb={self.memory_budget_mb}; lower eval.bootstrap_draws or "
                "eval.k, or raise eval.memory_budget_mb.")

    def check_block_size(self, spec: DatasetSpec) -> None:
        """Raise a ValueError when an explicit `block_size` cannot fit `memory_budget_mb` on this dataset: the
        compiled program holds about `KERNEL_BYTES_PER_WINDOW_BYTE` bytes per byte of window data (the factor
        the engine's own block sizing uses), so that block would run out of memory only after the training."""
        if self.block_size is None:
            return
        largest = self.memory_budget_mb * 2**20 // (KERNEL_BYTES_PER_WINDOW_BYTE * window_bytes(spec))
        if self.block_size > largest:
            raise ValueError(
                f"eval.block_size={self.block_size} exceeds the {largest} windows of {spec.key} that fit "
                f"eval.memory_budget_mb={self.memory_budget_mb} (about {KERNEL_BYTES_PER_WINDOW_BYTE} x "
                f"{window_bytes(spec):,} bytes of temporaries per window); lower eval.block_size (or null for "
                "automatic) or raise eval.memory_budget_mb.")

    def for_dataset(self, spec: DatasetSpec) -> EvalConfig:
        """These settings with the seed resolved (None -> the dataset's canonical evaluation seed)."""
        if self.seed is not None:
            return self
        return dataclasses.replace(self, seed=spec.seeds.canonical_eval_seed)


def _require_at_least(name: str, value: int | None, minimum: int, null_hint: str = "") -> None:
    """Raise a ValueError naming `name` when `value` (None allowed where `null_hint` says so) < minimum."""
    if value is None and null_hint:
        return
    if value is None or value < minimum:
        suffix = f" {null_hint}" if null_hint else ""
        raise ValueError(f"{name} must be >= {minimum}{suffix}, got {value}.")


#: Where a finished run is also logged (`tracking=mlflow`; the run folder stays the source of truth).
TRACKING_BACKENDS = ("none", "mlflow")


@dataclass(frozen=True)
class TrackingConfig:
    """Experiment tracking of finished runs (`sfbench_jax.report.mlflow_logging`); changes no number.

    Attributes:
        backend: "none" or "mlflow" (the `[mlflow]` extra).
        uri: the tracking server (default: the MLFLOW_TRACKING_URI environment variable).
        experiment: the MLflow experiment the runs are logged under.
    """

    backend: str = "none"
    uri: str | None = None
    experiment: str = "sfbench"

    def __post_init__(self) -> None:
        if self.backend not in TRACKING_BACKENDS:
            raise ValueError(f"tracking={self.backend!r} is unknown; use one of {list(TRACKING_BACKENDS)} "
                             "(e.g. tracking=mlflow).")


@dataclass(frozen=True)
class RunConfig:
    """A whole `sfbench` run.

    Attributes:
        dataset: the dataset.
        model: the architecture and its search space.
        method: the robustness method.
        train: training and selection settings (trainable architectures).
        eval: evaluation settings.
        data_root: folder laid out like ../shared/data (SFBENCH_DATA_ROOT); not needed for etth1 and the
            synthetic datasets.
        cache_dir: where derived Parquet files are cached (SFBENCH_CACHE_DIR); None disables caching.
        compilation_cache: keep compiled XLA programs in `<cache_dir>/xla` (JAX's persistent compilation
            cache; switched on by the `sfbench` command, a process-wide setting), so re-runs, resumed sweeps
            and the jobs of a multirun load the evaluation and training programs instead of compiling them
            again. A loaded program is the same executable: results do not change.
        figures: write figures (PNG) next to the tables.
        overwrite: replace a completed run already in the run folder (it is kept beside it as
            `.NAME.replaced-TIME`; the new run is swapped in atomically when it is complete). Without it a run
            into such a folder stops before any work.
        tracking: also log the finished run to a tracking server (`tracking=mlflow`).
    """

    dataset: DatasetConfig = field(default_factory=DatasetConfig)
    model: ModelConfig = field(default_factory=ModelConfig)
    method: MethodConfig = field(default_factory=MethodConfig)
    train: TrainConfig = field(default_factory=TrainConfig)
    eval: EvalConfig = field(default_factory=EvalConfig)
    data_root: str | None = None
    cache_dir: str | None = None
    compilation_cache: bool = True
    figures: bool = True
    overwrite: bool = False
    tracking: TrackingConfig = field(default_factory=TrackingConfig)

    def __post_init__(self) -> None:
        # the block size needs the dataset's window size: checked here, before any work
        if isinstance(self.eval, EvalConfig) and isinstance(self.dataset, DatasetConfig):
            self.eval.check_block_size(self.dataset.spec)
