"""Messages that pointed the wrong way (issue 43, item 17), each reproduced as a user meets it: a command-line value
of the wrong type, a name clash between two installed plug-ins, a float64 result of a plug-in, and a user's CSV file
with a byte that is not UTF-8, a repeated column, a missing channel beside a `date` column, or a constant channel.
(The run being written and the NaN forecasts are in tests/test_run_folder_readers.py, beside the real runs.)

Everything here is real: the `sfbench` entry point, installed distributions on `sys.path` (importlib.metadata reads
them like any other), the contract check of a real fault, and real CSV files loaded through `csv_dataset`.
"""

from __future__ import annotations

import textwrap
import warnings
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from sfbench_cli import sfbench_refusal

from sfbench_jax.data import DataContractError, load
from sfbench_jax.data.errors import ConstantChannelWarning
from sfbench_jax.data.prepared import prepare
from sfbench_jax.data.spec import DatasetSpec, csv_dataset
from sfbench_jax.plugins import entry_points as plugins
from sfbench_jax.plugins import presets

CHANNELS = ("HUFL", "MUFL", "LUFL", "OT")
ROWS = 600


def test_a_value_of_the_wrong_type_is_one_line_and_exit_2(monkeypatch: pytest.MonkeyPatch,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    # `eval.k=abc` gave OmegaConf's 7 lines and exit 1.
    status, stderr = sfbench_refusal(monkeypatch, capsys, "eval.k=abc")
    assert status == 2, stderr
    assert stderr.strip() == ("sfbench: error: eval.k=abc: eval.k takes an integer, not 'abc'; e.g. "
                              "eval.k=10000."), stderr


@pytest.fixture
def two_plugins(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Two installed distributions, `plugin-a` and `plugin-b`, each registering a dataset named `clash`."""
    for name in ("a", "b"):
        dist = tmp_path / f"plugin_{name}-1.0.dist-info"
        dist.mkdir()
        (dist / "METADATA").write_text(f"Metadata-Version: 2.1\nName: plugin-{name}\nVersion: 1.0\n")
        (dist / "entry_points.txt").write_text(f"[sfbench_jax.datasets]\nclash = clash_{name}:SPEC\n")
        (tmp_path / f"clash_{name}.py").write_text(textwrap.dedent("""
            from sfbench_jax.data.spec import csv_dataset

            SPEC = csv_dataset("clash", "clash.csv", channels=("a", "b"), horizon=24)
        """))
    monkeypatch.syspath_prepend(str(tmp_path))
    plugins.discovered.cache_clear()
    yield
    plugins.discovered.cache_clear()
    plugins.preset_packages.cache_clear()
    presets.preset_grid.cache_clear()


@pytest.mark.usefixtures("two_plugins")
def test_a_name_clash_between_two_plug_ins_names_both_packages() -> None:
    # The clash named neither package ("Two datasets are registered as 'clash'. Rename the plug-in's dataset.").
    with pytest.raises(plugins.PluginError) as raised:
        plugins.register_specs({}, plugins.discovered("datasets", DatasetSpec), kind="datasets")
    message = str(raised.value)
    assert message.startswith("Two datasets are registered as 'clash': one by package 'plugin-a' 1.0, entry point "
                              "'clash = clash_a:SPEC', one by package 'plugin-b' 1.0, entry point "
                              "'clash = clash_b:SPEC'"), message
    assert "Rename the plug-in's dataset in package 'plugin-b', or uninstall one of them." in message


def test_a_float64_fault_is_told_to_pass_the_inputs_dtype() -> None:
    # The refusal said float64 was returned, not how to avoid it.
    import dataclasses

    import jax.numpy as jnp

    from sfbench_jax.data.registry import get_dataset
    from sfbench_jax.faults.registry import FAULTS
    from sfbench_jax.pipeline.contracts import ContractError, Shapes, check_fault

    base = FAULTS["drift"]
    wide = dataclasses.replace(base, name="wide_drift",
                               apply=lambda x, params, ctx: base.apply(x, params, ctx) + jnp.zeros(x.shape[-1]))
    with pytest.raises(ContractError) as raised:
        check_fault(wide, Shapes.of(get_dataset("etth1")))
    assert "it returned (96, 7) float64 (float64: an array made without a dtype" in str(raised.value)
    assert "create arrays with dtype=x.dtype" in str(raised.value)


def _frame() -> pd.DataFrame:
    etth1 = load("etth1")
    columns = [etth1.spec.channels.index(name) for name in CHANNELS]
    frame = pd.DataFrame(etth1.values[:ROWS, columns].astype(np.float64), columns=list(CHANNELS))
    frame.insert(0, "date", pd.to_datetime(etth1.timestamps[:ROWS]).strftime("%Y-%m-%d %H:%M:%S"))
    return frame


def _spec(path: Path) -> DatasetSpec:
    return csv_dataset("test_messages", path, channels=CHANNELS, targets=("OT",), horizon=24, input_len=48,
                       time_column="date")


def test_a_byte_that_is_not_utf8_names_its_csv_line(tmp_path: Path) -> None:
    path = tmp_path / "sensors.csv"
    text = _frame().to_csv(index=False).encode()
    lines = text.split(b"\n")
    lines[41] = lines[41].replace(b",", b",\xe9", 1)  # a Latin-1 byte on CSV line 42
    path.write_bytes(b"\n".join(lines))
    with pytest.raises(DataContractError, match=rf"^{path}: CSV line 42 \(byte 0xe9\) is not UTF-8 text; save the "
                                                r"file as UTF-8"):
        load(_spec(path))


def test_a_repeated_column_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "sensors.csv"
    frame = _frame()
    frame.insert(5, "OT_copy", frame["OT"] * 2)
    frame.to_csv(path, index=False, header=["date", *CHANNELS, "OT"])  # the second 'OT' holds other numbers
    with pytest.raises(DataContractError, match=r"the header names column 'OT' 2 times \(columns 5, 6\)"):
        load(_spec(path))


def test_a_missing_channel_asks_for_the_files_own_time_column(tmp_path: Path) -> None:
    path = tmp_path / "sensors.csv"
    _frame().drop(columns=["LUFL"]).to_csv(path, index=False)
    with pytest.raises(DataContractError, match=r"missing columns 'LUFL' for dataset 'test_messages'\. Expected a "
                                                r"'date' column plus the 4 channels"):
        load(_spec(path))


def test_a_constant_channel_is_warned_about(tmp_path: Path) -> None:
    path = tmp_path / "sensors.csv"
    frame = _frame()
    frame["MUFL"] = 3.0
    frame.to_csv(path, index=False)
    series = load(_spec(path))
    with pytest.warns(ConstantChannelWarning, match=r"1 channel\(s\) are constant over the \d+ train rows \(std "
                                                    r"0\): 'MUFL'; they are standardised with std 1"):
        prepared = prepare(series)
    assert prepared.std[1] == 1.0
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        prepare(load(_spec(_written(_frame(), tmp_path / "fine.csv"))))  # no warning without a constant channel


def _written(frame: pd.DataFrame, path: Path) -> Path:
    frame.to_csv(path, index=False)
    return path
