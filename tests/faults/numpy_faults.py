"""Independent NumPy (float64) implementations of the fault formulas, written from the spec text for the
tests. They take explicit parameters (severity, ordered channel list, positions) rather than random
state, so the JAX apply functions can be compared against them element by element."""

from __future__ import annotations

import math

import numpy as np


def drift(x, s, channels):
    y = x.astype(np.float64)
    for j in channels:
        y[:, j] = y[:, j] + np.float32(0.75 * s)
    return y


def attenuation(x, s, channels):
    y = x.astype(np.float64)
    factor = np.float32(1.0 + s * (0.25 - 1.0))
    for j in channels:
        y[:, j] = y[:, j] * factor
    return y


def noise(x, s, channels, z):
    """z: (n, len(channels)); column c goes to channel channels[c]."""
    y = x.astype(np.float64)
    for c, j in enumerate(channels):
        y[:, j] = y[:, j] + s * z[:, c]
    return y


def spike(x, s, channels, positions):
    y = x.astype(np.float64)
    for j, p in zip(channels, positions, strict=True):
        y[p, j] = y[p, j] + np.float32(7.5 * s)
    return y


def time_warp(x, rate, start, channels):
    n = x.shape[0]
    duration = math.ceil(n / 2)
    y = x.astype(np.float64)
    grid = np.arange(n, dtype=np.float64)
    for j in channels:
        source = x[:, j].astype(np.float64)
        for i in range(duration):
            tau = (start - 1) + (i + 1) / rate
            y[start + i, j] = np.interp(min(max(tau, 0.0), n - 1.0), grid, source)
    return y


def stuck(x, s, channels, starts):
    n = x.shape[0]
    length = math.ceil(s * (n - 1))
    y = x.astype(np.float64)
    for j, a in zip(channels, starts, strict=True):
        y[a:a + length, j] = x[a - 1, j]
    return y


def missing(x, s, start):
    n = x.shape[0]
    length = math.ceil(s * 0.5 * (n - 1))
    y = x.astype(np.float64)
    y[start:start + length, :] = x[start - 1, :]
    return y


def linear_drift(x, s, channels):
    n = x.shape[0]
    t = np.arange(n) / max(n - 1, 1)
    y = x.astype(np.float64)
    for j in channels:
        y[:, j] = y[:, j] + s * t
    return y


def nonlinear_drift(x, s, channels):
    n = x.shape[0]
    t = np.arange(n, dtype=np.float64)
    big_t = max(n - 1, 1)
    y = x.astype(np.float64)
    for j in channels:
        y[:, j] = y[:, j] + (0.5 * s / big_t) * t + (0.5 * s / big_t**2) * t**2
    return y


def scaling(x, s, channels):
    y = x.astype(np.float64)
    for j in channels:
        y[:, j] = (1 + s) * y[:, j]
    return y


def time_varying_scaling(x, s, channels):
    n = x.shape[0]
    t = np.arange(n) / max(n - 1, 1)
    y = x.astype(np.float64)
    for j in channels:
        y[:, j] = y[:, j] * (1 + s * t)
    return y


def trimming_constant(x, s, channels):
    bound = 3 - 2 * s
    y = x.astype(np.float64)
    for j in channels:
        y[:, j] = np.clip(y[:, j], -bound, bound)
    return y


def trimming_varying(x, s, channels):
    bound, damping = 3 - 2 * s, 1 - 0.4 * s
    y = x.astype(np.float64)
    for j in channels:
        column = y[:, j].copy()
        low, high = column < -bound, column > bound
        column[low] = -bound + (column[low] + bound) * damping
        column[high] = bound + (column[high] - bound) * damping
        y[:, j] = column
    return y


def packet_loss(x, s, channels, anchors, uniforms):
    """Sequential walk of protocol 2.3; uniforms[pos, j] is the draw used at `pos` (anchor: no draw)."""
    n = x.shape[0]
    p_start, p_continue = 0.25 * s, 0.9 * s
    y = x.astype(np.float64)
    for j, anchor in zip(channels, anchors, strict=True):
        in_burst = False
        for pos in range(1, n):
            in_burst = True if pos == anchor else uniforms[pos, j] < (p_continue if in_burst else p_start)
            if in_burst:
                y[pos, j] = y[pos - 1, j]
    return y
