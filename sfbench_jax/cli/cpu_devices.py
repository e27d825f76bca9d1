"""Expose every CPU core the process may use as a JAX host device (the engine shards windows over them).

Must run before JAX initialises its backends; an explicit `--xla_force_host_platform_device_count` in
`XLA_FLAGS` is left untouched. Imports nothing from JAX.
"""

from __future__ import annotations

import os

FLAG = "--xla_force_host_platform_device_count"


def expose_cpu_cores() -> None:
    """Append `FLAG=<usable cores>` to `XLA_FLAGS` unless the user already set the flag."""
    flags = os.environ.get("XLA_FLAGS", "")
    if FLAG not in flags:
        os.environ["XLA_FLAGS"] = f"{flags} {FLAG}={len(os.sched_getaffinity(0))}".strip()
