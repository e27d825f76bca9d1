"""Shared fixtures for the model tests: the parity-fixture folder and small input batches."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
PARITY_DIR = REPO_ROOT.parent / "shared" / "parity"


@pytest.fixture(scope="session")
def parity_dir() -> Path:
    """`<repo>/../shared/parity`, where CI puts the PyTorch parity fixtures (`*.npz`)."""
    if not PARITY_DIR.is_dir():
        pytest.fail(f"Parity fixtures not found at {PARITY_DIR}. The model parity tests need the "
                    "shared folder beside the repository (`../shared/parity/*.npz`, see its "
                    "README); CI checks it out next to the clean clone.")
    return PARITY_DIR
