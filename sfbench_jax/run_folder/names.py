"""The names of the files a run folder holds, and of those that mark a sweep's folder: the one place a reader or a
writer finds them.

A run folder holds `summary.csv` (one row) and `manifest.json` (its resolved config); `per_window.parquet`,
`candidates.csv`, `scenario_heatmap.png` and, for a trained model, `training_curves.parquet` lie beside them; a
multirun job adds `cell.json` (its overrides). `run_record.json`, written last, vouches for all of them
(`run_folder.record`).
"""

from __future__ import annotations

SUMMARY_FILE, MANIFEST_FILE = "summary.csv", "manifest.json"
PER_WINDOW_FILE, CANDIDATES_FILE = "per_window.parquet", "candidates.csv"
TRAINING_CURVES_FILE, HEATMAP_FILE = "training_curves.parquet", "scenario_heatmap.png"
RECORD_FILE = "run_record.json"
#: What a run writes (removed from a folder whose run never completed, before a new run writes into it).
RUN_OUTPUTS = (SUMMARY_FILE, PER_WINDOW_FILE, CANDIDATES_FILE, TRAINING_CURVES_FILE, HEATMAP_FILE, MANIFEST_FILE)
#: What a record covers when present: the outputs and a multirun job's `cell.json` (its overrides).
JOB_FILE = "cell.json"
RECORDED_FILES = (*RUN_OUTPUTS, JOB_FILE)
#: A folder holding one of these is a sweep's (merged outputs), not a run folder.
SWEEP_FILES = ("expected_cells.json", "collect_report.json")
#: Files only a run folder holds (a sweep's merged outputs never do): a folder with one is a run folder, whatever
#: else lies in it (e.g. a `collect_report.json` an older `sfbench-collect RUN` wrote there).
RUN_ONLY_FILES = (RECORD_FILE, MANIFEST_FILE, PER_WINDOW_FILE, CANDIDATES_FILE, TRAINING_CURVES_FILE)
