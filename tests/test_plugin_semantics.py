"""Issue 43, B: what a plug-in means is checked before any work (items 3-6 refused, item 7 flagged).

The shape contract passes every plug-in here; each gave a wrong number with exit 0 before. A distribution
(`meaning-plugin` 0.1) is put on `sys.path` the way pip installs one and its specs are registered into the live
registries (as tests/test_plugin_contracts.py does); `sfbench` runs in this process. A refusal is checked as there:
exit 2, one line on stderr naming the package, the entry point and the broken property, no run folder. A run
computes these checks for plug-ins only; the built-in faults and models are checked here, where they must pass every
one (`test_every_built_in_...`, slow).
"""

from __future__ import annotations

import json
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from test_plugin_contracts import TINY, _clear_caches, _compose_run, register, sfbench

from sfbench_jax.data import load, prepare
from sfbench_jax.faults.registry import FAULTS
from sfbench_jax.models.registry import MODELS, build_model
from sfbench_jax.pipeline import contracts
from sfbench_jax.pipeline.contracts import Shapes
from sfbench_jax.pipeline.resolved import resolve_cell
from sfbench_jax.plugins.entry_points import origin_of
from sfbench_jax.report import paper
from sfbench_jax.report.html import table4_architecture_rows
from sfbench_jax.training.search import expand_space, search_space

DIST = "meaning-plugin"
#: Shapes like Beijing Air's (12 channels, a pool of 11, H = 6).
SHAPES = Shapes(input_len=96, horizon=6, num_channels=12, target_indices=(0,), pool=tuple(range(1, 12)))

FAULT_MODULE = """
    import random
    from typing import NamedTuple

    import jax
    import jax.numpy as jnp
    import numpy as np

    from sfbench_jax.faults.scored import sample_channel_fault
    from sfbench_jax.faults.severity import draw_severity_units, units_to_severity
    from sfbench_jax.faults.spec import FaultSpec


    class Level(NamedTuple):
        severity_units: jax.Array


    def sample_level(words, ctx, units=None):
        return Level(draw_severity_units(words) if units is None else jnp.asarray(units, jnp.int32))


    def drift_everywhere(x, params, ctx):  # drifts every channel, whatever `selected` says
        return x + units_to_severity(params.severity_units)


    def numpy_jitter(x, params, ctx):  # NumPy's global generator instead of the stream words
        noise = np.random.standard_normal(x.shape).astype(np.float32)
        return jnp.where(params.selected[None, :], x + units_to_severity(params.severity_units) * noise, x)


    def python_jitter(x, params, ctx):  # Python's global generator
        return jnp.where(params.selected[None, :], x + units_to_severity(params.severity_units) * random.random(), x)


    def offset_at_zero(x, params, ctx):  # already changes the window at severity 0
        return x + 0.1 + units_to_severity(params.severity_units)


    def one_size_offset(x, params, ctx):  # the same offset at every severity above 0
        return jnp.where(params.severity_units > 0, x + 1.0, x)


    def scaled_offset(x, params, ctx):  # a well-behaved fault on every channel
        return x + units_to_severity(params.severity_units)


    def _spec(name, apply, *, scoped=True):
        sample = sample_channel_fault if scoped else sample_level
        return FaultSpec(name=name, label=name.title().replace("_", ""), fault_class="Value", sample=sample,
                         apply=apply, is_channel_scoped=scoped)


    LEAKY = _spec("leaky_drift", drift_everywhere)
    NUMPY_RNG = _spec("numpy_jitter", numpy_jitter)
    PYTHON_RNG = _spec("python_jitter", python_jitter)
    OFFSET_AT_ZERO = _spec("offset_at_zero", offset_at_zero, scoped=False)
    ONE_SIZE = _spec("one_size_offset", one_size_offset, scoped=False)
    SCALED = _spec("scaled_offset", scaled_offset, scoped=False)
    """

