"""Issue 21, defect 2: a derived-data cache is verified every time it is used, not only when it is made.

A cache file whose bytes no longer match its record (edited, truncated, written without a record) is rebuilt
from its source with one warning line on stderr, so the numbers and `matches_reference` are those of the
source. Also the Beijing raw-CSV errors of defect 7 (duplicate timestamps, header only, text in a number
column): one message naming the file, the line and the fix.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from sfbench_jax.config import DatasetConfig, EvalConfig, ModelConfig, RunConfig
from sfbench_jax.data import DataContractError, load
from sfbench_jax.pipeline.runner import run

BEIJING_REFERENCE = "9ad18e546a4d43d868c71d0f1c2cfefc6f4de1bd6e35dfc54baa2aa4b2f86e65"
RAW_NAME = "beijing_prsa_tiantan_20130301_20170228.csv"


@pytest.fixture(scope="module")
def clean_beijing(data_root: Path):
    """The Beijing series derived in memory (no cache involved)."""
    return load("beijing_air_tiantan", data_root=data_root)


def _warning_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if "warning" in line]


def test_reversed_pm25_in_the_cache_is_rebuilt(data_root: Path, tmp_path: Path, clean_beijing,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    # The reproduction: reverse the PM2.5 column of the cached file, keep its record.
    load("beijing_air_tiantan", data_root=data_root, cache_dir=tmp_path)
    (cached,) = tmp_path.glob("beijing_air_tiantan-*.parquet")
    frame = pd.read_parquet(cached)
    frame["PM2.5"] = frame["PM2.5"].to_numpy()[::-1]
    frame.to_parquet(cached, index=False)
    capsys.readouterr()

    series = load("beijing_air_tiantan", data_root=data_root, cache_dir=tmp_path)
    lines = _warning_lines(capsys.readouterr().err)
    assert len(lines) == 1 and str(cached) in lines[0] and "does not match its record" in lines[0], lines
    assert "rebuilding it from" in lines[0] and RAW_NAME in lines[0]
    np.testing.assert_array_equal(series.values, clean_beijing.values)
    assert series.content_sha256 == BEIJING_REFERENCE and series.matches_reference
    assert not pd.read_parquet(cached)["PM2.5"].equals(frame["PM2.5"])  # the file itself was rebuilt
    again = load("beijing_air_tiantan", data_root=data_root, cache_dir=tmp_path)  # verified, no warning now
    assert _warning_lines(capsys.readouterr().err) == []
    np.testing.assert_array_equal(again.values, clean_beijing.values)


def test_truncated_cache_file_is_rebuilt(data_root: Path, tmp_path: Path, clean_beijing,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    load("beijing_air_tiantan", data_root=data_root, cache_dir=tmp_path)
    (cached,) = tmp_path.glob("beijing_air_tiantan-*.parquet")
    cached.write_bytes(cached.read_bytes()[: cached.stat().st_size // 2])
    capsys.readouterr()
    series = load("beijing_air_tiantan", data_root=data_root, cache_dir=tmp_path)
    (line,) = _warning_lines(capsys.readouterr().err)
    assert str(cached) in line and "does not match its record" in line and "(truncated)" in line
    np.testing.assert_array_equal(series.values, clean_beijing.values)
    assert series.matches_reference


@pytest.mark.parametrize("damage", ["no record", "truncated record", "old record"])
def test_cache_without_a_valid_record_is_rebuilt(data_root: Path, tmp_path: Path, clean_beijing, damage: str,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    load("beijing_air_tiantan", data_root=data_root, cache_dir=tmp_path)
    (cached,) = tmp_path.glob("beijing_air_tiantan-*.parquet")
    record = cached.with_suffix(".json")
    if damage == "no record":
        record.unlink()
    elif damage == "truncated record":
        record.write_text(record.read_text()[:20])
    else:  # a record as written before records held the file's own checksum: it vouches only for the content
        old = json.loads(record.read_text())
        record.write_text(json.dumps({"source": old["source"], "source_sha256": old["source_sha256"],
                                      "content_sha256": BEIJING_REFERENCE}))
        frame = pd.read_parquet(cached)
        frame["PM2.5"] = frame["PM2.5"].to_numpy()[::-1]
        frame.to_parquet(cached, index=False)
    capsys.readouterr()
    series = load("beijing_air_tiantan", data_root=data_root, cache_dir=tmp_path)
    (line,) = _warning_lines(capsys.readouterr().err)
    assert str(cached) in line and "record" in line
    np.testing.assert_array_equal(series.values, clean_beijing.values)
    assert series.content_sha256 == BEIJING_REFERENCE


def test_edited_synthetic_cache_is_regenerated(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    generated = load("penmanshiel_synthetic")
    load("penmanshiel_synthetic", cache_dir=tmp_path)
    (cached,) = tmp_path.glob("penmanshiel_synthetic-*.parquet")
    frame = pd.read_parquet(cached)
    frame.iloc[100, 3] += 1.0
    frame.to_parquet(cached, index=False)
    capsys.readouterr()
    series = load("penmanshiel_synthetic", cache_dir=tmp_path)
    (line,) = _warning_lines(capsys.readouterr().err)
    assert "penmanshiel_synthetic generator" in line
    np.testing.assert_array_equal(series.values, generated.values)


def test_run_on_a_corrupted_cache_reports_the_clean_numbers(data_root: Path, tmp_path: Path) -> None:
    """The whole path: the manifest's `matches_reference` and the scores are those of the clean data."""
    def beijing_run(output: Path, cache: Path) -> tuple[pd.DataFrame, dict]:
        cfg = RunConfig(dataset=DatasetConfig(name="beijing_air_tiantan"), model=ModelConfig(name="seasonal_naive"),
                        eval=EvalConfig(k=300, bootstrap_draws=50, progress=False), data_root=str(data_root),
                        cache_dir=str(cache), compilation_cache=False, figures=False)
        run(cfg, output)
        return pd.read_csv(output / "summary.csv"), json.loads((output / "manifest.json").read_text())

    clean_summary, _ = beijing_run(tmp_path / "clean", tmp_path / "cache_clean")
    load("beijing_air_tiantan", data_root=data_root, cache_dir=tmp_path / "cache")
    (cached,) = (tmp_path / "cache").glob("beijing_air_tiantan-*.parquet")
    frame = pd.read_parquet(cached)
    frame["PM2.5"] = frame["PM2.5"].to_numpy()[::-1]
    frame.to_parquet(cached, index=False)
    summary, manifest = beijing_run(tmp_path / "run", tmp_path / "cache")
    assert manifest["data"]["matches_reference"] is True
    assert manifest["data"]["content_sha256"] == BEIJING_REFERENCE
    for column in ("mse_c", "d_w", "mse_w"):
        assert summary[column].iloc[0] == clean_summary[column].iloc[0], column


