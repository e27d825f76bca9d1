"""The built-in datasets' loaders: each turns a dataset spec plus a data root into its runtime frame
(`datetime` + channels, in the spec's channel order). `loaders.load` validates the frame against the spec.

Where files come from (data root laid out like `../shared/data`):

* `etth1`: bundled with the package (`sfbench_jax/resources/etth1.csv.xz`), no data root needed.
* `beijing_air_tiantan`: derived from `forecasting/beijing_prsa_tiantan_20130301_20170228.csv` (or the
  UCI name `PRSA_Data_Tiantan_20130301-20170228.csv`) on first use and cached as Parquet (`cache.py`: the
  cache is verified against its record whenever it is used, and rebuilt when it changed).
* `traffic`: `forecasting/traffic.parquet`, or THUML's `forecasting/traffic.csv`, converted once to a
  cached Parquet.
* `penmanshiel_wt08`: `forecasting/penmanshiel_hourly_wt08.parquet` (the derived file, user-supplied).
* `*_synthetic`: generated in memory.

A user dataset's file is read by `spec.FileLoader` (`spec.csv_dataset`).
"""

from __future__ import annotations

import hashlib
import io
import lzma
from collections.abc import Callable
from importlib import resources
from pathlib import Path

import pandas as pd

from sfbench_jax.data.beijing import derive_beijing_tiantan, read_raw_tiantan
from sfbench_jax.data.cache import cached_frame
from sfbench_jax.data.checksums import file_sha256
from sfbench_jax.data.errors import DataContractError
from sfbench_jax.data.spec import TIME_COLUMN, DatasetSpec, RuntimeFrame
from sfbench_jax.data.synthetic import SYNTHETIC_SEED, synthetic_frame

ETTH1_FILE_SHA256 = "f18de3ad269cef59bb07b5438d79bb3042d3be49bdeecf01c1cd6d29695ee066"
BEIJING_RAW_NAMES = ("beijing_prsa_tiantan_20130301_20170228.csv",
                     "PRSA_Data_Tiantan_20130301-20170228.csv")


def _require_data_root(spec: DatasetSpec, data_root: Path | None) -> Path:
    if data_root is None:
        raise DataContractError(
            f"Dataset {spec.key!r} needs a data root. Set `data_root=PATH` (or the environment variable "
            "SFBENCH_DATA_ROOT) to a folder laid out like ../shared/data (with a `forecasting/` "
            "sub-folder).")
    root = Path(data_root).expanduser()
    if not root.is_dir():
        raise DataContractError(f"The data root {root} does not exist or is not a folder. Set "
                                "`data_root=PATH` to a folder laid out like ../shared/data.")
    return root


def _cached_derivation(source: Path, cache_dir: Path | None, name: str,
                       derive: Callable[[Path], pd.DataFrame]) -> RuntimeFrame:
    """Derive a frame from `source`, cached as Parquet keyed by the source file's SHA-256 and verified against
    its record whenever it is used (`cache.cached_frame`: a changed or truncated cache is rebuilt)."""
    source_sha = file_sha256(source)
    if cache_dir is None:
        frame = derive(source)
        return RuntimeFrame(frame, str(source))
    cached = Path(cache_dir).expanduser() / f"{name}-{source_sha[:16]}.parquet"
    result = cached_frame(cached, lambda: derive(source), source=str(source), source_sha256=source_sha)
    return RuntimeFrame(result.frame, str(source), result.content_sha256)


def load_etth1(spec: DatasetSpec, data_root: Path | None, cache_dir: Path | None) -> RuntimeFrame:
    del spec, data_root, cache_dir
    packed = resources.files("sfbench_jax.resources").joinpath("etth1.csv.xz").read_bytes()
    raw = lzma.decompress(packed)
    digest = hashlib.sha256(raw).hexdigest()
    if digest != ETTH1_FILE_SHA256:
        raise DataContractError(f"The bundled ETTh1 file is corrupted (SHA-256 {digest}, expected "
                                f"{ETTH1_FILE_SHA256}). Reinstall sfbench-jax.")
    frame = pd.read_csv(io.BytesIO(raw))
    # Verbatim file verified: its pandas content checksum is the second accepted ETTh1 value.
    checksum = "47bf6a7f383b97d7c115d7cdab4fb4e29cf5d4cdd772a63bc35be3125a4baf1f"
    frame = frame.rename(columns={"date": TIME_COLUMN})
    return RuntimeFrame(frame, "package:sfbench_jax/resources/etth1.csv.xz", checksum, file_time_column="date")


