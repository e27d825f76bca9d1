"""A host forecaster's checks, called on the host as XLA's callback calls it (`predictors.host.HostForecaster`):
a forecast that raises, is not an array, has the wrong shape or dtype, or holds non-finite values stops with one
error naming the call, the block and what the engine expects; a good one comes back float32 in the caller's shape.

The end-to-end path (the callback inside a compiled evaluation, the error raised from XLA's) is
tests/models/test_external.py and tests/cli/test_host_models_cli.py; there the callback runs on a thread XLA
starts, which coverage.py on Python 3.11 does not trace, so these lines are recorded here.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from sfbench_jax.predictors import host

HORIZON, TARGETS = 3, 2
WINDOWS = np.zeros((2, 5, 4), np.float32)  # a block of two windows, input length 5, 4 channels


class _NotAnArray:
    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        raise RuntimeError("no numbers here")


def _raises(windows: np.ndarray) -> np.ndarray:
    raise ValueError("the model file is missing")


def _failure(forecast: Callable[[np.ndarray], Any]) -> str:
    forecaster = host.HostForecaster(forecast, name="probe", horizon=HORIZON, num_targets=TARGETS)
    with pytest.raises(host.HostModelError) as raised:
        forecaster(WINDOWS)
    assert host._recorded_failure_in(f"XLA's text around it: {raised.value} ...") is raised.value  # kept, then taken
    assert host._recorded_failure_in(str(raised.value)) is None
    return str(raised.value)


@pytest.mark.parametrize(("forecast", "what"), [
    (_raises, "it raised ValueError: the model file is missing"),
    (lambda windows: _NotAnArray(), "its _NotAnArray is not an array (RuntimeError: no numbers here)"),
    (lambda windows: np.zeros((2, HORIZON)), "it returned shape (2, 3)"),
    (lambda windows: np.full((2, HORIZON, TARGETS), "x"), "it returned dtype <U1, not real numbers"),
    (lambda windows: np.full((2, HORIZON, TARGETS), np.nan), "it returned 12 non-finite value(s) (NaN or inf) of 12"),
])
def test_a_bad_forecast_stops_with_one_error_naming_the_call_and_the_expected_shape(forecast, what: str) -> None:
    message = _failure(forecast)
    assert message.startswith("probe failed on host call 1 (a block of 2 windows, input (2, 5, 4) float32): ")
    assert what in message
    assert "expects a forecast of shape (windows, horizon, targets) = (2, 3, 2) of finite numbers" in message


def test_a_good_forecast_comes_back_float32_in_the_callers_shape() -> None:
    forecaster = host.HostForecaster(lambda windows: np.ones((len(windows), HORIZON, TARGETS), np.int64),
                                     name="probe", horizon=HORIZON, num_targets=TARGETS)
    out = forecaster(np.zeros((3, 2, 5, 4)))  # leading axes are flattened for the call and restored
    assert out.shape == (3, 2, HORIZON, TARGETS) and out.dtype == np.float32 and forecaster.calls == 1
