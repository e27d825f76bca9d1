"""Stored runs as a tool reads them (the MCP server's runs root): finding run folders as every reader does, the
rebuild policy a stored winner is rebuilt under and its check of a manifest, and the errors of a run that is
untrusted, still being written, damaged or lacks its candidates. Re-exported from where they live: importing this
module imports the pipeline (and JAX), so a caller that must start light imports it inside a function."""

from __future__ import annotations

from sfbench_jax.pipeline.rebuild import NotStoredError, RebuildPolicy, UntrustedRunError, check_manifest
from sfbench_jax.run_folder.damage import DamagedRunError, RunInProgressError
from sfbench_jax.run_folder.finding import FoundRuns, find_runs

__all__ = ["DamagedRunError", "FoundRuns", "NotStoredError", "RebuildPolicy", "RunInProgressError",
           "UntrustedRunError", "check_manifest", "find_runs"]
