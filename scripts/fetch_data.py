"""Fetch the full real datasets into a data root, checking every file's SHA-256.

The repository carries only a compact copy of the data its tests read (`tests/fixtures/data_root`). For real runs on
Beijing and for the PHM tools on all of C-MAPSS, the NASA battery cells and the CWRU records, fetch the full files:

    python scripts/fetch_data.py --to ~/sfbench-data
    export SFBENCH_DATA_ROOT=~/sfbench-data        # sfbench, sfbench-mcp and the full_data tests use it

Each file comes from a pinned commit of a public GitHub repository holding the original data (docs/datasets.md names
them, with licences). What is checked: the SHA-256 of the original bytes (for C-MAPSS, of NASA's text before it is
gzip-compressed here; for the battery cells, of the CSV export inside the downloaded archive before it is converted to
Parquet). A mismatch stops with the file's name and both digests, and nothing is written for that file; files are
written through a temporary name and a rename, so an interrupted run leaves no partial file. Existing files are kept
unless `--force`. Traffic and Penmanshiel are not fetched (see docs/datasets.md).
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import io
import sys
import tarfile
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

RAW = "https://raw.githubusercontent.com"
BEIJING_REPO = f"{RAW}/abhishek21441/DataScience_Project/1d1aa67d80c9af972aa6a8adcba147e093824d8e"
ETT_REPO = f"{RAW}/zhouhaoyi/ETDataset/1d16c8f4f943005d613b5bc962e9eeb06058cf07"
CMAPSS_REPO = f"{RAW}/blopax3/cmapss_anomaly_detection/b56311eafd1c884afb045bf21e5a78412da9b920/CMAPSSData"
BATTERY_REPO = f"{RAW}/OctaiPipe/datasets/7d13228f077254c76ac1afc271e917c6f3efba7a/batteries/01_BatteryAgingARC-FY08Q4"
CWRU_REPO = f"{RAW}/yyxyz/CaseWesternReserveUniversityData/b19e5a7e9fcd72b1c541f3c12fb42ac3fe94202f"


class ChecksumError(ValueError):
    """A fetched file's SHA-256 differs from the recorded one."""


@dataclass(frozen=True)
class Source:
    """One file of the data root.

    Attributes:
        target: path under the data root.
        url: where the original comes from.
        sha256: SHA-256 of the original bytes (for `battery`: of the CSV inside the archive).
        convert: "verbatim" (stored as fetched), "gzip" (NASA text stored gzip-compressed) or "battery" (a tar.gz
            holding one CSV, stored as zstd Parquet with the complex impedance columns split into real and imaginary
            parts).
    """

    target: str
    url: str
    sha256: str
    convert: str = "verbatim"


