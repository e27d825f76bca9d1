"""RevIN (protocol 4.5): reversible instance normalisation wrapped around a base forecaster.

What lives here: `RevINConfig` (affine or not) and the `RevIN` NNX wrapper, which normalises
each window and channel, runs the base model in the normalised space (the base model selects the
targets), and de-normalises with the target channels' statistics. The training-method plumbing
(when RevIN is used, its grid of variants) belongs to `sfbench_jax/methods/`.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx

from sfbench_jax.data.windows import AllChannelForecast, Forecast, Inputs
from sfbench_jax.models.hparams import require_bool
from sfbench_jax.models.spec import AllChannelForecaster


@dataclasses.dataclass(frozen=True)
class RevINConfig:
    """RevIN options.

    Attributes:
        affine: learn a per-channel scale `w` (init 1) and shift `b` (init 0) applied after
            normalising and undone before de-normalising.
        eps: added to the biased variance inside the square root; `eps²` is added to `w` when
            dividing, as the reference does.
    """

    affine: bool = True
    eps: float = 1e-5

    def __post_init__(self) -> None:
        object.__setattr__(self, "affine", require_bool("affine", self.affine))
        if isinstance(self.eps, bool) or not isinstance(self.eps, (int, float)) or self.eps <= 0:
            raise ValueError(f"RevIN eps must be a positive float, got {self.eps!r}.")
        object.__setattr__(self, "eps", float(self.eps))


class RevIN(nnx.Module):
    """Normalise input -> base model (selects targets) -> de-normalise with target statistics.

    `μ = mean_t x`, `σ = sqrt(var_t x + eps)` per window and channel (biased variance, gradients
    stopped); `x̂ = (x − μ)/σ` (then `x̂·w + b` if affine). The prediction `ŷ` of the base model is
    mapped back by `ŷ ← (ŷ − b_t)/(w_t + eps²)` (affine) and `ŷ·σ_t + μ_t`, `t` = target channels.

    Args:
        base: the wrapped forecaster; it must expose `input_len`, `num_channels`, `target_indices` and
            `predict_all_channels` like the architectures in this package (`AllChannelForecaster`).
        config: RevIN options (default: affine).
    """

    def __init__(self, base: AllChannelForecaster, config: RevINConfig | None = None) -> None:
        self.config = config if config is not None else RevINConfig()
        self.base = base
        self.input_len = base.input_len
        self.horizon = base.horizon
        self.num_channels = base.num_channels
        self.target_indices = tuple(base.target_indices)
        if self.config.affine:
            self.affine_weight = nnx.Param(jnp.ones((self.num_channels,), jnp.float32))
            self.affine_bias = nnx.Param(jnp.zeros((self.num_channels,), jnp.float32))

    def statistics(self, x: jax.Array) -> tuple[jax.Array, jax.Array]:
        """Per-window, per-channel `(mean, std)`, each `(batch, 1, m)`, gradients stopped."""
        mean = jnp.mean(x, axis=1, keepdims=True)
        var = jnp.mean(jnp.square(x - mean), axis=1, keepdims=True)
        return jax.lax.stop_gradient(mean), jax.lax.stop_gradient(jnp.sqrt(var + self.config.eps))

    def normalize(self, x: jax.Array, mean: jax.Array, std: jax.Array) -> jax.Array:
        """What the base model sees: `(x − μ)/σ`, then `·w + b` if affine."""
        y = (x - mean) / std
        if self.config.affine:
            y = y * self.affine_weight[...] + self.affine_bias[...]
        return y

    def denormalize(self, y: jax.Array, mean: jax.Array, std: jax.Array) -> jax.Array:
        """Map target predictions `(batch, H, targets)` back with the target channels' stats."""
        targets = np.asarray(self.target_indices)
        if self.config.affine:
            y = (y - self.affine_bias[...][targets]) / (
                self.affine_weight[...][targets] + self.config.eps ** 2)
        return y * std[..., targets] + mean[..., targets]

    def predict_all_channels(self, x: Inputs) -> AllChannelForecast:
        """Forecast every input channel in data space: `(batch, n, m) -> (batch, H, m)`.

        Needs a base model with `predict_all_channels` (not the autoregressive GRU, whose
        feedback depends on which channels are targets).
        """
        x = jnp.asarray(x)
        mean, std = self.statistics(x)
        y = self.base.predict_all_channels(self.normalize(x, mean, std))
        if self.config.affine:
            y = (y - self.affine_bias[...]) / (self.affine_weight[...] + self.config.eps ** 2)
        return y * std + mean

    def __call__(self, x: Inputs) -> Forecast:
        """Forecast the targets: `(batch, n, m) -> (batch, H, len(target_indices))`."""
        if x.ndim != 3 or x.shape[1:] != (self.input_len, self.num_channels):
            raise ValueError(f"RevIN expects input of shape (batch, {self.input_len}, "
                             f"{self.num_channels}), got {tuple(x.shape)}.")
        x = jnp.asarray(x)
        mean, std = self.statistics(x)
        return self.denormalize(self.base(self.normalize(x, mean, std)), mean, std)

