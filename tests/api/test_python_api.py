"""The Python front door (`import sfbench_jax as sfb`, docs/python_api.md): the doc's example runs as written (a
predict function and a Flax NNX module scored on ETTh1, saved, read back by `sfbench-report table4` and by
`sfb.load_runs`), its printed results are the ones the doc shows, and `sfbench model=external` on the same predict
function gives the same numbers, bit for bit; the import is cheap and bad input is refused in one line before work."""

from __future__ import annotations

import contextlib
import io
import json
import re
import subprocess
import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd
import pytest
from flax import nnx

from tests.sfbench_cli import run_in_process

DOC = Path(__file__).resolve().parents[2] / "docs" / "python_api.md"
#: The module name the doc's code runs under, and the file its first block is saved as for `sfbench`.
EXAMPLE_MODULE = "python_api_example"
_BLOCK = re.compile(r"^```python\n(.*?)^```$", re.MULTILINE | re.DOTALL)
_SHOWN = re.compile(r"^print\(.*\)\s+# (.*)$", re.MULTILINE)
_NUMBER = re.compile(r"\d+\.\d+")


def doc_blocks() -> list[str]:
    """The doc's ```python blocks, in order."""
    return _BLOCK.findall(DOC.read_text(encoding="utf-8"))


def same_line(shown: str, printed: str) -> bool:
    """The doc's comment and the printed line agree: the same words, every number to its printed digits."""
    if _NUMBER.sub("#", shown) != _NUMBER.sub("#", printed):
        return False
    pairs = zip(_NUMBER.findall(shown), _NUMBER.findall(printed), strict=True)
    return all(abs(float(a) - float(b)) <= 10.0 ** -len(a.split(".")[1]) for a, b in pairs)


@pytest.fixture(scope="module")
def doc_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict, str]:
    """The doc's blocks run in order in a fresh folder, as one module (`EXAMPLE_MODULE`): the folder, the
    namespace and what they printed."""
    folder = tmp_path_factory.mktemp("python_api")
    namespace: dict = {"__name__": EXAMPLE_MODULE}
    printed = io.StringIO()
    with pytest.MonkeyPatch.context() as patch, contextlib.redirect_stdout(printed):
        patch.chdir(folder)
        for block in doc_blocks():
            exec(compile(block, str(DOC), "exec"), namespace)  # the doc's own example, as written
    return folder, namespace, printed.getvalue()


