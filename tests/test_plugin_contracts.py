"""Issue 30: a plug-in's ordinary mistakes are refused before any work, stored work is keyed by the code that made
it, a broken plug-in stops only what names it, and extras show in the reports and over MCP.

Each defect is a reproduction. A distribution (`bad-plugin` 0.3) is put on `sys.path` the way pip installs one (a
`*.dist-info` folder with `entry_points.txt`); its specs are registered into the live registries with the same
`plugins.discovered` the registries call at import, and `sfbench` runs in this process (Hydra's real app and
callbacks), so each test costs about a second. The contract tests check: exit 2, one error line on stderr naming
the package and the entry point, no run folder, nothing trained.
"""

from __future__ import annotations

import io
import logging
import re
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from sfbench_jax.data.registry import DATASETS
from sfbench_jax.data.spec import DatasetSpec
from sfbench_jax.faults.registry import FAULTS
from sfbench_jax.faults.spec import FaultSpec
from sfbench_jax.methods.registry import METHODS
from sfbench_jax.methods.spec import MethodSpec
from sfbench_jax.models.registry import MODELS
from sfbench_jax.models.spec import ModelSpec
from sfbench_jax.plugins import entry_points as plugins
from sfbench_jax.plugins import presets

DIST = "bad-plugin"

MODEL_MODULE = """
    import dataclasses

    import jax.numpy as jnp
    from flax import nnx

    from sfbench_jax.data.windows import select_targets
    from sfbench_jax.models.spec import ModelSpec

    SHORT_BY = 0  # steps the forecast is short by (the short-horizon model sets 1)
    SELECTS_TARGETS = True  # the target-forgetting model returns every channel


    @dataclasses.dataclass(frozen=True)
    class TinyConfig:
        width: int = 4


    def is_valid(hparams, *, input_len=96):
        return True


    class Tiny(nnx.Module):
        def __init__(self, *, width=4, input_len, horizon, num_channels, target_indices, rngs, short_by=0,
                     selects=True):
            self.target_indices = tuple(target_indices)
            self.selects = selects
            self.linear = nnx.Linear(input_len, horizon - short_by, rngs=rngs)

        def predict_all_channels(self, x):
            return jnp.swapaxes(self.linear(jnp.swapaxes(x, 1, 2)), 1, 2)

        def __call__(self, x):
            out = self.predict_all_channels(x)
            return select_targets(out, self.target_indices) if self.selects else out


    class Forgetful(Tiny):
        def __init__(self, **kwargs):
            super().__init__(selects=False, **kwargs)


    class Short(Tiny):
        def __init__(self, **kwargs):
            super().__init__(short_by=1, **kwargs)


    def _spec(name, module_cls):
        return ModelSpec(name=name, config_cls=TinyConfig, is_valid=is_valid, module_cls=module_cls,
                         is_trainable=True, is_channel_independent=False, supports_revin=True, label=name.title())


    FORGETFUL = _spec("forgetful", Forgetful)
    SHORT = _spec("short", Short)
    GOOD = _spec("good_tiny", Tiny)
    MISNAMED = _spec("renamed_tiny", Tiny)  # declared under the entry point `misnamed`
    """

FAULT_MODULE = """
    import jax.numpy as jnp

    from sfbench_jax.faults.scored import sample_channel_fault
    from sfbench_jax.faults.spec import FaultSpec


    def crop(x, params, ctx):
        return x[1:]


    def widen(x, params, ctx):
        return x.astype(jnp.float64)


    def flip(x, params, ctx):
        return jnp.where(params.selected[None, :], -x, x)


    CROPPED = FaultSpec(name="cropped", label="Cropped", fault_class="Value", sample=sample_channel_fault, apply=crop)
    WIDENED = FaultSpec(name="widened", label="Widened", fault_class="Value", sample=sample_channel_fault,
                        apply=widen)
    FLIP = FaultSpec(name="sign_flip", label="SignFlip", fault_class="Value", sample=sample_channel_fault,
                     apply=flip)
    """

