"""GRU forecaster (protocol 3.2): stacked GRU with a direct or an autoregressive head.

What lives here: the `GRUConfig` hyperparameters, its grid validity rule, the
`GRU` NNX module and its `GRULayer`. Time recursions are `lax.scan`s (one per layer over the
window; one over the horizon for the autoregressive continuation).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx

from sfbench_jax.data.windows import AllChannelForecast, Forecast, Inputs, select_targets
from sfbench_jax.models.hparams import HParams, require_bool, require_int, require_rate
from sfbench_jax.models.layers import (
    check_input,
    torch_linear,
    torch_uniform_init,
    validate_dataset_shape,
)
from sfbench_jax.models.spec import ModelSpec


@dataclasses.dataclass(frozen=True)
class GRUConfig:
    """GRU hyperparameters.

    Attributes:
        d_hidden: hidden size of every layer.
        n_layers: number of stacked layers.
        autoregressive: predict one step at a time and feed it back (true) or all `H` steps from
            the last hidden state (false).
        dropout: dropout between stacked layers; must be 0 with one layer.
    """

    d_hidden: int = 64
    n_layers: int = 1
    autoregressive: bool = False
    dropout: float = 0.0

    def __post_init__(self) -> None:
        object.__setattr__(self, "d_hidden", require_int("d_hidden", self.d_hidden))
        object.__setattr__(self, "n_layers", require_int("n_layers", self.n_layers))
        object.__setattr__(self, "autoregressive",
                           require_bool("autoregressive", self.autoregressive))
        object.__setattr__(self, "dropout", require_rate("dropout", self.dropout))
        if self.dropout > 0 and self.n_layers == 1:
            raise ValueError(f"GRU dropout={self.dropout} with n_layers=1 is an invalid "
                             "combination: dropout acts only between stacked layers. Use "
                             "dropout=0.0 or n_layers >= 2.")



def is_valid(hparams: HParams, *, input_len: int = 96) -> bool:
    """Invalid: `dropout > 0` with a single layer."""
    del input_len
    return not (hparams.get("dropout", 0.0) > 0 and hparams.get("n_layers", 1) == 1)


class GRULayer(nnx.Module):
    """One unidirectional GRU layer with PyTorch's gate equations and two bias vectors.

    Gates are stacked in the order r, z, n along the last axis of the kernels (PyTorch's row
    blocks, transposed):
    `r = σ(x W_ir + b_ir + h W_hr + b_hr)`, `z = σ(x W_iz + b_iz + h W_hz + b_hz)`,
    `n = tanh(x W_in + b_in + r ⊙ (h W_hn + b_hn))`, `h' = (1 − z) ⊙ n + z ⊙ h`.

    Args:
        in_features: input size.
        hidden: hidden size `d`.
        rngs: initialisation keys; every weight and bias is `U(±1/sqrt(hidden))`.
    """

    def __init__(self, in_features: int, hidden: int, *, rngs: nnx.Rngs) -> None:
        init = torch_uniform_init(hidden)
        self.hidden = hidden
        self.input_kernel = nnx.Param(init(rngs.params(), (in_features, 3 * hidden)))
        self.hidden_kernel = nnx.Param(init(rngs.params(), (hidden, 3 * hidden)))
        self.input_bias = nnx.Param(init(rngs.params(), (3 * hidden,)))
        self.hidden_bias = nnx.Param(init(rngs.params(), (3 * hidden,)))

    def project_inputs(self, x: jax.Array) -> jax.Array:
        """Input contributions to all three gates: `(..., in) -> (..., 3d)`."""
        return x @ self.input_kernel[...] + self.input_bias[...]

    def cell(self, h: jax.Array, gates_in: jax.Array, hidden_kernel: jax.Array,
             hidden_bias: jax.Array) -> jax.Array:
        """One step from the previous state `h (batch, d)` and projected inputs `(batch, 3d)`."""
        d = self.hidden
        gates_h = h @ hidden_kernel + hidden_bias
        r = jax.nn.sigmoid(gates_in[..., :d] + gates_h[..., :d])
        z = jax.nn.sigmoid(gates_in[..., d:2 * d] + gates_h[..., d:2 * d])
        n = jnp.tanh(gates_in[..., 2 * d:] + r * gates_h[..., 2 * d:])
        return (1.0 - z) * n + z * h

    def run(self, x: jax.Array, h0: jax.Array) -> tuple[jax.Array, jax.Array]:
        """Run over a sequence `x (batch, time, in)` from `h0 (batch, d)`.

        Returns:
            `(outputs (batch, time, d), last state (batch, d))`.
        """
        outputs, h_last = self.run_time_major(jnp.swapaxes(x, 0, 1), h0)
        return jnp.swapaxes(outputs, 0, 1), h_last

    def run_time_major(self, x: jax.Array, h0: jax.Array) -> tuple[jax.Array, jax.Array]:
        """`run` on a time-major sequence `x (time, batch, in)`: `(outputs (time, batch, d), last state)`.

        Each step projects its own input row inside the scan: projecting the whole sequence first
        would materialise `(time, batch, 3d)` gates (for 7 inputs and d = 64, 27x the window's
        bytes; 340 MB per evaluation block) and the loop would stream them from memory, several times
        slower on CPU than the per-step product of a cache-resident `(batch, in)` row (docs/speed.md).
        """
        input_kernel, input_bias = self.input_kernel[...], self.input_bias[...]
        hidden_kernel, hidden_bias = self.hidden_kernel[...], self.hidden_bias[...]

        def step(h: jax.Array, row: jax.Array) -> tuple[jax.Array, jax.Array]:
            h = self.cell(h, row @ input_kernel + input_bias, hidden_kernel, hidden_bias)
            return h, h

        h_last, outputs = jax.lax.scan(step, h0, x)
        return outputs, h_last


class GRU(nnx.Module):
    """Stacked GRU forecaster, zero initial state, channel-mixing.

    Direct: the top layer's last state -> Linear `d -> m·H`, reshaped row-major to `(H, m)`.
    Autoregressive: Linear `d -> m` gives one step; the next input row is the previous input
    row (initially the last observed row) with its target channels overwritten by that step's
    prediction, and the GRU continues one step from the carried states, `H − 1` times.

    Args:
        d_hidden, n_layers, autoregressive, dropout: see `GRUConfig`.
        input_len: window length `n`.
        horizon: forecast length `H`.
        num_channels: input channels `m`.
        target_indices: channels returned, in order.
        rngs: initialisation and dropout keys.
    """

    def __init__(self, *, d_hidden: int = 64, n_layers: int = 1, autoregressive: bool = False,
                 dropout: float = 0.0, input_len: int, horizon: int, num_channels: int,
                 target_indices: Sequence[int], rngs: nnx.Rngs) -> None:
        self.config = GRUConfig(d_hidden=d_hidden, n_layers=n_layers,
                                autoregressive=autoregressive, dropout=dropout)
        self.target_indices = validate_dataset_shape(
            input_len=input_len, horizon=horizon, num_channels=num_channels,
            target_indices=target_indices)
        self.input_len, self.horizon, self.num_channels = input_len, horizon, num_channels
        cfg = self.config
        self.layers = nnx.List([
            GRULayer(num_channels if i == 0 else cfg.d_hidden, cfg.d_hidden, rngs=rngs)
            for i in range(cfg.n_layers)])
        self.dropout = nnx.Dropout(cfg.dropout, rngs=rngs)
        out_features = num_channels if cfg.autoregressive else num_channels * horizon
        self.head = torch_linear(cfg.d_hidden, out_features, rngs=rngs)

    def encode(self, x: jax.Array) -> tuple[jax.Array, jax.Array]:
        """Run the stack over the window.

        Returns:
            `(top-layer outputs (batch, n, d), final states (n_layers, batch, d))`.
        """
        h0 = jnp.zeros((x.shape[0], self.config.d_hidden), x.dtype)
        states, inputs = [], jnp.swapaxes(x, 0, 1)  # time-major between the layers
        for i, layer in enumerate(self.layers):
            if i > 0:  # the mask drawn batch-major, as before the time-major layout
                inputs = jnp.swapaxes(self.dropout(jnp.swapaxes(inputs, 0, 1)), 0, 1)
            inputs, h_last = layer.run_time_major(inputs, h0)
            states.append(h_last)
        return jnp.swapaxes(inputs, 0, 1), jnp.stack(states)

    def _overwrite_targets(self, row: jax.Array, prediction: jax.Array) -> jax.Array:
        if self.target_indices == tuple(range(self.num_channels)):
            return prediction
        return row.at[:, np.asarray(self.target_indices)].set(prediction)

    def rollout(self, x: jax.Array) -> tuple[jax.Array, jax.Array]:
        """Autoregressive forecast.

        Returns:
            `(predictions (batch, H, targets), fed-back input rows (batch, H − 1, m))`.
        """
        cfg = self.config
        _, states = self.encode(x)
        assert self.head.bias is not None  # torch_linear always has a bias
        kernel, bias = self.head.kernel[...], self.head.bias[...]
        first = select_targets(states[-1] @ kernel + bias, self.target_indices)
        row = self._overwrite_targets(x[:, -1], first)
        steps = self.horizon - 1
        masks = None
        if cfg.n_layers > 1 and cfg.dropout > 0 and not self.dropout.deterministic:
            # Inter-layer dropout masks for every continuation step, drawn before the scan.
            masks = self.dropout(jnp.ones((steps, cfg.n_layers - 1) + states.shape[1:],
                                          x.dtype))
        weights = [(layer.hidden_kernel[...], layer.hidden_bias[...]) for layer in self.layers]

        def step(carry: tuple[jax.Array, jax.Array],
                 mask: jax.Array | None) -> tuple[tuple[jax.Array, jax.Array], tuple[jax.Array, jax.Array]]:
            h, row = carry
            inputs = row
            new_states: list[jax.Array] = []
            for i, layer in enumerate(self.layers):
                if i > 0 and mask is not None:
                    inputs = inputs * mask[i - 1]
                inputs = layer.cell(h[i], layer.project_inputs(inputs), *weights[i])
                new_states.append(inputs)
            prediction = select_targets(inputs @ kernel + bias, self.target_indices)
            next_row = self._overwrite_targets(row, prediction)
            return (jnp.stack(new_states), next_row), (prediction, row)

        _, (predictions, fed) = jax.lax.scan(step, (states, row), masks, length=steps)
        predictions = jnp.concatenate([first[:, None], jnp.swapaxes(predictions, 0, 1)], axis=1)
        return predictions, jnp.swapaxes(fed, 0, 1)

    def predict_all_channels(self, x: Inputs) -> AllChannelForecast:
        """Direct mode only: forecast every channel, `(batch, n, m) -> (batch, H, m)`."""
        if self.config.autoregressive:
            raise ValueError("The autoregressive GRU only forecasts its target channels; "
                             "use __call__ or rollout.")
        _, states = self.encode(jnp.asarray(x))
        return self.head(states[-1]).reshape(x.shape[0], self.horizon, self.num_channels)

    def __call__(self, x: Inputs) -> Forecast:
        """Forecast the targets: `(batch, n, m) -> (batch, H, len(target_indices))`."""
        check_input(x, input_len=self.input_len, num_channels=self.num_channels, model="GRU")
        if self.config.autoregressive:
            return self.rollout(jnp.asarray(x))[0]
        return select_targets(self.predict_all_channels(x), self.target_indices)


#: The architecture's spec (the registry collects it).
SPEC = ModelSpec(name="gru", config_cls=GRUConfig, is_valid=is_valid, module_cls=GRU,
                 is_trainable=True, is_channel_independent=False, supports_revin=True, label="GRU",
                 family="Recurrent", display_rank=2)
