"""Building blocks shared by the forecasting architectures.

What lives here: PyTorch-default initialisers, a BatchNorm with PyTorch's train/eval semantics,
the joint-slab LayerNorm used by TSMixer, exact GELU, and the dataset-shape and
input-shape checks every architecture runs. Architectures themselves live in their own modules
(`dlinear.py`, `gru.py`, ...); RevIN lives in `revin.py`.
"""

from __future__ import annotations

import contextlib
import contextvars
import math
from collections.abc import Callable, Iterator, Sequence

import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx
from jax.typing import DTypeLike

Initializer = nnx.initializers.Initializer


def _bucket_size(size: int) -> int:
    """Smallest power of two >= size (at least 256)."""
    return max(256, 1 << max(size - 1, 0).bit_length())


def uniform(key: jax.Array, shape: Sequence[int], low: float, high: float) -> jax.Array:
    """Float32 `U(low, high)` of `shape`, deterministic in `(key, shape)`.

    The draw is made on a flat vector whose length is rounded up to a power of two and then cut
    to size, so eager initialisation compiles the (slow-to-compile) Threefry kernel once per
    size bucket instead of once per parameter shape. Bounds are traced, not compiled in.
    """
    shape = tuple(int(s) for s in shape)
    size = int(np.prod(shape))
    flat = jax.random.uniform(key, (_bucket_size(size),), jnp.float32, low, high)
    return flat[:size].reshape(shape)


def torch_uniform_init(fan_in: int) -> Initializer:
    """`U(-1/sqrt(fan_in), 1/sqrt(fan_in))`, PyTorch's default for Linear/Conv weights and biases.

    PyTorch draws weights with Kaiming-uniform (a = sqrt(5)), whose bound works out to exactly
    `1/sqrt(fan_in)`, and biases from the same interval, so one initialiser serves both.

    Args:
        fan_in: number of inputs feeding one output (`in_features`, or `in_channels/groups * k`).

    Returns:
        An initialiser `(key, shape, dtype) -> array`.
    """
    bound = 1.0 / math.sqrt(fan_in)

    def init(key: jax.Array, shape: Sequence[int], dtype: DTypeLike = jnp.float32) -> jax.Array:
        return uniform(key, shape, -bound, bound).astype(dtype)

    return init


def uniform_init(low: float, high: float) -> Initializer:
    """`U(low, high)` initialiser (PatchTST's positional table uses `U(-0.02, 0.02)`)."""

    def init(key: jax.Array, shape: Sequence[int], dtype: DTypeLike = jnp.float32) -> jax.Array:
        return uniform(key, shape, low, high).astype(dtype)

    return init


def glorot_uniform_init() -> Initializer:
    """Glorot/Xavier-uniform for a Dense kernel `(fan_in, fan_out)`: `U(±sqrt(6/(in + out)))`.

    Same law as Keras' default and `torch.nn.init.xavier_uniform_` on the transposed weight.
    """

    def init(key: jax.Array, shape: Sequence[int], dtype: DTypeLike = jnp.float32) -> jax.Array:
        fan_in, fan_out = int(shape[-2]), int(shape[-1])
        bound = math.sqrt(6.0 / (fan_in + fan_out))
        return uniform(key, shape, -bound, bound).astype(dtype)

    return init


def torch_linear(in_features: int, out_features: int, *, rngs: nnx.Rngs) -> nnx.Linear:
    """A `nnx.Linear` initialised like `torch.nn.Linear` (kernel layout `(in, out)`)."""
    init = torch_uniform_init(in_features)
    return nnx.Linear(in_features, out_features, kernel_init=init, bias_init=init, rngs=rngs)


def gelu(x: jax.Array) -> jax.Array:
    """Exact (erf) GELU, as `torch.nn.GELU()`; `jax.nn.gelu` defaults to the tanh approximation."""
    return jax.nn.gelu(x, approximate=False)


ACTIVATIONS = {"relu": jax.nn.relu, "gelu": gelu}


