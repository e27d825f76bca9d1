"""A user CSV's timestamps (issue 30, defect 12): a blank timestamp, a repeated one, rows out of order and a gap
are each named by the CSV line (the header is line 1) with the right fix. Before: a blank timestamp got the fix
"sort the rows", duplicates named no row, "row N" counted from 0 without the header, and 100 missing hours passed
without a word."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from sfbench_jax.data import DataContractError, load
from sfbench_jax.data.errors import DataGapWarning
from sfbench_jax.data.spec import DatasetSpec, csv_dataset

CHANNELS = ("HUFL", "OT")
ROWS = 2400


@pytest.fixture(scope="module")
def frame() -> pd.DataFrame:
    """The first 2,400 hours of two ETTh1 channels, the timestamp column named `time` (as text, as in a CSV)."""
    etth1 = load("etth1")
    columns = [etth1.spec.channels.index(name) for name in CHANNELS]
    frame = pd.DataFrame(etth1.values[:ROWS, columns].astype(np.float64), columns=list(CHANNELS))
    frame.insert(0, "time", pd.to_datetime(etth1.timestamps[:ROWS]).strftime("%Y-%m-%d %H:%M:%S"))
    return frame


def _spec(path: Path) -> DatasetSpec:
    return csv_dataset("test_csv_timestamps", path, channels=CHANNELS, targets=("OT",), horizon=24,
                       time_column="time")


def _written(frame: pd.DataFrame, path: Path) -> DatasetSpec:
    frame.to_csv(path, index=False)
    return _spec(path)


def test_a_blank_timestamp_is_named_with_its_line_and_the_right_fix(frame: pd.DataFrame, tmp_path: Path) -> None:
    changed = frame.copy()
    changed.loc[99, "time"] = ""  # data row 99 is CSV line 101
    with pytest.raises(DataContractError, match=r"1 row\(s\) have no timestamp \(first at CSV line 101\); every row "
                       r"needs its time\. Fill in the missing times or drop those rows\.") as raised:
        load(_written(changed, tmp_path / "blank.csv"))
    assert "sort" not in str(raised.value)


def test_a_repeated_timestamp_names_both_lines(frame: pd.DataFrame, tmp_path: Path) -> None:
    changed = frame.copy()
    changed.loc[500, "time"] = changed.loc[499, "time"]
    with pytest.raises(DataContractError, match=rf"1 row\(s\) repeat an earlier timestamp \(first: "
                       rf"{changed.loc[499, 'time']} at CSV line 502, already at CSV line 501\); keep one row per "
                       r"time step"):
        load(_written(changed, tmp_path / "repeated.csv"))


def test_a_nan_value_is_named_by_its_csv_line(frame: pd.DataFrame, tmp_path: Path) -> None:
    changed = frame.copy()
    changed.loc[50, "OT"] = np.nan
    with pytest.raises(DataContractError, match=r"1 NaN/inf values \(first at CSV line 52, column 'OT'"):
        load(_written(changed, tmp_path / "nan.csv"))


def test_100_missing_hours_are_warned_about(frame: pd.DataFrame, tmp_path: Path) -> None:
    gapped = frame.drop(index=range(1000, 1100))  # 100 hours missing after data row 999 (CSV line 1001)
    with pytest.warns(DataGapWarning, match=r"the timestamps skip time in 1 place\(s\) \(usual step 0 days "
                      r"01:00:00; largest gap: 100 missing step\(s\) between .+ at CSV line 1001 and .+\)"):
        series = load(_written(gapped, tmp_path / "gapped.csv"))
    assert series.num_rows == ROWS - 100
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        load(_written(frame, tmp_path / "whole.csv"))  # a gap-free file: no warning