METHODS_MODULE = """
    from dataclasses import dataclass

    from sfbench_jax.methods.spec import MethodSpec, WrapperSpec
    from sfbench_jax.methods.training import PlainTraining


    @dataclass(frozen=True)
    class DropLastChannel(PlainTraining):
        def training_inputs(self, key, x, loss_at):
            return x[:, :, :-1]


    def drop_last(recipe, facts):
        return DropLastChannel()


    def winner(recipe, ranked):
        return ranked[:1]


    def every_channel(recipe, members, *, seed):
        ((predict, state),) = members

        def wide(state, x):
            return x[:, -6:, :]  # the last input steps of every channel instead of the forecast

        return wide, state


    CHANNEL_DROP = MethodSpec(name="channel_drop", kind="train", label="Channel drop", transform=drop_last,
                              variant_id=lambda recipe: "drop")
    WIDE_WRAP = MethodSpec(name="wide_wrap", kind="wrap", label="Wide", wrapper=WrapperSpec(winner, every_channel),
                           variant_id=lambda recipe: "wide")
    """

METHOD_PRESET = """
    defaults:
      - /schema/method@_here_
    name: {name}
    """

PRESET = """
    defaults:
      - /schema/model@_here_
    name: {name}
    grid:
      width: [4]
      lr: [0.001]
    """

ENTRY_POINTS = """
    [sfbench_jax.models]
    forgetful = bad_plugin_pkg.model:FORGETFUL
    short = bad_plugin_pkg.model:SHORT
    good_tiny = bad_plugin_pkg.model:GOOD
    broken = bad_plugin_pkg.missing_module:SPEC
    misnamed = bad_plugin_pkg.model:MISNAMED
    [sfbench_jax.methods]
    channel_drop = bad_plugin_pkg.methods:CHANNEL_DROP
    wide_wrap = bad_plugin_pkg.methods:WIDE_WRAP
    [sfbench_jax.faults]
    cropped = bad_plugin_pkg.fault:CROPPED
    widened = bad_plugin_pkg.fault:WIDENED
    sign_flip = bad_plugin_pkg.fault:FLIP
    [sfbench_jax.conf]
    bad_plugin_pkg = bad_plugin_pkg.conf
    """

REGISTRIES = {"models": (MODELS, ModelSpec), "methods": (METHODS, MethodSpec), "faults": (FAULTS, FaultSpec),
              "datasets": (DATASETS, DatasetSpec)}


def _clear_caches() -> None:
    plugins.discovered.cache_clear()
    plugins.preset_packages.cache_clear()
    presets.preset_grid.cache_clear()


def write_distribution(site: Path, *, model_source: str = MODEL_MODULE, version: str = "0.3") -> Path:
    """The `bad-plugin` distribution, as pip installs it, into the folder `site`."""
    for old in site.glob("bad_plugin-*.dist-info"):
        for file in old.iterdir():
            file.unlink()
        old.rmdir()
    dist = site / f"bad_plugin-{version}.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {DIST}\nVersion: {version}\n")
    (dist / "entry_points.txt").write_text(textwrap.dedent(ENTRY_POINTS))
    files = {"bad_plugin_pkg/__init__.py": "", "bad_plugin_pkg/model.py": model_source,
             "bad_plugin_pkg/fault.py": FAULT_MODULE, "bad_plugin_pkg/conf/__init__.py": "",
             "bad_plugin_pkg/methods.py": METHODS_MODULE,
             **{f"bad_plugin_pkg/conf/method/{name}.yaml": METHOD_PRESET.format(name=name)
                for name in ("channel_drop", "wide_wrap")},
             **{f"bad_plugin_pkg/conf/model/{name}.yaml": PRESET.format(name=name)
                for name in ("forgetful", "short", "good_tiny", "broken", "misnamed", "renamed_tiny")}}
    for relative, text in files.items():
        (site / relative).parent.mkdir(parents=True, exist_ok=True)
        (site / relative).write_text(textwrap.dedent(text))
    return site


def register(monkeypatch: pytest.MonkeyPatch) -> None:
    """Register the installed plug-ins into the live registries, as the registries do at import."""
    _clear_caches()
    for kind, (registry, spec_type) in REGISTRIES.items():
        for spec in plugins.discovered(kind, spec_type):
            monkeypatch.setitem(registry, spec.name, spec)


