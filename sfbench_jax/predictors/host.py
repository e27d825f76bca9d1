"""Models that run on the host (NumPy, PyTorch, a foundation model), called from inside the compiled evaluation
program once per block of windows, and the reporting of their failures.

The fused engine keeps the faults on the device: per block it builds the clean windows and every scenario's
faulted copy and hands them to the model as one batch. A host model receives that batch through one
callback (`host_forecast`), so the host call happens once per block, never per window, and its
result goes straight back into the per-window losses.

What lives here: `HostForecaster` (a host function `(windows, input_len, channels) -> (windows, horizon,
targets)` with the checks of what it returns: shape, numeric type, finite values), `host_forecast` (the call
inside a traced program), `HostModelError` and `reporting_host_failures` (a failed host call surfaces from XLA
as a runtime error holding a traceback; the context manager raises the model's own error instead, naming the
host call, its block of windows, the expected shape and what came back). Which models run on the host lives
in `sfbench_jax.models` (`external`, `chronos2`); nothing here imports the engine.
"""

from __future__ import annotations

import collections
import contextlib
import functools
import logging
import threading
from collections.abc import Callable, Iterator
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental.buffer_callback import buffer_callback

#: Failures kept for `reporting_host_failures` to match against XLA's runtime errors (most recent last).
RECORDED_FAILURES = 32

#: The logger JAX reports a failed callback on (with a traceback) before XLA raises its runtime error.
JAX_CALLBACK_LOGGER = "jax._src.callback"

_failures: collections.deque[HostModelError] = collections.deque(maxlen=RECORDED_FAILURES)
_failures_lock = threading.Lock()


class HostModelError(ValueError):
    """A model that runs on the host failed on a block of windows (it raised, or returned a wrong shape, a
    non-numeric type or non-finite values). The evaluation stops; nothing is written."""


class HostForecaster:
    """A host function forecasting a block of standardised windows, with the checks of what it returns.

    Called from a compiled program (`host_forecast`) with the windows `(..., input_len, channels)`; the function
    receives a float32 NumPy array `(windows, input_len, channels)` of its own (writable), and must return an
    array-like `(windows, horizon, targets)` of finite numbers (returned as float32). Hashable by identity, so it
    can be a static attribute of an NNX module (the compiled programs are keyed by it).

    Args:
        forecast: the host function.
        name: how errors name the model (e.g. `my_pkg.my_module:predict`).
        horizon: forecast length H.
        num_targets: number of target channels.
    """

    def __init__(self, forecast: Callable[[np.ndarray], Any], *, name: str, horizon: int, num_targets: int) -> None:
        self.forecast, self.name = forecast, name
        self.horizon, self.num_targets = int(horizon), int(num_targets)
        self.calls = 0
        self._calls_lock = threading.Lock()
        _quiet_reported_callback_logs()

    def __repr__(self) -> str:
        return f"HostForecaster({self.name}, horizon={self.horizon}, targets={self.num_targets})"

    def __call__(self, x: Any) -> np.ndarray:
        """Forecast a block: `(..., n, m)` (a host buffer or array) -> float32 `(..., H, targets)` (leading axes
        flattened for the call)."""
        windows = np.array(x, dtype=np.float32)  # a copy: the caller's buffer lives only during the call
        leading = windows.shape[:-2]
        windows = windows.reshape(-1, *windows.shape[-2:])
        with self._calls_lock:
            self.calls += 1
            call = self.calls
        expected = (windows.shape[0], self.horizon, self.num_targets)
        try:
            forecast = self.forecast(windows)
        except Exception as error:
            raise self._failure(call, windows.shape, expected, f"it raised {type(error).__name__}: {error}") from error
        checked = self._checked(forecast, call, windows.shape, expected)
        return checked.reshape(*leading, self.horizon, self.num_targets)

    def _checked(self, forecast: Any, call: int, given: tuple[int, ...], expected: tuple[int, ...]) -> np.ndarray:
        try:
            values = np.asarray(forecast)
        except Exception as error:
            raise self._failure(call, given, expected, f"its {type(forecast).__name__} is not an array "
                                f"({type(error).__name__}: {error})") from error
        if values.shape != expected:
            raise self._failure(call, given, expected, f"it returned shape {values.shape}")
        if not (np.issubdtype(values.dtype, np.floating) or np.issubdtype(values.dtype, np.integer)):
            raise self._failure(call, given, expected, f"it returned dtype {values.dtype}, not real numbers")
        values = values.astype(np.float32, copy=False)
        bad = int(np.size(values) - np.count_nonzero(np.isfinite(values)))
        if bad:
            raise self._failure(call, given, expected, f"it returned {bad} non-finite value(s) (NaN or inf) "
                                f"of {values.size}")
        return values

    def _failure(self, call: int, given: tuple[int, ...], expected: tuple[int, ...], what: str) -> HostModelError:
        error = HostModelError(
            f"{self.name} failed on host call {call} (a block of {given[0]} windows, input {given} float32): "
            f"{what}; the engine expects a forecast of shape (windows, horizon, targets) = {expected} of finite "
            "numbers. The evaluation stopped; nothing was written.")
        with _failures_lock:
            _failures.append(error)
        return error


