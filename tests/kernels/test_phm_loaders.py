"""Tests for phm_kernels.loaders on the real shared data and on malformed copies in tmp_path."""

from __future__ import annotations

import gzip
import shutil
from pathlib import Path

import numpy as np
import pytest
from phm_kernels import loaders
from phm_kernels.errors import DomainError, ShapeMismatchError, UnknownOptionError

# Row / unit counts from the NASA readme (FD004: 249 train / 248 test, the readme swaps them).
EXPECTED = {"FD001": (20_631, 100, 13_096, 100), "FD002": (53_759, 260, 33_991, 259),
            "FD003": (24_720, 100, 16_596, 100), "FD004": (61_249, 249, 41_214, 248)}


# FD001 is whole in the repository's data; FD002-FD004 are slices there (tests/test_bundled_data.py checks them).
@pytest.mark.parametrize("subset", ["FD001", *(pytest.param(s, marks=pytest.mark.full_data)
                                               for s in loaders.CMAPSS_SUBSETS[1:])])
def test_cmapss_counts(data_root, subset):
    data = loaders.load_cmapss(data_root, subset)
    rows, units, test_rows, test_units = EXPECTED[subset]
    assert data.train.sensors.shape == (rows, 21) and data.train.settings.shape == (rows, 3)
    assert data.train.unit_ids.size == units
    assert data.test.sensors.shape[0] == test_rows and data.test.unit_ids.size == test_units
    assert data.test_rul.shape == (test_units,)
    assert int(data.train.lengths.sum()) == rows
    # run-to-failure: each unit's last row is its failure cycle
    assert np.array_equal(data.train.last_cycle[np.cumsum(data.train.lengths) - 1],
                          data.train.lengths)


def test_cmapss_fd001_known_values(data_root):
    data = loaders.load_cmapss(data_root, "fd001")
    assert data.subset == "FD001"
    assert data.train.lengths[0] == 192 and data.test.lengths.min() == 31
    assert data.test_rul[:3].tolist() == [112.0, 98.0, 69.0]
    assert data.train.sensors[0, 1] == pytest.approx(641.82)  # s2 of unit 1 cycle 1


def _copy_cmapss(data_root: Path, tmp_path: Path) -> Path:
    folder = tmp_path / "phm" / "cmapss"
    folder.mkdir(parents=True)
    for kind in ("train", "test", "rul"):
        name = f"{kind}_fd001.txt.gz"
        shutil.copy(data_root / "phm" / "cmapss" / name, folder / name)
    return folder


def _rewrite(path: Path, edit) -> None:
    lines = gzip.decompress(path.read_bytes()).decode().splitlines()
    path.write_bytes(gzip.compress(("\n".join(edit(lines)) + "\n").encode()))


def test_cmapss_missing_file_names_path(tmp_path):
    with pytest.raises(FileNotFoundError, match="train_fd001"):
        loaders.load_cmapss(tmp_path, "FD001")


@pytest.mark.parametrize("edit, error, pattern", [
    (lambda ls: ls[:4] + [ls[4] + " 1.0"] + ls[5:], ShapeMismatchError, "line 5: expected 26"),
    (lambda ls: ls[:2] + [ls[2].replace(ls[2].split()[5], "abc", 1)] + ls[3:], DomainError,
     "line 3: non-numeric"),
    (lambda ls: ls[:6] + ls[7:], DomainError, "line 7: unit 1 has cycle 8, expected 7"),
    (lambda ls: ls[:3] + [ls[3].replace(ls[3].split()[7], "nan", 1)] + ls[4:], DomainError,
     "line 4: non-finite"),
])
def test_cmapss_malformed_train_file(data_root, tmp_path, edit, error, pattern):
    folder = _copy_cmapss(data_root, tmp_path)
    _rewrite(folder / "train_fd001.txt.gz", edit)
    with pytest.raises(error, match=pattern):
        loaders.load_cmapss(tmp_path, "FD001")