MODEL_MODULE = """
    import dataclasses

    import jax.numpy as jnp
    from flax import nnx

    from sfbench_jax.data.windows import select_targets
    from sfbench_jax.models.spec import ModelSpec


    @dataclasses.dataclass(frozen=True)
    class TinyConfig:
        width: int = 4


    def is_valid(hparams, *, input_len=96):
        return True


    class BatchCentred(nnx.Module):  # centres each time step by the mean over the batch
        def __init__(self, *, width=4, input_len, horizon, num_channels, target_indices, rngs):
            self.target_indices = tuple(target_indices)
            self.linear = nnx.Linear(input_len, horizon, rngs=rngs)

        def __call__(self, x):
            x = x - jnp.mean(x, axis=0, keepdims=True)
            out = jnp.swapaxes(self.linear(jnp.swapaxes(x, 1, 2)), 1, 2)
            return select_targets(out, self.target_indices)


    class Blind(nnx.Module):  # one learned forecast, whatever the input
        def __init__(self, *, width=4, input_len, horizon, num_channels, target_indices, rngs):
            self.forecast = nnx.Param(jnp.zeros((horizon, len(target_indices))))

        def __call__(self, x):
            return jnp.broadcast_to(self.forecast[...][None], (x.shape[0], *self.forecast.shape))


    def _spec(name, module_cls):
        return ModelSpec(name=name, config_cls=TinyConfig, is_valid=is_valid, module_cls=module_cls,
                         is_trainable=True, is_channel_independent=False, supports_revin=False, label=name.title())


    BATCH_CENTRED = _spec("batch_centred", BatchCentred)
    BLIND = _spec("blind", Blind)
    """

PRESET = """
    defaults:
      - /schema/model@_here_
    name: {name}
    grid:
      width: [4]
      lr: [0.01]
    """

ENTRY_POINTS = """
    [sfbench_jax.models]
    batch_centred = meaning_plugin_pkg.model:BATCH_CENTRED
    blind = meaning_plugin_pkg.model:BLIND
    [sfbench_jax.faults]
    leaky_drift = meaning_plugin_pkg.fault:LEAKY
    numpy_jitter = meaning_plugin_pkg.fault:NUMPY_RNG
    python_jitter = meaning_plugin_pkg.fault:PYTHON_RNG
    offset_at_zero = meaning_plugin_pkg.fault:OFFSET_AT_ZERO
    one_size_offset = meaning_plugin_pkg.fault:ONE_SIZE
    scaled_offset = meaning_plugin_pkg.fault:SCALED
    [sfbench_jax.conf]
    meaning_plugin_pkg = meaning_plugin_pkg.conf
    """


@pytest.fixture
def meaning_plugin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    site = tmp_path / "site"
    dist = site / "meaning_plugin-0.1.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {DIST}\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text(textwrap.dedent(ENTRY_POINTS))
    files = {"meaning_plugin_pkg/__init__.py": "", "meaning_plugin_pkg/fault.py": FAULT_MODULE,
             "meaning_plugin_pkg/model.py": MODEL_MODULE, "meaning_plugin_pkg/conf/__init__.py": "",
             **{f"meaning_plugin_pkg/conf/model/{name}.yaml": PRESET.format(name=name)
                for name in ("batch_centred", "blind")}}
    for relative, text in files.items():
        (site / relative).parent.mkdir(parents=True, exist_ok=True)
        (site / relative).write_text(textwrap.dedent(text))
    monkeypatch.syspath_prepend(str(site))
    register(monkeypatch)
    yield site
    _clear_caches()
    for name in [module for module in sys.modules if module.startswith("meaning_plugin_pkg")]:
        del sys.modules[name]


