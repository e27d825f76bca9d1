"""The run manifest: resolved config, versions, devices, data checksums, phase timings (the run's, and the
process's start-up before it: `mark_startup`), the selection."""

from __future__ import annotations

import dataclasses
import importlib.metadata
import platform
import subprocess
import sys
from pathlib import Path
from typing import Any

import jax

from sfbench_jax.config import RunConfig
from sfbench_jax.data.prepared import PreparedData
from sfbench_jax.pipeline.outputs.startup import startup_phases
from sfbench_jax.pipeline.cell import EvaluatedModel, Selection

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


def run_manifest(cfg: RunConfig, data: PreparedData, models: list[EvaluatedModel], selection: Selection,
                 timings: dict[str, float], files: dict[str, Path], *,
                 contract_notes: tuple[str, ...] = ()) -> dict[str, Any]:
    """The manifest of one run: resolved config, versions, code revision, devices, data checksums, phase
    timings, per-model engine statistics (and whether its forecast ignores its input), the selection record, the
    files written and the contract checks that could not apply to a spec (`contract_notes`)."""
    manifest = {
        "config": to_plain(cfg),
        "versions": package_versions(),
        "code_revision": code_revision(Path(__file__).parent),
        "devices": device_description(),
        "data": {"dataset": data.spec.key, "source": data.series.source_path, "rows": data.series.num_rows,
                 "content_sha256": data.series.content_sha256, "matches_reference": data.series.matches_reference,
                 "signature": data.spec.signature, "data_seed": data.spec.seeds.data_seed},
        "timings": timings,
        "startup": startup_phases(timings),
        "models": [{"architecture": m.architecture, "method": m.method, "hyperparameters": m.hyperparameters,
                    "engine": to_plain(m.evaluation.engine), "bootstrap_seconds": m.evaluation.bootstrap_seconds,
                    "ignores_input": m.ignores_input}
                   for m in models],
        "contract_notes": list(contract_notes),
        "files": {name: path.name for name, path in files.items()},
    }
    plan, winner = selection.plan, selection.winner
    manifest["selection"] = {
        "model_seed": plan.model_seed, "tuning_seed": plan.tuning_seed, "valid_candidates": plan.num_valid,
        "budget": cfg.train.candidate_budget, "candidates": len(selection.candidates),
        "winner": winner.candidate_hash, "winner_trial": winner.trial_number, "trained": selection.is_trained,
        "tie_break": "(best_val_loss, trial_number, candidate_hash)",
    }
    return manifest
