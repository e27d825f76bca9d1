"""Random-subgrid candidates (protocol 5.3): expand a search space, drop invalid combinations, shuffle
with Python's `random.Random(tuning_seed)` and keep the first `min(budget, #valid)`.

What lives here: `search_space` (a grid with some keys fixed), `expand_space` (valid combinations in
key order, first key slowest) and `random_subgrid` (the trial list). Training and selection do not.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from flax import nnx

from sfbench_jax.data.registry import DatasetSpec
from sfbench_jax.models.hparams import HParams
from sfbench_jax.models.registry import build_model, is_valid_combination, make_config
from sfbench_jax.models.spec import ModelSpec

#: The protocol's candidate budget per (dataset, architecture, method).
DEFAULT_BUDGET = 40


@dataclass(frozen=True)
class Candidate:
    """One sampled hyperparameter combination.

    Attributes:
        trial_number: 1-based position in the shuffled subgrid (the selection tie-break).
        grid_index: position in the expanded valid grid.
        hparams: the model's hyperparameters in grid key order, `lr` included (a method variant: those it
            inherits from the baseline winner).
        recipe: the method recipe (empty for the baseline).
        variant: the spec's variant id ("baseline" for the baseline).
    """

    trial_number: int
    grid_index: int
    hparams: dict[str, Any] = field(hash=False)
    recipe: dict[str, Any] = field(default_factory=dict, hash=False)
    variant: str = "baseline"

    @property
    def learning_rate(self) -> float:
        """The candidate's Adam learning rate."""
        return float(self.hparams["lr"])

    @property
    def architecture_hparams(self) -> dict[str, Any]:
        """The hyperparameters that shape the model (everything but `lr`)."""
        return {key: value for key, value in self.hparams.items() if key != "lr"}


def search_space(spec: ModelSpec, grid: Mapping[str, Sequence[Any]] | None = None,
                 fixed: HParams | None = None) -> dict[str, tuple[Any, ...]]:
    """The grid to search: `grid` (default: the spec's grid) with the `fixed` keys pinned.

    Raises:
        ValueError: unknown hyperparameter, empty value list, no learning rate for a trainable model.
    """
    architecture = spec.name
    allowed = set(spec.hyperparameter_names) | {"lr"}
    space = {key: tuple(values) for key, values in (spec.grid if grid is None else grid).items()}
    for origin, keys in (("model.grid", list(space)), ("model.hparams", list(fixed or {}))):
        unknown = [key for key in keys if key not in allowed]
        if unknown:
            raise ValueError(f"Unknown hyperparameter(s) {unknown} in {origin} for {architecture!r}; "
                             f"valid: {list(spec.hyperparameter_names) + ['lr']}.")
    empty = [key for key, values in space.items() if len(values) == 0]
    if empty:
        raise ValueError(f"model.grid for {architecture!r} has empty value lists for {empty}; give at "
                         "least one value per hyperparameter.")
    for key, value in (fixed or {}).items():
        space[key] = (value,)
    if spec.is_trainable and "lr" not in space:
        raise ValueError(f"The search space of {architecture!r} has no learning rate; add `lr` to "
                         "model.grid or model.hparams.")
    return space


def expand_space(model: ModelSpec, space: Mapping[str, Sequence[Any]], *, input_len: int) -> list[dict]:
    """All combinations of `space` in key order (first key slowest), invalid ones (protocol 5.3) removed."""
    keys = list(space)
    combos = (dict(zip(keys, values, strict=True)) for values in itertools.product(*space.values()))
    return [combo for combo in combos if is_valid_combination(model, combo, input_len=input_len)]


def explain_invalid(model: ModelSpec, hparams: HParams, *, input_len: int, horizon: int,
                    num_channels: int, target_indices: Sequence[int]) -> str:
    """Why `hparams` cannot be built for this window: the model's own error message."""
    try:
        make_config(model, hparams)
        nnx.eval_shape(lambda: build_model(model, hparams, input_len=input_len, horizon=horizon,
                                           num_channels=num_channels, target_indices=target_indices,
                                           seed=0))
    except ValueError as error:
        return str(error)
    return f"{dict(hparams)} is removed by the {model.name} validity rule for input_len={input_len}."


def check_search_space(model: ModelSpec, grid: Mapping[str, Sequence[Any]] | None,
                       fixed: HParams | None, *, spec: DatasetSpec) -> None:
    """Raise a ValueError naming the first problem of a search space, before any work: an unknown
    hyperparameter, a value the architecture rejects (its own message), or no combination that can be built for
    the dataset's window."""
    space = search_space(model, grid, fixed)
    combinations = [dict(zip(space, values, strict=True)) for values in itertools.product(*space.values())]
    builds = [_builds(model, combination) for combination in combinations]
    for key, values in space.items():
        for value in values:
            holds = [type(c[key]) is type(value) and c[key] == value for c in combinations]
            if not any(ok for ok, held in zip(builds, holds, strict=True) if held):
                make_config(model, combinations[holds.index(True)])  # raises the model's own message
    if not expand_space(model, space, input_len=spec.input_len):
        reason = explain_invalid(model, combinations[0], input_len=spec.input_len, horizon=spec.horizon,
                                 num_channels=spec.num_channels, target_indices=spec.target_indices)
        raise ValueError(f"No valid {model.name} candidate for {spec.key} (input_len={spec.input_len}, "
                         f"horizon={spec.horizon}): {reason} Change model.hparams / model.grid.")


def _builds(model: ModelSpec, hparams: HParams) -> bool:
    try:
        make_config(model, hparams)
    except ValueError:
        return False
    return True


def random_subgrid(combinations: Sequence[Mapping[str, Any]], *, tuning_seed: int,
                   budget: int = DEFAULT_BUDGET) -> list[Candidate]:
    """Shuffle the combination indices with `random.Random(tuning_seed)` and keep the first
    `min(budget, len(combinations))`, in that order (trial numbers 1, 2, ...)."""
    if budget < 1:
        raise ValueError(f"The candidate budget must be >= 1, got {budget}.")
    indices = list(range(len(combinations)))
    random.Random(tuning_seed).shuffle(indices)
    chosen = indices[: min(budget, len(indices))]
    return [Candidate(trial_number=trial, grid_index=index, hparams=dict(combinations[index]))
            for trial, index in enumerate(chosen, start=1)]

