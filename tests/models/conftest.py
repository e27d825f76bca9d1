"""Shared fixtures for the model tests: the parity-fixture folder (`parity_cases.py` says where it comes from)."""

from __future__ import annotations

from pathlib import Path

import pytest
from parity_cases import full_parity_dir, parity_folder, verify_bundled_parity


@pytest.fixture(scope="session")
def parity_dir() -> Path:
    """The PyTorch parity fixtures (`*.npz`): SFBENCH_PARITY_DIR if set, else the repository's subset (verified)."""
    folder = parity_folder()
    if not folder.is_dir() or not any(folder.glob("*.npz")):
        pytest.fail(f"Parity fixtures not found in {folder}. Unset SFBENCH_PARITY_DIR to use the repository's "
                    "subset (tests/fixtures/parity), or point it at the full folder of 48 .npz files.")
    if full_parity_dir() is None:
        verify_bundled_parity()
    return folder