def refused(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, data_root: Path, *overrides: str) -> str:
    """`sfbench *overrides` (profile=tiny) into tmp_path/run: exit 2, one line naming the package, no run folder,
    nothing stored. Returns the line."""
    run, store = tmp_path / "run", tmp_path / "store"
    code, stderr = sfbench(monkeypatch, *overrides, *TINY, f"data_root={data_root}", f"hydra.run.dir={run}",
                           f"train.store_dir={store}")
    lines = stderr.strip().splitlines()
    assert code == 2, stderr[-3000:]
    assert len(lines) == 1 and lines[0].startswith("sfbench: error: "), stderr[-3000:]
    assert f"package '{DIST}' 0.1" in lines[0], lines[0]
    assert not run.exists(), sorted(str(path) for path in run.rglob("*"))
    assert not store.exists() or not any(store.rglob("result.json"))
    return lines[0]


# ----------------------------------------------------------------------------------------------------------------
# Items 3-5: faults


def test_item3_a_fault_that_changes_unselected_channels_is_refused_before_any_work(meaning_plugin, tmp_path,
                                                                                  monkeypatch, data_root) -> None:
    line = refused(monkeypatch, tmp_path, data_root, "model=seasonal_naive", "eval.scenarios=[leaky_drift]")
    assert "Fault 'leaky_drift' (package 'meaning-plugin' 0.1, entry point 'leaky_drift = " \
           "meaning_plugin_pkg.fault:LEAKY')" in line, line
    assert "changed channel(s)" in line and "outside its selected mask (params.selected)" in line, line


@pytest.mark.parametrize(("name", "entry"), [("numpy_jitter", "NUMPY_RNG"), ("python_jitter", "PYTHON_RNG")])
def test_item4_a_fault_drawing_from_a_global_generator_is_refused_before_any_work(meaning_plugin, tmp_path,
                                                                                 monkeypatch, data_root, name,
                                                                                 entry) -> None:
    line = refused(monkeypatch, tmp_path, data_root, "model=seasonal_naive", f"eval.scenarios=[{name}]")
    assert f"Fault '{name}' (package 'meaning-plugin' 0.1, entry point '{name} = meaning_plugin_pkg.fault:{entry}')" \
        in line, line
    assert "two different windows for the same stream words in two separate traces" in line, line
    numpy_state = np.random.get_state()
    with pytest.raises(contracts.ContractError):
        contracts.check_fault_semantics(FAULTS[name], SHAPES)
    after = np.random.get_state()  # the check leaves NumPy's global generator as it found it
    assert np.array_equal(after[1], numpy_state[1]) and after[2:] == numpy_state[2:]


def test_item5_a_fault_that_changes_the_window_at_severity_0_is_refused(meaning_plugin, tmp_path, monkeypatch,
                                                                       data_root) -> None:
    line = refused(monkeypatch, tmp_path, data_root, "model=seasonal_naive", "eval.scenarios=[offset_at_zero]")
    assert "Fault 'offset_at_zero' (package 'meaning-plugin' 0.1, entry point 'offset_at_zero = " in line, line
    assert "at severity 0 (units=0) it changed the window (largest change 0.1)" in line, line


def test_item5_a_fault_whose_effect_ignores_the_severity_is_refused(meaning_plugin, tmp_path, monkeypatch,
                                                                    data_root) -> None:
    line = refused(monkeypatch, tmp_path, data_root, "model=seasonal_naive", "eval.scenarios=[one_size_offset]")
    assert "Fault 'one_size_offset' (package 'meaning-plugin' 0.1" in line, line
    assert "it gave the same window at severities 0.25, 0.5, 1: its effect ignores the drawn severity" in line, line