@pytest.fixture
def bad_plugin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    # An earlier test's modules can be back in sys.modules: `_edit_model` deletes them through monkeypatch, whose undo
    # (after this fixture's teardown) puts that test's first modules back. Import this test's own files.
    for name in [module for module in sys.modules if module.startswith("bad_plugin_pkg")]:
        del sys.modules[name]
    site = write_distribution(tmp_path / "site")
    monkeypatch.syspath_prepend(str(site))
    register(monkeypatch)
    yield site
    _clear_caches()
    for name in [module for module in sys.modules if module.startswith("bad_plugin_pkg")]:
        del sys.modules[name]


def sfbench(monkeypatch: pytest.MonkeyPatch, *overrides: str) -> tuple[int, str]:
    """Run `sfbench` in this process; returns (exit status, stderr). Standard streams are buffers of their own, and
    Hydra's logging set-up (which closes every handler, pytest's and absl's, whose streams are pytest's, and
    replaces the root logger's) is undone."""
    from sfbench_jax.cli import main

    stderr = io.StringIO()
    monkeypatch.setattr(sys, "argv", ["sfbench", *overrides])
    monkeypatch.setattr(sys, "stderr", stderr)
    monkeypatch.setattr(sys, "stdout", io.StringIO())
    monkeypatch.delenv("HYDRA_FULL_ERROR", raising=False)
    monkeypatch.setattr(main, "exit_now", lambda: None)
    root = logging.getLogger()
    kept, level = list(root.handlers), root.level
    for reference in list(logging._handlerList):  # Hydra's dictConfig closes every handler (absl's closes stderr)
        handler = reference()
        if handler is not None:
            monkeypatch.setattr(handler, "close", lambda: None)
    try:
        main.main()
        code = 0
    except SystemExit as exit_:
        code = int(exit_.code or 0)
    finally:
        for handler in [handler for handler in root.handlers if handler not in kept]:
            handler.close()
        root.handlers[:] = kept
        root.setLevel(level)
    return code, stderr.getvalue()


#: Beijing Air (12 channels, the target PM2.5 one of them, H = 6): a model forgetting its targets shows.
TINY = ("dataset=beijing_air_tiantan", "profile=tiny", "eval=quick")


def refused(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, *overrides: str) -> str:
    """Run `sfbench *overrides` (profile=tiny) into tmp_path/run with the store tmp_path/store; check the refusal:
    exit 2, exactly one line on stderr naming the package, no run folder, nothing stored.
    Returns the error line."""
    run, store = tmp_path / "run", tmp_path / "store"
    code, stderr = sfbench(monkeypatch, *overrides, *TINY, f"hydra.run.dir={run}", f"train.store_dir={store}")
    lines = stderr.strip().splitlines()
    assert code == 2, stderr[-3000:]
    assert len(lines) == 1 and lines[0].startswith("sfbench: error: "), stderr[-3000:]
    assert f"package {DIST!r}" in lines[0] or f"package '{DIST}'" in lines[0], lines[0]
    assert not run.exists(), sorted(str(path) for path in run.rglob("*"))
    assert not store.exists() or not any(store.rglob("result.json"))
    return lines[0]


# ----------------------------------------------------------------------------------------------------------------
# Defects 1 and 3: contracts checked before any work


def test_a_model_that_forgets_to_select_its_targets_is_refused_before_any_work(bad_plugin, tmp_path,
                                                                               monkeypatch) -> None:
    line = refused(monkeypatch, tmp_path, "model=forgetful")
    assert "Model 'forgetful' (package 'bad-plugin' 0.3, entry point 'forgetful = bad_plugin_pkg.model:FORGETFUL')" \
        in line, line
    assert "__call__(x (2, 96, 12)) must return (2, 6, 1) float32; it returned (2, 6, 12) float32" in line, line


