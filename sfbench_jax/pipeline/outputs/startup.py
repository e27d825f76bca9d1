"""The process's start-up before a run: the moments the entry point marks (imports done, config composed, run
configured), measured from the process's start as the operating system reports it, for the run manifest.

Light on purpose (standard library only): the `sfbench` CLI imports it before anything heavy.
"""

from __future__ import annotations

import os
from pathlib import Path

#: Moments of this process's start-up, in seconds since the process started, recorded by the entry point
#: (`mark_startup`; the `sfbench` CLI: imports done, Hydra's config composed, run configured).
STARTUP_MARKS: dict[str, float] = {}


def process_age_seconds() -> float | None:
    """Seconds since this process started, from the operating system (Linux `/proc`; None elsewhere)."""
    try:
        fields = Path("/proc/self/stat").read_text().rsplit(")", 1)[1].split()
        uptime = float(Path("/proc/uptime").read_text().split()[0])
        return uptime - int(fields[19]) / os.sysconf("SC_CLK_TCK")  # field 22 of stat: start time in ticks
    except (OSError, ValueError, IndexError):
        return None


def mark_startup(phase: str) -> None:
    """Record that the start-up phase `phase` ended now (kept for this process's manifest)."""
    age = process_age_seconds()
    if age is not None:
        STARTUP_MARKS[phase] = age


def startup_phases(timings: dict[str, float]) -> dict[str, float]:
    """The process's seconds before the run: each recorded start-up phase (`<phase>_seconds`, from the previous
    mark) and `before_run_seconds` (process start to the pipeline's start; `timings` are the pipeline's, read
    just after its outputs were written). Empty where the OS does not tell the process's start."""
    age = process_age_seconds()
    if age is None:
        return {}
    phases, previous = {}, 0.0
    for phase, moment in STARTUP_MARKS.items():
        phases[f"{phase}_seconds"] = moment - previous
        previous = moment
    run_seconds = timings.get("total_seconds", 0.0) + timings.get("write_seconds", 0.0)
    return {**phases, "before_run_seconds": age - run_seconds}
