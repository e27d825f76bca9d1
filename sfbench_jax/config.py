"""Typed run configuration: frozen dataclasses that Hydra's YAML presets validate against.

The CLI composes `conf/config.yaml`, converts it once to these dataclasses (`OmegaConf.to_object`) and
hands them to the library; library code never sees a DictConfig or an environment variable.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field
from typing import Any

from sfbench_jax.data.registry import DATASETS
from sfbench_jax.evaluate.engine import MAX_WINDOWS, RNG_MODES
from sfbench_jax.models.registry import MODELS, make_config
from sfbench_jax.models.seasonal_naive import SEASON_GRID
from sfbench_jax.train.fit import check_training_settings
from sfbench_jax.train.search import expand_space, explain_invalid, search_space

#: Robustness methods this build trains (more arrive with sfbench_jax.methods).
METHODS = ("baseline",)


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
        if self.name not in DATASETS:
            raise ValueError(f"Unknown dataset {self.name!r}. Valid datasets: {', '.join(sorted(DATASETS))}.")
        spec = DATASETS[self.name]
        for field_name, given, protocol in (("input_len", self.input_len, spec.input_len),
                                            ("horizon", self.horizon, spec.horizon)):
            if given is not None and given != protocol:
                same = sorted(key for key, other in DATASETS.items()
                              if getattr(other, field_name) == given)
                hint = f" Datasets with {field_name}={given}: {', '.join(same)}." if same else ""
                raise ValueError(f"dataset.{field_name}={given} does not match {self.name}'s window "
                                 f"(input_len={spec.input_len}, horizon={spec.horizon}); the benchmark protocol "
                                 f"fixes it. Remove the dataset.{field_name} override.{hint}")


def _builds(architecture: str, hparams: dict[str, Any]) -> bool:
    try:
        make_config(architecture, hparams)
    except ValueError:
        return False
    return True


@dataclass(frozen=True)
class ModelConfig:
    """Which architecture to evaluate and its search space.

    Attributes:
        name: architecture registry key (seasonal_naive, dlinear, gru, moderntcn, patchtst, tsmixer).
        season_grid: SeasonalNaive season lengths searched on clean validation.
        grid: search space of a trainable architecture, `{hyperparameter: [values]}` in the spec's key
            order (first key slowest), `lr` included; empty uses the registry's spec grid.
        hparams: hyperparameters pinned to one value each (the rest of the grid is still searched); a
            fully pinned combination trains exactly that candidate. Empty pins nothing.
    """

    name: str = "seasonal_naive"
    season_grid: tuple[int, ...] = SEASON_GRID
    grid: dict[str, Any] = field(default_factory=dict)
    hparams: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.name not in MODELS:
            raise ValueError(f"Unknown model {self.name!r}. Valid models: {', '.join(sorted(MODELS))}.")
        if not self.season_grid or any(int(s) < 1 for s in self.season_grid):
            raise ValueError(f"season_grid must be a non-empty list of lengths >= 1, got {self.season_grid}.")
        if not MODELS[self.name].is_trainable:
            if self.grid or self.hparams:
                raise ValueError(f"{self.name} searches model.season_grid; model.grid and model.hparams apply to "
                                 "trainable architectures only. Remove them.")
            return
        for attribute in ("grid", "hparams"):
            value = getattr(self, attribute)
            if value is not None and not isinstance(value, dict):
                raise ValueError(f"model.{attribute} must be a mapping of hyperparameter names, got {value!r}.")
        if self.grid is not None:
            for key, values in self.grid.items():
                if not isinstance(values, (list, tuple)):
                    raise ValueError(f"model.grid.{key} must be a list of values, got {values!r}.")
        space = search_space(self.name, self.grid, self.hparams)
        for value in space.get("lr", ()):
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not (
                    math.isfinite(value) and value > 0):
                raise ValueError(f"Learning rate lr={value!r} for {self.name!r} must be a finite number > 0.")
        combinations = list(self._combinations(space))
        builds = [_builds(self.name, combination) for combination in combinations]
        for key, values in space.items():
            for value in values:
                containing = [c for c, ok in zip(combinations, builds, strict=True)
                              if type(c[key]) is type(value) and c[key] == value]
                if not any(ok for c, ok in zip(combinations, builds, strict=True)
                           if type(c[key]) is type(value) and c[key] == value):
                    make_config(self.name, containing[0])  # raises the model's message (bad value / combination)

    @staticmethod
    def _combinations(space: dict[str, tuple[Any, ...]]) -> Any:
        keys = list(space)
        return (dict(zip(keys, values)) for values in itertools.product(*space.values()))

    def search_space(self) -> dict[str, tuple[Any, ...]]:
        """The grid to search (empty grid: the registry's), with the pinned hyperparameters applied."""
        return search_space(self.name, self.grid or None, self.hparams)

    @property
    def is_trainable(self) -> bool:
        """Whether the architecture is trained (not SeasonalNaive)."""
        return MODELS[self.name].is_trainable


@dataclass(frozen=True)
class MethodConfig:
    """Which robustness method the architecture is trained with.

    Attributes:
        name: method key; this build trains the `baseline` (plain training, spec 5.3).
    """

    name: str = "baseline"

    def __post_init__(self) -> None:
        if self.name not in METHODS:
            raise ValueError(f"Unknown or unsupported method {self.name!r}. Valid methods: {', '.join(METHODS)}.")


@dataclass(frozen=True)
class TrainConfig:
    """Training and selection of trainable architectures (spec 5.1-5.4).

    Attributes:
        max_epochs: epoch limit (200).
        patience: early-stopping patience in epochs without strict improvement (10).
        min_delta: improvement margin (0).
        candidate_budget: random-subgrid candidates per (dataset, architecture, method) (40).
        steps_per_epoch: optimiser steps per epoch; null = every drop-last batch (625 or 156). Smaller
            values are for smoke tests; they change the candidate identity.
        group_size: most candidates (same architecture hyperparameters, different learning rates) trained
            together under vmap; null = automatic (1 on CPU, where vectorising pays little, 8 on GPU/TPU).
        devices: devices a vectorised group's candidates are split over; null = every local device, at most
            one per candidate (the `sfbench` CLI exposes every CPU core as a device).
        master_seed: master seed of the model and tuning seeds (spec 1.6: 42); other values train independent
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
    group_size: int | None = None
    devices: int | None = None
    master_seed: int = 42
    store_dir: str | None = None
    progress: bool = True

    def __post_init__(self) -> None:
        check_training_settings(max_epochs=self.max_epochs, patience=self.patience, min_delta=self.min_delta,
                                steps_per_epoch=self.steps_per_epoch, group_size=self.group_size,
                                devices=self.devices)
        if self.candidate_budget < 1:
            raise ValueError(f"train.candidate_budget must be >= 1, got {self.candidate_budget}.")
        if not 0 <= self.master_seed < 2**31 - 1:
            raise ValueError(f"train.master_seed must be in [0, 2**31 - 1), got {self.master_seed}.")


@dataclass(frozen=True)
class EvalConfig:
    """Monte Carlo evaluation settings.

    Attributes:
        rng: "jax" (folded on-device keys; fast) or "reference" (the reference's MT19937 streams; exact).
        seed: evaluation-data seed; None uses the dataset's canonical seed (the data seed).
        k: number of test windows K.
        chunk_size: windows per compiled call (rounded up to whole blocks); None: about 1024 per device.
        block_size: windows the compiled program computes at once; None: per platform, halved until the
            compiled memory analysis fits `memory_budget_mb`. Chunk size and device count never change a
            result; the block size fixes the float rounding of the per-window reductions.
        channel_fraction: fixed channel fraction q of the sensitivity variant; None uses the severity rule.
        memory_budget_mb: temporary memory per device when choosing the block size.
        num_devices: devices to shard windows over; None uses all local devices.
        bootstrap_draws: bootstrap resamples for the 95% intervals.
        progress: print progress lines to stderr.
    """

    rng: str = "jax"
    seed: int | None = None
    k: int = 10_000
    chunk_size: int | None = None
    block_size: int | None = None
    channel_fraction: float | None = None
    memory_budget_mb: int = 1024
    num_devices: int | None = None
    bootstrap_draws: int = 1000
    progress: bool = True

    def __post_init__(self) -> None:
        if self.rng not in RNG_MODES:
            raise ValueError(f"Unknown eval.rng {self.rng!r}; use one of {list(RNG_MODES)}.")
        if not 1 <= self.k <= MAX_WINDOWS:
            raise ValueError(f"eval.k must be in [1, {MAX_WINDOWS:,}], got {self.k}; the protocol uses 10,000.")
        if self.chunk_size is not None and self.chunk_size < 1:
            raise ValueError(f"eval.chunk_size must be >= 1 (or null for automatic), got {self.chunk_size}.")
        if self.block_size is not None and self.block_size < 1:
            raise ValueError(f"eval.block_size must be >= 1 (or null for automatic), got {self.block_size}.")
        if self.channel_fraction is not None and not 0.0 < self.channel_fraction <= 0.5:
            raise ValueError(f"eval.channel_fraction must lie in (0, 0.5] (or null), got {self.channel_fraction}.")
        if self.seed is not None and not 0 <= self.seed < 2**32:
            raise ValueError(f"eval.seed must be in [0, 2**32) (or null for the canonical seed), got {self.seed}.")
        if self.bootstrap_draws < 1:
            raise ValueError(f"eval.bootstrap_draws must be >= 1, got {self.bootstrap_draws}.")
        if self.memory_budget_mb < 1:
            raise ValueError(f"eval.memory_budget_mb must be >= 1, got {self.memory_budget_mb}.")


@dataclass(frozen=True)
class RunConfig:
    """A whole `sfbench` run.

    Attributes:
        dataset: the dataset.
        model: the architecture and its search space.
        method: the robustness method (baseline).
        train: training and selection settings (trainable architectures).
        eval: evaluation settings.
        data_root: folder laid out like ../shared/data (SFBENCH_DATA_ROOT); not needed for etth1 and the
            synthetic datasets.
        cache_dir: where derived Parquet files are cached (SFBENCH_CACHE_DIR); None disables caching.
        compilation_cache: keep compiled XLA programs in `<cache_dir>/xla` (JAX's persistent compilation
            cache), so re-runs, resumed sweeps and the jobs of a multirun load the evaluation and training
            programs instead of compiling them again. A loaded program is the same executable: results do
            not change.
        figures: write figures (PNG) next to the tables.
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

    def __post_init__(self) -> None:
        if not self.model.is_trainable:
            return
        spec = DATASETS[self.dataset.name]
        space = self.model.search_space()
        if not expand_space(self.model.name, space, input_len=spec.input_len):
            first = next(ModelConfig._combinations(space))
            reason = explain_invalid(self.model.name, first, input_len=spec.input_len, horizon=spec.horizon,
                                     num_channels=spec.num_channels, target_indices=spec.target_indices)
            raise ValueError(f"No valid {self.model.name} candidate for {self.dataset.name} (input_len="
                             f"{spec.input_len}, horizon={spec.horizon}): {reason} Change model.hparams / "
                             "model.grid.")