def host_forecast(forecaster: HostForecaster, x: jax.Array) -> jax.Array:
    """Run a host forecaster on a batch of windows inside a traced program: one host call per call,
    `(B, n, m)` -> float32 `(B, H, targets)`. Under `vmap` the host still runs once, on the whole batch.

    On CPU the callback reads XLA's buffers in place (`buffer_callback`): `jax.pure_callback` would first copy
    its inputs onto CPU device 0, and with several CPU devices under `shard_map` (the `sfbench` CLI exposes every
    core as one) that copy waits for device 0, which may itself be waiting in a callback: a deadlock. Elsewhere
    (GPU) `jax.pure_callback` brings the windows to the host.
    """
    result = jax.ShapeDtypeStruct((x.shape[0], forecaster.horizon, forecaster.num_targets), jnp.float32)
    return jax.lax.platform_dependent(x.astype(jnp.float32), cpu=functools.partial(_in_place, forecaster, result),
                                      default=functools.partial(_through_host, forecaster, result))


def _in_place(forecaster: HostForecaster, result: jax.ShapeDtypeStruct, x: jax.Array) -> jax.Array:
    def write(context: Any, out: Any, windows: Any) -> None:
        del context
        np.asarray(out)[...] = forecaster(np.asarray(windows))

    return buffer_callback(write, result, vmap_method="broadcast_all")(x)


def _through_host(forecaster: HostForecaster, result: jax.ShapeDtypeStruct, x: jax.Array) -> jax.Array:
    return jax.pure_callback(forecaster, result, x, vmap_method="broadcast_all")


@contextlib.contextmanager
def reporting_host_failures() -> Iterator[None]:
    """Run engine calls; when one stops because a host model failed, raise that model's `HostModelError`
    instead of XLA's runtime error (which holds the same message inside a traceback).

    Raises:
        HostModelError: a host model failed on a block; other runtime errors pass unchanged.
    """
    try:
        yield
    except jax.errors.JaxRuntimeError as error:
        failure = _recorded_failure_in(str(error))
        if failure is None:
            raise
        raise failure from None


def _recorded_failure_in(message: str) -> HostModelError | None:
    with _failures_lock:
        for failure in reversed(_failures):
            if str(failure) in message:
                _failures.remove(failure)
                return failure
    return None


class _ReportedFailureFilter(logging.Filter):
    """Drop JAX's log record of a callback that raised a `HostModelError`: the engine raises that error itself
    (`reporting_host_failures`), so the traceback JAX logs first would only repeat it."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not (record.exc_info and isinstance(record.exc_info[1], HostModelError))


@functools.cache
def _quiet_reported_callback_logs() -> None:
    logging.getLogger(JAX_CALLBACK_LOGGER).addFilter(_ReportedFailureFilter())
