"""Rebuild the compact test data inside the repository from a full data folder and the full parity folder.

The test suite runs on `tests/fixtures/data_root/` (a small, compressed copy of the data the tests read, laid out
like a full data root) and `tests/fixtures/parity/` (a subset of the PyTorch parity fixtures). This script is how
both were made; it is deterministic, so running it again on the same inputs gives the same bytes (the
`SHA256SUMS` beside the files say which). What each file holds, and why, is in `tests/fixtures/data_root/README.md`
and `tests/fixtures/parity/README.md`.

    python scripts/make_test_data.py --data-root /path/to/full/data --parity /path/to/full/parity

Reads only; writes the two fixture folders (each file through a temporary name and a rename).
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import io
import lzma
import sys
from pathlib import Path

import numpy as np
import pandas as pd

REPO = Path(__file__).resolve().parents[1]
DATA_OUT = REPO / "tests" / "fixtures" / "data_root"
PARITY_OUT = REPO / "tests" / "fixtures" / "parity"

BEIJING = "forecasting/beijing_prsa_tiantan_20130301_20170228.csv"
#: C-MAPSS subsets stored as slices: the first units of each file (FD001 comes whole from the package resources).
CMAPSS_SLICED = ("fd002", "fd003", "fd004")
CMAPSS_UNITS = 20
BATTERY_CELLS = ("b0005", "b0006", "b0007", "b0018")
DISCHARGE_COLUMNS = ["cycle_num", "ambient_temperature", "Capacity", "Voltage_measured", "Temperature_measured",
                     "Time"]
IMPEDANCE_COLUMNS = ["cycle_num", "ambient_temperature", "Re", "Rct"]
#: Keep every n-th discharge row of a cycle (plus the rows that carry the cycle's first/last/min-V/max-T values).
DISCHARGE_STRIDE = 10
#: CWRU record -> samples kept from the start of each accelerometer signal: two one-second segments of the 12 kHz
#: fault records, one of the normal baseline at its assumed 48 kHz (the envelope diagnosis averages one-second
#: segments, so it needs at least one).
CWRU_SAMPLES = {"cwru_normal_0hp_97.mat": 49_152, "cwru_12k_de_ir007_0hp_105.mat": 24_576,
                "cwru_12k_de_b007_0hp_118.mat": 24_576, "cwru_12k_de_or007at6_0hp_130.mat": 24_576}
COPIED_VERBATIM = ("phm/cmapss/nasa_cmapss_readme.txt", "phm/nasa_battery/nasa_battery_readme.txt")

#: The parity cases kept in the repository: every architecture, every code path the full set exercises (shared and
#: individual DLinear, direct and autoregressive GRU with one and two layers, all-target and single-target shapes,
#: LayerNorm and BatchNorm TSMixer with ReLU and GELU, PatchTST's cumulative scores over three layers, RevIN with and
#: without affine parameters and around the autoregressive loop), leaving out the large-width duplicates.
PARITY_CASES = (
    "dlinear_m7h96_ma25_ind0_iw0", "dlinear_m7h96_ma25_ind0_iw1", "dlinear_m7h96_ma25_ind1_iw1",
    "dlinear_m12h6_ma25_ind0_iw0", "dlinear_m12h6_ma25_ind0_iw1", "dlinear_m12h6_ma25_ind1_iw0",
    "dlinear_m12h6_ma25_ind1_iw1",
    "gru_m7h96_ar_l1_h64", "gru_m12h6_ar_l2_h64", "gru_m12h6_direct_l1_h64",
    "moderntcn_m12h6_d64_b1_L51_S5_ffn1",
    "patchtst_m7h96_d16_h4_ff128_l3_p8s4", "patchtst_m12h6_d16_h8_ff256_l2_p8s8",
    "tsmixer_m7h96_L_relu_nb2_ff64", "tsmixer_m12h6_B_gelu_nb2_ff64",
    "revin_aff0_dlinear_m12h6_ma25_ind0_iw0", "revin_aff1_dlinear_m12h6_ma25_ind0_iw0",
    "revin_aff1_gru_m12h6_ar_l2_h64",
    "seasonalnaive_m7h96_s1", "seasonalnaive_m7h96_s24", "seasonalnaive_m12h6_s1", "seasonalnaive_m12h6_s24",
)


def _write(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(path.name + ".partial")
    partial.write_bytes(data)
    partial.replace(path)


def _xz(data: bytes) -> bytes:
    return lzma.compress(data, preset=9 | lzma.PRESET_EXTREME)


def _first_units(text: bytes, units: int) -> bytes:
    """The lines of a C-MAPSS train/test file whose unit id (first field) is <= `units`, byte for byte."""
    lines = text.splitlines(keepends=True)
    return b"".join(line for line in lines if int(line.split()[0]) <= units)


def _thin_discharge(frame: pd.DataFrame) -> pd.DataFrame:
    keep = np.zeros(len(frame), dtype=bool)
    position = np.arange(len(frame))
    for _, rows in frame.groupby("cycle_num", sort=True).indices.items():
        keep[rows[::DISCHARGE_STRIDE]] = True
        keep[rows[-1]] = True
        keep[rows[np.argmin(frame["Voltage_measured"].to_numpy()[rows])]] = True
        keep[rows[np.argmax(frame["Temperature_measured"].to_numpy()[rows])]] = True
    return frame.loc[position[keep], DISCHARGE_COLUMNS].reset_index(drop=True)


def _parquet(frame: pd.DataFrame) -> bytes:
    buffer = io.BytesIO()
    frame.to_parquet(buffer, index=False, compression="zstd", compression_level=19)
    return buffer.getvalue()


def _cwru_subset(source: Path, samples: int) -> bytes:
    import scipy.io

    mat = scipy.io.loadmat(source)
    kept = {key: (value[:samples] if key.endswith(("_DE_time", "_FE_time")) else value)
            for key, value in mat.items() if not key.startswith("__") and not key.endswith("_BA_time")}
    buffer = io.BytesIO()
    scipy.io.savemat(buffer, kept, do_compression=True)
    # The MAT header's 116 text bytes carry a creation time; a fixed text keeps the file reproducible.
    header = b"MATLAB 5.0 MAT-file, CWRU subset written by scripts/make_test_data.py".ljust(116)
    return header + buffer.getvalue()[116:]


def build_data(source: Path) -> dict[str, bytes]:
    """Stored name (relative to the fixture folder) -> bytes."""
    out: dict[str, bytes] = {}
    out[BEIJING + ".xz"] = _xz((source / BEIJING).read_bytes())
    for subset in CMAPSS_SLICED:
        for kind in ("train", "test"):
            text = gzip.decompress((source / f"phm/cmapss/{kind}_{subset}.txt.gz").read_bytes())
            out[f"phm/cmapss/{kind}_{subset}.txt.xz"] = _xz(_first_units(text, CMAPSS_UNITS))
        rul = gzip.decompress((source / f"phm/cmapss/rul_{subset}.txt.gz").read_bytes())
        out[f"phm/cmapss/rul_{subset}.txt.xz"] = _xz(b"".join(rul.splitlines(keepends=True)[:CMAPSS_UNITS]))
    for cell in BATTERY_CELLS:
        discharge = pd.read_parquet(source / f"phm/nasa_battery/{cell}_discharge.parquet")
        out[f"phm/nasa_battery/{cell}_discharge.parquet"] = _parquet(_thin_discharge(discharge))
        impedance = pd.read_parquet(source / f"phm/nasa_battery/{cell}_impedance.parquet")
        first_rows = impedance.groupby("cycle_num", sort=True).head(1)[IMPEDANCE_COLUMNS].reset_index(drop=True)
        out[f"phm/nasa_battery/{cell}_impedance.parquet"] = _parquet(first_rows)
    for name, samples in CWRU_SAMPLES.items():
        out[f"phm/cwru_bearing/{name}"] = _cwru_subset(source / "phm" / "cwru_bearing" / name, samples)
    for name in COPIED_VERBATIM:
        out[name] = (source / name).read_bytes()
    return out


def _sums(files: dict[str, bytes]) -> bytes:
    return "".join(f"{hashlib.sha256(data).hexdigest()}  {name}\n" for name, data in sorted(files.items())).encode()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-root", type=Path, required=True, help="a full data folder (scripts/fetch_data.py)")
    parser.add_argument("--parity", type=Path, required=True, help="the full parity folder (48 .npz files)")
    args = parser.parse_args(argv)
    missing = [str(p) for p in (args.data_root / BEIJING, args.parity / f"{PARITY_CASES[0]}.npz") if not p.is_file()]
    if missing:
        print(f"error: not found: {', '.join(missing)}; pass the full data and parity folders.", file=sys.stderr)
        return 2
    data = build_data(args.data_root)
    for name, blob in data.items():
        _write(DATA_OUT / name, blob)
    _write(DATA_OUT / "SHA256SUMS", _sums(data))
    parity = {f"{case}.npz": (args.parity / f"{case}.npz").read_bytes() for case in PARITY_CASES}
    for stale in PARITY_OUT.glob("*.npz"):
        if stale.name not in parity:
            stale.unlink()
    for name, blob in parity.items():
        _write(PARITY_OUT / name, blob)
    _write(PARITY_OUT / "SHA256SUMS", _sums(parity))
    total = sum(map(len, data.values())) + sum(map(len, parity.values()))
    print(f"wrote {len(data)} data files and {len(parity)} parity fixtures ({total / 2**20:.2f} MiB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
