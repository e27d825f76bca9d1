"""Loading real and synthetic data, derived checksums, windows, and contract errors on bad files."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from sfbench_jax.data import ChecksumMismatchWarning, DataContractError, load, prepare
from sfbench_jax.data.loaders import convert_traffic_csv
from sfbench_jax.data.registry import PENMANSHIEL_CHANNELS


def test_bundled_etth1() -> None:
    series = load("etth1")
    assert series.values.shape == (17_420, 7) and series.values.dtype == np.float32
    assert series.matches_reference
    assert str(series.timestamps[0])[:19] == "2016-07-01T00:00:00"
    assert str(series.timestamps[-1])[:19] == "2018-06-26T19:00:00"
    np.testing.assert_allclose(series.values[0], [5.827, 2.009, 1.599, 0.462, 4.203, 1.340, 30.531], rtol=1e-6)


def test_beijing_derived_from_raw_csv(data_root: Path, tmp_path: Path) -> None:
    series = load("beijing_air_tiantan", data_root=data_root, cache_dir=tmp_path)
    assert series.values.shape == (24_038, 12)
    assert series.content_sha256 == "9ad18e546a4d43d868c71d0f1c2cfefc6f4de1bd6e35dfc54baa2aa4b2f86e65"
    assert str(series.timestamps[0])[:16] == "2014-06-03T10:00"
    assert str(series.timestamps[-1])[:16] == "2017-02-28T23:00"
    wd = series.values[:, 11]
    assert set(np.unique(wd)) <= set(range(16))
    cached = list(tmp_path.glob("beijing_air_tiantan-*.parquet"))
    assert len(cached) == 1
    again = load("beijing_air_tiantan", data_root=data_root, cache_dir=tmp_path)  # from the cache
    np.testing.assert_array_equal(again.values, series.values)
    assert again.content_sha256 == series.content_sha256


def test_beijing_without_a_cache_folder_is_derived_in_memory_the_same(data_root: Path, tmp_path: Path) -> None:
    in_memory = load("beijing_air_tiantan", data_root=data_root)
    cached = load("beijing_air_tiantan", data_root=data_root, cache_dir=tmp_path)
    np.testing.assert_array_equal(in_memory.values, cached.values)
    assert in_memory.content_sha256 == cached.content_sha256


@pytest.mark.parametrize(("key", "shape"), [("traffic_synthetic", (17_544, 862)),
                                            ("penmanshiel_synthetic", (25_867, 65))])
def test_synthetic_shapes(key: str, shape: tuple[int, int]) -> None:
    series = load(key)
    assert series.values.shape == shape and np.isfinite(series.values).all()
    np.testing.assert_array_equal(load(key).values, series.values)  # deterministic


def test_synthetic_series_cached_once_bit_for_bit(tmp_path: Path) -> None:
    generated = load("penmanshiel_synthetic")
    first = load("penmanshiel_synthetic", cache_dir=tmp_path)
    (cached,) = tmp_path.glob("penmanshiel_synthetic-*.parquet")
    stamp = cached.stat().st_mtime_ns
    again = load("penmanshiel_synthetic", cache_dir=tmp_path)  # read back, not regenerated
    assert cached.stat().st_mtime_ns == stamp
    for series in (first, again):
        np.testing.assert_array_equal(series.values, generated.values)
        np.testing.assert_array_equal(series.timestamps, generated.timestamps)
        assert series.content_sha256 == generated.content_sha256


def test_prepare_standardises_with_train_statistics_and_draws_windows() -> None:
    data = prepare(load("etth1"))
    train = data.series.values[: data.bounds.train_end].astype(np.float64)
    np.testing.assert_allclose(data.mean, train.mean(axis=0), rtol=1e-6)
    np.testing.assert_allclose(data.std, train.std(axis=0, ddof=1), rtol=1e-6)
    np.testing.assert_allclose(data.standardised[: data.bounds.train_end].mean(axis=0), 0.0, atol=1e-4)
    expected_val = np.random.default_rng(341970080 + 1).choice(3293, size=3000, replace=True) + 10_452
    np.testing.assert_array_equal(data.val_starts, expected_val)
    assert len(data.val_starts_drop_last(16)) == 2992 and len(data.val_starts_drop_last(64)) == 2944
    test = data.test_starts(341970080, 10_000)
    np.testing.assert_array_equal(test, np.random.default_rng(341970080).choice(3293, 10_000) + 13_936)
    assert len(np.unique(test)) < 3293  # draws with replacement from 3,293 starts repeat windows


def _penmanshiel_root(tmp_path: Path, frame: pd.DataFrame) -> Path:
    (tmp_path / "forecasting").mkdir(parents=True, exist_ok=True)
    frame.to_parquet(tmp_path / "forecasting" / "penmanshiel_hourly_wt08.parquet", index=False)
    return tmp_path


def _penmanshiel_frame(rows: int = 2_000) -> pd.DataFrame:
    values = np.random.default_rng(0).standard_normal((rows, len(PENMANSHIEL_CHANNELS)))
    frame = pd.DataFrame(values, columns=list(PENMANSHIEL_CHANNELS))
    frame.insert(0, "datetime", pd.date_range("2016-08-18 15:00", periods=rows, freq="h"))
    return frame


def test_supplied_file_with_other_content_warns(tmp_path: Path) -> None:
    root = _penmanshiel_root(tmp_path, _penmanshiel_frame())
    with pytest.warns(ChecksumMismatchWarning, match="differs from the reference"):
        series = load("penmanshiel_wt08", data_root=root)
    assert not series.matches_reference


def test_missing_file_is_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / "forecasting").mkdir()
    with pytest.raises(DataContractError, match="Penmanshiel data not found.*penmanshiel_synthetic"):
        load("penmanshiel_wt08", data_root=tmp_path)
    with pytest.raises(DataContractError, match="Raw Beijing Tiantan CSV not found"):
        load("beijing_air_tiantan", data_root=tmp_path)
    with pytest.raises(DataContractError, match="Traffic data not found.*traffic_synthetic"):
        load("traffic", data_root=tmp_path)
    with pytest.raises(DataContractError, match="needs a data root"):
        load("traffic", data_root=None)
    with pytest.raises(DataContractError, match="does not exist"):
        load("traffic", data_root=tmp_path / "nowhere")


def test_wrong_columns(tmp_path: Path) -> None:
    frame = _penmanshiel_frame().drop(columns=["Power (kW)", "Grid voltage (V)"])
    root = _penmanshiel_root(tmp_path, frame)
    with pytest.raises(DataContractError, match=r"missing columns 'Power \(kW\)', 'Grid voltage \(V\)'"):
        load("penmanshiel_wt08", data_root=root)


@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_non_finite_values(tmp_path: Path, bad: float) -> None:
    frame = _penmanshiel_frame()
    frame.loc[17, "Rotor speed (RPM)"] = bad
    root = _penmanshiel_root(tmp_path, frame)
    with pytest.raises(DataContractError, match=r"1 NaN/inf values \(first at row 17, column 'Rotor speed"):
        load("penmanshiel_wt08", data_root=root)


def test_too_few_rows(tmp_path: Path) -> None:
    root = _penmanshiel_root(tmp_path, _penmanshiel_frame(rows=300))
    with pytest.raises(DataContractError, match="300 rows are too few"):
        load("penmanshiel_wt08", data_root=root)


def test_unordered_timestamps(tmp_path: Path) -> None:
    frame = _penmanshiel_frame()
    frame.loc[5, "datetime"] = frame.loc[3, "datetime"]
    root = _penmanshiel_root(tmp_path, frame)
    with pytest.raises(DataContractError, match=r"1 row\(s\) repeat an earlier timestamp \(first: .+ at row 5, already "
                       r"at row 3\); keep one row per time step"):  # a Parquet file: the frame's row index
        load("penmanshiel_wt08", data_root=root)


def test_malformed_raw_beijing_csv(tmp_path: Path) -> None:
    (tmp_path / "forecasting").mkdir()
    (tmp_path / "forecasting" / "beijing_prsa_tiantan_20130301_20170228.csv").write_text("a,b\n1,2\n")
    with pytest.raises(DataContractError, match="lacks the columns"):
        load("beijing_air_tiantan", data_root=tmp_path)


def test_discrete_domain_violation(data_root: Path, tmp_path: Path) -> None:
    raw = pd.read_csv(data_root / "forecasting" / "beijing_prsa_tiantan_20130301_20170228.csv")
    raw.loc[100, "wd"] = "NORTH"
    (tmp_path / "forecasting").mkdir()
    raw.to_csv(tmp_path / "forecasting" / "beijing_prsa_tiantan_20130301_20170228.csv", index=False)
    with pytest.raises(DataContractError, match="Unknown wind-direction labels \\['NORTH'\\]"):
        load("beijing_air_tiantan", data_root=tmp_path)


def test_traffic_csv_conversion(tmp_path: Path) -> None:
    header = "date," + ",".join(str(i) for i in range(861)) + ",OT\n"
    rows = "".join(f"2016-07-01 0{h}:00:00," + ",".join("0.004800" for _ in range(862)) + "\n"
                   for h in range(2, 5))
    path = tmp_path / "traffic.csv"
    path.write_text(header + rows)
    frame = convert_traffic_csv(path)
    assert list(frame.columns[:2]) == ["datetime", "0"] and frame.columns[-1] == "OT"
    assert frame.shape == (3, 863) and str(frame["datetime"].iloc[0]) == "2016-07-01 02:00:00"
    (tmp_path / "forecasting").mkdir()
    path.rename(tmp_path / "forecasting" / "traffic.csv")
    with pytest.raises(DataContractError, match="3 rows are too few"):
        load("traffic", data_root=tmp_path, cache_dir=tmp_path / "cache")
