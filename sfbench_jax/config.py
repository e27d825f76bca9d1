"""Typed run configuration: frozen dataclasses that Hydra's YAML presets validate against.

The CLI composes `conf/config.yaml`, converts it once to these dataclasses (`OmegaConf.to_object`) and
hands them to the library; library code never sees a DictConfig or an environment variable.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from sfbench_jax.data.registry import DATASETS
from sfbench_jax.evaluate.engine import MAX_WINDOWS, RNG_MODES
from sfbench_jax.models.seasonal_naive import SEASON_GRID


@dataclass(frozen=True)
class DatasetConfig:
    """Which dataset to use.

    Attributes:
        name: registry key (etth1, traffic, beijing_air_tiantan, penmanshiel_wt08, traffic_synthetic,
            penmanshiel_synthetic).
    """

    name: str = "etth1"

    def __post_init__(self) -> None:
        if self.name not in DATASETS:
            raise ValueError(f"Unknown dataset {self.name!r}. Valid datasets: {', '.join(sorted(DATASETS))}.")


@dataclass(frozen=True)
class ModelConfig:
    """Which architecture to evaluate and its search space.

    Attributes:
        name: architecture registry key.
        season_grid: SeasonalNaive season lengths searched on clean validation.
    """

    name: str = "seasonal_naive"
    season_grid: tuple[int, ...] = SEASON_GRID

    def __post_init__(self) -> None:
        supported = ("seasonal_naive",)
        if self.name not in supported:
            raise ValueError(f"Unknown or unsupported model {self.name!r}. Valid models: {', '.join(supported)}.")
        if not self.season_grid or any(int(s) < 1 for s in self.season_grid):
            raise ValueError(f"season_grid must be a non-empty list of lengths >= 1, got {self.season_grid}.")


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
        eval: evaluation settings.
        data_root: folder laid out like ../shared/data (SFBENCH_DATA_ROOT); not needed for etth1 and the
            synthetic datasets.
        cache_dir: where derived Parquet files are cached (SFBENCH_CACHE_DIR); None disables caching.
        figures: write figures (PNG) next to the tables.
    """

    dataset: DatasetConfig = field(default_factory=DatasetConfig)
    model: ModelConfig = field(default_factory=ModelConfig)
    eval: EvalConfig = field(default_factory=EvalConfig)
    data_root: str | None = None
    cache_dir: str | None = None
    figures: bool = True
