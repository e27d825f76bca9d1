"""Shape-matched synthetic stand-ins for datasets that cannot be downloaded here.

`traffic_synthetic` is Traffic-shaped (17,544 x 862) and `penmanshiel_synthetic` Penmanshiel-shaped
(25,867 x 65). The series are deterministic functions of a fixed seed: daily and weekly seasonality with
per-channel phase and amplitude, plus AR(1) noise. They exercise shapes, memory and speed; their numbers
mean nothing about the real datasets.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

SYNTHETIC_SEED = 20240601


def seasonal_series(*, num_rows: int, num_channels: int, seed: int = SYNTHETIC_SEED,
                    ar_coefficient: float = 0.9) -> np.ndarray:
    """A float64 `(num_rows, num_channels)` array of seasonal signals with AR(1) noise.

    Args:
        num_rows: number of hourly rows.
        num_channels: number of channels.
        seed: NumPy generator seed (the series is a pure function of it).
        ar_coefficient: AR(1) coefficient of the noise.
    """
    rng = np.random.default_rng(seed)
    hours = np.arange(num_rows, dtype=np.float64)[:, None]
    level = rng.uniform(0.5, 2.0, size=num_channels)
    daily_amplitude = rng.uniform(0.2, 1.0, size=num_channels)
    weekly_amplitude = rng.uniform(0.0, 0.5, size=num_channels)
    daily_phase = rng.uniform(0.0, 2 * np.pi, size=num_channels)
    weekly_phase = rng.uniform(0.0, 2 * np.pi, size=num_channels)
    seasonal = (level
                + daily_amplitude * np.sin(2 * np.pi * hours / 24.0 + daily_phase)
                + weekly_amplitude * np.sin(2 * np.pi * hours / 168.0 + weekly_phase))
    innovations = rng.standard_normal((num_rows, num_channels)) * 0.1
    from scipy.signal import lfilter  # here, not at import: scipy.signal takes ~1 s to import, most runs never need it

    noise: np.ndarray = lfilter([1.0], [1.0, -ar_coefficient], innovations, axis=0)
    series: np.ndarray = seasonal + noise
    return series


def synthetic_frame(*, channels: tuple[str, ...], num_rows: int, seed: int = SYNTHETIC_SEED,
                    start: str = "2016-07-01 02:00:00") -> pd.DataFrame:
    """A runtime frame (`datetime` + channels) of synthetic seasonal series."""
    values = seasonal_series(num_rows=num_rows, num_channels=len(channels), seed=seed)
    frame = pd.DataFrame(values.astype(np.float32), columns=list(channels))
    frame.insert(0, "datetime", pd.date_range(start, periods=num_rows, freq="h"))
    return frame
