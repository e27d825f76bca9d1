"""The run manifest: resolved config, versions, devices, data checksums, timings."""

from __future__ import annotations

import dataclasses
import importlib.metadata
import platform
import subprocess
import sys
from pathlib import Path
from typing import Any

import jax

_PACKAGES = ("sfbench-jax", "jax", "jaxlib", "flax", "optax", "numpy", "pandas", "pyarrow", "hydra-core",
             "matplotlib")


def package_versions() -> dict[str, str]:
    """Installed versions of the packages that shape results."""
    versions = {"python": sys.version.split()[0], "platform": platform.platform()}
    for name in _PACKAGES:
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            versions[name] = "not installed"
    return versions


def code_revision(start: Path) -> str | None:
    """The git commit of the source tree, if it is a git checkout."""
    try:
        result = subprocess.run(["git", "rev-parse", "HEAD"], cwd=start, capture_output=True, text=True,
                                timeout=5, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return result.stdout.strip() or None if result.returncode == 0 else None


def device_description() -> dict[str, Any]:
    """The JAX backend and devices."""
    devices = jax.devices()
    return {"backend": jax.default_backend(), "count": len(devices),
            "kinds": sorted({device.device_kind for device in devices})}


def to_plain(value: Any) -> Any:
    """Dataclasses (nested) to JSON-able dicts."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {field.name: to_plain(getattr(value, field.name)) for field in dataclasses.fields(value)}
    if isinstance(value, (tuple, list)):
        return [to_plain(item) for item in value]
    if isinstance(value, dict):
        return {str(key): to_plain(item) for key, item in value.items()}
    return value
