"""Writing a file whole or not at all (`write_text`: a temporary file, then a rename). Re-exported from
`sfbench_jax.storage.atomic`; imports neither JAX nor the pipeline."""

from __future__ import annotations

from sfbench_jax.storage.atomic import write_text

__all__ = ["write_text"]