def test_a_model_one_step_short_is_refused_before_any_work(bad_plugin, tmp_path, monkeypatch) -> None:
    line = refused(monkeypatch, tmp_path, "model=short")
    assert "entry point 'short = bad_plugin_pkg.model:SHORT'" in line, line
    assert "must return (2, 6, 1) float32; it returned (2, 5, 1) float32" in line, line


def test_a_fault_that_changes_the_window_shape_is_refused_before_any_work(bad_plugin, tmp_path, monkeypatch) -> None:
    line = refused(monkeypatch, tmp_path, "model=dlinear", "eval.scenarios=[cropped]")
    assert "Fault 'cropped' (package 'bad-plugin' 0.3, entry point 'cropped = bad_plugin_pkg.fault:CROPPED')" \
        in line, line
    assert "must return (96, 12) float32; it returned (95, 12) float32" in line, line


def test_a_broken_fault_is_refused_again_under_another_model(bad_plugin, tmp_path, monkeypatch) -> None:
    # a fault's check is cached per (spec, shapes) across models and methods; a refusal is never cached
    for model in ("dlinear", "seasonal_naive"):
        line = refused(monkeypatch, tmp_path / model, f"model={model}", "eval.scenarios=[cropped]")
        assert "Fault 'cropped'" in line and "it returned (95, 12) float32" in line, line


def test_a_fault_that_returns_float64_is_refused_before_any_work(bad_plugin, tmp_path, monkeypatch) -> None:
    line = refused(monkeypatch, tmp_path, "model=seasonal_naive", "eval.scenarios=[widened]")
    assert "Fault 'widened'" in line and "entry point 'widened = bad_plugin_pkg.fault:WIDENED'" in line, line
    assert "must return (96, 12) float32; it returned (96, 12) float64" in line, line


def test_a_train_method_whose_transform_drops_a_channel_is_refused_before_any_work(bad_plugin, tmp_path,
                                                                                     monkeypatch) -> None:
    line = refused(monkeypatch, tmp_path, "model=dlinear", "method=channel_drop")
    assert "Method 'channel_drop' (package 'bad-plugin' 0.3, entry point 'channel_drop = " in line, line
    assert "training_inputs(key, x (2, 96, 12), loss_at) must return (2, 96, 12) float32; it returned (2, 96, 11) " \
           "float32" in line, line


def test_a_wrap_method_whose_predictor_changes_the_forecast_shape_is_refused(bad_plugin, tmp_path,
                                                                             monkeypatch) -> None:
    line = refused(monkeypatch, tmp_path, "model=dlinear", "method=wide_wrap")
    assert "Method 'wide_wrap' (package 'bad-plugin' 0.3" in line, line
    assert "must return (2, 6, 1) float32; it returned (2, 6, 12) float32" in line, line


# ----------------------------------------------------------------------------------------------------------------
# Defect 4: a broken plug-in stops only the commands that name it


def test_naming_a_broken_plug_in_stops_the_run_with_its_fix(bad_plugin, tmp_path, monkeypatch) -> None:
    assert {"forgetful", "short", "good_tiny"} <= set(MODELS)  # the loadable ones of the same package register
    line = refused(monkeypatch, tmp_path, "model=broken")
    assert "The entry point 'broken' = 'bad_plugin_pkg.missing_module:SPEC'" in line, line
    assert "Repair the line `broken = bad_plugin_pkg.missing_module:SPEC`" in line, line
    assert line.endswith("pip uninstall bad-plugin."), line


def test_an_entry_point_named_otherwise_than_its_spec_is_refused_naming_both(bad_plugin, tmp_path,
                                                                             monkeypatch) -> None:
    """Issue 45: `misnamed = bad_plugin_pkg.model:MISNAMED` names the spec 'renamed_tiny'. Commands find a plug-in by
    its spec's name and a broken one by its entry point's: either name stops the run with the same line and fix."""
    assert "renamed_tiny" not in MODELS and "misnamed" not in MODELS
    for name in ("misnamed", "renamed_tiny"):
        line = refused(monkeypatch, tmp_path, f"model={name}")
        assert "The entry point 'misnamed' = 'bad_plugin_pkg.model:MISNAMED'" in line, line
        assert "names a spec whose name is 'renamed_tiny', not 'misnamed'" in line, line
        assert "Rename the line `misnamed = bad_plugin_pkg.model:MISNAMED` to " \
               "`renamed_tiny = bad_plugin_pkg.model:MISNAMED`" in line, line
        assert line.endswith("pip uninstall bad-plugin."), line


