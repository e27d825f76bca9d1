"""Stored runs as the MCP server sees them: named by folder name under one runs root the operator set.

What lives here: `StoredRuns` (the runs root, the candidate-store roots, whether host models may be rebuilt),
its `find` (a run name -> its folder, refusing path-like names, links out of the root and manifests the rebuild
policy refuses, before anything is loaded) and `policy` (the `RebuildPolicy` the rebuild runs under). Every error
is a tagged tool error that names neither a server path nor any other run. The benchmark is reached through its
door only (`sfbench_jax.api.runs`, imported inside functions: it loads JAX). What does not: loading, verifying and
rebuilding a run (the benchmark's, behind ``sfbench_jax.api``).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sfbench_jax.mcp.datasets import reject_path_like
from sfbench_jax.mcp.errors import RefusedToolError, UnavailableToolError, UnknownDatasetError, UnknownRunError

if TYPE_CHECKING:
    from sfbench_jax.api.runs import RebuildPolicy

__all__ = ["NO_RUNS_ROOT", "RUNS_ROOT_VARIABLE", "StoredRuns", "check_run_name"]

#: Environment variable the server reads its runs root from when ``--runs-root`` is not given.
RUNS_ROOT_VARIABLE = "SFBENCH_RUNS_DIR"
MANIFEST_FILE = "manifest.json"  # the run folder's marker (the benchmark's `run_folder` MANIFEST_FILE)
_RUN_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.=-]{0,127}")

#: What a refused run folder is, said without a path (`find_runs`'s kinds).
_REFUSALS = {
    "outside": "is, or holds, a symbolic link out of the server's runs root; runs are read only inside it. Ask the "
               "operator to copy the run in instead",
    "cycle": "is a symbolic link back to a folder it lies in (a cycle); ask the operator to remove the link",
    "nested": "lies inside another run folder (a copied run?), so it is not read; ask the operator to move it into "
              "a folder of its own",
    "stray": "lies in a sweep folder without being one of its jobs, so it is not read; ask the operator to move it "
             "out of the sweep",
}

NO_RUNS_ROOT = (f"this server has no runs root, so it cannot open stored runs. Restart it with --runs-root PATH "
                f"(or {RUNS_ROOT_VARIABLE}=PATH), the folder holding the sfbench run folders, or use "
                "run='seasonal_naive'")


def check_run_name(run: str) -> None:
    """Refuse a run name that is a path or not a folder name.

    Raises:
        UnknownRunError: It holds a path marker, or is not 1-128 of letters, digits, ``_ . = -`` (not starting
            with ``. = -``).
    """
    try:
        reject_path_like(run, "run")
    except UnknownDatasetError:
        raise UnknownRunError(f"run={run!r} looks like a file path; stored runs are named by their folder name "
                              "only, never by a path. Use a run folder's name, or 'seasonal_naive'") from None
    if not _RUN_NAME.fullmatch(run):
        raise UnknownRunError(f"run={run!r} is not a run name (1-128 letters, digits, _ . = -, not starting "
                              "with . = -); use a run folder's name, or 'seasonal_naive'")


@dataclass(frozen=True)
class StoredRuns:
    """The server's stored runs.

    Attributes:
        root: The runs root (resolved); runs are found by folder name at or below it.
        store_roots: Folders besides the runs root where a run's candidate store may lie (``train.store_dir``).
        allow_host_models: Rebuild runs of host models (code or files named by their manifests).
    """

    root: Path
    store_roots: tuple[Path, ...] = ()
    allow_host_models: bool = False

    def __post_init__(self) -> None:
        for folder in (self.root, *self.store_roots):
            if not Path(folder).is_dir():
                raise FileNotFoundError(f"{folder} is not a directory; pass --runs-root (and --store-root) "
                                        "pointing at existing folders")
        object.__setattr__(self, "root", Path(self.root).expanduser().resolve())
        object.__setattr__(self, "store_roots", tuple(Path(p).expanduser().resolve() for p in self.store_roots))

    def policy(self, data_root: Path | None) -> RebuildPolicy:
        """The rebuild policy of this server (`sfbench_jax.api.runs.RebuildPolicy`; imported here: it loads JAX)."""
        from sfbench_jax.api.runs import RebuildPolicy

        return RebuildPolicy(roots=(self.root, *self.store_roots), data_root=data_root,
                             allow_host_models=self.allow_host_models)

    def _candidates(self, name: str) -> list[Path]:
        """Run folders named ``name`` at or below the root, found as every reader finds runs
        (`sfbench_jax.api.runs.find_runs`; links are followed inside the root only).

        Raises:
            RefusedToolError: The folder of that name is a link out of the root or a cycle, lies inside another
                run folder, or lies in a sweep without being one of its jobs (said without a path).
        """
        from sfbench_jax.api.runs import find_runs

        found = find_runs([self.root], within=self.root)
        for item in found.refused:
            if item.folder.name == name:
                raise RefusedToolError(f"run={name!r} {_REFUSALS[item.kind]}")
        return [folder for folder in found.folders if folder.name == name]

    def _checked(self, folder: Path, run: str) -> dict[str, Any]:
        """The folder's manifest, once the folder and its files are known to stay inside the root."""
        resolved = folder.resolve()
        if not resolved.is_relative_to(self.root) or any(
                not entry.resolve().is_relative_to(self.root) for entry in resolved.iterdir()
                if entry.name != "candidates"):
            raise RefusedToolError(f"run={run!r} is, or holds, a symbolic link out of the server's runs root; "
                                   "runs are read only inside it. Ask the operator to copy the run in instead")
        try:
            manifest = json.loads((resolved / MANIFEST_FILE).read_text())
        except (OSError, ValueError):
            raise UnavailableToolError(f"the stored run {run!r} has an unreadable {MANIFEST_FILE}; re-run its "
                                       "job to write it again") from None
        if not isinstance(manifest, dict):
            raise UnavailableToolError(f"the stored run {run!r} has a {MANIFEST_FILE} that is not a JSON object; "
                                       "re-run its job to write it again")
        return manifest

    def find(self, dataset: str, run: str, data_root: Path | None) -> Path:
        """The folder of the stored run ``run`` of ``dataset``, checked by the rebuild policy before any loading.

        Args:
            dataset: Registered dataset name (already checked).
            run: The run's folder name.
            data_root: The server's data root (for the policy).

        Returns:
            The run folder (resolved, inside the root).

        Raises:
            UnknownRunError: Not a run name, or no run of the dataset has it.
            RefusedToolError: A link out of the root, or a manifest the policy refuses (e.g. a host model).
            UnavailableToolError: Its manifest cannot be read, or several runs share the name.
        """
        check_run_name(run)
        from sfbench_jax.api.runs import UntrustedRunError, check_manifest

        matches = []
        for folder in self._candidates(run):
            manifest = self._checked(folder, run)
            if _dataset_of(manifest) == dataset:
                try:
                    check_manifest(manifest, self.policy(data_root))
                except UntrustedRunError as error:
                    raise RefusedToolError(f"the stored run {run!r}: {error}") from None
                matches.append(folder.resolve())
        if not matches:
            raise UnknownRunError(f"no stored run of {dataset} is named {run!r} under this server's runs root. "
                                  "Name a run folder of this dataset exactly, or use run='seasonal_naive'")
        if len(matches) > 1:
            raise UnavailableToolError(f"{len(matches)} stored runs of {dataset} are named {run!r}; ask the "
                                       "operator to rename all but one")
        return matches[0]


def _dataset_of(manifest: dict[str, Any]) -> Any:
    config = manifest.get("config")
    section = config.get("dataset") if isinstance(config, dict) else None
    return section.get("name") if isinstance(section, dict) else None