_CMAPSS = {  # (kind, subset) -> SHA-256 of NASA's text
    ("train", 1): "963b5e22825b34d8b21c69e1aeb4af3e647050eb672ee8834ba4b5d91d2de0f8",
    ("train", 2): "dac6c4dbc4e7c1bdeb5747da3d313d05c395bb99801b44a002b26a2ba13d788f",
    ("train", 3): "2abbe9968cc5e8eb091980f51b20f62bb4127336d3482cb52071d53bf23329e2",
    ("train", 4): "27ef6160b6a1dcb2613a88de9c239f763b223f02cdc41dc5cdedc5dc189b6218",
    ("test", 1): "3cda7109ce17bafb5443f2ac926cfcf88154b941b8c4cf95eb55d1ddd6f52851",
    ("test", 2): "de7b5bf7e998a985c378488480528b7c02cff1406a46740def362dda8d9b4e02",
    ("test", 3): "299babd63c8d987cef079c4a425429f33b3a34797d803bbe2ad48c29dbd0d790",
    ("test", 4): "1dc675fff0624bac10786927c6715b37d1297657137400d2b1a3138d777a3ba5",
    ("RUL", 1): "a19c8ec94931949d0485bdc35118206e9c81c4547b422efb9cf86f4ceddbceca",
    ("RUL", 2): "c851dd96a6ea6998d3c4a8f834d3c8013aa90e93a6ed950dc826ad0655b2906b",
    ("RUL", 3): "df1e0566306b174a2de41c67a3e7a51877889598b78643fc3e5685259091b7cb",
    ("RUL", 4): "196b836b85a95ac7fdbbf29c5fdf1657382eafa445644d114ffaaf50dc2975e1",
}
_BATTERY = {  # (cell, part) -> SHA-256 of the CSV export
    ("B0005", "discharge"): "c1acb7a24284844868b1c9bea6fc09dd3faf13ca3ebab431f560689acd40b04e",
    ("B0005", "impedance"): "6175b6813760d79ae38090eee57dce55bbd91355626b3ed3dc8934dec1589b02",
    ("B0006", "discharge"): "66640384bd2b4489d5e702416f7377d34031f5caa74680075f396a429699ab8b",
    ("B0006", "impedance"): "44f79da7ebf2ec1509a02ebc5de27724cfcf3d6e914285ce64aa693270fe8f42",
    ("B0007", "discharge"): "92c530c2c873c586aa423c5298d07653b43ebf7cc6f4cfc773a194d575a944e4",
    ("B0007", "impedance"): "42de7efe17917cd2714e86dae7a3e62e43337be5d1af2f6ee0da955c881aacfd",
    ("B0018", "discharge"): "0a3d51c34bc39f27b08a3ce21bdb0e46b5bbb2fdf15a473b7bda634a38e0e772",
    ("B0018", "impedance"): "444c2a3dc5734a03fd6841430db95c3eb4c6a7214ef25b6d7bfe024145384684",
}
_CWRU = {  # stored name -> (upstream name, SHA-256 of the .mat)
    "cwru_normal_0hp_97.mat": ("normal_0_97.mat",
                               "16bf48babcf1c7ac224bc1a81cd9eafdb27e42d5cf559761907e067e8eeadf3c"),
    "cwru_12k_de_ir007_0hp_105.mat": ("12k_Drive_End_IR007_0_105.mat",
                                      "f80b0ea04fd06b372a0eaec7c056543ea37e4bb4727a5b173d2a5bacd2aa9cab"),
    "cwru_12k_de_b007_0hp_118.mat": ("12k_Drive_End_B007_0_118.mat",
                                     "b00628f8dd8d1d930af77fa465d1e5cdb385fe259489053f91f3680bda7f640e"),
    "cwru_12k_de_or007at6_0hp_130.mat": ("12k_Drive_End_OR007%406_0_130.mat",
                                         "35a095307d0971477049b343a1b5981dde465a58fb7f233ad89b035068c1717d"),
}

SOURCES: tuple[Source, ...] = (
    Source("forecasting/beijing_prsa_tiantan_20130301_20170228.csv",
           f"{BEIJING_REPO}/PRSA_Data_20130301-20170228/PRSA_Data_Tiantan_20130301-20170228.csv",
           "0743e34799cf1ee36195b73321b91baa5625276532e7263c588f68cdef3b4daa"),
    Source("forecasting/etth1.csv", f"{ETT_REPO}/ETT-small/ETTh1.csv",
           "f18de3ad269cef59bb07b5438d79bb3042d3be49bdeecf01c1cd6d29695ee066"),
    *(Source(f"phm/cmapss/{kind.lower()}_fd00{k}.txt.gz", f"{CMAPSS_REPO}/{kind}_FD00{k}.txt", sha, "gzip")
      for (kind, k), sha in _CMAPSS.items()),
    *(Source(f"phm/nasa_battery/{cell.lower()}_{part}.parquet", f"{BATTERY_REPO}/{cell}_{part}.tar.gz", sha, "battery")
      for (cell, part), sha in _BATTERY.items()),
    *(Source(f"phm/cwru_bearing/{name}", f"{CWRU_REPO}/{upstream}", sha) for name, (upstream, sha) in _CWRU.items()),
)


def download(url: str) -> bytes:
    """The bytes at `url` (https, or file:// for a local mirror)."""
    with urllib.request.urlopen(url, timeout=120) as response:
        return response.read()


