"""Finding the run folders under some folders: `find_runs` is the one way every reader (`sfbench-collect`,
`sfbench-report`, the API, the MCP tools) finds runs (docs/reliability.md). A sweep folder yields exactly its jobs,
a run inside another run folder or a stray run in a sweep is refused by name, symbolic links are followed with a
cycle guard.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

from sfbench_jax.run_folder.names import JOB_FILE, RECORDED_FILES, RUN_ONLY_FILES, SWEEP_FILES


def is_run_folder(directory: Path) -> bool:
    """A folder that holds (part of) a run: its completion record or any file a run writes (a sweep's merged
    outputs aside: `summary.csv` beside a sweep file is a sweep's). Whether the run is complete is `load_run`'s
    check."""
    directory = Path(directory)
    if any((directory / name).is_file() for name in RUN_ONLY_FILES):
        return True
    if any((directory / name).is_file() for name in SWEEP_FILES):
        return False
    return any((directory / name).is_file() for name in RECORDED_FILES if name != JOB_FILE)


def _is_sweep(folder: Path) -> bool:
    return not is_run_folder(folder) and any((folder / name).is_file() for name in SWEEP_FILES)


class ExtraRunsError(ValueError):
    """Run folders where no run belongs (inside another run folder, or in a sweep but not one of its jobs), or a
    symbolic link that cannot be followed (a cycle, or out of the folders a reader may read); each one named."""

    def __init__(self, refused: Sequence[Refused]) -> None:
        self.refused = list(refused)
        super().__init__(f"{len(self.refused)} folder(s) cannot be read as runs: "
                         + " | ".join(f"{item.folder} {item.reason}" for item in self.refused))


class Refused(NamedTuple):
    """A folder `find_runs` does not read: `kind` is "outside" (a link out of the folder read), "cycle", "nested"
    (a run inside a run folder) or "stray" (a run in a sweep that is not one of its jobs); `reason` says why."""

    folder: Path
    kind: str
    reason: str


@dataclass(frozen=True)
class FoundRuns:
    """What `find_runs` found.

    Attributes:
        folders: the run folders to read (resolved, sorted, each once): every run below a plain folder, exactly
            the job folders of a sweep.
        refused: each run folder that is not read and each link that is not followed, with the reason.
    """

    folders: tuple[Path, ...]
    refused: tuple[Refused, ...] = ()


def _subfolders(folder: Path) -> list[Path]:
    """Not-hidden sub-folders (symbolic links to folders included), sorted."""
    try:
        entries = sorted(os.scandir(folder), key=lambda entry: entry.name)
    except OSError:
        return []
    return [Path(entry.path) for entry in entries if not entry.name.startswith(".") and entry.is_dir()]


def find_runs(roots: Iterable[Path], *, within: Path | None = None) -> FoundRuns:
    """The one way every reader (`sfbench-collect`, `sfbench-report`, the API, the MCP tools) finds the runs of
    some folders (docs/reliability.md):

    * below a plain folder, every run folder (complete or not; hidden folders, e.g. staging, skipped);
    * in a sweep folder (one with `expected_cells.json` or `collect_report.json`), exactly its jobs: the direct
      sub-folders holding `cell.json`; any other run folder there (a stray run beside the jobs) is refused;
    * a run folder inside another run folder (e.g. a run copied into a job's folder) is refused, never merged;
    * symbolic links are followed; one leading back to a folder it lies in (a cycle), or out of `within`, is
      refused by name; each resolved folder is entered once (links to one folder from many places, e.g. a chain
      of folders each linking twice to the next, are walked in time linear in the folders, not in the paths).

    Raises:
        FileNotFoundError: a root does not exist.
    """
    found: set[Path] = set()
    entered: set[Path] = set()
    refused: list[Refused] = []
    limit = None if within is None else Path(within).resolve()
    for root in roots:
        root = Path(root)
        if not root.exists():
            raise FileNotFoundError(f"{root} does not exist; pass folders that hold sfbench runs (--runs FOLDER).")
        if root.is_file():
            continue
        stack: list[tuple[Path, tuple[Path, ...], Path | None, Path | None]] = [(root, (), None, None)]
        while stack:
            folder, ancestors, run_above, sweep = stack.pop()
            real = folder.resolve()
            problem = _refusal(folder, real, ancestors, limit, run_above, sweep)
            if problem is not None and problem.kind in ("outside", "cycle"):
                refused.append(problem)
                continue
            if real in entered:  # the same folder through another link: read (and refused, if so) once
                continue
            entered.add(real)
            if problem is not None:
                refused.append(problem)
            elif is_run_folder(folder):
                found.add(real)
            is_run = is_run_folder(folder)
            inner_sweep = folder if _is_sweep(folder) else sweep
            inner_run = folder if is_run else run_above
            stack.extend((sub, (*ancestors, real), inner_run, inner_sweep) for sub in reversed(_subfolders(folder)))
    return FoundRuns(folders=tuple(sorted(found)), refused=tuple(refused))


def _refusal(folder: Path, real: Path, ancestors: tuple[Path, ...], limit: Path | None, run_above: Path | None,
             sweep: Path | None) -> Refused | None:
    """Why `find_runs` does not read (or enter) `folder`, if it does not."""
    if limit is not None and not real.is_relative_to(limit):
        return Refused(folder, "outside", "is a symbolic link out of the folder being read; copy the run in instead")
    if real in ancestors:
        return Refused(folder, "cycle", f"is a symbolic link back to {real}, a folder it lies in (a cycle); remove "
                                        "the link")
    if not is_run_folder(folder):
        return None
    if run_above is not None:
        return Refused(folder, "nested", f"lies inside the run folder {run_above} (a copied run?); move it out, "
                                         "into a folder of its own, or delete it")
    if sweep is not None and not (folder.parent == sweep and (folder / JOB_FILE).is_file()):
        return Refused(folder, "stray", f"is not a job of the sweep {sweep} (no {JOB_FILE} of that sweep); move it "
                                        "out of the sweep folder, or delete it")
    return None


def find_run_folders(roots: Iterable[Path]) -> list[Path]:
    """The run folders `find_runs` finds under `roots` (sorted, each once), refusing what it refuses.

    Raises:
        FileNotFoundError: a root does not exist.
        ExtraRunsError: a run folder where no run belongs, or a link that cannot be followed (each named).
    """
    result = find_runs(roots)
    if result.refused:
        raise ExtraRunsError(result.refused)
    return list(result.folders)
