"""Registry of forecasting architectures by name, with their hyperparameter grids.

What lives here: `MODELS` (name -> `ModelSpec` of `models/spec.py`: config dataclass, validity predicate, module
class, label, family, trainable / channel-independent / RevIN capabilities; each built-in's spec is `SPEC` in its own
module, collected from this package (no list to edit: `plugins.package_specs`) in the order of the specs'
`display_rank`, the paper's, then the plug-ins of entry-point group `sfbench_jax.models`; host models such as
Chronos-2 and external predictors are entries like any other), and the functions the rest of the
engine calls: `expand_grid`, `is_valid_combination`, `make_config` and `build_model` (each takes a spec, or a name
for a person calling it directly: `model_spec`). Every architecture,
SeasonalNaive included, is built the same way. Each grid lives in one place, the model's preset
`conf/model/<name>.yaml` (installed as `sfbench_jax.conf`), in the preset's key order. Candidate sampling
(random subgrids) belongs to `sfbench_jax/training/`.

Example:
    >>> from sfbench_jax.models.registry import MODELS, build_model, expand_grid
    >>> len(expand_grid("gru"))
    72
    >>> model = build_model("gru", expand_grid("gru")[0], input_len=96, horizon=6,
    ...                     num_channels=12, target_indices=[0], seed=0)
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Sequence
from typing import Any

import jax
from flax import nnx

from sfbench_jax.models.hparams import HParams
from sfbench_jax.models.revin import RevIN, RevINConfig
from sfbench_jax.models.spec import ModelSpec
from sfbench_jax.plugins.entry_points import discovered, package_specs, register_specs, unknown_name_error

NON_ARCHITECTURE_KEYS: tuple[str, ...] = ("lr",)
"""Grid keys that are not architecture hyperparameters; `build_model` accepts and ignores them."""


#: The built-ins (each `SPEC` in its own module of this package) by `display_rank`, the paper's display order (Table 4,
#: Figure 2), the host models last; then the plug-ins by entry-point name.
MODELS: dict[str, ModelSpec] = {spec.name: spec for spec in package_specs("sfbench_jax.models", ModelSpec)}
register_specs(MODELS, discovered("models", ModelSpec), kind="models")


def get_spec(name: str) -> ModelSpec:
    """Look up an architecture; unknown names raise `ValueError` listing the valid ones."""
    if name not in MODELS:
        raise unknown_name_error("models", name, f"Unknown model {name!r}. Valid models: {', '.join(sorted(MODELS))}.")
    return MODELS[name]


def model_spec(model: ModelSpec | str) -> ModelSpec:
    """`model` itself, or the spec registered under the name `model` (`get_spec`). The engine passes specs, resolved
    once where a run starts; the registry's functions also take a name for a person calling them directly."""
    return model if isinstance(model, ModelSpec) else get_spec(model)


def expand_grid(model: ModelSpec | str, *, input_len: int = 96) -> list[dict[str, Any]]:  # values: see `HParams`
    """All valid grid combinations of `model`, in spec order (first key varies slowest).

    Invalid combinations (protocol 5.3) are dropped before any sampling; counts for `input_len=96`:
    dlinear 84, gru 72, moderntcn 192, patchtst 384, tsmixer 324, seasonal_naive 10, chronos2 1, external 1.
    """
    spec = model_spec(model)
    keys = list(spec.grid)
    combos = (dict(zip(keys, values, strict=True)) for values in itertools.product(*spec.grid.values()))
    return [c for c in combos if spec.is_valid(c, input_len=input_len)]


def _architecture_hparams(spec: ModelSpec, hparams: HParams) -> dict[str, Any]:  # values: see `HParams`
    valid = spec.hyperparameter_names
    unknown = sorted(set(hparams) - set(valid) - set(NON_ARCHITECTURE_KEYS))
    if unknown:
        raise ValueError(f"Unknown hyperparameter(s) {unknown} for {spec.name!r}; valid: "
                         f"{list(valid)} (plus ignored {list(NON_ARCHITECTURE_KEYS)}).")
    return {k: v for k, v in hparams.items() if k in valid}


def make_config(model: ModelSpec | str, hparams: HParams) -> Any:  # the spec's `config_cls`, a plain `type`
    """The validated config dataclass of `model` from a hyperparameter dict (`lr` ignored).

    Raises:
        ValueError: unknown model, unknown hyperparameter, invalid value or combination.
    """
    spec = model_spec(model)
    return spec.config_cls(**_architecture_hparams(spec, hparams))


def is_valid_combination(model: ModelSpec | str, hparams: HParams, *, input_len: int = 96) -> bool:
    """Whether `hparams` is a valid combination for `model` (the grid filter of protocol 5.3)."""
    return bool(model_spec(model).is_valid(dict(hparams), input_len=input_len))


def model_rngs(seed: int) -> nnx.Rngs:
    """Initialisation and dropout streams derived from one integer seed by folding in 0 / 1."""
    base = jax.random.key(seed)
    return nnx.Rngs(params=jax.random.fold_in(base, 0), dropout=jax.random.fold_in(base, 1))


def build_model(model: ModelSpec | str, hparams: HParams, *, input_len: int, horizon: int,
                num_channels: int, target_indices: Sequence[int], seed: int,
                revin: RevINConfig | None = None) -> nnx.Module:
    """Construct an architecture for one dataset shape.

    Args:
        model: the architecture's spec, or its registry key (`dlinear`, `gru`, `moderntcn`, `patchtst`,
            `tsmixer`, `seasonal_naive`, `chronos2`, `external`).
        hparams: architecture hyperparameters; missing ones take the config defaults, `lr`
            is accepted and ignored.
        input_len: window length `n`.
        horizon: forecast length `H`.
        num_channels: input channels `m`.
        target_indices: channels the model returns, in order.
        seed: parameter-initialisation and dropout seed.
        revin: wrap the model in RevIN with these options (not for patchtst/seasonal_naive).

    Returns:
        The NNX module (train mode, like a fresh PyTorch module; call `.eval()` to evaluate).

    Raises:
        ValueError: unknown model or hyperparameter, invalid value or combination, dataset
            shape the architecture cannot handle, or RevIN requested where it does not apply.
    """
    spec = model_spec(model)
    config = make_config(spec, hparams)
    if revin is not None and not spec.supports_revin:
        supported = sorted(n for n, s in MODELS.items() if s.supports_revin)
        raise ValueError(f"RevIN cannot wrap {spec.name!r}; it applies to {supported}.")
    # `module_cls` is a plain `type` (plug-ins name any NNX class), so `base` is untyped here; a spec that
    # `supports_revin` promises `predict_all_channels` (contracts.py checks it), which RevIN needs.
    base = spec.module_cls(input_len=input_len, horizon=horizon, num_channels=num_channels,
                           target_indices=target_indices, rngs=model_rngs(seed), **dataclasses.asdict(config))
    built: nnx.Module = RevIN(base, revin) if revin is not None else base
    return built
