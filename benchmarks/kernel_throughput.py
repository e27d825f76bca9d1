"""Batch throughput of the PHM kernels (phm_kernels): items per second in steady state.

Each case builds a batched, jitted function (``jax.vmap`` of a ``*_core`` kernel, or the RUL
model's chunked predictor), compiles it ahead of time (``lower().compile()``, reported as
``compile_s``), warms it up, then times ``--repeats`` calls with ``block_until_ready`` and
reports the median and the 10th-90th percentile spread as items/s. Inputs are seeded synthetic
arrays with the shapes of the real datasets (C-MAPSS windows 30 x 14, CWRU 1 s at 12 kHz,
NASA battery 168 cycles); throughput does not depend on the values.

Usage::

    python benchmarks/kernel_throughput.py            # table
    python benchmarks/kernel_throughput.py --json     # machine-readable
    python benchmarks/kernel_throughput.py --quick --cases rul_mlp envelope
"""

from __future__ import annotations

import argparse
import functools
import json
import platform
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass

import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx
from phm_kernels import battery, bearing, metrics, rul_model, trends, vibration


@dataclass(frozen=True)
class CaseResult:
    """One benchmark row."""

    case: str
    unit: str
    batch: int
    compile_s: float
    median_s: float
    items_per_s: float
    items_per_s_p10: float
    items_per_s_p90: float
    repeats: int


def _key(i: int) -> jax.Array:
    return jax.random.fold_in(jax.random.key(20_240_101), i)


def _rul_case(architecture: str, batch: int) -> tuple[Callable, tuple, str]:
    cfg = rul_model.RulModelConfig(architecture=architecture)
    model = rul_model.build_model(cfg, 14, _key(0))
    graphdef, params = nnx.split(model)
    rows = batch + cfg.window
    series = jax.random.normal(_key(1), (rows, 14), jnp.float32)
    ends = jnp.arange(cfg.window - 1, cfg.window - 1 + batch, dtype=jnp.int32)

    def predict(params, series, ends):
        out = nnx.merge(graphdef, params)(rul_model.gather_windows(series, ends, cfg.window))
        return jnp.clip(out, 0.0, 125.0)

    return predict, (params, series, ends), "windows"


#: A case's builder: the batch scale divisor (4 with --quick) -> (batched function, its arguments, item unit).
CaseBuilder = Callable[[int], tuple[Callable, tuple, str]]


