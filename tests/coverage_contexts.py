"""Per-test coverage contexts that reach the processes a test starts (a pytest plug-in; `tests/conftest.py` loads it).

pytest-cov's `--cov-context=test` labels the lines each test runs in the test process only; coverage.py's
`patch = ["subprocess"]` measures the `sfbench` commands, servers and scripts a test starts, but under no label,
so `scripts/redundant_tests.py` cannot tell which test ran them. Under `--cov-context=test`, this plug-in gives each
test's subprocesses the test's own label: coverage.py hands its settings to a child in `COVERAGE_PROCESS_CONFIG`
(base64 JSON), so for the test's duration that variable carries `context = "<test id>|run"`. Processes started by
a shared fixture keep the unlabelled settings. Without `--cov-context=test` the plug-in does nothing.
"""

from __future__ import annotations

import base64
import json
import os
from collections.abc import Iterator

import pytest

VARIABLE = "COVERAGE_PROCESS_CONFIG"


def labelled(settings: str, context: str) -> str:
    """coverage.py's serialised settings with the static `context` set."""
    data = json.loads(base64.b64decode(settings.encode()).decode())
    data["context"] = context
    return base64.b64encode(json.dumps(data).encode()).decode()


@pytest.fixture(autouse=True)
def _subprocess_coverage_context(request: pytest.FixtureRequest) -> Iterator[None]:
    settings = os.environ.get(VARIABLE)
    if not settings or request.config.getoption("cov_context", default=None) != "test":
        yield
        return
    os.environ[VARIABLE] = labelled(settings, f"{request.node.nodeid}|run")
    try:
        yield
    finally:
        os.environ[VARIABLE] = settings
