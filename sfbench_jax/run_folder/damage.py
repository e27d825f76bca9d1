"""What a damaged run folder is: the errors every reader of run folders raises, each naming the folder, the file
at fault and the fix (docs/reliability.md)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from sfbench_jax.run_folder.names import PER_WINDOW_FILE, RECORD_FILE

FIX = "Re-run the job (into a new folder, or into this one with overwrite=true) or delete the folder."


class DamagedRunError(ValueError):
    """A run folder without a valid completion record, or whose files differ from it.

    Attributes:
        folder: the run folder.
        file: the file at fault (the record itself when it is missing or unreadable).
        problem: what is wrong with it.
    """

    def __init__(self, folder: Path, file: str, problem: str, fix: str = FIX) -> None:
        self.folder, self.file, self.problem = Path(folder), file, problem
        super().__init__(f"Run folder {folder} is damaged: {file} {problem}. {fix}")


class RunInProgressError(DamagedRunError):
    """A run folder without a completion record whose writer is still running (it holds the folder's lock): not
    damaged, not complete yet.

    Attributes:
        writer: `pid N on HOST, started TIME` of the process writing it.
    """

    def __init__(self, folder: Path, writer: str) -> None:
        self.writer = writer
        ValueError.__init__(self, f"Run folder {folder} is being written now by a running sfbench ({writer}): it has "
                                  "no completion record yet. Wait for that run to end and read the folder again (or "
                                  "stop that run).")
        self.folder, self.file, self.problem = Path(folder), RECORD_FILE, f"is not written yet ({writer} is running)"



class NaNForecastsError(DamagedRunError):
    """A run's per-window losses hold NaN: its model forecast NaN (its numbers are NaN, not changed after the run)."""

    def __init__(self, folder: Path, windows: int, total: int, column: str) -> None:
        ValueError.__init__(self, f"The run in {folder} has NaN forecasts: {windows} of {total} windows give a NaN "
                                  f"loss (most in {column} of its {PER_WINDOW_FILE}), so its scores are NaN; the "
                                  "numbers were not changed after the run. The model diverged or returns NaN (e.g. a "
                                  "training that blew up, a plug-in model's NaN output): fix the model and re-run "
                                  "the job.")
        self.folder, self.file = Path(folder), PER_WINDOW_FILE
        self.problem = f"holds NaN losses in {windows} of {total} windows (NaN forecasts)"



class DamagedRunsError(ValueError):
    """Several run folders are damaged; `errors` holds each one's `DamagedRunError`."""

    def __init__(self, errors: Sequence[DamagedRunError]) -> None:
        self.errors = list(errors)
        super().__init__(f"{len(self.errors)} run folders are damaged: " + " | ".join(str(e) for e in self.errors))
