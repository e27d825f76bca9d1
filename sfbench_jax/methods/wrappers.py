"""Post-hoc method wrappers (protocol 4.6, 4.7): pure predictors built from stored baseline predictors, scored by
the same fused engine.

What lives here: the combiners (`ensemble_combine`: mean or midpoint median; `trimmed_mean`: the
alpha-trimmed mean), `ensemble_predictor` (top-k members, each its own predict function and state) and
`SmoothingPredictor` (N noisy copies of each input through the frozen backbone; the noise of a row is keyed
by its (context, window) ids, so it never depends on chunking), and the two methods' `WrapperSpec`s
(`ENSEMBLE`: the top-k finished baseline candidates combined; `SMOOTHING`: the baseline winner smoothed). How
the variants are selected is `sfbench_jax/pipeline/cell.py`'s, the same for every wrap-kind method.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TypeVar

import jax
import jax.numpy as jnp

from sfbench_jax.faults.streams import bits_to_normal, stream_bits, stream_words
from sfbench_jax.methods.spec import Recipe, WrapperSpec
from sfbench_jax.predictors.protocol import ModelState, PredictFn, Predictor, RowAwarePredictor

#: Whatever the caller ranks (candidate records, or `(predict, state)` pairs): `_top_k` only slices the ranking.
Ranked = TypeVar("Ranked")

COMBINERS = ("mean", "median")


def ensemble_combine(predictions: jax.Array, combine: str) -> jax.Array:
    """Combine member predictions `(k, ...)` per coordinate: the mean, or the median with midpoint
    interpolation (even k: the average of the two middle values)."""
    if combine == "mean":
        return jnp.mean(predictions, axis=0)
    if combine == "median":
        return jnp.median(predictions, axis=0)
    raise ValueError(f"Unknown ensemble combine {combine!r}; use one of {list(COMBINERS)}.")


def trimmed_mean(values: jax.Array, trimmed: int) -> jax.Array:
    """The alpha-trimmed mean over axis 0: drop the `trimmed` smallest and largest values, average the rest.

    Computed from each value's rank among the N (pairwise comparisons, ties broken by position) instead of
    a sort: N is small (10-30) and XLA's CPU sort of millions of short rows is several times slower.
    """
    count = values.shape[0]
    if not 0 <= 2 * trimmed < count:
        raise ValueError(f"Cannot trim {trimmed} from each end of {count} values.")
    value = values[:, None]
    other = values[None, :]
    order = jnp.arange(count)
    earlier = (order[None, :] < order[:, None]).reshape(count, count, *([1] * (values.ndim - 1)))
    rank = jnp.sum((other < value) | ((other == value) & earlier), axis=1)
    kept = (rank >= trimmed) & (rank < count - trimmed)
    return jnp.sum(jnp.where(kept, values, 0.0), axis=0) / (count - 2 * trimmed)


def ensemble_predictor(members: Sequence[PredictFn], combine: str) -> PredictFn:
    """`predict(states, x)`: every member on the same input (`states[i]` is member i's), combined."""
    members = tuple(members)
    if combine not in COMBINERS:
        raise ValueError(f"Unknown ensemble combine {combine!r}; use one of {list(COMBINERS)}.")

    def predict(states: tuple[ModelState, ...], x: jax.Array) -> jax.Array:
        outputs = jnp.stack([member(state, x) for member, state in zip(members, states, strict=True)])
        return ensemble_combine(outputs, combine)

    return predict


@dataclass(frozen=True)
class SmoothingPredictor(RowAwarePredictor):
    """Randomized smoothing: per row, `samples` copies `x + sigma eps_j` (standard normal on every input
    element, standardised space) through the backbone, then the alpha-trimmed mean per output coordinate.

    The noise of a row comes from `fold_in(fold_in(key(seed), context), window id)`: the same in any chunk,
    batch or device, and different for the clean pass, each scenario and validation.

    Attributes:
        backbone: the frozen baseline predictor.
        sigma: noise standard deviation.
        samples: N noisy copies per row.
        trimmed: predictions dropped at each end, `floor(alpha N)`.
        seed: the dataset's `noise_seed` (protocol 1.6).
    """

    backbone: PredictFn
    sigma: float
    samples: int
    trimmed: int
    seed: int

    def noise(self, rows: jax.Array, shape: tuple[int, ...]) -> jax.Array:
        """Standard normals `(rows, samples, *shape)`, one independent stream per (context, window) row (the
        fault engine's counter-based stream and normal transform, several times faster on CPU than
        `jax.random.normal`)."""
        base = jax.random.key(self.seed)
        size = self.samples * math.prod(shape)

        def per_row(row: jax.Array) -> jax.Array:
            words = stream_words(jax.random.fold_in(jax.random.fold_in(base, row[0]), row[1]))
            return bits_to_normal(stream_bits(words, 0, (size,))).reshape(self.samples, *shape)

        return jax.vmap(per_row)(rows)

    def apply(self, state: ModelState, x: jax.Array, rows: jax.Array) -> jax.Array:
        """Smoothed forecasts `(B, H, targets)` of rows `x (B, n, m)` with their (context, window) ids."""
        noisy = x[:, None] + self.sigma * self.noise(rows, x.shape[1:])  # (B, N, n, m)
        flat = noisy.reshape(-1, *x.shape[1:])
        prediction = self.backbone(state, flat)
        prediction = prediction.reshape(x.shape[0], self.samples, *prediction.shape[1:])
        return trimmed_mean(jnp.moveaxis(prediction, 1, 0), self.trimmed)


def check_trimming(*, alpha: float, samples: int) -> int:
    """The number `t = floor(alpha N)` of predictions trimmed at each end; raises unless `t >= 1` and
    `alpha < 0.5` (so that at least one prediction remains)."""
    trimmed = math.floor(alpha * samples)
    if not 0.0 < alpha < 0.5 or trimmed < 1:
        raise ValueError(f"Randomized smoothing alpha={alpha} with N={samples} samples trims t = floor(alpha N) = "
                         f"{trimmed} at each end; need 0 < alpha < 0.5 and t >= 1.")
    return trimmed


def _top_k(recipe: Recipe, ranked: Sequence[Ranked]) -> Sequence[Ranked]:
    if recipe["top_k"] > len(ranked):
        raise ValueError(f"Ensemble top_k={recipe['top_k']} exceeds the {len(ranked)} finished baseline "
                         "candidates in the store; lower method.grid.top_k or raise train.candidate_budget.")
    return ranked[: recipe["top_k"]]


def _ensemble(recipe: Recipe, members: Sequence[tuple[PredictFn, ModelState]], *,
              seed: int) -> tuple[PredictFn, tuple[ModelState, ...]]:
    del seed
    predict = ensemble_predictor([member for member, _ in members], str(recipe["combine"]))
    return predict, tuple(state for _, state in members)


def _smoothed(recipe: Recipe, members: Sequence[tuple[PredictFn, ModelState]], *,
              seed: int) -> tuple[Predictor, ModelState]:
    (backbone, state), = members
    samples = int(recipe["samples"])
    smoothing = SmoothingPredictor(backbone=backbone, sigma=float(recipe["sigma"]), samples=samples,
                                   trimmed=check_trimming(alpha=float(recipe["alpha"]), samples=samples), seed=seed)
    return smoothing, state


#: The ensemble (protocol 4.6): the top-k finished baseline candidates by the selection key, combined.
ENSEMBLE = WrapperSpec(members=_top_k, predictor=_ensemble)
#: Randomized smoothing (protocol 4.7): the baseline winner (the first of the ranked candidates) smoothed.
SMOOTHING = WrapperSpec(members=lambda recipe, ranked: ranked[:1], predictor=_smoothed)