def _rul_mlp(scale: int) -> tuple[Callable, tuple, str]:
    return _rul_case("mlp", 8192 // scale)


def _rul_cnn(scale: int) -> tuple[Callable, tuple, str]:
    return _rul_case("cnn", 8192 // scale)


def _envelope(scale: int) -> tuple[Callable, tuple, str]:
    signals = jax.random.normal(_key(2), (64 // scale, 12_000), jnp.float32)
    return (jax.vmap(lambda x: bearing.envelope_spectrum_core(x, 12_000.0, 2_000.0, 4_000.0)),
            (signals,), "spectra")


def _diagnose(scale: int) -> tuple[Callable, tuple, str]:
    signals = jax.random.normal(_key(3), (32 // scale, 60_000), jnp.float32)
    fn = jax.vmap(lambda x: bearing.diagnose_bearing_core(
        x, 12_000.0, 1797.0, 2_000.0, 4_000.0, segment_length=12_000).label)
    return fn, (signals,), "records"


def _exp_fade(scale: int) -> tuple[Callable, tuple, str]:
    cells = 4096 // scale
    k = jnp.tile(jnp.arange(1.0, 169.0, dtype=jnp.float32), (cells, 1))
    rate = jax.random.uniform(_key(4), (cells, 1), jnp.float32, 1e-3, 4e-3)
    cap = 1.9 * jnp.exp(-rate * k) + 0.005 * jax.random.normal(_key(5), k.shape)
    return (jax.vmap(lambda c, y: battery.exp_fade_rul_core(c, y, 1.4, 120)),
            (k, cap), "fits")


def _linear_fade(scale: int) -> tuple[Callable, tuple, str]:
    cells = 4096 // scale
    k = jnp.tile(jnp.arange(1.0, 169.0, dtype=jnp.float32), (cells, 1))
    cap = 1.9 - 3e-3 * k + 0.005 * jax.random.normal(_key(6), k.shape)
    return (jax.vmap(lambda c, y: battery.linear_fade_rul_core(c, y, 1.4, 120)),
            (k, cap), "fits")


def _anomaly(scale: int) -> tuple[Callable, tuple, str]:
    series = jax.random.normal(_key(7), (1024 // scale, 168), jnp.float32)
    fn = jax.vmap(lambda x: battery.rolling_zscore_anomaly_core(
        x, 3.0, window=10, min_persistence=3, baseline="gated").flags)
    return fn, (series,), "series"


def _mann_kendall(scale: int) -> tuple[Callable, tuple, str]:
    series = jax.random.normal(_key(8), (256 // scale, 200), jnp.float32)
    return jax.vmap(lambda y: trends.mann_kendall_core(y, 0.05)), (series,), "tests"


def _phm08(scale: int) -> tuple[Callable, tuple, str]:
    truth = jax.random.uniform(_key(9), (4096 // scale, 100), jnp.float32, 0.0, 150.0)
    pred = truth + 15.0 * jax.random.normal(_key(10), truth.shape)
    return jax.vmap(metrics.phm08_score_core), (truth, pred), "unit sets"


def _iso_zone(scale: int) -> tuple[Callable, tuple, str]:
    v = jax.random.uniform(_key(11), (1_000_000 // scale,), jnp.float32, 0.0, 20.0)
    codes = jnp.ones(v.shape, jnp.int32)
    return vibration.iso10816_1_zone_core, (v, codes), "readings"


#: Every case by name, in the table's order.
CASES: dict[str, CaseBuilder] = {
    "rul_mlp": _rul_mlp,
    "rul_cnn": _rul_cnn,
    "envelope": _envelope,
    "diagnose_bearing": _diagnose,
    "exp_fade_rul": _exp_fade,
    "linear_fade_rul": _linear_fade,
    "rolling_zscore": _anomaly,
    "mann_kendall": _mann_kendall,
    "phm08_score": _phm08,
    "iso10816_zone": _iso_zone,
}


def _cases(quick: bool) -> dict[str, Callable[[], tuple[Callable, tuple, str]]]:
    """Every case's builder at the chosen batch scale (4x smaller batches with `quick`)."""
    scale = 4 if quick else 1
    return {name: functools.partial(build, scale) for name, build in CASES.items()}


def _batch_size(args: tuple) -> int:
    first = jax.tree.leaves(args[-1] if isinstance(args[0], nnx.State) else args[0])[0]
    return int(first.shape[0])


def run_case(name: str, build: Callable, repeats: int, warmup: int) -> CaseResult:
    """Compiles (timed separately), warms up and times one case."""
    fn, args, unit = build()
    args = jax.device_put(args)
    start = time.perf_counter()
    compiled = jax.jit(fn).lower(*args).compile()
    compile_s = time.perf_counter() - start
    for _ in range(warmup):
        jax.block_until_ready(compiled(*args))
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        jax.block_until_ready(compiled(*args))
        times.append(time.perf_counter() - start)
    batch = _batch_size(args)
    times = np.asarray(times)
    return CaseResult(name, unit, batch, compile_s, float(np.median(times)),
                      batch / float(np.median(times)), batch / float(np.percentile(times, 90)),
                      batch / float(np.percentile(times, 10)), repeats)


def main(argv: list[str] | None = None) -> int:
    """Runs the selected cases and prints a table (or JSON)."""
    cases = _cases(quick=False)
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--quick", action="store_true", help="4x smaller batches, 5 repeats")
    parser.add_argument("--cases", nargs="+", choices=sorted(cases), default=list(cases))
    args = parser.parse_args(argv)
    if args.quick:
        cases = _cases(quick=True)
        args.repeats = min(args.repeats, 5)
    results = [run_case(name, cases[name], args.repeats, args.warmup) for name in args.cases]
    device = jax.devices()[0]
    meta = {"device": f"{device.platform}:{device.device_kind}", "jax": jax.__version__,
            "python": platform.python_version(), "x64": bool(jax.config.jax_enable_x64)}
    if args.json:
        print(json.dumps({"meta": meta, "results": [asdict(r) for r in results]}, indent=2))
        return 0
    print(f"# phm_kernels batch throughput on {meta['device']} (JAX {meta['jax']}, float32)")
    header = (f"{'case':18s} {'unit':10s} {'batch':>8s} {'compile_s':>10s} {'median_ms':>10s} "
              f"{'items/s':>12s} {'p10..p90 items/s':>24s}")
    print(header)
    print("-" * len(header))
    for r in results:
        spread = f"{r.items_per_s_p10:,.0f}..{r.items_per_s_p90:,.0f}"
        print(f"{r.case:18s} {r.unit:10s} {r.batch:8d} {r.compile_s:10.2f} "
              f"{1e3 * r.median_s:10.2f} {r.items_per_s:12,.0f} {spread:>24s}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