class TorchBatchNorm(nnx.Module):
    """Batch normalisation with PyTorch semantics.

    Train mode (`use_running_average=False`) normalises with the biased batch variance and updates
    `running ← (1 − momentum)·running + momentum·batch`, using the *unbiased* batch variance for
    `var` (PyTorch's convention; Flax's own BatchNorm uses the biased one). Eval mode normalises
    with the running statistics. Every axis not in `feature_axes` is reduced over.

    Args:
        feature_shape: shape of the per-feature statistics and affine parameters.
        feature_axes: axes of the input that carry the features (same length as feature_shape).
        epsilon: added to the variance inside the square root.
        momentum: PyTorch-convention momentum (weight of the new batch statistic).
    """

    def __init__(self, feature_shape: Sequence[int], *, feature_axes: Sequence[int],
                 epsilon: float = 1e-5, momentum: float = 0.1) -> None:
        self.feature_shape = tuple(int(s) for s in feature_shape)
        self.feature_axes = tuple(int(a) for a in feature_axes)
        if len(self.feature_shape) != len(self.feature_axes):
            raise ValueError("feature_shape and feature_axes must have the same length.")
        self.epsilon = float(epsilon)
        self.momentum = float(momentum)
        self.use_running_average = False
        self.scale = nnx.Param(jnp.ones(self.feature_shape, jnp.float32))
        self.bias = nnx.Param(jnp.zeros(self.feature_shape, jnp.float32))
        self.mean = nnx.BatchStat(jnp.zeros(self.feature_shape, jnp.float32))
        self.var = nnx.BatchStat(jnp.ones(self.feature_shape, jnp.float32))

    def _layout(self, ndim: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
        axes = tuple(a % ndim for a in self.feature_axes)
        if list(axes) != sorted(axes):
            raise ValueError("feature_axes must be increasing.")
        reduce_axes = tuple(a for a in range(ndim) if a not in axes)
        shape = [1] * ndim
        for axis, size in zip(axes, self.feature_shape, strict=True):
            shape[axis] = size
        return reduce_axes, tuple(shape)

    def __call__(self, x: jax.Array) -> jax.Array:
        """Normalise `x`; in train mode also update the running statistics."""
        reduce_axes, shape = self._layout(x.ndim)
        if self.use_running_average:
            mean = self.mean[...].reshape(shape)
            var = self.var[...].reshape(shape)
        else:
            count = int(np.prod([x.shape[a] for a in reduce_axes]))
            if count < 2:
                raise ValueError("BatchNorm in train mode needs more than one value per feature "
                                 f"(got {count}); use a larger batch or eval mode.")
            mean = jnp.mean(x, axis=reduce_axes, keepdims=True)
            var = jnp.mean(jnp.square(x - mean), axis=reduce_axes, keepdims=True)
            unbiased = var.reshape(self.feature_shape) * (count / (count - 1))
            stop = jax.lax.stop_gradient
            self.mean[...] = ((1.0 - self.momentum) * self.mean[...]
                              + self.momentum * stop(mean.reshape(self.feature_shape)))
            self.var[...] = (1.0 - self.momentum) * self.var[...] + self.momentum * stop(unbiased)
        inv = jax.lax.rsqrt(var + self.epsilon)
        return (x - mean) * inv * self.scale[...].reshape(shape) + self.bias[...].reshape(shape)


class SlabLayerNorm(nnx.Module):
    """LayerNorm over the last two axes jointly (TSMixer's `nn.LayerNorm((n, m))`).

    Mean and biased variance are taken over the whole `(time, channel)` slab of each window; the
    affine parameters have the slab's shape.

    Args:
        slab_shape: `(time, channel)`.
        epsilon: added to the variance inside the square root.
    """

    def __init__(self, slab_shape: Sequence[int], *, epsilon: float = 1e-3) -> None:
        self.epsilon = float(epsilon)
        shape = tuple(int(s) for s in slab_shape)
        self.scale = nnx.Param(jnp.ones(shape, jnp.float32))
        self.bias = nnx.Param(jnp.zeros(shape, jnp.float32))

    def __call__(self, x: jax.Array) -> jax.Array:
        """Normalise each `(time, channel)` slab of `x` `(batch, time, channel)`."""
        mean = jnp.mean(x, axis=(-2, -1), keepdims=True)
        var = jnp.mean(jnp.square(x - mean), axis=(-2, -1), keepdims=True)
        return (x - mean) * jax.lax.rsqrt(var + self.epsilon) * self.scale[...] + self.bias[...]


def validate_dataset_shape(*, input_len: int, horizon: int, num_channels: int,
                           target_indices: Sequence[int]) -> tuple[int, ...]:
    """Check the dataset shape every architecture is built for and return the targets as a tuple.

    Raises:
        ValueError: non-positive lengths, empty/duplicate/out-of-range target indices.
    """
    for name, value in (("input_len", input_len), ("horizon", horizon),
                        ("num_channels", num_channels)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
            raise ValueError(f"{name} must be a positive int, got {value!r}.")
    targets = tuple(int(i) for i in target_indices)
    if not targets:
        raise ValueError("target_indices must name at least one channel.")
    if len(set(targets)) != len(targets):
        raise ValueError(f"target_indices must not repeat a channel, got {targets}.")
    bad = [i for i in targets if not 0 <= i < num_channels]
    if bad:
        raise ValueError(f"target_indices {bad} are outside [0, {num_channels}) "
                         f"for num_channels={num_channels}.")
    return targets


def check_input(x: jax.Array | np.ndarray, *, input_len: int, num_channels: int, model: str) -> None:
    """Raise a clear error when `x` is not `(batch, input_len, num_channels)` (trace-time check)."""
    if x.ndim != 3 or x.shape[1] != input_len or x.shape[2] != num_channels:
        raise ValueError(f"{model} expects input of shape (batch, {input_len}, {num_channels}), "
                         f"got {tuple(x.shape)}.")


def in_inference_mode(module: nnx.Module) -> bool:
    """True when no part of `module` depends on the batch or draws random numbers: every Dropout is
    deterministic and every `TorchBatchNorm` normalises with its running statistics (`model.eval()`)."""
    for _, sub in nnx.iter_modules(module):
        if isinstance(sub, nnx.Dropout) and not sub.deterministic:
            return False
        if isinstance(sub, TorchBatchNorm) and not sub.use_running_average:
            return False
    return True


#: The platform the program being traced is for (`traced_for`), or None: the default backend.
_TRACED_PLATFORM: contextvars.ContextVar[str | None] = contextvars.ContextVar("traced_platform", default=None)


@contextlib.contextmanager
def traced_for(platform: str) -> Iterator[None]:
    """Trace models inside as for `platform` (a CPU computes large batches a cache-sized slice at a time,
    `map_in_slices`; any other platform whole batches), not for this process's default backend: a program lowered
    for a platform the process does not have (`benchmarks/gpu_check.py --lower-only cuda`) is then the one that
    platform compiles."""
    token = _TRACED_PLATFORM.set(platform)
    try:
        yield
    finally:
        _TRACED_PLATFORM.reset(token)


def slices_batches() -> bool:
    """Whether models split large batches into cache-sized slices in the program being traced (on a CPU)."""
    return (_TRACED_PLATFORM.get() or jax.default_backend()) == "cpu"


def map_in_slices(fn: Callable[[jax.Array], jax.Array], x: jax.Array, slice_rows: int) -> jax.Array:
    """`fn(x)` computed `slice_rows` rows of `x` (axis 0) at a time with `lax.map` on CPU, for an `fn` whose rows
    are independent of each other (a model in inference mode).

    On CPU a large batch of small matrix products runs faster a cache-sized slice at a time than as whole-batch
    operations whose intermediates go to main memory. Rows are split into the fewest slices of at most
    `slice_rows`, the last padded with copies of the final row (dropped from the result). Other backends (GPU,
    TPU) want the whole batch in each kernel: there `fn(x)` runs as one call (`slices_batches`).
    """
    rows = x.shape[0]
    if rows <= slice_rows or not slices_batches():
        return fn(x)
    count = -(-rows // slice_rows)
    size = -(-rows // count)
    pad = count * size - rows
    if pad:
        x = jnp.concatenate([x, jnp.broadcast_to(x[-1:], (pad, *x.shape[1:]))])
    out: jax.Array = jax.lax.map(fn, x.reshape(count, size, *x.shape[1:]))
    return out.reshape(count * size, *out.shape[2:])[:rows]


_THREEFRY_ROTATIONS = ((13, 15, 26, 6), (17, 29, 16, 24))


def _threefry2x32(k1: jax.Array, k2: jax.Array, x0: jax.Array, x1: jax.Array) -> tuple[jax.Array, jax.Array]:
    """The Threefry-2x32 hash (20 rounds), unrolled: the same integers as JAX's `threefry2x32` primitive, whose
    CPU lowering runs its five key injections as a rolled loop (four times slower on this work)."""
    keys = (k1, k2, k1 ^ k2 ^ np.uint32(0x1BD11BDA))
    x0, x1 = x0 + keys[0], x1 + keys[1]
    for i in range(5):
        for rotation in _THREEFRY_ROTATIONS[i % 2]:
            x0 = x0 + x1
            x1 = x0 ^ (jax.lax.shift_left(x1, np.uint32(rotation))
                       | jax.lax.shift_right_logical(x1, np.uint32(32 - rotation)))
        x0, x1 = x0 + keys[(i + 1) % 3], x1 + keys[(i + 2) % 3] + np.uint32(i + 1)
    return x0, x1


def bernoulli(key: jax.Array, p: float, shape: Sequence[int]) -> jax.Array:
    """`jax.random.bernoulli(key, p, shape)` for float32 `p`, bit for bit, with the hash unrolled.

    Valid for a threefry key with `jax_threefry_partitionable` on (JAX's default) and fewer than 2^32 draws;
    otherwise it calls `jax.random.bernoulli`. The draw: counters `0..n-1`, bits `x0 ^ x1` of the hash, a
    float32 in [1, 2) from the top 23 bits, minus one, compared with `p`.
    """
    shape = tuple(int(s) for s in shape)
    size = math.prod(shape)
    if (str(jax.random.key_impl(key)) != "threefry2x32"
            or not jax.config.jax_threefry_partitionable  # type: ignore[attr-defined]  # declared at run time
            or size >= 2**32):
        return jax.random.bernoulli(key, p, shape)
    k = jax.random.key_data(key)

    def draw(counters: jax.Array) -> jax.Array:
        b0, b1 = _threefry2x32(k[0], k[1], jnp.zeros_like(counters), counters)
        mantissa = jax.lax.shift_right_logical(b0 ^ b1, np.uint32(9)) | np.uint32(0x3F800000)
        uniform = jax.lax.bitcast_convert_type(mantissa, np.float32) - np.float32(1.0)
        return jnp.maximum(np.float32(0.0), uniform) < np.float32(p)

    # Two halves in a loop: the loop's output is the mask in memory. Inline, XLA copies the hash (a chain of
    # cheap integer operations) into every fusion that reads the mask, forward and backward.
    half = -(-size // 2)
    keep: jax.Array = jax.lax.map(draw, jax.lax.iota(np.uint32, 2 * half).reshape(2, half))
    return keep.reshape(-1)[:size].reshape(shape)


class Dropout(nnx.Dropout):
    """`nnx.Dropout` drawing the same masks with `bernoulli` (four times faster on CPU); the same parameters,
    RNG state and call signature. Calls it does not cover (an explicit `rngs` or `deterministic`, an RNG that is
    not one stream) go to `nnx.Dropout`."""

    def __call__(self, inputs: jax.Array, *, deterministic: bool | None = None,
                 rngs: nnx.Rngs | nnx.RngStream | jax.Array | None = None) -> jax.Array:
        """Zero each element with probability `rate` and scale the rest by `1 / (1 - rate)` (train mode)."""
        if (deterministic is not None or rngs is not None or self.deterministic is not False
                or self.rate in (0.0, 1.0) or not isinstance(self.rngs, nnx.RngStream)):
            return super().__call__(inputs, deterministic=deterministic, rngs=rngs)
        keep_prob = 1.0 - self.rate
        shape = list(inputs.shape)
        for axis in self.broadcast_dims:
            shape[axis] = 1
        mask = jnp.broadcast_to(bernoulli(self.rngs(), keep_prob, shape), inputs.shape)
        return jax.lax.select(mask, inputs / keep_prob, jnp.zeros_like(inputs))
