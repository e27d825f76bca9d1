"""Derivation of the Beijing Air Tiantan runtime frame from the raw UCI PRSA Tiantan CSV (protocol 1.2).

Steps: hourly timestamps and the `wd` compass code; reindex onto a complete hourly grid; split the
timeline at long gaps (PM2.5 runs > 24 h, any other channel > 72 h) and keep the longest segment;
forward-fill, drop still-incomplete leading rows. The result has 24,038 rows, 2014-06-03 10:00 to
2017-02-28 23:00, and the reference content checksum.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from sfbench_jax.data.errors import DataContractError

BEIJING_CHANNELS = ("PM2.5", "PM10", "SO2", "NO2", "CO", "O3", "TEMP", "PRES", "DEWP", "RAIN", "WSPM",
                    "wd")

#: Beijing's wind direction: 16 compass points, integer code clockwise from north (protocol 1.2).
WIND_DIRECTIONS = ("N", "NNE", "NE", "ENE", "E", "ESE", "SE", "SSE", "S", "SSW", "SW", "WSW", "W",
                   "WNW", "NW", "NNW")

NUMERIC_CHANNELS = BEIJING_CHANNELS[:-1]
RAW_COLUMNS = ("year", "month", "day", "hour", *NUMERIC_CHANNELS, "wd")
PM25_MAX_GAP_HOURS = 24
OTHER_MAX_GAP_HOURS = 72


def _true_runs(mask: np.ndarray) -> list[tuple[int, int]]:
    """Half-open `[start, end)` index ranges where `mask` is True."""
    edges = np.diff(np.concatenate([[0], mask.astype(np.int8), [0]]))
    return list(zip(np.flatnonzero(edges == 1), np.flatnonzero(edges == -1), strict=True))


def read_raw_tiantan(path: Path) -> pd.DataFrame:
    """Read the raw UCI CSV and check what the derivation needs: the columns, at least one row, numbers in
    the number columns (empty cells are gaps), and one row per hour (no duplicate timestamps).

    Raises:
        DataContractError: naming the file, the first offending row or column, and the fix.
    """
    try:
        raw = pd.read_csv(path, low_memory=False)
    except (OSError, ValueError, pd.errors.ParserError) as error:
        raise DataContractError(f"Cannot read the raw Beijing Tiantan CSV {path}: {error}. "
                                "Supply the UCI file PRSA_Data_Tiantan_20130301-20170228.csv.") from error
    missing = [column for column in RAW_COLUMNS if column not in raw.columns]
    if missing:
        raise DataContractError(
            f"{path} lacks the columns {missing} of the UCI PRSA Tiantan CSV; expected at least "
            f"{list(RAW_COLUMNS)}. Supply the unmodified UCI file.")
    if raw.empty:
        raise DataContractError(f"{path} has a header but no data rows. Supply the unmodified UCI file "
                                "PRSA_Data_Tiantan_20130301-20170228.csv (35,064 rows).")
    for column in ("year", "month", "day", "hour", *NUMERIC_CHANNELS):
        _require_numbers(raw, column, path)
    try:
        stamps = pd.to_datetime(raw[["year", "month", "day", "hour"]])
    except (ValueError, TypeError) as error:
        raise DataContractError(f"{path}: the year/month/day/hour columns do not form dates ({error}). Supply "
                                "the unmodified UCI file.") from error
    duplicated = stamps.duplicated(keep="first").to_numpy()
    if duplicated.any():
        first = int(np.argmax(duplicated))
        raise DataContractError(
            f"{path}: {int(duplicated.sum())} row(s) repeat an earlier timestamp (first: {stamps.iloc[first]} at CSV "
            f"line {first + 2}); the derivation needs one row per hour. Drop the duplicate rows or supply the "
            "unmodified UCI file.")
    return raw


def _require_numbers(raw: pd.DataFrame, column: str, path: Path) -> None:
    """Raise unless every non-empty cell of `column` is a number (empty cells are the file's gaps)."""
    values = pd.to_numeric(raw[column], errors="coerce")
    bad = values.isna().to_numpy() & raw[column].notna().to_numpy()
    if bad.any():
        first = int(np.argmax(bad))
        raise DataContractError(
            f"{path}: column {column!r} holds {int(bad.sum())} non-numeric value(s) (first: "
            f"{raw[column].iloc[first]!r} at CSV line {first + 2}). Fix or empty those cells, or supply the "
            "unmodified UCI file.")
    raw[column] = values


def derive_beijing_tiantan(raw: pd.DataFrame) -> pd.DataFrame:
    """Turn the raw UCI Tiantan frame into the benchmark's runtime frame.

    Args:
        raw: the UCI CSV as read by pandas.

    Returns:
        Frame with columns `datetime`, the 11 numeric channels and `wd` (float64 code 0-15).

    Raises:
        DataContractError: unknown wind-direction label, or no complete segment remains.
    """
    codes = {label: float(code) for code, label in enumerate(WIND_DIRECTIONS)}
    labels = raw["wd"].dropna().unique()
    unknown = sorted(str(label) for label in labels if label not in codes)
    if unknown:
        raise DataContractError(f"Unknown wind-direction labels {unknown}; expected one of "
                                f"{list(WIND_DIRECTIONS)}.")
    stamps = pd.to_datetime(raw[["year", "month", "day", "hour"]])
    frame = pd.DataFrame({"datetime": stamps})
    for column in NUMERIC_CHANNELS:
        frame[column] = pd.to_numeric(raw[column], errors="raise").astype("float64")
    frame["wd"] = raw["wd"].map(codes).astype("float64")
    frame = frame.sort_values("datetime").set_index("datetime")
    grid = pd.date_range(frame.index.min(), frame.index.max(), freq="h")
    frame = frame.reindex(grid)

    is_break = np.zeros(len(frame), dtype=bool)
    for column in frame.columns:
        limit = PM25_MAX_GAP_HOURS if column == "PM2.5" else OTHER_MAX_GAP_HOURS
        for start, end in _true_runs(frame[column].isna().to_numpy()):
            if end - start > limit:
                is_break[start:end] = True
    segments = _true_runs(~is_break)
    if not segments:
        raise DataContractError("No gap-free segment remains in the Beijing Tiantan data.")
    start, end = max(segments, key=lambda bounds: (bounds[1] - bounds[0], -bounds[0]))
    segment = frame.iloc[start:end].ffill()
    is_complete = segment.notna().all(axis=1).to_numpy()
    if not is_complete.any():
        raise DataContractError("The longest Beijing Tiantan segment never becomes complete.")
    segment = segment.iloc[int(np.argmax(is_complete)):].ffill()
    result = segment.reset_index().rename(columns={"index": "datetime"})
    return result[["datetime", *NUMERIC_CHANNELS, "wd"]]
