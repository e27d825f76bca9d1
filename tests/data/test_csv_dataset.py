"""A user dataset: one CSV (or Parquet) file plus a `DatasetSpec` (`csv_dataset`), validated like the built-ins
and run end to end (`eval=quick`, SeasonalNaive) through the composed Hydra config and the pipeline."""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hydra import compose, initialize_config_module

from sfbench_jax.cli.main import to_run_config
from sfbench_jax.data import DataContractError, load
from sfbench_jax.data.registry import DATASETS
from sfbench_jax.data.spec import DatasetSpec, csv_dataset
from sfbench_jax.pipeline.runner import run
from sfbench_jax.plugins.entry_points import register_specs

KEY = "test_csv_etth1_part"
CHANNELS = ("HUFL", "MUFL", "LUFL", "OT")
ROWS = 2400


@pytest.fixture(scope="module")
def frame() -> pd.DataFrame:
    """The first 2,400 rows of four ETTh1 channels, with the timestamp column named `time`."""
    etth1 = load("etth1")
    columns = [etth1.spec.channels.index(name) for name in CHANNELS]
    frame = pd.DataFrame(etth1.values[:ROWS, columns].astype(np.float64), columns=list(CHANNELS))
    frame.insert(0, "time", pd.to_datetime(etth1.timestamps[:ROWS]).strftime("%Y-%m-%d %H:%M:%S"))
    return frame


def _spec(path: str | Path, key: str = KEY) -> DatasetSpec:
    return csv_dataset(key, path, channels=CHANNELS, targets=("OT",), horizon=24, time_column="time",
                       label="ETTh1 part (CSV)")


@pytest.fixture(scope="module")
def registered(frame: pd.DataFrame, tmp_path_factory: pytest.TempPathFactory) -> Iterator[DatasetSpec]:
    path = tmp_path_factory.mktemp("user_data") / "sensors.csv"
    frame.to_csv(path, index=False)
    spec = _spec(path)
    register_specs(DATASETS, [spec], kind="datasets")  # as the registry does for an installed plug-in
    try:
        yield spec
    finally:
        del DATASETS[KEY]


def test_csv_dataset_loads_like_a_built_in(registered: DatasetSpec, frame: pd.DataFrame) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no reference checksum: nothing to differ from, no warning
        series = load(KEY)
    np.testing.assert_array_equal(series.values, frame[list(CHANNELS)].to_numpy(np.float32))
    assert series.num_rows == ROWS and not series.matches_reference
    assert registered.target_indices == (3,) and registered.reference_key == KEY and registered.input_len == 96
    assert registered.seeds.canonical_eval_seed == _spec("elsewhere.csv").seeds.canonical_eval_seed


def test_relative_path_under_data_root_and_parquet(frame: pd.DataFrame, tmp_path: Path) -> None:
    (tmp_path / "mine").mkdir()
    frame.to_parquet(tmp_path / "mine" / "sensors.parquet", index=False)
    series = load(_spec("mine/sensors.parquet"), data_root=tmp_path)
    np.testing.assert_array_equal(series.values, frame[list(CHANNELS)].to_numpy(np.float32))
    with pytest.raises(DataContractError, match="not found; looked for"):
        load(_spec("mine/absent.csv"), data_root=tmp_path)


@pytest.mark.parametrize(("change", "message"), [
    (lambda f: f.assign(OT=f.OT.where(f.index != 50)), "NaN/inf values"),
    (lambda f: f.iloc[::-1], "timestamps go back in time at CSV line 3 .*; sort the rows by time"),
    (lambda f: f.head(300), "too few"),
    (lambda f: f.drop(columns="LUFL"), "missing columns 'LUFL'"),
    (lambda f: f.rename(columns={"time": "stamp"}), "no time column 'time'"),
    (lambda f: f.assign(time="not a date"), "does not hold timestamps"),
    (lambda f: f.assign(HUFL="x"), "non-numeric"),
])
def test_bad_files_are_named_with_the_fix(frame: pd.DataFrame, tmp_path: Path, change, message: str) -> None:
    path = tmp_path / "bad.csv"
    change(frame).to_csv(path, index=False)
    with pytest.raises(DataContractError, match=message):
        load(_spec(path))


def test_bad_specs_are_refused_at_construction() -> None:
    with pytest.raises(ValueError, match="not among its channels"):
        csv_dataset("x", "x.csv", channels=("a", "b"), targets=("c",), horizon=4)
    with pytest.raises(ValueError, match="distinct"):
        csv_dataset("x", "x.csv", channels=("a", "a"), horizon=4)
    with pytest.raises(ValueError, match="horizon must be an integer"):
        csv_dataset("x", "x.csv", channels=("a",), horizon=0)
    with pytest.raises(ValueError, match="lower-case"):
        csv_dataset("My Data", "x.csv", channels=("a",), horizon=4)


def test_csv_dataset_runs_eval_quick(registered: DatasetSpec, tmp_path: Path) -> None:
    overrides = [f"dataset.name={KEY}", "model=seasonal_naive", "eval=quick", "eval.progress=false", "figures=false",
                 "compilation_cache=false", f"cache_dir={tmp_path / 'cache'}"]
    with initialize_config_module(version_base="1.3", config_module="sfbench_jax.conf"):
        cfg = to_run_config(compose(config_name="config", overrides=overrides))
    assert cfg.dataset.spec is registered and cfg.eval.k == 1000
    run(cfg, tmp_path / "run")
    summary = pd.read_csv(tmp_path / "run" / "summary.csv")
    assert list(summary.dataset) == [KEY] and list(summary.k) == [1000]
    assert summary.d_w.iloc[0] >= 1.0 and np.isfinite(summary.mse_c.iloc[0])