# --- Beijing raw CSV errors (defect 7) ---------------------------------------------------------------------


def _beijing_root(tmp_path: Path, raw: pd.DataFrame) -> Path:
    (tmp_path / "forecasting").mkdir(parents=True, exist_ok=True)
    raw.to_csv(tmp_path / "forecasting" / RAW_NAME, index=False)
    return tmp_path


@pytest.fixture(scope="module")
def raw_beijing(data_root: Path) -> pd.DataFrame:
    return pd.read_csv(data_root / "forecasting" / RAW_NAME)


def test_duplicate_timestamps_name_the_file_and_line(raw_beijing: pd.DataFrame, tmp_path: Path) -> None:
    raw = pd.concat([raw_beijing.iloc[:5000], raw_beijing.iloc[4999:5000], raw_beijing.iloc[5000:]])
    root = _beijing_root(tmp_path, raw)
    with pytest.raises(DataContractError, match=r"forecasting/beijing_prsa.*\.csv: 1 row\(s\) repeat an earlier "
                       r"timestamp \(first: 2013-09-25 07:00:00 at CSV line 5002\).*Drop the duplicate rows"):
        load("beijing_air_tiantan", data_root=root)


def test_header_only_csv_names_the_file(raw_beijing: pd.DataFrame, tmp_path: Path) -> None:
    root = _beijing_root(tmp_path, raw_beijing.iloc[:0])
    with pytest.raises(DataContractError, match=r"beijing_prsa.*\.csv has a header but no data rows\. Supply"):
        load("beijing_air_tiantan", data_root=root)


def test_text_in_a_number_column_names_the_cell(raw_beijing: pd.DataFrame, tmp_path: Path) -> None:
    raw = raw_beijing.copy()
    raw["PM10"] = raw["PM10"].astype(object)
    raw.loc[100, "PM10"] = "abc"
    root = _beijing_root(tmp_path, raw)
    with pytest.raises(DataContractError, match=r"\.csv: column 'PM10' holds 1 non-numeric value\(s\) "
                       r"\(first: 'abc' at CSV line 102\)\. Fix or empty those cells"):
        load("beijing_air_tiantan", data_root=root)