# ----------------------------------------------------------------------------------------------------------------
# Defect 2: stored work keyed by the code that made it


def _edit_model(site: Path, monkeypatch: pytest.MonkeyPatch, *, version: str = "0.3") -> None:
    """Edit the plug-in's model module (a changed forward pass) and register it again, as a new process would."""
    source = MODEL_MODULE.replace("return select_targets(out, self.target_indices) if self.selects else out",
                                  "out = 0.5 * out\n            return select_targets(out, self.target_indices) "
                                  "if self.selects else out")
    assert source != MODEL_MODULE
    write_distribution(site, model_source=source, version=version)
    for name in [module for module in sys.modules if module.startswith("bad_plugin_pkg")]:
        monkeypatch.delitem(sys.modules, name)
    register(monkeypatch)


def test_the_candidate_identity_holds_the_model_code_and_the_plug_in_version(bad_plugin, monkeypatch) -> None:
    from sfbench_jax.training.sweep import code_identity

    before = code_identity(MODELS["good_tiny"], METHODS["baseline"])
    assert list(before["packages"]) == ["bad-plugin==0.3"]  # with the digest of its files
    assert {"bad_plugin_pkg.model", "sfbench_jax.methods.baseline"} <= set(before["modules"])
    assert code_identity(MODELS["dlinear"], METHODS["baseline"])["packages"] == {}  # a built-in: its modules only
    _edit_model(bad_plugin, monkeypatch)
    edited = code_identity(MODELS["good_tiny"], METHODS["baseline"])
    assert edited["modules"]["bad_plugin_pkg.model"] != before["modules"]["bad_plugin_pkg.model"]
    assert {key: value for key, value in edited["modules"].items() if key != "bad_plugin_pkg.model"} == {
        key: value for key, value in before["modules"].items() if key != "bad_plugin_pkg.model"}
    _edit_model(bad_plugin, monkeypatch, version="0.4")
    assert list(code_identity(MODELS["good_tiny"], METHODS["baseline"])["packages"]) == ["bad-plugin==0.4"]


@pytest.mark.slow
def test_an_edited_model_trains_again_and_both_generations_stay_in_the_store(bad_plugin, tmp_path, monkeypatch,
                                                                               data_root: Path) -> None:
    """The reproduction of defect 2: two tiny runs of a plug-in model on one store, the model edited between them
    (about 40 s: two tiny trainings and evaluations)."""
    store = tmp_path / "store"
    common = ("model=good_tiny", *TINY, f"data_root={data_root}", "train.candidate_budget=1",
              f"train.store_dir={store}")
    code, stderr = sfbench(monkeypatch, *common, f"hydra.run.dir={tmp_path / 'first'}")
    assert code == 0, stderr[-3000:]
    assert "0 already in the store, 1 to train" in stderr, stderr
    first = sorted(path.parent for path in store.rglob("result.json"))
    assert len(first) == 1
    recorded = (first[0] / "result.json").read_bytes()

    _edit_model(bad_plugin, monkeypatch)
    code, stderr = sfbench(monkeypatch, *common, f"hydra.run.dir={tmp_path / 'second'}")
    assert code == 0, stderr[-3000:]
    assert "0 already in the store, 1 to train" in stderr, stderr  # not "1 already in the store, 0 to train"
    both = sorted(path.parent for path in store.rglob("result.json"))
    assert len(both) == 2 and first[0] in both
    assert (first[0] / "result.json").read_bytes() == recorded  # the old generation untouched


