"""The derived-data cache: Parquet files made from a source (Beijing's raw CSV, THUML's traffic.csv) or
generated (the synthetic series), each with a JSON record beside it, verified every time it is used.

The record (`<name>.json`) holds the cache file's size and SHA-256 (and, for real datasets, the content
checksum of the frame read back from it, which is what decides `matches_reference`). A cache file is used
only when its bytes hash to the record: the bytes are read once, hashed, and the frame is parsed from those
same bytes, so the numbers a run uses are exactly the bytes that were checked. A missing, unreadable or
outdated record, a changed or truncated file: the file is rebuilt from its source with one warning line on
stderr, and a run never uses a cache whose content differs from what its record vouches for. Without its
source a cache is never used (the loaders refuse first, naming the file to supply). Hashing is cheap
beside reading the Parquet (docs/speed.md "Measured constants").
"""

from __future__ import annotations

import hashlib
import io
import json
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from sfbench_jax.data.checksums import content_sha256
from sfbench_jax.data.errors import DataContractError
from sfbench_jax.storage.atomic import write_atomically, write_json

#: Layout of the record; a record of another version (or none: caches written before records existed) is
#: rebuilt.
CACHE_RECORD_VERSION = 2


@dataclass(frozen=True)
class CachedFrame:
    """A frame read from a verified cache file.

    Attributes:
        frame: the frame as read back from the cache file.
        content_sha256: the record's content checksum (None when the cache was made with `checksum=False`).
        path: the cache file.
    """

    frame: pd.DataFrame
    content_sha256: str | None
    path: Path


def record_path(cached: Path) -> Path:
    """The record beside a cache file (`x.parquet` -> `x.json`)."""
    return cached.with_suffix(".json")


def _read_verified(cached: Path) -> tuple[bytes, dict[str, Any]] | str:  # the record: parsed JSON
    """The cache file's bytes and its record when they agree, else the reason they cannot be used."""
    record_file = record_path(cached)
    if not record_file.is_file():
        return f"has no record {record_file.name}"
    try:
        record = json.loads(record_file.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        return f"has an unreadable record {record_file.name} ({error})"
    if not isinstance(record, dict) or record.get("record_version") != CACHE_RECORD_VERSION:
        return f"has a record {record_file.name} of another version"
    try:
        data = cached.read_bytes()
    except OSError as error:
        return f"cannot be read ({error})"
    if len(data) != record.get("file_bytes") or hashlib.sha256(data).hexdigest() != record.get("file_sha256"):
        recorded = record.get("file_bytes")
        shorter = " (truncated)" if isinstance(recorded, int) and len(data) < recorded else ""
        return (f"does not match its record ({len(data)} bytes{shorter}, recorded {recorded} bytes "
                "with another SHA-256): it changed after it was written")
    return data, record


def _warn(message: str) -> None:
    print(f"[sfbench] warning: {message}", file=sys.stderr, flush=True)


def cached_frame(cached: Path, build: Callable[[], pd.DataFrame], *, source: str,
                 source_sha256: str | None = None, checksum: bool = True) -> CachedFrame:
    """The frame of the cache file `cached`, verified against its record, or (re)built by `build()`.

    Args:
        cached: the cache file (Parquet).
        build: makes the frame from the source (reads and derives, or generates).
        source: where the frame comes from, for the record and the messages.
        source_sha256: the source file's SHA-256, recorded (None for generated frames).
        checksum: also record the content checksum of the frame (real datasets).

    Raises:
        DataContractError: the cache file cannot be written (naming it and the fix).
    """
    if cached.is_file():
        verified = _read_verified(cached)
        if isinstance(verified, tuple):
            data, record = verified
            return CachedFrame(pd.read_parquet(io.BytesIO(data)), record.get("content_sha256"), cached)
        _warn(f"the cache file {cached} {verified}; rebuilding it from {source}.")
    return _rebuild(cached, build(), source=source, source_sha256=source_sha256, checksum=checksum)


def _rebuild(cached: Path, frame: pd.DataFrame, *, source: str, source_sha256: str | None,
             checksum: bool) -> CachedFrame:
    """Write `frame` to `cached`, read it back (checksums are defined on the frame as read) and record it."""
    buffer = io.BytesIO()
    frame.to_parquet(buffer, index=False)
    data = buffer.getvalue()
    frame = pd.read_parquet(io.BytesIO(data))
    content = content_sha256(frame) if checksum else None
    record = {"record_version": CACHE_RECORD_VERSION, "source": source, "source_sha256": source_sha256,
              "file_bytes": len(data), "file_sha256": hashlib.sha256(data).hexdigest(), "content_sha256": content}
    try:
        write_atomically(cached, lambda path: path.write_bytes(data))
        write_json(record, record_path(cached))  # last: a cache without its record is rebuilt
    except OSError as error:
        raise DataContractError(
            f"Cannot write the cache file {cached}: {error}. Set cache_dir=PATH to a writable folder (or "
            "cache_dir=null to derive the data in memory on every run).") from error
    return CachedFrame(frame, content, cached)
