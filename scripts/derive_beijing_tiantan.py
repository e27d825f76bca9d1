"""Derive the Beijing Air Tiantan runtime Parquet from the raw UCI PRSA Tiantan CSV (spec 1.2).

    python scripts/derive_beijing_tiantan.py RAW.csv OUT.parquet

Prints the row count, time range and content checksum (the reference value is
9ad18e546a4d43d868c71d0f1c2cfefc6f4de1bd6e35dfc54baa2aa4b2f86e65).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd

from sfbench_jax.data.beijing import derive_beijing_tiantan, read_raw_tiantan
from sfbench_jax.data.checksums import content_sha256
from sfbench_jax.data.registry import get_dataset
from sfbench_jax.storage.atomic import write_parquet


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("raw_csv", type=Path, help="PRSA_Data_Tiantan_20130301-20170228.csv")
    parser.add_argument("output", type=Path, help="where to write the Parquet file")
    args = parser.parse_args(argv)
    if not args.raw_csv.is_file():
        parser.error(f"{args.raw_csv} does not exist")
    frame = derive_beijing_tiantan(read_raw_tiantan(args.raw_csv))
    write_parquet(frame, args.output)
    checksum = content_sha256(pd.read_parquet(args.output))
    reference = get_dataset("beijing_air_tiantan").content_sha256
    print(f"{len(frame)} rows, {frame['datetime'].iloc[0]} to {frame['datetime'].iloc[-1]}")
    print(f"content sha256 {checksum} ({'matches' if checksum in reference else 'DIFFERS FROM'} the reference)")
    return 0 if checksum in reference else 1


if __name__ == "__main__":
    sys.exit(main())
