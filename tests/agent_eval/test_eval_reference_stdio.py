"""CI gate: every scenario's scripted reference solution passes all its validators, identically on
three repeats, through the real server launched as a stdio subprocess
(``python -m sfbench_jax.mcp.server``); and the committed ground truth is exactly what
``scripts/build_agent_scenarios.py`` computes from the kernels.

Both are compile-bound subprocesses, so the ground-truth check is started first and runs on the
second core while the reference solutions go through the stdio server.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from eval_helpers import stdio_params

from sfbench_jax.agent_eval.lint import check_reference_solutions
from sfbench_jax.agent_eval.scenario import Scenario
from sfbench_jax.agent_eval.toolbox import connect

REPO = Path(__file__).resolve().parents[2]


class _Background:
    """A background subprocess and the file its output goes to."""

    def __init__(self, args: list[str], log: Path) -> None:
        self.log = log
        self._handle = log.open("w")
        self.proc = subprocess.Popen(args, stdout=self._handle, stderr=subprocess.STDOUT)

    def result(self, timeout_s: float) -> tuple[int, str]:
        code = self.proc.wait(timeout=timeout_s)
        self._handle.close()
        return code, self.log.read_text()

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(timeout=60)
        self._handle.close()


@pytest.fixture(scope="module")
def ground_truth_check(data_root: Path,
                       tmp_path_factory: pytest.TempPathFactory) -> Iterator[_Background]:
    """``build_agent_scenarios.py --check`` running in the background."""
    job = _Background([sys.executable, str(REPO / "scripts" / "build_agent_scenarios.py"),
                       "--data-root", str(data_root), "--check"],
                      tmp_path_factory.mktemp("gt") / "check.log")
    try:
        yield job
    finally:
        job.stop()


@pytest.mark.anyio
async def test_every_reference_solution_passes_over_stdio(
        scenarios: list[Scenario], data_root: Path, ground_truth_check: _Background) -> None:
    assert ground_truth_check.proc.pid > 0  # started before the stdio server
    async with connect(stdio_params(data_root)) as session:
        assert session.catalog, "the stdio server listed no tools"
        problems = await check_reference_solutions(scenarios, session, repeats=3)
    assert problems == {}, problems


def test_ground_truth_is_reproduced_by_the_script(ground_truth_check: _Background) -> None:
    code, output = ground_truth_check.result(timeout_s=900)
    assert code == 0, output
    assert "0 differ" in output