def test_cmapss_rul_count_mismatch(data_root, tmp_path):
    folder = _copy_cmapss(data_root, tmp_path)
    _rewrite(folder / "rul_fd001.txt.gz", lambda ls: ls[:-1])
    with pytest.raises(ShapeMismatchError, match="99 RUL lines but 100 test units"):
        loaders.load_cmapss(tmp_path, "FD001")


def test_cmapss_unknown_subset(data_root):
    with pytest.raises(UnknownOptionError, match="FD005"):
        loaders.load_cmapss(data_root, "FD005")


@pytest.mark.parametrize("cell, n_cycles, first, last", [
    ("B0005", 168, 1.8564874208181574, 1.3250793286429356),
    ("B0006", 168, 2.035337591005598, 1.1856752327929356),
    ("B0007", 168, 1.89105229539079, 1.4324552720625434),
    ("B0018", 132, 1.8550045207910817, 1.341051440640485),
])
def test_battery_cells_match_readme(data_root, cell, n_cycles, first, last):
    b = loaders.load_battery(data_root, cell)
    assert b.capacity_ah.shape == (n_cycles,)
    assert b.capacity_ah[0] == pytest.approx(first, rel=1e-12)
    assert b.capacity_ah[-1] == pytest.approx(last, rel=1e-12)
    assert np.array_equal(b.cycle, np.arange(1, n_cycles + 1))
    assert b.features().shape == (n_cycles, 5)
    assert b.ambient_temperature_k == pytest.approx(24.0 + 273.15)
    assert np.all(b.max_temperature_k >= b.avg_temperature_k)
    assert np.all((b.min_voltage_v > 1.5) & (b.min_voltage_v < 3.0))
    assert b.re_ohm.shape == b.rct_ohm.shape == (278 if cell != "B0018" else 53,)


def test_battery_missing_column(data_root, tmp_path):
    import pandas as pd

    folder = tmp_path / "phm" / "nasa_battery"
    folder.mkdir(parents=True)
    src = data_root / "phm" / "nasa_battery"
    pd.read_parquet(src / "b0005_discharge.parquet").drop(columns=["Capacity"]).to_parquet(
        folder / "b0005_discharge.parquet")
    shutil.copy(src / "b0005_impedance.parquet", folder / "b0005_impedance.parquet")
    with pytest.raises(ShapeMismatchError, match="missing columns \\['Capacity'\\]"):
        loaders.load_battery(tmp_path, "B0005")
    with pytest.raises(UnknownOptionError):
        loaders.load_battery(data_root, "B0042")


@pytest.mark.full_data  # whole-record sample counts; the repository keeps the first seconds of each
@pytest.mark.parametrize("record, label, samples, fs", [
    ("normal_97", "NORMAL", 243_938, 48_000.0), ("ir007_105", "INNER_RACE", 121_265, 12_000.0),
    ("b007_118", "BALL", 122_571, 12_000.0), ("or007_130", "OUTER_RACE", 121_991, 12_000.0),
])
def test_cwru_records(data_root, record, label, samples, fs):
    r = loaders.load_cwru(data_root, record)
    assert r.label == label and r.drive_end.shape == (samples,) == r.fan_end.shape
    assert r.fs_hz == fs and r.fs_assumed == (record == "normal_97")
    assert 1790 <= r.rpm <= 1800


def test_cwru_normal_rate_override_and_validation(data_root):
    assert loaders.load_cwru(data_root, "normal_97", normal_baseline_fs_hz=12_000).fs_hz == 12_000
    with pytest.raises(DomainError, match="12000 or 48000"):
        loaders.load_cwru(data_root, "normal_97", normal_baseline_fs_hz=44_100)
    with pytest.raises(FileNotFoundError, match="cwru_normal_0hp_97.mat"):
        loaders.load_cwru(data_root / "nowhere", "normal_97")
