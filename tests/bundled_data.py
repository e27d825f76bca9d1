"""The repository's compact data root (`tests/fixtures/data_root/`, made by scripts/make_test_data.py; its README
says what each file holds): checked against its SHA256SUMS and unpacked into a folder laid out like a full data
root. Used by the `data_root` fixture (tests/conftest.py) and by tests/test_bundled_data.py."""

from __future__ import annotations

import gzip
import hashlib
import lzma
from pathlib import Path

BUNDLED_DATA = Path(__file__).resolve().parent / "fixtures" / "data_root"


def verified_copy(folder: Path, destination: Path) -> Path:
    """Check every file of `folder` against its SHA256SUMS, then copy them under `destination`, unpacking `*.xz`
    (a C-MAPSS `*.txt.xz` becomes the `*.txt.gz` a full data root holds). Returns `destination`."""
    sums = folder / "SHA256SUMS"
    if not sums.is_file():
        raise FileNotFoundError(f"{sums} is missing: the repository's test data is incomplete; restore "
                                "tests/fixtures/ from git.")
    files = {}
    for line in sums.read_text().splitlines():  # every file is checked before anything is written
        expected, name = line.split(maxsplit=1)
        data = (folder / name).read_bytes()
        digest = hashlib.sha256(data).hexdigest()
        if digest != expected:
            raise ValueError(f"{folder / name}: SHA-256 {digest} differs from {expected} in {sums}; restore the "
                             "file from git (or rebuild the folder with scripts/make_test_data.py).")
        files[name] = data
    for name, data in files.items():
        _unpack(destination, name, data)
    return destination


def _unpack(destination: Path, name: str, data: bytes) -> None:
    if name.endswith(".txt.xz"):  # C-MAPSS text: a full data root holds it gzip-compressed
        data, name = gzip.compress(lzma.decompress(data), compresslevel=1, mtime=0), name[:-3] + ".gz"
    elif name.endswith(".xz"):
        data, name = lzma.decompress(data), name[:-3]
    target = destination / name
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(data)


def bundled_data_root(destination: Path) -> Path:
    """The repository's compact data root unpacked under `destination`, with C-MAPSS FD001 (kept whole in the
    package's resources, checksummed by `sfbench_jax.mcp.bundled`) added beside the slices of FD002-FD004."""
    from sfbench_jax.mcp.bundled import BUNDLED_FILES, bundled_root

    verified_copy(BUNDLED_DATA, destination)
    resources = bundled_root("cmapss_fd001")
    for relative, _ in BUNDLED_FILES["cmapss_fd001"].values():
        _unpack(destination, relative, (resources / relative).read_bytes())
    return destination