def test_the_doc_example_runs_as_written_and_gives_sfbench_numbers(doc_run: tuple[Path, dict, str],
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    from sfbench_jax.cli import sfbench_report

    folder, namespace, printed = doc_run
    shown = [line for block in doc_blocks() for line in _SHOWN.findall(block)]
    assert len(shown) == 2 and len(printed.splitlines()) == 2
    for expected, line in zip(shown, printed.splitlines(), strict=True):
        assert same_line(expected, line), (expected, line)
    numpy_run, nnx_run = folder / "runs" / "last_value_numpy", folder / "runs" / "last_value_nnx"

    table = namespace["table"]  # sfb.load_runs("runs"): both folders, verified
    assert sorted(table["architecture"]) == ["external", "lastvalue"]
    summary = namespace["result"].summary
    assert list(table.columns) == [*summary.columns, "run_dir"]
    # the NNX module forecasts what the NumPy function does: the same losses, window by window (to float32 rounding:
    # the engine's MSE of a host forecast and of one computed in the program are summed in other orders)
    numpy_losses, nnx_losses = (pd.read_parquet(run / "per_window.parquet") for run in (numpy_run, nnx_run))
    loss_columns = [name for name in numpy_losses if name.startswith("mse_")]
    assert len(loss_columns) == 9 and len(numpy_losses) == 256
    np.testing.assert_allclose(nnx_losses[loss_columns], numpy_losses[loss_columns], rtol=1e-6)

    assert sfbench_report.main(["table4", "--runs", str(folder / "runs"), "--output", str(folder / "report")]) == 0
    table4 = pd.read_csv(folder / "report" / "table4_architectures.csv")
    assert {"external", "lastvalue"} <= set(table4.columns.astype(str)) | set(table4.astype(str).values.ravel())
    assert f"{summary['d_w'].iloc[0]:.3f}" in (folder / "report" / "table4.md").read_text()

    # `sfbench model=external` on the same predict function (the doc's first block as a module): the same run
    (folder / f"{EXAMPLE_MODULE}.py").write_text(doc_blocks()[0])
    monkeypatch.syspath_prepend(str(folder))
    monkeypatch.delitem(sys.modules, EXAMPLE_MODULE, raising=False)
    cli_run = folder / "cli_run"
    run_in_process(["model=external", f"model.target={EXAMPLE_MODULE}:predict", "eval.k=256", "figures=false"], cli_run)
    cli_row = pd.read_csv(cli_run / "summary.csv").iloc[0]
    assert json.loads(cli_row["hyperparameters"]) == {"target": f"{EXAMPLE_MODULE}:predict"}
    for score in ("mse_c", "d_w", "mse_w", "mce", "d_mean", "mpc"):
        assert cli_row[score] == summary[score].iloc[0], score
    np.testing.assert_array_equal(pd.read_parquet(cli_run / "per_window.parquet")[loss_columns],
                                  numpy_losses[loss_columns])
    both = namespace["sfb"].load_runs([numpy_run, cli_run])  # one run key, the same numbers: one run stored twice
    assert len(both) == 1 and both["d_w"].iloc[0] == cli_row["d_w"]

    with pytest.raises(ValueError, match=r"already holds a completed run .*\.save\(folder, overwrite=True\)"):
        namespace["module_result"].save(numpy_run)  # a completed run is never overwritten silently
    assert namespace["module_result"].save(numpy_run, overwrite=True) == numpy_run
    assert list(namespace["sfb"].load_runs(numpy_run)["architecture"]) == ["lastvalue"]


def last_value(x):
    return np.repeat(x[:, -1:, :], 96, axis=1)


class Horizon24(nnx.Module):
    """A module with the wrong horizon for ETTh1 (24 steps, not 96)."""

    def __init__(self) -> None:
        self.map = nnx.Linear(96, 24, rngs=nnx.Rngs(0))

    def __call__(self, x: jax.Array) -> jax.Array:
        return jnp.swapaxes(self.map(jnp.swapaxes(x, 1, 2)), 1, 2)


class BatchCentred(nnx.Module):
    """The last value minus the batch's mean: a forecast that depends on the other windows of its batch."""

    def __call__(self, x: jax.Array) -> jax.Array:
        return jnp.repeat(x[:, -1:, :] - x.mean(axis=0)[-1:], 96, axis=1)


def test_the_import_is_cheap_and_bad_input_is_refused_in_one_line() -> None:
    imported = subprocess.run([sys.executable, "-c", "import sys, sfbench_jax as sfb; print(sorted(m for m in "
                               "('jax', 'flax', 'pandas', 'sfbench_jax.api') if m in sys.modules), sfb.__all__)"],
                              capture_output=True, text=True, check=True)
    assert imported.stdout.startswith("[] ['EvalConfig', 'Result', ")
    import sfbench_jax as sfb

    def refusal(*args, **kwargs) -> str:
        with pytest.raises((TypeError, ValueError)) as refused:
            sfb.evaluate(*args, **kwargs)
        message = str(refused.value)
        assert "\n" not in message, message
        return message

    assert "Unknown dataset 'etth2'" in refusal(last_value, dataset="etth2")
    assert "model must be a registered model name" in refusal(42)
    assert "Unknown EvalConfig setting(s) ['kk']" in refusal(last_value, eval={"kk": 3})
    assert "train it first, trained = sfb.train('dlinear'" in refusal("dlinear")
    assert "is a registered model's" in refusal(last_value, name="dlinear")
    assert "it returned shape (2, 5, 7); the engine expects a forecast of shape (windows, horizon, targets) = " \
           "(2, 96, 7)" in refusal(lambda x: x[:, :5], eval={"k": 8})
    assert "maps standardised windows (2, 96, 7) of etth1 to (2, 24, 7) float32; it must return a float forecast " \
           "(windows, horizon, targets) = (2, 96, 7)" in refusal(Horizon24(), eval={"k": 8})
    assert "forecast of a window depends on which windows share its batch" in refusal(BatchCentred())


_TRAIN_BLOCK = re.compile(r"^```python train\n(.*?)^```$", re.MULTILINE | re.DOTALL)


@pytest.mark.slow
def test_the_doc_training_block_selects_as_sfbench_does(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`sfb.train` then `sfb.evaluate` (the doc's `python train` block, as written) and `sfbench model=dlinear` with
    the same settings and store: sfbench finds every candidate in the store (nothing trained again) and scores the
    same winner to the same numbers."""
    store = tmp_path / "store"
    monkeypatch.setenv("SFBENCH_STORE_DIR", str(store))
    monkeypatch.chdir(tmp_path)
    namespace: dict = {"__name__": EXAMPLE_MODULE}
    with contextlib.redirect_stdout(io.StringIO()) as printed:
        for block in (doc_blocks()[0], *_TRAIN_BLOCK.findall(DOC.read_text(encoding="utf-8"))):
            exec(compile(block, str(DOC), "exec"), namespace)
    trained, result = namespace["trained"], namespace["trained_result"]
    assert printed.getvalue().startswith("TrainedModel(etth1 / dlinear / baseline: trial ")
    assert len(trained.candidates) == 2 and trained.candidates["is_winner"].sum() == 1
    folder = result.save(tmp_path / "api_run")

    cli_run = tmp_path / "cli_run"
    log = run_in_process(["model=dlinear", "train.candidate_budget=2", "train.max_epochs=2", "train.steps_per_epoch=20",
                          "eval.k=256", "figures=false", f"train.store_dir={store}"], cli_run)
    assert "0 to train" in log or "from the store" in log, log[-2000:]
    api_row, cli_row = (pd.read_csv(run / "summary.csv").iloc[0] for run in (folder, cli_run))
    for column in ("hyperparameters", "mse_val", "mse_c", "d_w", "mse_w", "mce", "rel_mce"):
        assert api_row[column] == cli_row[column], column
    api_losses, cli_losses = (pd.read_parquet(run / "per_window.parquet") for run in (folder, cli_run))
    pd.testing.assert_frame_equal(api_losses, cli_losses)
    assert len(namespace["sfb"].load_runs([folder, cli_run])) == 1  # one run key, the same numbers