def check(data: bytes, expected: str, what: str) -> None:
    """Raise ChecksumError naming `what` unless sha256(data) == expected."""
    digest = hashlib.sha256(data).hexdigest()
    if digest != expected:
        raise ChecksumError(f"{what}: SHA-256 {digest} differs from the recorded {expected}; the source changed or the "
                            "download was damaged. Nothing was written for this file; try again, or report it.")


def _single_csv(archive: bytes, what: str) -> bytes:
    with tarfile.open(fileobj=io.BytesIO(archive), mode="r:gz") as tar:
        members = [m for m in tar.getmembers() if m.isfile() and m.name.endswith(".csv")]
        if len(members) != 1:
            raise ChecksumError(f"{what}: expected one CSV in the archive, found {[m.name for m in members]}.")
        return tar.extractfile(members[0]).read()


def battery_parquet(csv: bytes) -> bytes:
    """The battery CSV export as zstd Parquet: `cycle_time_start` as a timestamp, each complex column `X` (written as
    Python complex numbers) as `X_real` and `X_imag`."""
    import numpy as np
    import pandas as pd

    frame = pd.read_csv(io.BytesIO(csv))
    if "cycle_time_start" in frame.columns:
        frame["cycle_time_start"] = pd.to_datetime(frame["cycle_time_start"])
    text_columns = [c for c in frame.columns if not pd.api.types.is_numeric_dtype(frame[c])
                    and not pd.api.types.is_datetime64_any_dtype(frame[c])]
    for column in text_columns:
        values = np.array([complex(text) for text in frame[column]], dtype=np.complex128)
        position = frame.columns.get_loc(column)
        frame = frame.drop(columns=column)
        frame.insert(position, f"{column}_real", values.real)
        frame.insert(position + 1, f"{column}_imag", values.imag)
    buffer = io.BytesIO()
    frame.to_parquet(buffer, index=False, compression="zstd", compression_level=19)
    return buffer.getvalue()


def stored_bytes(source: Source, fetched: bytes) -> bytes:
    """Check the fetched bytes and return what the data root stores."""
    if source.convert == "verbatim":
        check(fetched, source.sha256, source.url)
        return fetched
    if source.convert == "gzip":
        check(fetched, source.sha256, source.url)
        return gzip.compress(fetched, compresslevel=9, mtime=0)
    if source.convert == "battery":
        csv = _single_csv(fetched, source.url)
        check(csv, source.sha256, f"the CSV inside {source.url}")
        return battery_parquet(csv)
    raise ValueError(f"unknown conversion {source.convert!r} for {source.target}")


def write_atomically(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(path.name + ".partial")
    partial.write_bytes(data)
    partial.replace(path)


def fetch(sources: tuple[Source, ...], root: Path, *, force: bool = False,
          get: Callable[[str], bytes] = download, log: Callable[[str], None] = print) -> list[Path]:
    """Fetch, check and store each source under `root`; returns the paths written (existing ones are skipped)."""
    written = []
    for source in sources:
        path = root / source.target
        if path.exists() and not force:
            log(f"kept     {source.target} (exists; --force to fetch again)")
            continue
        log(f"fetching {source.target}")
        write_atomically(path, stored_bytes(source, get(source.url)))
        written.append(path)
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--to", type=Path, required=True, help="the data root to fill (created if missing)")
    parser.add_argument("--only", default="", help="fetch only targets containing this text (e.g. cmapss, beijing)")
    parser.add_argument("--force", action="store_true", help="fetch again files that already exist")
    args = parser.parse_args(argv)
    chosen = tuple(s for s in SOURCES if args.only in s.target)
    if not chosen:
        print(f"error: no target contains {args.only!r}; targets are {[s.target for s in SOURCES]}", file=sys.stderr)
        return 2
    try:
        fetch(chosen, args.to.expanduser(), force=args.force)
    except (ChecksumError, OSError) as error:  # urllib's errors are OSErrors
        print(f"error: {error}", file=sys.stderr)
        return 1
    print(f"done: {args.to} (set SFBENCH_DATA_ROOT={args.to} to use it)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