# ----------------------------------------------------------------------------------------------------------------
# Defect 5: extras visible where people look (MCP here; the report below)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.mark.anyio
async def test_mcp_lists_plug_in_models_methods_and_extra_scenarios_marked(bad_plugin, data_root: Path) -> None:
    from mcp import Client

    from sfbench_jax.mcp.server import ServerConfig, build_server

    async with Client(build_server(ServerConfig(data_root=data_root))) as client:
        models = (await client.call_tool("list_models", {})).structured_content["models"]
        methods = (await client.call_tool("list_methods", {})).structured_content["methods"]
        scenarios = (await client.call_tool("list_fault_scenarios", {})).structured_content["scenarios"]
    by_name = {model["name"]: model for model in models}
    assert [model["name"] for model in models][:2] == ["seasonal_naive", "dlinear"]  # built-ins first
    tiny = by_name["good_tiny"]
    assert (tiny["label"], tiny["trainable"], tiny["channel_independent"], tiny["supports_revin"]) == (
        "Good_Tiny", True, False, True)
    assert tiny["plugin"] and "package 'bad-plugin' 0.3" in tiny["origin"], tiny
    assert not by_name["dlinear"]["plugin"] and by_name["dlinear"]["channel_independent"]
    assert "broken" not in by_name  # a broken entry point is not listed
    ensemble = next(method for method in methods if method["name"] == "ensemble")
    assert ensemble["kind"] == "wrap" and "good_tiny" in ensemble["applies_to"]
    assert [s["name"] for s in scenarios if not s["extra"]] == [
        "drift", "attenuation", "noise", "spike", "time_stretch", "time_compress", "stuck_sensor", "missing_data"]
    extra = {s["name"]: s for s in scenarios if s["extra"]}
    assert {"sign_flip", "cropped", "widened"} <= set(extra)
    assert "package 'bad-plugin' 0.3" in extra["sign_flip"]["origin"]


def test_an_extra_scenario_gets_its_own_report_table_and_figure(bad_plugin, tmp_path, monkeypatch,
                                                               data_root: Path) -> None:
    """A SeasonalNaive run scoring the plug-in's sign flip, then `sfbench-report extras` and `table4` on it (about
    20 s on two loaded cores: one tiny run)."""
    from sfbench_jax.cli.sfbench_report import main as report

    run = tmp_path / "runs" / "run"
    code, stderr = sfbench(monkeypatch, "model=seasonal_naive", *TINY, f"data_root={data_root}",
                           "eval.scenarios=[sign_flip]",
                           f"hydra.run.dir={run}", f"train.store_dir={tmp_path / 'store'}")
    assert code == 0, stderr[-3000:]
    assert report(["extras", "table4", "--runs", str(tmp_path / "runs"), "--output", str(tmp_path / "report")]) == 0
    table = pd.read_csv(tmp_path / "report" / "extras.csv")
    summary = pd.read_csv(run / "summary.csv").iloc[0]
    assert list(table["scenario"]) == ["sign_flip"] and list(table["label"]) == ["SignFlip"]
    assert table["d"].iloc[0] == pytest.approx(summary["d_sign_flip"])
    assert table["d_w"].iloc[0] == pytest.approx(summary["d_w"])  # D_w stays the worst of the eight
    assert bool(table["exceeds_paper_worst"].iloc[0]) == (summary["d_sign_flip"] > summary["d_w"])
    assert "SignFlip" in (tmp_path / "report" / "extras.md").read_text()
    assert (tmp_path / "report" / "extras.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "sign_flip" not in (tmp_path / "report" / "table4.md").read_text()  # never mixed into the paper's table


# ----------------------------------------------------------------------------------------------------------------
# Defect 6: docs/extending.md's complete minimal package, executed

DOC = Path(__file__).resolve().parents[1] / "docs" / "extending.md"
#: A fenced block marked with the file it is: ```python file=my-sensors/my_sensors/model.py
DOC_FILE_BLOCK = re.compile(r"^```\w+ file=(\S+)\n(.*?)^```$", re.MULTILINE | re.DOTALL)


def doc_files() -> dict[str, str]:
    return dict(DOC_FILE_BLOCK.findall(DOC.read_text()))


@pytest.fixture(scope="module")
def doc_package(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The doc's package written from its blocks, its data generated, installed with pip (offline, --target)."""
    source = tmp_path_factory.mktemp("doc_source")
    for relative, text in doc_files().items():
        (source / relative).parent.mkdir(parents=True, exist_ok=True)
        (source / relative).write_text(text)
    subprocess.run([sys.executable, str(source / "my-sensors" / "make_data.py")], check=True, timeout=120)
    site = tmp_path_factory.mktemp("doc_site")
    completed = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--no-deps", "--no-build-isolation", "--no-index", "--no-cache-dir",
         "--disable-pip-version-check", "--quiet", "--target", str(site), str(source / "my-sensors")],
        capture_output=True, text=True, timeout=300, check=False)
    assert completed.returncode == 0, completed.stdout[-2000:] + completed.stderr[-3000:]
    return site


