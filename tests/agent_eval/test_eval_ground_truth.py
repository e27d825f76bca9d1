"""The committed ground truth is exactly what ``scripts/build_agent_scenarios.py`` computes from
the kernels and the real data (run as a subprocess with ``--check``, which writes nothing)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_ground_truth_is_reproduced_by_the_script(data_root: Path) -> None:
    done = subprocess.run([sys.executable, str(REPO / "scripts" / "build_agent_scenarios.py"),
                           "--data-root", str(data_root), "--check"], capture_output=True,
                          text=True, timeout=900, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "0 differ" in done.stdout
