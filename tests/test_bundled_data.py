"""The repository's compact test data (`tests/fixtures/data_root`): its checksums guard it, and the slices hold what
their README says. The expected counts were taken from the full files with `awk '$1 <= 20'` (rows of units 1-20),
not from the loaders."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import numpy as np
import pytest
from bundled_data import BUNDLED_DATA, bundled_data_root, verified_copy
from phm_kernels import loaders

#: Subset -> (train rows, test rows) of units 1-20 in NASA's files.
SLICE_ROWS = {"FD002": (3_905, 2_767), "FD003": (5_706, 3_097), "FD004": (5_303, 3_347)}
#: SHA-256 of the whole UCI Tiantan CSV (the shared data README): the repository keeps the whole file.
BEIJING_SHA256 = "0743e34799cf1ee36195b73321b91baa5625276532e7263c588f68cdef3b4daa"


@pytest.fixture(scope="module")
def bundled_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return bundled_data_root(tmp_path_factory.mktemp("bundled"))


def test_beijing_is_the_whole_uci_file(bundled_root: Path) -> None:
    raw = (bundled_root / "forecasting" / "beijing_prsa_tiantan_20130301_20170228.csv").read_bytes()
    assert hashlib.sha256(raw).hexdigest() == BEIJING_SHA256


@pytest.mark.parametrize("subset", sorted(SLICE_ROWS))
def test_cmapss_slices_hold_the_first_twenty_units(bundled_root: Path, subset: str) -> None:
    data = loaders.load_cmapss(bundled_root, subset)
    train_rows, test_rows = SLICE_ROWS[subset]
    assert data.train.sensors.shape == (train_rows, 21) and data.test.sensors.shape == (test_rows, 21)
    np.testing.assert_array_equal(data.train.unit_ids, np.arange(1, 21))
    np.testing.assert_array_equal(data.test.unit_ids, np.arange(1, 21))
    assert data.test_rul.shape == (20,)


def test_fd001_is_whole(bundled_root: Path) -> None:
    data = loaders.load_cmapss(bundled_root, "FD001")
    assert data.train.sensors.shape[0] == 20_631 and data.test.sensors.shape[0] == 13_096


@pytest.mark.parametrize("record, samples", [("normal_97", 49_152), ("ir007_105", 24_576), ("b007_118", 24_576),
                                             ("or007_130", 24_576)])
def test_cwru_records_keep_their_first_seconds(bundled_root: Path, record: str, samples: int) -> None:
    r = loaders.load_cwru(bundled_root, record)
    assert r.drive_end.shape == r.fan_end.shape == (samples,)
    assert 1790 <= r.rpm <= 1800


def test_a_changed_file_is_refused_before_anything_is_written(tmp_path: Path) -> None:
    copy = tmp_path / "data_root"
    shutil.copytree(BUNDLED_DATA, copy)
    target = copy / "phm" / "nasa_battery" / "b0018_impedance.parquet"
    target.write_bytes(target.read_bytes()[:-1] + b"\0")
    out = tmp_path / "out"
    with pytest.raises(ValueError, match=r"b0018_impedance\.parquet: SHA-256 .* differs"):
        verified_copy(copy, out)
    assert not out.exists()


def test_a_missing_checksum_list_is_refused(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="SHA256SUMS is missing"):
        verified_copy(tmp_path, tmp_path / "out")
