"""The run manifest: resolved config, versions, the code revision and code identity, devices, data checksums, phase
timings (the run's, and the process's start-up before it: `mark_startup`), the selection."""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import importlib.metadata
import platform
import subprocess
import sys
from pathlib import Path
from typing import Any

import jax

from sfbench_jax.config import RunConfig
from sfbench_jax.data.prepared import PreparedData
from sfbench_jax.data.registry import DATASETS
from sfbench_jax.faults.registry import FAULTS
from sfbench_jax.methods.registry import METHODS
from sfbench_jax.models.registry import MODELS
from sfbench_jax.pipeline.cell import EvaluatedModel, Selection
from sfbench_jax.pipeline.outputs.startup import startup_phases
from sfbench_jax.plugins.code_identity import distribution_digest, engine_identity
from sfbench_jax.plugins.entry_points import origin_of

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


def _git(start: Path, *arguments: str) -> bytes | None:
    """The output of `git ARGUMENTS` in `start`, or None if git is missing, fails or takes over 10 s."""
    try:
        result = subprocess.run(["git", *arguments], cwd=start, capture_output=True, timeout=10, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return result.stdout if result.returncode == 0 else None


def code_revision(start: Path) -> str | None:
    """The git commit of the source tree, if it is a git checkout; with uncommitted changes (tracked files edited or
    untracked files added), `COMMIT+dirty.DIGEST`, where DIGEST is the SHA-256 (16 hex digits) of the diff against
    the commit and of every untracked file (path and content), so two runs from the same dirty tree name the same
    revision and runs from differently edited trees never do."""
    head = _git(start, "rev-parse", "HEAD")
    commit = head.decode().strip() if head else ""
    if not commit:
        return None
    status = _git(start, "status", "--porcelain")
    if status is None or not status.strip():
        return commit if status is not None else f"{commit}+unknown-state"
    digest = hashlib.sha256(_git(start, "diff", "HEAD", "--binary") or b"")
    top = (_git(start, "rev-parse", "--show-toplevel") or b"").decode().strip()
    untracked = _git(start, "ls-files", "--others", "--exclude-standard", "--full-name", "-z", ":/") or b""
    for name in sorted(name for name in untracked.split(b"\0") if name):
        digest.update(b"\0" + name + b"\0")
        with contextlib.suppress(OSError):
            path = Path(top) / name.decode(errors="surrogateescape")
            size = path.stat().st_size  # a large untracked file (data) by its size, not read
            digest.update(hashlib.sha256(path.read_bytes()).digest() if size <= 2**24 else str(size).encode())
    return f"{commit}+dirty.{digest.hexdigest()[:16]}"


def run_code_identity(cfg: RunConfig) -> dict[str, Any]:
    """The code that shaped the run (`plugins.code_identity`): the engine's source digest and JAX / jaxlib / Flax /
    Optax versions, and `{"name==version": files digest}` of each plug-in distribution its dataset, model, method or
    scored scenarios come from."""
    specs: list[Any] = [DATASETS.get(cfg.dataset.name), MODELS.get(cfg.model.name), METHODS.get(cfg.method.name),
                        *(FAULTS.get(name) for name in cfg.eval.scenarios)]
    plugins: dict[str, str] = {}
    for spec in specs:
        origin = origin_of(spec) if spec is not None else None
        if origin is not None and origin.entry_point:
            plugins[f"{origin.distribution}=={origin.version}"] = distribution_digest(origin.distribution)
    return {**engine_identity(), "plugins": dict(sorted(plugins.items()))}


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
        "code_identity": run_code_identity(cfg),
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
