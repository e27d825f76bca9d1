"""Loading datasets into validated `Series` (protocol 1.1-1.2).

`load` asks the dataset spec's loader for its runtime frame (`datetime` + channels, in the spec's channel
order; the built-in loaders live in `sources.py`, a user file's in `spec.FileLoader`), validates the frame's
contract (columns, finiteness, discrete domains, time order, enough rows) before anything else runs and
checks the reference content checksum.
"""

from __future__ import annotations

import hashlib
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from sfbench_jax.data.checksums import content_sha256
from sfbench_jax.data.errors import ChecksumMismatchWarning, DataContractError, DataGapWarning
from sfbench_jax.data.registry import get_dataset
from sfbench_jax.data.sources import convert_traffic_csv
from sfbench_jax.data.spec import TIME_COLUMN, DatasetSpec, RuntimeFrame
from sfbench_jax.data.splits import split_bounds

__all__ = ["RuntimeFrame", "Series", "convert_traffic_csv", "load", "validate_frame"]


@dataclass(frozen=True)
class Series:
    """A loaded, validated dataset in raw units.

    Attributes:
        spec: the dataset's registry entry.
        values: float32 `(rows, channels)` in the spec's channel order (raw units).
        timestamps: datetime64 `(rows,)`.
        content_sha256: content checksum of the runtime frame (protocol 1.1; synthetic: of the values).
        matches_reference: whether the checksum is one of the spec's reference checksums.
        source_path: where the data came from (file path, "package:..." or "synthetic").
    """

    spec: DatasetSpec
    values: np.ndarray
    timestamps: np.ndarray
    content_sha256: str
    matches_reference: bool
    source_path: str

    @property
    def num_rows(self) -> int:
        """Number of time steps."""
        return int(self.values.shape[0])


def validate_frame(frame: pd.DataFrame, spec: DatasetSpec, *, origin: str,
                   file_time_column: str = TIME_COLUMN) -> np.ndarray:
    """Check a runtime frame against the dataset contract and return float32 values (`file_time_column`: the time
    column as the file names it, for messages).

    Raises:
        DataContractError: naming the file and the problem (missing columns, non-numeric or non-finite
            values, discrete codes outside their domain, unordered timestamps, too few rows).
    """
    missing = [file_time_column if name == TIME_COLUMN else name
               for name in (TIME_COLUMN, *spec.channels) if name not in frame.columns]
    if missing:
        shown = ", ".join(repr(name) for name in missing[:10])
        more = f" (and {len(missing) - 10} more)" if len(missing) > 10 else ""
        raise DataContractError(
            f"{origin}: missing columns {shown}{more} for dataset {spec.key!r}. Expected a "
            f"{file_time_column!r} column plus the {spec.num_channels} channels of the registry "
            f"(first: {list(spec.channels[:3])}).")
    data = frame[list(spec.channels)]
    non_numeric = [name for name in spec.channels if not pd.api.types.is_numeric_dtype(data[name])]
    if non_numeric:
        raise DataContractError(f"{origin}: non-numeric columns {non_numeric[:10]}; every channel must "
                                "hold numbers.")
    values64 = data.to_numpy(dtype=np.float64)
    bad = ~np.isfinite(values64)
    if bad.any():
        rows, cols = np.nonzero(bad)
        columns = sorted({spec.channels[c] for c in cols})[:10]
        raise DataContractError(
            f"{origin}: {int(bad.sum())} NaN/inf values (first at {_line(origin, int(rows[0]))}, column "
            f"{spec.channels[int(cols[0])]!r}; columns affected: {columns}). Fill or drop them before use.")
    for name, domain in spec.discrete_domains:
        column = values64[:, spec.channels.index(name)]
        outside = ~np.isin(column, np.asarray(domain, dtype=np.float64))
        if outside.any():
            raise DataContractError(
                f"{origin}: discrete channel {name!r} holds {int(outside.sum())} values outside its domain "
                f"{domain[0]}..{domain[-1]} (first: {column[outside][0]!r}).")
    try:
        stamps = pd.to_datetime(frame[TIME_COLUMN]).reset_index(drop=True)
    except (ValueError, TypeError) as error:
        raise DataContractError(f"{origin}: column {TIME_COLUMN!r} is not a timestamp: {error}.") from error
    check_time_order(stamps, origin)
    if not spec.content_sha256 and not spec.is_synthetic:  # a user's file: a gap is worth a word
        warn_about_gaps(stamps, origin)
    split_bounds(len(frame), input_len=spec.input_len, horizon=spec.horizon, origin=origin)
    values32: np.ndarray = values64.astype(np.float32)
    return values32


