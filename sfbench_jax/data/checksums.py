"""File and content checksums (protocol 1.1)."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pandas as pd


def file_sha256(path: Path, *, chunk_bytes: int = 1 << 22) -> str:
    """SHA-256 of a file's bytes."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while block := handle.read(chunk_bytes):
            digest.update(block)
    return digest.hexdigest()


def content_sha256(frame: pd.DataFrame) -> str:
    """The reference content checksum: SHA-256 of `frame.to_csv(index=True, lineterminator="\\n")`."""
    text = frame.to_csv(index=True, lineterminator="\n")
    return hashlib.sha256(text.encode("utf-8")).hexdigest()