def load_beijing(spec: DatasetSpec, data_root: Path | None, cache_dir: Path | None) -> RuntimeFrame:
    root = _require_data_root(spec, data_root)
    candidates = [root / "forecasting" / name for name in BEIJING_RAW_NAMES]
    raw_path = next((path for path in candidates if path.is_file()), None)
    if raw_path is None:
        raise DataContractError(
            f"Raw Beijing Tiantan CSV not found; looked for {[str(p) for p in candidates]}. Put the UCI "
            "file PRSA_Data_Tiantan_20130301-20170228.csv under <data_root>/forecasting/.")
    return _cached_derivation(raw_path, cache_dir, "beijing_air_tiantan",
                              lambda path: derive_beijing_tiantan(read_raw_tiantan(path)))


def convert_traffic_csv(csv_path: Path) -> pd.DataFrame:
    """Convert THUML's `traffic.csv` (`date,0..860,OT`) into the runtime frame (`datetime` + 862)."""
    try:
        frame = pd.read_csv(csv_path)
    except (OSError, ValueError, pd.errors.ParserError) as error:
        raise DataContractError(f"Cannot read {csv_path}: {error}. Supply THUML's traffic.csv.") from error
    if "date" not in frame.columns:
        raise DataContractError(f"{csv_path} has no `date` column; THUML's traffic.csv starts with "
                                "`date,0,1,...,860,OT`.")
    frame = frame.rename(columns={"date": TIME_COLUMN})
    frame[TIME_COLUMN] = pd.to_datetime(frame[TIME_COLUMN], format="%Y-%m-%d %H:%M:%S")
    return frame


def load_traffic(spec: DatasetSpec, data_root: Path | None, cache_dir: Path | None) -> RuntimeFrame:
    root = _require_data_root(spec, data_root)
    parquet = root / "forecasting" / "traffic.parquet"
    if parquet.is_file():
        return RuntimeFrame(pd.read_parquet(parquet), str(parquet))
    csv_path = root / "forecasting" / "traffic.csv"
    if not csv_path.is_file():
        raise DataContractError(
            f"Traffic data not found: neither {parquet} nor {csv_path} exists. Download THUML's "
            "traffic.csv (Autoformer/Time-Series-Library dataset bundle) into <data_root>/forecasting/, "
            "or use dataset=traffic_synthetic for a Traffic-shaped synthetic series.")
    return _cached_derivation(csv_path, cache_dir, "traffic", convert_traffic_csv)


def load_penmanshiel(spec: DatasetSpec, data_root: Path | None,
                      cache_dir: Path | None) -> RuntimeFrame:
    del cache_dir
    root = _require_data_root(spec, data_root)
    parquet = root / "forecasting" / "penmanshiel_hourly_wt08.parquet"
    if not parquet.is_file():
        raise DataContractError(
            f"Penmanshiel data not found at {parquet}. Derive penmanshiel_hourly_wt08.parquet from the "
            "Zenodo Penmanshiel SCADA release (record 16807304) and place it under "
            "<data_root>/forecasting/, or use dataset=penmanshiel_synthetic.")
    try:
        frame = pd.read_parquet(parquet)
    except (OSError, ValueError) as error:
        raise DataContractError(f"Cannot read {parquet}: {error}. The file is damaged or not Parquet: derive "
                                "penmanshiel_hourly_wt08.parquet again from the Zenodo release (record 16807304) and "
                                "replace it.") from error
    return RuntimeFrame(frame, str(parquet))


#: Part of a cached synthetic series' file name: bump it when `synthetic_frame` changes.
SYNTHETIC_VERSION = 1


def load_synthetic(spec: DatasetSpec, data_root: Path | None, cache_dir: Path | None) -> RuntimeFrame:
    """The synthetic series, generated once per cache folder (Traffic's 15 M values take seconds to generate and
    a fraction of a second to read back; the float32 values are the same bit for bit)."""
    del data_root
    num_rows = spec.expected_rows
    assert num_rows is not None, f"{spec.key}: a synthetic dataset declares its row count (expected_rows)"
    if cache_dir is None:
        return RuntimeFrame(synthetic_frame(channels=spec.channels, num_rows=num_rows), "synthetic")
    cached = Path(cache_dir).expanduser() / f"{spec.key}-v{SYNTHETIC_VERSION}-{SYNTHETIC_SEED}.parquet"
    result = cached_frame(cached, lambda: synthetic_frame(channels=spec.channels, num_rows=num_rows),
                          source=f"the {spec.key} generator (seed {SYNTHETIC_SEED})", checksum=False)
    return RuntimeFrame(result.frame, "synthetic")
