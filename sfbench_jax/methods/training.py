"""Train-time method transforms (protocol 4.1-4.4): what a train-kind method changes inside the compiled step.

Each transform is a small frozen (hashable, static) dataclass with three hooks the epoch program calls:

* `training_inputs(key, x, loss_at)`: the batch the optimiser step sees (PGD's adversarial batch,
  randomized training's relative noise, fault augmentation's transfer faults; `loss_at(x)` is the batch
  loss of the model in eval mode with frozen parameters, used by the attack);
* `loss(prediction, target, latents)`: the training and validation loss (MSE, or the adaptive NLL);
* `initial_latents(horizon, num_targets)`: extra parameters trained with the model (the adaptive loss's
  alpha and scale latents; none otherwise).

Keys arrive per step from the training loop (their own stream, never an evaluation key); per window they
are folded with the window's row in the batch. RevIN changes the model, not the step (`revin`).
Each method's spec (`SPEC` in its own module, e.g. `methods/adversarial_training.py`) names its builder here.

Recipe values are data, not program constants: `recipe_values()` gives a transform's numeric settings (PGD's
eps, the noise level, the augmentation's p and s_max, the adaptive loss's bounds) as float32 host values,
`template()` the transform with those blanked (the static structure, hashed into the compiled program), and
`bind(values)` puts the values (traced, one per candidate of a vectorised group) back inside the program. So
variants that differ only in values share one program and train together like learning-rate siblings.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

import jax
import jax.numpy as jnp
import numpy as np

from sfbench_jax.faults.context import FaultContext
from sfbench_jax.faults.registry import TRANSFER_PROFILES, get_fault
from sfbench_jax.faults.severity import SEVERITY_BITS
from sfbench_jax.faults.streams import stream_words
from sfbench_jax.methods import barron_nll
from sfbench_jax.models.revin import RevINConfig

#: PGD's sign-step size (protocol 4.1: fixed 0.02).
PGD_STEP_SIZE = 0.02

LossAt = Callable[[jax.Array], jax.Array]
#: Extra parameters a loss trains with the model, by name (`initial_latents`; empty but for the adaptive loss).
Latents = dict[str, jax.Array]
#: A transform's recipe values by field: float32 host values (`recipe_values`), traced arrays inside the program.
RecipeValues = Mapping[str, jax.Array | np.float32]


def squared_error_loss(prediction: jax.Array, target: jax.Array) -> jax.Array:
    """Mean over batch, horizon and targets of the squared error (the protocol's training loss)."""
    error = prediction.astype(jnp.float32) - target
    return jnp.mean(error * error)


@dataclass(frozen=True)
class PlainTraining:
    """The baseline step: clean inputs, MSE."""

    def training_inputs(self, key: jax.Array, x: jax.Array, loss_at: LossAt) -> jax.Array:
        del key, loss_at
        return x

    def loss(self, prediction: jax.Array, target: jax.Array, latents: Latents) -> jax.Array:
        del latents
        return squared_error_loss(prediction, target)

    def initial_latents(self, horizon: int, num_targets: int) -> Latents:
        del horizon, num_targets
        return {}

    #: Fields that are recipe values (data of the program), blanked in the template.
    VALUE_FIELDS: ClassVar[tuple[str, ...]] = ()

    def recipe_values(self) -> dict[str, np.float32]:
        """The recipe's numeric settings as float32 host values (passed to the program as data)."""
        return {name: np.float32(getattr(self, name)) for name in self.VALUE_FIELDS}

    def template(self) -> PlainTraining:
        """The static structure shared by every variant of this transform (recipe values blanked)."""
        return dataclasses.replace(self, **dict.fromkeys(self.VALUE_FIELDS, 0.0)) if self.VALUE_FIELDS else self

    def bind(self, values: RecipeValues | None) -> PlainTraining:
        """The transform with its recipe values taken from `values` (arrays inside the program)."""
        return dataclasses.replace(self, **values) if values else self


@dataclass(frozen=True)
class AdversarialTraining(PlainTraining):
    """PGD (protocol 4.1): random start in [-eps, eps], `steps` sign steps of 0.02 on the masked batch loss of the
    eval-mode model, clipped to [-eps, eps]; the step trains on the adversarial batch only.

    Attributes:
        eps: L-infinity radius.
        steps: attack iterations.
        channel_mask: channels the attack may change (None: all, the benchmark's scope).
    """

    eps: float
    steps: int
    channel_mask: tuple[bool, ...] | None = None

    VALUE_FIELDS = ("eps",)

    def training_inputs(self, key: jax.Array, x: jax.Array, loss_at: LossAt) -> jax.Array:
        mask = 1.0 if self.channel_mask is None else jnp.asarray(self.channel_mask, jnp.float32)
        delta = jax.random.uniform(key, x.shape, jnp.float32, -self.eps, self.eps) * mask

        def step(_: int, delta: jax.Array) -> jax.Array:
            gradient = jax.grad(lambda d: loss_at(x + d))(delta)
            return jnp.clip(delta + PGD_STEP_SIZE * jnp.sign(gradient) * mask, -self.eps, self.eps)

        delta = jax.lax.fori_loop(0, self.steps, step, delta)
        return x + jax.lax.stop_gradient(delta)


@dataclass(frozen=True)
class RandomizedTraining(PlainTraining):
    """Randomized training (protocol 4.2): `x + sigma eps (x + mu / sd)` on the continuous channels (noise
    relative to the raw level), fresh per window and step.

    Attributes:
        sigma: relative noise level.
        offsets: `mu / sd` per channel (train statistics).
        continuous: which channels are continuous (the others stay unchanged).
    """

    sigma: float
    offsets: tuple[float, ...]
    continuous: tuple[bool, ...]

    VALUE_FIELDS = ("sigma",)

    def training_inputs(self, key: jax.Array, x: jax.Array, loss_at: LossAt) -> jax.Array:
        del loss_at
        noise = jax.random.normal(key, x.shape, jnp.float32)
        offsets = jnp.asarray(self.offsets, jnp.float32)
        relative = x + self.sigma * noise * (x + offsets)
        return jnp.where(jnp.asarray(self.continuous), relative, x)


@dataclass(frozen=True)
class FaultAugmentation(PlainTraining):
    """Fault augmentation (protocol 4.3): with probability `p` a window gets one transfer family of the profile
    (uniform choice) at severity `U[0, 1) s_max` on `k(s)` of the continuous channels with
    `k_max = ceil(frac_max m_c)` (`ctx.max_channel_fraction = frac_max`).

    Attributes:
        profile: transfer profile key (`holdout_simple`, `holdout_varying`).
        p: mixing probability.
        s_max: largest severity.
        ctx: the dataset's fault context with the augmentation channel fraction.
    """

    profile: str
    p: float
    s_max: float
    ctx: FaultContext

    VALUE_FIELDS = ("p", "s_max")  # the profile and the channel fraction (in `ctx`) shape the program

    def draws(self, key: jax.Array) -> tuple[jax.Array, jax.Array, jax.Array, jax.Array]:
        """One window's `(applied, family index in the profile, severity units, family stream words)`."""
        u = jax.random.uniform(jax.random.fold_in(key, 0), (), jnp.float32)
        family = jax.random.randint(jax.random.fold_in(key, 1), (), 0, len(TRANSFER_PROFILES[self.profile]))
        grid = jax.random.randint(jax.random.fold_in(key, 2), (), 0, 2 ** SEVERITY_BITS)  # U[0, 1) on the grid
        units = jnp.floor(grid.astype(jnp.float32) * self.s_max).astype(jnp.int32)
        return u < self.p, family, units, stream_words(jax.random.fold_in(key, 3))

    def augment_window(self, key: jax.Array, x: jax.Array) -> jax.Array:
        """One training window `(n, m)`, augmented or clean."""
        applied, family, units, words = self.draws(key)
        faults = [get_fault(name) for name in TRANSFER_PROFILES[self.profile]]
        branches = [lambda x, f=fault: f.apply(x, f.prepare(f.sample(words, self.ctx, units), self.ctx), self.ctx)
                    for fault in faults]
        return jnp.where(applied, jax.lax.switch(family, branches, x), x)

    def training_inputs(self, key: jax.Array, x: jax.Array, loss_at: LossAt) -> jax.Array:
        del loss_at
        keys = jax.vmap(lambda row: jax.random.fold_in(key, row))(jnp.arange(x.shape[0]))
        return jax.vmap(self.augment_window)(keys, x)


@dataclass(frozen=True)
class AdaptiveRobustLoss(PlainTraining):
    """The adaptive robust loss (protocol 4.4) as training and validation loss; clean inputs.

    Attributes:
        alpha_lo, alpha_init, scale_lo, scale_init: the recipe (alpha_init only sets the initial latents).
        alpha_span, scale_span: `alpha_hi - alpha_lo` and `scale_init - scale_lo` when bound as data (None:
            computed from the recipe in Python, as constants).
    """

    alpha_lo: barron_nll.Scalar
    alpha_init: float
    scale_lo: barron_nll.Scalar
    scale_init: barron_nll.Scalar
    alpha_span: barron_nll.Scalar | None = None
    scale_span: barron_nll.Scalar | None = None

    def loss(self, prediction: jax.Array, target: jax.Array, latents: Latents) -> jax.Array:
        return barron_nll.adaptive_nll(prediction, target, latents, alpha_lo=self.alpha_lo,
                                          scale_lo=self.scale_lo, scale_init=self.scale_init,
                                          alpha_span=self.alpha_span, scale_span=self.scale_span)

    def recipe_values(self) -> dict[str, np.float32]:
        # the spans in float64 on the host, then rounded once: as the Python constants of the static program
        return {"alpha_lo": np.float32(self.alpha_lo), "scale_lo": np.float32(self.scale_lo),
                "alpha_span": np.float32(barron_nll.ALPHA_HI - float(self.alpha_lo)),
                "scale_span": np.float32(float(self.scale_init) - float(self.scale_lo))}

    def template(self) -> PlainTraining:
        return dataclasses.replace(self, alpha_lo=0.0, alpha_init=0.0, scale_lo=0.0, scale_init=0.0)

    def initial_latents(self, horizon: int, num_targets: int) -> Latents:
        # on the host, before any binding: the recipe's Python floats (`adaptive_robust_loss`)
        return barron_nll.initial_latents(horizon=horizon, num_targets=num_targets, alpha_lo=float(self.alpha_lo),
                                             alpha_init=self.alpha_init)


TrainTransform = PlainTraining
#: The baseline's transform (the default of the epoch program).
PLAIN_TRAINING = PlainTraining()


@dataclass(frozen=True)
class DatasetFacts:
    """What the transforms need to know about a dataset (static)."""

    offsets: tuple[float, ...]
    continuous: tuple[bool, ...]
    input_len: int
    num_channels: int
    pool: tuple[int, ...]


def dataset_facts(*, mean: np.ndarray, std: np.ndarray, pool: tuple[int, ...], input_len: int) -> DatasetFacts:
    """Static dataset facts from the train statistics and the continuous pool."""
    num_channels = len(mean)
    return DatasetFacts(offsets=tuple(float(v) for v in np.asarray(mean, np.float64) / np.asarray(std, np.float64)),
                        continuous=tuple(i in pool for i in range(num_channels)), input_len=input_len,
                        num_channels=num_channels, pool=tuple(pool))


def adversarial_training(recipe: Mapping[str, Any], facts: DatasetFacts) -> AdversarialTraining:
    """PGD's step transform of a recipe (`eps`, `steps`)."""
    del facts
    return AdversarialTraining(eps=float(recipe["eps"]), steps=int(recipe["steps"]))


def randomized_training(recipe: Mapping[str, Any], facts: DatasetFacts) -> RandomizedTraining:
    """Randomized training's step transform of a recipe (`sigma`) on this dataset's continuous channels."""
    return RandomizedTraining(sigma=float(recipe["sigma"]), offsets=facts.offsets, continuous=facts.continuous)


def fault_augmentation(recipe: Mapping[str, Any], facts: DatasetFacts) -> FaultAugmentation:
    """Fault augmentation's step transform of a recipe (`profile`, `p`, `s_max`, `frac_max`)."""
    ctx = FaultContext(input_len=facts.input_len, num_channels=facts.num_channels, pool=facts.pool,
                       max_channel_fraction=float(recipe["frac_max"]))
    return FaultAugmentation(profile=str(recipe["profile"]), p=float(recipe["p"]), s_max=float(recipe["s_max"]),
                             ctx=ctx)


def adaptive_robust_loss(recipe: Mapping[str, Any], facts: DatasetFacts) -> AdaptiveRobustLoss:
    """The adaptive robust loss's transform of a recipe (`alpha_lo`, `alpha_init`, `scale_lo`, `scale_init`)."""
    del facts
    return AdaptiveRobustLoss(**{key: float(recipe[key]) for key in ("alpha_lo", "alpha_init", "scale_lo",
                                                                     "scale_init")})


def revin(recipe: Mapping[str, Any]) -> RevINConfig:
    """The RevIN wrapper a RevIN recipe (`affine`) puts around the model."""
    return RevINConfig(affine=bool(recipe["affine"]))