def test_a_well_behaved_fault_passes_and_a_check_that_cannot_apply_says_so(meaning_plugin) -> None:
    notes = contracts.check_fault_semantics(FAULTS["scaled_offset"], SHAPES)
    assert notes == ("Fault 'scaled_offset': the unselected-channel check does not apply (is_channel_scoped=False: "
                     "it acts on every channel).",)
    # a run's checks return the note (the run prints it and records it in the manifest's contract_notes)
    cfg = _compose_run(["model=seasonal_naive", "dataset=beijing_air_tiantan", "eval.scenarios=[scaled_offset]"])
    assert contracts.check_run_contracts(resolve_cell(cfg)) == notes
    # different keys may give different windows (only one key twice must give one window)
    window = contracts.probe_window(SHAPES)
    assert window.shape == (96, 12) and np.array_equal(window, contracts.probe_window(SHAPES))


# ----------------------------------------------------------------------------------------------------------------
# Item 6: a model whose forecast depends on its batch


def test_item6_a_model_normalising_with_batch_statistics_is_refused_before_any_work(meaning_plugin, tmp_path,
                                                                                   monkeypatch, data_root) -> None:
    line = refused(monkeypatch, tmp_path, data_root, "model=batch_centred")
    assert "Model 'batch_centred' (package 'meaning-plugin' 0.1, entry point 'batch_centred = " \
           "meaning_plugin_pkg.model:BATCH_CENTRED')" in line, line
    assert "__call__(x)[:1] differs from __call__(x[:1]) on 8 real windows of the dataset" in line, line
    assert "depends on which windows share its batch" in line, line


def test_the_data_the_check_before_the_folder_loaded_is_handed_to_its_run_once() -> None:
    """The CLI checks the model on the data's windows before Hydra creates the run folder; the run that follows takes
    that data instead of loading it again, once, and only for the same settings."""
    from sfbench_jax.pipeline import runner

    cfg = _compose_run(["model=seasonal_naive", "dataset=etth1", "profile=tiny"])
    data, notes = runner.check_run_data(cfg)
    assert notes == ()
    assert runner.checked_data(resolve_cell(cfg))[0] is data
    assert not runner._CHECKED  # handed over once: a later run loads its data itself


# ----------------------------------------------------------------------------------------------------------------
# Item 7: a model that ignores its input is flagged where a reader sees it


@pytest.mark.slow
def test_item7_a_model_that_ignores_its_input_is_flagged_in_the_summary_table4_and_the_page(
        meaning_plugin, tmp_path, monkeypatch, data_root) -> None:
    """One tiny run of the input-blind model, then Table 4 and the report page on it (about 60 s on two loaded
    cores; `test_item7_an_input_blind_model_is_never_marked_best` checks the tables' marking in the default suite)."""
    from sfbench_jax.cli.sfbench_report import main as report

    run = tmp_path / "runs" / "blind"
    code, stderr = sfbench(monkeypatch, "model=blind", *TINY, f"data_root={data_root}", f"hydra.run.dir={run}",
                           f"train.store_dir={tmp_path / 'store'}", "train.candidate_budget=1",
                           "eval.scenarios=[scaled_offset]")
    assert code == 0, stderr[-3000:]
    assert "WARNING: blind's forecast IGNORES ITS INPUT" in stderr, stderr[-3000:]
    note = "Fault 'scaled_offset': the unselected-channel check does not apply (is_channel_scoped=False"
    assert f"[sfbench] contract check not applied: {note}" in stderr, stderr[-3000:]  # said, not passed in silence
    summary = pd.read_csv(run / "summary.csv").iloc[0]
    assert bool(summary["ignores_input"]) and summary["d_w"] == pytest.approx(1.0)
    manifest = json.loads((run / "manifest.json").read_text())
    assert manifest["models"][0]["ignores_input"] is True
    assert [line[:len(note)] for line in manifest["contract_notes"]] == [note]
    assert report(["table4", "--runs", str(tmp_path / "runs"), "--output", str(tmp_path / "report")]) == 0
    table4 = (tmp_path / "report" / "table4.md").read_text()
    assert "| Beijing Air Tiantan | D_w | 1.000† |" in table4 and "**1.000" not in table4, table4
    assert paper.IGNORES_INPUT_NOTE in table4
    block = pd.read_csv(tmp_path / "report" / "table4_architectures.csv")
    assert list(block["ignores_input"]) == ["blind"] * 3 and block["best"].isna().all()
    assert report(["html", "--runs", str(tmp_path / "runs"), "--output", str(tmp_path / "page.html")]) == 0
    page = (tmp_path / "page.html").read_text()
    assert 'data-architecture="blind" data-ignores-input="true"' in page  # Table 4
    assert page.lower().count("blind † ignores its input</td>") == 2  # Table 4 ("Blind") and the runs table