def _line(origin: str, index: int) -> str:
    """Where a data row lies in its file: the CSV line (the header is line 1) of a CSV, else the frame's row index
    (from 0, as `frame.loc[index]` reads it)."""
    return f"CSV line {index + 2}" if ".csv" in origin.lower() else f"row {index}"


def check_time_order(stamps: pd.Series, origin: str) -> None:
    """Every row has a timestamp, no timestamp repeats, and they increase (each problem named by its first line).

    Raises:
        DataContractError: naming the file, the first line concerned and the fix.
    """
    blank = stamps.isna().to_numpy()
    if blank.any():
        raise DataContractError(f"{origin}: {int(blank.sum())} row(s) have no timestamp (first at "
                                f"{_line(origin, int(np.argmax(blank)))}); every row needs its time. Fill in the "
                                "missing times or drop those rows.")
    repeated = stamps.duplicated(keep="first").to_numpy()
    if repeated.any():
        first = int(np.argmax(repeated))
        earlier = int(np.argmax((stamps == stamps.iloc[first]).to_numpy()))
        raise DataContractError(f"{origin}: {int(repeated.sum())} row(s) repeat an earlier timestamp (first: "
                                f"{stamps.iloc[first]} at {_line(origin, first)}, already at "
                                f"{_line(origin, earlier)}); keep one row per time step (drop or merge the repeats).")
    backwards = np.nonzero(np.diff(stamps.to_numpy()) < np.timedelta64(0, "ns"))[0]
    if backwards.size:
        at = int(backwards[0]) + 1
        raise DataContractError(f"{origin}: timestamps go back in time at {_line(origin, at)} ({stamps.iloc[at]} "
                                f"after {stamps.iloc[at - 1]}); sort the rows by time.")


def warn_about_gaps(stamps: pd.Series, origin: str) -> None:
    """Warn (`DataGapWarning`) when increasing timestamps skip steps of their usual spacing, naming the largest gap."""
    steps = np.diff(stamps.to_numpy())
    if steps.size == 0:
        return
    usual = pd.Series(steps).mode().iloc[0]
    gaps = np.nonzero(steps > usual)[0]
    if not gaps.size:
        return
    largest = int(gaps[np.argmax(steps[gaps])])
    missing = int(steps[largest] // usual) - 1
    warnings.warn(f"{origin}: the timestamps skip time in {gaps.size} place(s) (usual step "
                  f"{pd.Timedelta(usual)}; largest gap: {missing} missing step(s) between {stamps.iloc[largest]} at "
                  f"{_line(origin, largest)} and {stamps.iloc[largest + 1]}); windows across a gap join times that "
                  "are not consecutive. Fill the gaps (e.g. interpolate the missing rows) or supply a gap-free file.",
                  DataGapWarning, stacklevel=3)


def load(key_or_spec: str | DatasetSpec, *, data_root: Path | None = None,
         cache_dir: Path | None = None) -> Series:
    """Load and validate a dataset.

    Args:
        key_or_spec: registry key (e.g. "etth1") or a `DatasetSpec`.
        data_root: folder laid out like ../shared/data (not needed for etth1 and the synthetic sets).
        cache_dir: where derived Parquet files are cached (None: derive in memory every time).

    Returns:
        The validated `Series`.

    Raises:
        ValueError: unknown dataset key (valid keys listed).
        DataContractError: missing or malformed file, or a contract violation.

    Warns:
        ChecksumMismatchWarning: the content differs from the reference (results not comparable).
    """
    spec = get_dataset(key_or_spec) if isinstance(key_or_spec, str) else key_or_spec
    runtime = spec.loader(spec, data_root, cache_dir)
    values = validate_frame(runtime.frame, spec, origin=runtime.source_path,
                            file_time_column=runtime.file_time_column)
    timestamps = pd.to_datetime(runtime.frame[TIME_COLUMN]).to_numpy()
    if spec.is_synthetic:
        checksum = hashlib.sha256(np.ascontiguousarray(values).tobytes()).hexdigest()
        matches = True
    else:
        checksum = runtime.known_content_sha256 or content_sha256(runtime.frame)
        matches = checksum in spec.content_sha256
        if not matches and spec.content_sha256:  # a dataset without a reference has nothing to differ from
            warnings.warn(
                f"{runtime.source_path}: content checksum {checksum} differs from the reference "
                f"{spec.content_sha256[0]} of {spec.label} ({len(runtime.frame)} rows; reference "
                f"{spec.expected_rows}). Results will not be comparable with the paper.",
                ChecksumMismatchWarning, stacklevel=2)
    return Series(spec=spec, values=values, timestamps=timestamps, content_sha256=checksum,
                  matches_reference=matches, source_path=runtime.source_path)