@pytest.fixture
def doc_plugin(doc_package: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.syspath_prepend(str(doc_package))
    register(monkeypatch)
    yield doc_package
    _clear_caches()
    for name in [module for module in sys.modules if module.startswith("my_sensors")]:
        del sys.modules[name]


def test_the_doc_has_a_complete_example_of_every_kind() -> None:
    files = doc_files()
    assert {"my-sensors/pyproject.toml", "my-sensors/my_sensors/model.py", "my-sensors/my_sensors/methods.py",
            "my-sensors/my_sensors/dataset.py", "my-sensors/my_sensors/fault.py",
            "my-sensors/my_sensors/conf/model/my_nlinear.yaml", "my-sensors/my_sensors/conf/method/my_dropout.yaml",
            "my-sensors/my_sensors/conf/method/my_median.yaml", "my-sensors/my_sensors/conf/dataset/my_sensors.yaml",
            "my-sensors/make_data.py"} <= set(files)


def _compose_run(overrides: list[str]):
    from hydra import compose, initialize_config_module

    from sfbench_jax.cli.main import to_run_config

    with initialize_config_module(config_module="sfbench_jax.conf", version_base="1.3"):
        return to_run_config(compose(config_name="config", overrides=overrides))


def test_the_doc_package_registers_every_kind_and_passes_the_contracts(doc_plugin) -> None:
    """Composing a run checks it like `sfbench` does, the contracts included (abstract evaluation, no data)."""
    assert MODELS["my_nlinear"].channel_sparse and METHODS["my_median"].kind == "wrap"
    assert DATASETS["my_sensors"].num_channels == 3 and "my_sign_flip" in FAULTS
    assert plugins.origin_of(MODELS["my_nlinear"]).distribution == "my-sensors"
    for method in ("baseline", "my_dropout", "my_median"):
        run = _compose_run(["model=my_nlinear", f"method={method}", "dataset=my_sensors",
                            "eval.scenarios=[my_sign_flip]", "train.candidate_budget=3"])
        assert (run.model.name, run.method.name, run.dataset.name) == ("my_nlinear", method, "my_sensors")
    with pytest.raises(ValueError, match="my_median needs 3 baseline candidates of my_nlinear"):
        _compose_run(["model=my_nlinear", "method=my_median", "dataset=my_sensors", "train.candidate_budget=2"])


@pytest.mark.slow
def test_the_doc_package_runs_its_model_methods_dataset_and_fault(doc_plugin, tmp_path, monkeypatch) -> None:
    """Three tiny runs on one store (baseline with the extra fault, input dropout, the median wrapper): about 90 s."""
    store = tmp_path / "store"
    common = ("model=my_nlinear", "dataset=my_sensors", "profile=tiny", "eval=quick", "train.candidate_budget=3",
              f"train.store_dir={store}")
    for method in ("baseline", "my_dropout", "my_median"):
        run = tmp_path / method
        code, stderr = sfbench(monkeypatch, *common, f"method={method}", "eval.scenarios=[my_sign_flip]",
                               f"hydra.run.dir={run}")
        assert code == 0, stderr[-3000:]
        summary = pd.read_csv(run / "summary.csv").iloc[0]
        assert (summary["architecture"], summary["method"], summary["dataset"]) == ("my_nlinear", method,
                                                                                    "my_sensors")
        assert np.isfinite(summary["d_my_sign_flip"]) and np.isfinite(summary["d_w"])
