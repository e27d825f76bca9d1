"""`ModelSpec`: everything the engine, the methods and the report need to know about one architecture.

A plug-in package imports this module (and public building blocks such as `sfbench_jax.models.layers`), never
the registry, and names a `ModelSpec` in its `sfbench_jax.models` entry point (docs/extending.md). Built-ins are
specs like any other: each is `SPEC` in its own module of `sfbench_jax/models/`, which the registry collects. The
grid lives in the model's preset `model/<name>.yaml` (the built-in presets, then the plug-in preset packages).

Capabilities are read by the rest of the code instead of name lists: `is_trainable` (the selection fits it; the
training-kind methods apply), `is_channel_independent` (channel i's forecast depends on channel i only; with
`forecasts_channels_cheaply` the engine takes the channel-sparse path, the module then implements
`predict_channels(x, channel_ids)`), `supports_revin` (the RevIN wrapper may be put around it).

`Forecaster` and `AllChannelForecaster` are the module interfaces as types (for the type checker; nothing checks
them at run time): what the engine calls on every architecture, and what a RevIN-wrappable one adds.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Protocol

from sfbench_jax.plugins.presets import preset_grid

if TYPE_CHECKING:  # the protocols' annotations only; no import of the data layer at run time
    from sfbench_jax.data.windows import AllChannelForecast, Forecast, Inputs


class Forecaster(Protocol):
    """An architecture's module as the wrappers see it: its window shape and its forecast of the targets."""

    input_len: int
    horizon: int
    num_channels: int
    target_indices: tuple[int, ...]

    def __call__(self, x: Inputs) -> Forecast: ...


class AllChannelForecaster(Forecaster, Protocol):
    """A forecaster that also forecasts every input channel (`supports_revin`: RevIN de-normalises those)."""

    def predict_all_channels(self, x: Inputs) -> AllChannelForecast: ...


@dataclasses.dataclass(frozen=True, eq=False)
class ModelSpec:
    """One architecture.

    Attributes:
        name: registry key (the `architecture` column of the results).
        config_cls: frozen dataclass of the architecture hyperparameters (validated).
        is_valid: predicate `(hparams, *, input_len) -> bool` for grid combinations.
        module_cls: the NNX module class, built as `module_cls(input_len=, horizon=, num_channels=,
            target_indices=, rngs=, **config fields)`.
        is_trainable: whether the architecture has parameters to train.
        is_channel_independent: whether channel i's forecast depends on channel i only.
        supports_revin: whether the RevIN wrapper may be put around it.
        label: display label (report tables and figures); the name when empty.
        family: architecture family (paper Figure 5 colours; the long-form `architecture_family` column).
        forecasts_channels_cheaply: a channel-independent model whose forecast of a few channels costs less than
            of all (the engine then runs it on the channels a fault touched only, through the module's
            `predict_channels(x (batch, n, k), channel_ids (batch, k) int32) -> (batch, H, k)`). Defaults to True:
            a channel-independent model without `predict_channels` sets it False.
        display_rank: a built-in's position in the registry and so in every table and figure (the paper's order,
            0 = SeasonalNaive); None: after the ranked built-ins, by name. Plug-ins from entry points come after
            all built-ins, by entry-point name, whatever their rank.
    """

    name: str
    config_cls: type
    is_valid: Callable[..., bool]
    module_cls: type
    is_trainable: bool
    is_channel_independent: bool
    supports_revin: bool
    label: str = ""
    family: str = ""
    forecasts_channels_cheaply: bool = True
    display_rank: int | None = None

    @property
    def display_label(self) -> str:
        """The label shown in tables (the name when the spec gives none)."""
        return self.label or self.name

    @property
    def channel_sparse(self) -> bool:
        """Whether the engine evaluates it on the faulted channels only (channel-independent and cheaper so)."""
        return self.is_channel_independent and self.forecasts_channels_cheaply

    @property
    def grid(self) -> Mapping[str, tuple[Any, ...]]:  # values: see `models.hparams.HParams`
        """Search space in the preset's key order (first key varies slowest), `lr` included where trained."""
        return preset_grid("model", self.name)

    @property
    def hyperparameter_names(self) -> tuple[str, ...]:
        """The architecture's own hyperparameter names (the config fields)."""
        return tuple(f.name for f in dataclasses.fields(self.config_cls))
