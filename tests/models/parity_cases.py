"""Where the model tests find the PyTorch parity fixtures: the full 48-case folder named by SFBENCH_PARITY_DIR, or
else the subset kept in the repository (`tests/fixtures/parity`, checked against its SHA256SUMS; its README says
which cases and why). Imported by tests/models/conftest.py and the parity tests."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

BUNDLED_PARITY = Path(__file__).resolve().parents[1] / "fixtures" / "parity"
def full_parity_dir() -> Path | None:
    """The full 48-case folder named by SFBENCH_PARITY_DIR, or None (then the repository's subset is used)."""
    value = os.environ.get("SFBENCH_PARITY_DIR")
    return Path(value).expanduser().resolve() if value else None


def parity_folder() -> Path:
    """SFBENCH_PARITY_DIR if set, else `tests/fixtures/parity`."""
    return full_parity_dir() or BUNDLED_PARITY


def parity_case(name: str) -> object:
    """`name` as a pytest parameter, marked `full_data` (skipped without SFBENCH_PARITY_DIR) when the repository's
    subset does not hold it."""
    if full_parity_dir() is None and not (BUNDLED_PARITY / f"{name}.npz").is_file():
        return pytest.param(name, marks=pytest.mark.skip(
            reason="parity case not kept in the repository: set SFBENCH_PARITY_DIR to the full 48-case folder"))
    return name


def verify_bundled_parity() -> None:
    """Raise ValueError naming the file when a kept fixture differs from its SHA256SUMS line."""
    for line in (BUNDLED_PARITY / "SHA256SUMS").read_text().splitlines():
        expected, name = line.split(maxsplit=1)
        digest = hashlib.sha256((BUNDLED_PARITY / name).read_bytes()).hexdigest()
        if digest != expected:
            raise ValueError(f"{BUNDLED_PARITY / name}: SHA-256 {digest} differs from {expected}; restore it from git.")
