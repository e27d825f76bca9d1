"""`scripts/fetch_data.py` on local files (file:// URLs): the checksum check, the stored forms, atomic writes. Tests
never reach the network; the recorded sources are checked for coverage of the data root's layout only."""

from __future__ import annotations

import gzip
import hashlib
import importlib.util
import io
import sys
import tarfile
from pathlib import Path

import pandas as pd
import pytest
from bundled_data import BUNDLED_DATA


@pytest.fixture(scope="module")
def fetch_data():
    """The script as a module, registered in sys.modules (its dataclasses need that)."""
    spec = importlib.util.spec_from_file_location("fetch_data", Path(__file__).parents[1] / "scripts" / "fetch_data.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["fetch_data"] = module
    spec.loader.exec_module(module)
    return module


def _local(tmp_path: Path, name: str, data: bytes) -> str:
    path = tmp_path / "mirror" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path.as_uri()


def test_a_verified_file_is_stored_and_then_kept(fetch_data, tmp_path: Path) -> None:
    data = b"date,HUFL\n2016-07-01 00:00:00,5.827\n"
    source = fetch_data.Source("forecasting/etth1.csv", _local(tmp_path, "ETTh1.csv", data),
                               hashlib.sha256(data).hexdigest())
    root = tmp_path / "root"
    assert fetch_data.fetch((source,), root, log=lambda _: None) == [root / "forecasting" / "etth1.csv"]
    assert (root / "forecasting" / "etth1.csv").read_bytes() == data
    assert fetch_data.fetch((source,), root, log=lambda _: None) == []  # kept without --force


def test_a_wrong_checksum_stops_before_anything_is_written(fetch_data, tmp_path: Path) -> None:
    url = _local(tmp_path, "RUL_FD002.txt", b"18 \n79 \n")
    source = fetch_data.Source("phm/cmapss/rul_fd002.txt.gz", url, "0" * 64, "gzip")
    root = tmp_path / "root"
    with pytest.raises(fetch_data.ChecksumError, match=r"RUL_FD002\.txt: SHA-256 [0-9a-f]{64} differs from"):
        fetch_data.fetch((source,), root, log=lambda _: None)
    assert not root.exists()


def test_nasa_text_is_checked_before_it_is_compressed(fetch_data, tmp_path: Path) -> None:
    text = b"1 1 -0.0007 -0.0004 100.0 518.67  \n"
    source = fetch_data.Source("phm/cmapss/train_fd001.txt.gz", _local(tmp_path, "train_FD001.txt", text),
                               hashlib.sha256(text).hexdigest(), "gzip")
    (path,) = fetch_data.fetch((source,), tmp_path / "root", log=lambda _: None)
    assert gzip.decompress(path.read_bytes()) == text


def test_battery_archive_becomes_parquet_with_split_complex_columns(fetch_data, tmp_path: Path) -> None:
    csv = (b"cycle_num,ambient_temperature,cycle_time_start,Re,Rct,Battery_impedance\n"
           b"1,24,2008-04-02 13:08:17,0.0560,0.2001,(0.25-0.03j)\n"
           b"2,24,2008-04-03 14:01:02,0.0571,0.1987,(0.24+0.01j)\n")
    archive = io.BytesIO()
    with tarfile.open(fileobj=archive, mode="w:gz") as tar:
        info = tarfile.TarInfo("B0005_impedance.csv")
        info.size = len(csv)
        tar.addfile(info, io.BytesIO(csv))
    source = fetch_data.Source("phm/nasa_battery/b0005_impedance.parquet",
                               _local(tmp_path, "B0005_impedance.tar.gz", archive.getvalue()),
                               hashlib.sha256(csv).hexdigest(), "battery")
    (path,) = fetch_data.fetch((source,), tmp_path / "root", log=lambda _: None)
    frame = pd.read_parquet(path)
    assert list(frame.columns) == ["cycle_num", "ambient_temperature", "cycle_time_start", "Re", "Rct",
                                   "Battery_impedance_real", "Battery_impedance_imag"]
    assert frame["Battery_impedance_real"].tolist() == [0.25, 0.24]
    assert frame["Battery_impedance_imag"].tolist() == [-0.03, 0.01]
    assert str(frame["cycle_time_start"].iloc[1]) == "2008-04-03 14:01:02"


def test_the_sources_cover_every_file_of_the_repository_data(fetch_data) -> None:
    stored = [line.split()[1] for line in (BUNDLED_DATA / "SHA256SUMS").read_text().splitlines()]
    expected = {name[:-3] + ".gz" if name.endswith(".txt.xz") else name.removesuffix(".xz") for name in stored
                if not name.endswith("readme.txt")}
    expected |= {f"phm/cmapss/{kind}_fd001.txt.gz" for kind in ("train", "test", "rul")}
    targets = {source.target for source in fetch_data.SOURCES}
    assert expected <= targets
    assert all(source.url.startswith("https://raw.githubusercontent.com/") for source in fetch_data.SOURCES)
    assert all(len(source.sha256) == 64 for source in fetch_data.SOURCES)


def test_an_unknown_selection_is_a_one_line_error(fetch_data, tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    assert fetch_data.main(["--to", str(tmp_path), "--only", "penmanshiel"]) == 2
    assert "no target contains 'penmanshiel'" in capsys.readouterr().err
