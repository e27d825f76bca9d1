"""Convert THUML's `traffic.csv` (`date,0,...,860,OT`) into the benchmark's runtime Parquet.

    python scripts/convert_traffic_csv.py traffic.csv DATA_ROOT/forecasting/traffic.parquet

The Parquet holds a `datetime` column plus the 862 series unchanged; `sfbench dataset=traffic` reads it
directly (without it, the CSV is converted on first use and cached). Prints the content checksum and
whether it matches the reference (8a501d87...).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd

from sfbench_jax.data.checksums import content_sha256
from sfbench_jax.data.loaders import convert_traffic_csv, validate_frame
from sfbench_jax.data.registry import get_dataset
from sfbench_jax.storage.atomic import write_parquet


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("csv", type=Path, help="THUML traffic.csv")
    parser.add_argument("output", type=Path, help="where to write the Parquet file")
    args = parser.parse_args(argv)
    if not args.csv.is_file():
        parser.error(f"{args.csv} does not exist")
    spec = get_dataset("traffic")
    frame = convert_traffic_csv(args.csv)
    validate_frame(frame, spec, origin=str(args.csv))  # contract errors before anything is written
    write_parquet(frame, args.output)
    checksum = content_sha256(pd.read_parquet(args.output))
    matches = checksum in spec.content_sha256
    print(f"{len(frame)} rows x {frame.shape[1] - 1} series -> {args.output}")
    print(f"content sha256 {checksum} ({'matches' if matches else 'DIFFERS FROM'} the reference)")
    return 0 if matches else 1


if __name__ == "__main__":
    sys.exit(main())
