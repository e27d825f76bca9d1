"""`MethodSpec`: everything the selection, the training, the checks and the report need to know about one
robustness method.

A plug-in package imports this module (and public building blocks such as `sfbench_jax.methods.training`'s
transforms or `sfbench_jax.methods.wrappers`), never the registry, and names a `MethodSpec` in its
`sfbench_jax.methods` entry point (docs/extending.md). Built-ins are specs like any other: each is `SPEC` in its
own module of `sfbench_jax/methods/` (e.g. `methods/ensemble.py`), which the registry collects. The recipe grid
lives in the method's preset `method/<name>.yaml`.

A method is one of three kinds: "baseline" trains the architecture plainly; "train" inherits the baseline
winner's hyperparameters, overlays its recipe and trains from scratch, acting inside the compiled step through
`transform` and/or around the model through `model_wrapper`; "wrap" combines stored baseline candidates through
`wrapper` (`WrapperSpec`: which candidates, and the predictor made of them).

A method's functions receive recipes read-only (`read_only`), and its transform must be pure: the contract checks
(`pipeline/contracts.py`) build and trace it twice on the same inputs before any work and refuse a method whose two
traces differ (a global counter, a global RNG, state kept between candidates).
"""

from __future__ import annotations

import dataclasses
import types
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from sfbench_jax.plugins.presets import preset_grid

if TYPE_CHECKING:
    from sfbench_jax.methods.training import DatasetFacts, TrainTransform
    from sfbench_jax.models.revin import RevINConfig
    from sfbench_jax.models.spec import ModelSpec
    from sfbench_jax.predictors.protocol import ModelState, Predictor

#: A method's recipe by key (int, float, str or bool per key, as its preset gives it; `bounds` and `check` check
#: each value's type and range, not the mapping).
Recipe = Mapping[str, Any]
#: The recipe grid being checked: key -> the values a sweep tries.
RecipeGrid = Mapping[str, tuple[Any, ...]]
KINDS = ("baseline", "train", "wrap")


def read_only(recipe: Mapping[str, Any]) -> Recipe:
    """A read-only copy of a recipe (or recipe grid), the only form in which a method's functions receive one: a
    method that pops or sets a key fails loudly (`TypeError` / `AttributeError`) instead of changing what the run
    records as its hyperparameters and what its candidate's hash names."""
    return types.MappingProxyType(dict(recipe))


@dataclasses.dataclass(frozen=True)
class Bound:
    """The allowed values of one recipe key: `accepts(value)`, and `allowed` saying the range and why."""

    accepts: Callable[[object], bool]
    allowed: str


@dataclasses.dataclass(frozen=True)
class WrapperSpec:
    """How a wrap-kind method turns stored baseline candidates into one predictor.

    Attributes:
        members: `(recipe, ranked) -> candidates`: the baseline candidates it uses, from the finished ones ranked
            by the selection key (the first is the baseline winner); raises a `ValueError` naming the fix when the
            recipe asks for more than there are.
        predictor: `(recipe, members, *, seed) -> (predict, state)`, `members` the `(predict, state)` of each
            candidate it chose, `seed` the dataset's `noise_seed`.
    """

    #: the ranked items are whatever the caller ranks (the pipeline's candidate records, the contract check's
    #: `(predict, state)` pairs): `members` picks among them without looking inside, so they stay generic
    members: Callable[[Recipe, Sequence[Any]], Sequence[Any]]
    predictor: Callable[..., tuple[Predictor, ModelState]]


def trainable(model: ModelSpec) -> bool:
    """The default applicability: architectures with parameters to train."""
    return model.is_trainable


@dataclasses.dataclass(frozen=True)
class MethodSpec:
    """One robustness method.

    Attributes:
        name: registry key (the `method` column of the results).
        kind: "baseline", "train" or "wrap".
        label: display label (paper tables); required (an empty string shows the name).
        variant_id: the variant id of one recipe combination (the `variant` column).
        applicable: predicate on a model's spec (`ModelSpec`: its capabilities) saying whether the method applies.
        transform: train kind: `(recipe, dataset facts) -> step transform` (`methods.training.PlainTraining`
            subclass) acting inside the compiled step on standardised windows (each channel minus its training
            mean, over its training standard deviation); None trains plainly.
        model_wrapper: train kind: `recipe -> RevINConfig | None`, what is put around the model (also when a
            stored candidate is rebuilt); None puts nothing.
        wrapper: wrap kind: how stored baseline candidates become its predictor.
        bounds: recipe key -> allowed values, checked before any work.
        check: further checks of the whole recipe grid before any work, called as `check(grid, *, architecture,
            num_baseline_candidates)` (accept `**_` for arguments added later),
            raising a `ValueError` that names the problem and the fix.
        unknown_keys: `(unknown recipe keys) -> message or None`: a specific error for keys that belong elsewhere.
        display_rank: a built-in's position in the registry and so in the report (the paper's Table 4 order,
            0 = the baseline); None: after the ranked built-ins, by name. Plug-ins from entry points come after all
            built-ins, by entry-point name, whatever their rank.
        trajectory_data_file: the file name of its baseline -> method trajectory data when the paper's Figure 6
            shows it (PGD: `pgd_trajectory_data.csv`); such a method is the figure's default. None: the figure
            shows it only when asked (`--method`) or when it is the only method, as `trajectory_data_<name>.csv`.
    """

    name: str
    kind: str
    label: str
    variant_id: Callable[[Recipe], str]
    applicable: Callable[[ModelSpec], bool] = trainable
    transform: Callable[[Recipe, DatasetFacts], TrainTransform] | None = None
    model_wrapper: Callable[[Recipe], RevINConfig | None] | None = None
    wrapper: WrapperSpec | None = None
    bounds: Mapping[str, Bound] = dataclasses.field(default_factory=dict)
    check: Callable[..., None] | None = None
    unknown_keys: Callable[[Sequence[str]], str | None] | None = None
    display_rank: int | None = None
    trajectory_data_file: str | None = None

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"Method {self.name!r} has kind {self.kind!r}; use one of {list(KINDS)}.")
        if (self.kind == "wrap") != (self.wrapper is not None):
            raise ValueError(f"Method {self.name!r}: a wrap-kind method needs a `wrapper` and only it has one.")

    @property
    def display_label(self) -> str:
        """The label shown in tables (the name when the spec gives none)."""
        return self.label or self.name

    @property
    def grid(self) -> Mapping[str, tuple[Any, ...]]:
        """The recipe grid of the method's preset, in key order (first key slowest)."""
        return preset_grid("method", self.name)

    def applies_to(self, architecture: str) -> bool:
        """Whether the method may be used with the registered architecture `architecture`."""
        from sfbench_jax.models.registry import MODELS  # at call time: a plug-in imports this module first

        return architecture in MODELS and bool(self.applicable(MODELS[architecture]))

    def check_values(self, recipes: RecipeGrid) -> None:
        """Raise a ValueError naming `method.grid.<key>`, the bad value, the allowed range and why, for the first
        recipe value outside its bound."""
        for key, bound in self.bounds.items():
            for value in recipes.get(key, ()):
                if not bound.accepts(value):
                    raise ValueError(f"method.grid.{key}={list(recipes[key])} for {self.name}: each value must be "
                                     f"{bound.allowed}; got {value!r}.")

    def model_wrapping(self, recipe: Recipe) -> RevINConfig | None:
        """What a recipe puts around the model (a `RevINConfig`), or None."""
        return None if self.model_wrapper is None or not recipe else self.model_wrapper(read_only(recipe))
