"""The process's start-up phases recorded for the run manifest: measured from the start the operating system
reports, in the order the entry point marks them."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest

from sfbench_jax.pipeline.outputs import startup

SCRIPT = """
import json
import time
from sfbench_jax.pipeline.outputs import startup
time.sleep(0.3)
startup.mark_startup("imports")
time.sleep(0.2)
startup.mark_startup("compose")
print(json.dumps(startup.startup_phases({"total_seconds": 0.1, "write_seconds": 0.05})))
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the process start comes from Linux /proc")
def test_phases_are_measured_from_the_process_start() -> None:
    started = time.monotonic()
    completed = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, check=True,
                               timeout=60)
    elapsed = time.monotonic() - started
    phases = json.loads(completed.stdout)
    assert list(phases) == ["imports_seconds", "compose_seconds", "before_run_seconds"]
    assert 0.3 <= phases["imports_seconds"] <= elapsed + 0.02  # the interpreter's start is counted too
    assert 0.2 - 0.02 <= phases["compose_seconds"] <= 0.2 + 1.0
    # the run took 0.15 s of the process's age at the end
    assert phases["imports_seconds"] + phases["compose_seconds"] - 0.2 <= phases["before_run_seconds"]
    assert phases["before_run_seconds"] <= elapsed


def test_process_age_grows() -> None:
    first = startup.process_age_seconds()
    if first is None:
        pytest.skip("the operating system does not report the process start")
    time.sleep(0.05)
    assert startup.process_age_seconds() >= first + 0.03
