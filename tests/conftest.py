"""Shared pytest fixtures for the whole suite.

`data_root` is the folder laid out like `../shared/data` (CI points SFBENCH_DATA_ROOT at it). Tests that
need real data request this fixture; a missing or wrong root is a failure with a clear message, never a skip.
`load_script` imports a file of `scripts/` as a module (scripts are not a package).
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import pytest

SCRIPTS = Path(__file__).resolve().parents[1] / "scripts"


@pytest.fixture(scope="session")
def data_root() -> Path:
    """The benchmark data root taken from SFBENCH_DATA_ROOT."""
    value = os.environ.get("SFBENCH_DATA_ROOT")
    if not value:
        pytest.fail(
            "SFBENCH_DATA_ROOT is not set. Point it at the shared data folder, e.g. "
            "`export SFBENCH_DATA_ROOT=../shared/data` (CI does this in .ci/run)."
        )
    root = Path(value).expanduser().resolve()
    if not (root / "forecasting").is_dir() and not (root / "phm").is_dir():
        pytest.fail(f"SFBENCH_DATA_ROOT={root} does not look like the shared data folder "
                    "(expected sub-folders 'forecasting/' and/or 'phm/').")
    return root


@pytest.fixture(scope="session")
def load_script() -> Callable[[str], ModuleType]:
    """`load_script("name")` imports `scripts/name.py` as a fresh module."""
    def load(name: str) -> ModuleType:
        spec = importlib.util.spec_from_file_location(f"{name}_script", SCRIPTS / f"{name}.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module
    return load