def test_item7_an_input_blind_model_is_never_marked_best() -> None:
    rows = pd.DataFrame([
        {"dataset": "etth1", "architecture": "dlinear", "method": "baseline", "d_w": 1.2, "mse_c": 0.45, "mse_w": 0.6,
         "ignores_input": False},
        {"dataset": "etth1", "architecture": "blind", "method": "baseline", "d_w": 1.0, "mse_c": 0.40, "mse_w": 0.4,
         "ignores_input": True}])
    block = paper.table4_architecture_block(rows)
    assert list(block["best"]) == ["dlinear", "dlinear", "dlinear"]
    assert list(block["ignores_input"]) == ["blind"] * 3
    lines = paper.table4_markdown(block).splitlines()
    assert lines[2] == "| ETTh1 | D_w | **1.200** | 1.000† |", lines
    assert lines[-1] == paper.IGNORES_INPUT_NOTE
    html = "".join(table4_architecture_rows(rows))
    assert html.count('class="best"') == 3 and 'data-architecture="dlinear"><td>' in html
    assert 'data-architecture="blind" data-ignores-input="true"' in html
    # without the flag (older runs) the layout is as before
    plain = paper.table4_architecture_block(rows.drop(columns="ignores_input"))
    assert list(plain.columns) == ["dataset", "measure", "dlinear", "blind", "best"]
    assert list(plain["best"]) == ["blind", "blind", "blind"]


# ----------------------------------------------------------------------------------------------------------------
# The built-ins pass every check


@pytest.mark.slow
def test_every_built_in_fault_passes_the_semantic_checks() -> None:
    """Fifteen faults, one compiled probe each (about 15 s on two loaded cores)."""
    built_in = [fault for fault in FAULTS.values() if not origin_of(fault).entry_point]
    assert len(built_in) >= 15
    notes = {fault.name: contracts.check_fault_semantics(fault, SHAPES) for fault in built_in}
    assert {name for name, said in notes.items() if said} == {"missing_data"}  # not channel-scoped: it says so


@pytest.mark.slow
def test_every_built_in_model_passes_the_batch_check_and_reads_its_input(data_root) -> None:
    """Six architectures built and run twice each (about 20 s on two loaded cores; every run checks its own)."""
    data = prepare(load("beijing_air_tiantan", data_root=data_root))
    shapes, windows = Shapes.of(data.spec), contracts.probe_windows(data)
    from sfbench_jax.evaluation.predict import predict_fn

    for name, spec in MODELS.items():
        if origin_of(spec).entry_point or getattr(spec.module_cls, "runs_on_host", False):
            continue
        hparams = expand_space(MODELS[name], search_space(MODELS[name]), input_len=shapes.input_len)[0]
        assert contracts.check_model_batch(spec, hparams, shapes, windows) == (), name
        model = build_model(name, {k: v for k, v in hparams.items() if k != "lr"}, input_len=shapes.input_len,
                            horizon=shapes.horizon, num_channels=shapes.num_channels,
                            target_indices=shapes.target_indices, seed=0)
        predict, state = predict_fn(model)
        assert not contracts.ignores_its_input(predict, state, windows), name
    assert contracts.check_model_batch(MODELS["chronos2"], {}, shapes, windows)[0].startswith(
        "Model 'chronos2': the batch-independence check does not apply (a host model")
