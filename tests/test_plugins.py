"""Plug-ins registered from outside sfbench-jax (docs/extending.md): `sfbench_jax.plugins`, the preset search
(`presets.preset_grid` and the Hydra search-path plugin `hydra_plugins/sfbench_searchpath`), and the acceptance
test: the package `tests/fixtures/plugin_pkg` (`sfbench_demo_plugin`) is really installed (`pip install
--target`, offline) and its model, methods, dataset and fault scenario run under the full protocol through the
`sfbench` and `sfbench-report` commands, with `PYTHONPATH` pointing at the installation.

The unit tests register entry points the way an installed distribution does: a `*.dist-info` folder with an
`entry_points.txt` on `sys.path` (importlib.metadata reads it like any other installed package). Cost on two
loaded cores: about 50 s for the default tests (the install, a discovery process, one SeasonalNaive run), about
2.5 minutes more for the slow sweep (`-m slow`).
"""

from __future__ import annotations

import dataclasses
import importlib
import json
import os
import pkgutil
import re
import shutil
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest

from sfbench_jax.models.spec import ModelSpec
from sfbench_jax.plugins import entry_points as plugins
from sfbench_jax.plugins import presets

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = ROOT / "tests" / "fixtures" / "plugin_pkg"
BIN = Path(sys.executable).parent
#: Every name the demo plug-in registers: none may appear under sfbench_jax/ or conf/.
PLUGIN_NAMES = ("sfbench_demo_plugin", "demo_mlp", "demo_jitter", "demo_clip", "demo_sensors", "demo_quantise")
#: The paper's eight scored scenarios.
PAPER_SCENARIOS = ("drift", "attenuation", "noise", "spike", "time_stretch", "time_compress", "stuck_sensor",
                   "missing_data")


def _clear_caches() -> None:
    plugins.discovered.cache_clear()
    plugins.preset_packages.cache_clear()
    presets.preset_grid.cache_clear()


@pytest.fixture
def installed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator:
    """`installed(entry_points_text, files={relative path: text})`: a distribution on sys.path for this test."""
    def install(entry_points: str, files: dict[str, str] | None = None) -> Path:
        dist = tmp_path / "fake_plugin-0.1.dist-info"
        dist.mkdir(exist_ok=True)
        (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: fake-plugin\nVersion: 0.1\n")
        (dist / "entry_points.txt").write_text(textwrap.dedent(entry_points))
        for relative, text in (files or {}).items():
            (tmp_path / relative).parent.mkdir(parents=True, exist_ok=True)
            (tmp_path / relative).write_text(textwrap.dedent(text))
        monkeypatch.syspath_prepend(str(tmp_path))
        _clear_caches()
        return tmp_path

    yield install
    _clear_caches()
    for name in [module for module in sys.modules if module.startswith("fake_plugin_pkg")]:
        del sys.modules[name]


def _one_line_plugin_error(call, *args, **kwargs) -> str:
    with pytest.raises(plugins.PluginError) as raised:
        call(*args, **kwargs)
    message = str(raised.value)
    assert "\n" not in message, message
    return message


# ----------------------------------------------------------------------------------------------------------------
# sfbench_jax.plugins.entry_points


def _broken_line(kind: str, name: str) -> str:
    error = plugins.broken_error(kind, name)
    assert isinstance(error, plugins.PluginError), plugins.broken(kind)
    assert "\n" not in str(error), str(error)
    return str(error)


def test_a_broken_entry_point_is_set_aside_with_one_line_naming_it_and_the_fix(installed) -> None:
    installed("""
        [sfbench_jax.models]
        broken = fake_plugin_pkg_missing.model:SPEC
        """)
    assert plugins.discovered("models", ModelSpec) == ()  # the others still register (issue 30, defect 4)
    message = _broken_line("models", "broken")
    assert "'broken'" in message and "fake-plugin" in message and "ModuleNotFoundError" in message
    assert "Repair the line `broken = fake_plugin_pkg_missing.model:SPEC`" in message
    assert message.endswith("pip uninstall fake-plugin.")


def test_an_entry_point_naming_the_wrong_object_is_one_line(installed) -> None:
    installed("""
        [sfbench_jax.models]
        wrong = fake_plugin_pkg.model:SPEC
        """, {"fake_plugin_pkg/__init__.py": "", "fake_plugin_pkg/model.py": "SPEC = {'name': 'wrong'}\n"})
    assert plugins.discovered("models", ModelSpec) == ()
    message = _broken_line("models", "wrong")
    assert "names dict, not a sfbench_jax.models.spec.ModelSpec" in message and "'wrong'" in message


def test_an_entry_point_whose_name_differs_from_its_spec_is_set_aside_naming_both(installed) -> None:
    installed("""
        [sfbench_jax.models]
        fake_old = fake_plugin_pkg.model:SPEC
        """, {"fake_plugin_pkg/__init__.py": "",
              "fake_plugin_pkg/model.py": """
                  import dataclasses
                  from sfbench_jax.models.registry import MODELS
                  SPEC = dataclasses.replace(MODELS["dlinear"], name="fake_new")
                  """})
    assert plugins.discovered("models", ModelSpec) == ()
    message = _broken_line("models", "fake_old")
    assert _broken_line("models", "fake_new") == message  # either name stops the command that names it
    assert message.startswith("The entry point 'fake_old' = 'fake_plugin_pkg.model:SPEC' (group 'sfbench_jax.models' "
                              "of package 'fake-plugin') names a spec whose name is 'fake_new', not 'fake_old'")
    assert "Rename the line `fake_old = fake_plugin_pkg.model:SPEC` to `fake_new = fake_plugin_pkg.model:SPEC`" \
        in message and message.endswith("pip uninstall fake-plugin.")


def test_a_broken_plug_in_leaves_help_and_the_built_ins_working(tmp_path: Path) -> None:
    """Issue 30, defect 4: a fresh process with a broken entry point installed: `sfbench --help` and
    `sfbench-report --help` work, the registries hold every built-in, and naming the broken one is its one line."""
    dist = tmp_path / "site" / "fake_plugin-0.1.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: fake-plugin\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text("[sfbench_jax.models]\nbroken = fake_plugin_pkg_missing.model:SPEC\n")
    environment = {**os.environ, "PYTHONPATH": str(tmp_path / "site")}
    environment.pop("HYDRA_FULL_ERROR", None)
    for command in ("sfbench", "sfbench-report"):
        completed = _command(command, "--help", environment=environment, cwd=tmp_path, timeout=300)
        assert completed.returncode == 0 and not completed.stderr.strip(), (command, completed.stderr[-3000:])
    probe = ("from sfbench_jax.models.registry import MODELS, get_spec\n"
             "print(len(MODELS))\n"
             "try:\n    get_spec('broken')\nexcept ValueError as error:\n    print(error)\n")
    completed = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=environment,
                               cwd=tmp_path, timeout=300, check=False)
    assert completed.returncode == 0, completed.stderr[-3000:]
    count, message = completed.stdout.strip().splitlines()
    assert int(count) == len(BUILT_IN_ORDER["models"])
    assert message == (
        "The entry point 'broken' = 'fake_plugin_pkg_missing.model:SPEC' (group 'sfbench_jax.models' of package "
        "'fake-plugin') failed to load: ModuleNotFoundError: No module named 'fake_plugin_pkg_missing'. Repair the "
        "line `broken = fake_plugin_pkg_missing.model:SPEC` under [project.entry-points.\"sfbench_jax.models\"] of "
        "that package (or the module it names) and reinstall it, or remove the package: pip uninstall fake-plugin.")


def test_a_name_clash_with_a_built_in_is_one_line() -> None:
    from sfbench_jax.models.registry import MODELS

    registry = dict(MODELS)
    message = _one_line_plugin_error(plugins.register_specs, registry, [dataclasses.replace(MODELS["dlinear"])],
                                     kind="models")
    assert "Two models are registered as 'dlinear'" in message and "Rename the plug-in's model" in message
    assert registry["dlinear"] is MODELS["dlinear"]


def test_a_sequence_of_specs_registers_each(installed) -> None:
    from sfbench_jax.models.registry import MODELS

    installed("""
        [sfbench_jax.models]
        pair = fake_plugin_pkg.model:SPECS
        """, {"fake_plugin_pkg/__init__.py": "",
              "fake_plugin_pkg/model.py": """
                  from sfbench_jax.models import dlinear
                  from sfbench_jax.models.spec import ModelSpec
                  SPECS = [ModelSpec(name=name, config_cls=dlinear.DLinearConfig, is_valid=dlinear.is_valid,
                                     module_cls=dlinear.DLinear, is_trainable=True, is_channel_independent=True,
                                     supports_revin=True) for name in ("fake_a", "fake_b")]
                  """})
    found = plugins.discovered("models", ModelSpec)
    assert [spec.name for spec in found] == ["fake_a", "fake_b"]
    registry = dict(MODELS)
    plugins.register_specs(registry, found, kind="models")
    assert list(registry)[-2:] == ["fake_a", "fake_b"]


# ----------------------------------------------------------------------------------------------------------------
# Built-ins collected from their own packages (`plugins.package_specs`): a new one is one module, no list to edit

#: Each registry's built-ins in today's order (the paper's: Table 4's rows and columns, Figure 2, the scenario order).
BUILT_IN_ORDER = {
    "models": ("seasonal_naive", "dlinear", "gru", "moderntcn", "tsmixer", "patchtst", "chronos2", "external"),
    "methods": ("baseline", "adversarial_training", "ensemble", "randomized_training", "randomized_smoothing",
                "adaptive_robust_loss", "revin", "fault_augmentation"),
    "faults": (*PAPER_SCENARIOS, "linear_drift", "nonlinear_drift", "scaling", "time_varying_scaling",
               "trimming_constant", "trimming_varying", "packet_loss"),
    "datasets": ("beijing_air_tiantan", "penmanshiel_wt08", "etth1", "traffic", "traffic_synthetic",
                 "penmanshiel_synthetic"),
}


def _registries() -> dict[str, tuple[str, dict, type]]:
    from sfbench_jax.data.registry import DATASETS
    from sfbench_jax.data.spec import DatasetSpec
    from sfbench_jax.faults.registry import FAULTS
    from sfbench_jax.faults.spec import FaultSpec
    from sfbench_jax.methods.registry import METHODS
    from sfbench_jax.methods.spec import MethodSpec
    from sfbench_jax.models.registry import MODELS

    return {"models": ("sfbench_jax.models", MODELS, ModelSpec),
            "methods": ("sfbench_jax.methods", METHODS, MethodSpec),
            "faults": ("sfbench_jax.faults", FAULTS, FaultSpec),
            "datasets": ("sfbench_jax.data", DATASETS, DatasetSpec)}


def test_collecting_the_built_ins_keeps_every_registry_order() -> None:
    from sfbench_jax.data.registry import DISPLAY_ORDER
    from sfbench_jax.report.architectures import ARCHITECTURE_ORDER
    from sfbench_jax.report.paper import METHOD_ORDER

    for kind, (_, registry, _) in _registries().items():
        assert tuple(registry)[:len(BUILT_IN_ORDER[kind])] == BUILT_IN_ORDER[kind], kind
    assert tuple(ARCHITECTURE_ORDER)[:8] == BUILT_IN_ORDER["models"]
    assert tuple(METHOD_ORDER)[:7] == BUILT_IN_ORDER["methods"][1:]
    assert DISPLAY_ORDER[:4] == BUILT_IN_ORDER["datasets"][:4]
    collected = tuple(spec.name for spec in plugins.package_specs("sfbench_jax.models", ModelSpec))
    assert collected[:8] == BUILT_IN_ORDER["models"]  # a new built-in without a rank comes after them


def test_every_module_of_a_registry_package_that_binds_a_spec_is_registered() -> None:
    """Imports every module of the four packages (not only those `package_specs` picks by their source)."""
    for kind, (package, registry, spec_type) in _registries().items():
        modules = [info.name for info in pkgutil.iter_modules(importlib.import_module(package).__path__)]
        specs = {name: getattr(importlib.import_module(f"{package}.{name}"), "SPEC", None) for name in modules}
        bound = {name: spec for name, spec in specs.items() if spec is not None}
        assert all(isinstance(spec, spec_type) for spec in bound.values()), (kind, bound)
        assert all(registry.get(spec.name) is spec for spec in bound.values()), kind
        assert {spec.name for spec in bound.values()} == {spec.name for spec in plugins.package_specs(package,
                                                                                                    spec_type)}


def test_package_specs_collects_one_module_each_in_display_order(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """Ranked built-ins by rank, unranked ones after by name; a helper module without SPEC is never imported."""
    package = tmp_path / "fake_builtins_pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "helper.py").write_text("raise RuntimeError('a module without SPEC must not be imported')\n")
    spec_module = """
        from sfbench_jax.models import dlinear
        from sfbench_jax.models.spec import ModelSpec
        SPEC{annotation} = ModelSpec(name={name!r}, config_cls=dlinear.DLinearConfig, is_valid=dlinear.is_valid,
                         module_cls=dlinear.DLinear, is_trainable=True, is_channel_independent=True,
                         supports_revin=True, display_rank={rank})
        """
    for module, name, rank, annotation in (("a_first", "zeta", 0, ""), ("b_second", "alpha", 1, ": ModelSpec"),
                                           ("c_late", "late_b", None, ""), ("d_late", "late_a", None, "")):
        (package / f"{module}.py").write_text(textwrap.dedent(spec_module.format(name=name, rank=rank,
                                                                                 annotation=annotation)))
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        found = plugins.package_specs("fake_builtins_pkg", ModelSpec)
        assert [spec.name for spec in found] == ["zeta", "alpha", "late_a", "late_b"]
        assert "fake_builtins_pkg.helper" not in sys.modules
        (package / "e_wrong.py").write_text("SPEC = 'not a spec'\n")
        message = _one_line_plugin_error(plugins.package_specs, "fake_builtins_pkg", ModelSpec)
        assert "Module fake_builtins_pkg.e_wrong binds SPEC to str" in message and "Rename the variable" in message
    finally:
        for name in [module for module in sys.modules if module.startswith("fake_builtins_pkg")]:
            del sys.modules[name]


def test_preset_packages_must_name_an_installed_package(installed) -> None:
    installed("""
        [sfbench_jax.conf]
        presets = fake_plugin_pkg.conf:PRESETS
        """)
    assert plugins.preset_packages() == ()
    assert "must name a package" in _broken_line("conf", "presets")
    installed("""
        [sfbench_jax.conf]
        presets = fake_plugin_pkg_missing.conf
        """)
    assert plugins.preset_packages() == ()
    assert "names no importable package" in _broken_line("conf", "presets")


# ----------------------------------------------------------------------------------------------------------------
# Presets of plug-ins: preset_grid and Hydra's search path

PRESET_FILES = {
    "fake_plugin_pkg/__init__.py": "",
    "fake_plugin_pkg/conf/__init__.py": "",
    "fake_plugin_pkg/conf/model/fake_net.yaml": """
        defaults:
          - /schema/model@_here_
        name: fake_net
        grid:
          width: [4, 8]
          lr: [0.001]
        """,
    # a plug-in preset with a built-in's name never shadows the built-in
    "fake_plugin_pkg/conf/model/dlinear.yaml": """
        defaults:
          - /schema/model@_here_
        name: dlinear
        grid:
          shadowed: [1]
        """,
    "fake_plugin_pkg/conf/method/fake_method.yaml": """
        defaults:
          - /schema/method@_here_
        name: fake_method
        grid:
          strength: [0.1, 0.2]
        bogus_field: 1
        """,
}
PRESET_ENTRY = """
    [sfbench_jax.conf]
    fake = fake_plugin_pkg.conf
    """


def test_preset_grid_reads_plug_in_presets_after_the_built_ins(installed) -> None:
    installed(PRESET_ENTRY, PRESET_FILES)
    assert plugins.preset_packages() == ("fake_plugin_pkg.conf",)
    assert dict(presets.preset_grid("model", "fake_net")) == {"width": (4, 8), "lr": (0.001,)}
    assert "moving_avg" in presets.preset_grid("model", "dlinear")
    with pytest.raises(FileNotFoundError, match=r"No preset model/nothing\.yaml in the installed packages "
                                                r"sfbench_jax\.conf, fake_plugin_pkg\.conf"):
        presets.preset_path("model", "nothing")


def _compose(overrides: list[str]):
    from hydra import compose, initialize_config_module

    import sfbench_jax.cli.main  # noqa: F401  (registers the ConfigStore schemas the presets extend)

    with initialize_config_module(config_module="sfbench_jax.conf", version_base="1.3"):
        return compose(config_name="config", overrides=overrides)


def test_hydra_composes_plug_in_presets_against_the_same_schemas(installed) -> None:
    from hydra.errors import ConfigCompositionException

    installed(PRESET_ENTRY, PRESET_FILES)
    cfg = _compose(["model=fake_net"])
    assert cfg.model.name == "fake_net" and list(cfg.model.grid) == ["width", "lr"]
    assert cfg.model.hparams == {} and cfg.model.target is None  # the schema's defaults
    assert "moving_avg" in _compose(["model=dlinear"]).model.grid  # built-in first
    # validated like a built-in preset
    with pytest.raises(ConfigCompositionException, match="Key 'bogus_field' not in 'MethodConfig'"):
        _compose(["method=fake_method"])


def test_the_search_path_is_unchanged_without_plug_ins_and_for_other_applications() -> None:
    from hydra._internal.config_search_path_impl import ConfigSearchPathImpl

    from hydra_plugins.sfbench_searchpath.searchpath import SfbenchPluginPresets

    _clear_caches()
    own = ConfigSearchPathImpl()
    own.append("main", "pkg://sfbench_jax.conf")
    SfbenchPluginPresets().manipulate_search_path(own)
    assert [element.path for element in own.get_path()] == ["pkg://sfbench_jax.conf", *(
        f"pkg://{package}" for package in plugins.preset_packages())]
    other = ConfigSearchPathImpl()
    other.append("main", "pkg://another_app.conf")
    SfbenchPluginPresets().manipulate_search_path(other)
    assert [element.path for element in other.get_path()] == ["pkg://another_app.conf"]


def test_no_file_of_the_package_or_its_presets_names_the_demo_plug_in() -> None:
    pattern = re.compile("|".join(PLUGIN_NAMES))
    named = [f"{path.relative_to(ROOT)}: {match.group(0)}"
             for top in ("sfbench_jax", "conf") for path in sorted((ROOT / top).rglob("*"))
             if path.is_file() and "__pycache__" not in path.parts and path.suffix in {".py", ".yaml", ".md", ""}
             for match in [pattern.search(path.read_text(errors="replace"))] if match]
    assert not named, f"the engine names the demo plug-in: {named}"


# ----------------------------------------------------------------------------------------------------------------
# Acceptance: the demo plug-in, really installed, run by the commands


@pytest.fixture(scope="module")
def demo_plugin(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """Install tests/fixtures/plugin_pkg with pip (offline, into a folder) and return the commands' environment.

    The package is built from a copy, so setuptools' build folders never land in the checkout.
    """
    source = tmp_path_factory.mktemp("plugin_source") / "plugin_pkg"
    shutil.copytree(FIXTURE, source, ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__"))
    target = tmp_path_factory.mktemp("plugin_site")
    completed = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--no-deps", "--no-build-isolation", "--no-index",
         "--no-cache-dir", "--disable-pip-version-check", "--quiet", "--target", str(target), str(source)],
        capture_output=True, text=True, timeout=300, check=False)
    assert completed.returncode == 0, completed.stdout[-2000:] + completed.stderr[-3000:]
    assert (target / "sfbench_demo_plugin" / "conf" / "model" / "demo_mlp.yaml").is_file()
    assert (target / "sfbench_demo_plugin" / "data" / "demo_sensors.csv").is_file()
    environment = dict(os.environ)
    environment["PYTHONPATH"] = os.pathsep.join(filter(None, (str(target), environment.get("PYTHONPATH"))))
    return environment


def _command(name: str, *arguments: str, environment: dict[str, str], cwd: Path,
             timeout: int = 600) -> subprocess.CompletedProcess:
    return subprocess.run([str(BIN / name), *arguments], capture_output=True, text=True, env=environment, cwd=cwd,
                          timeout=timeout, check=False)


DISCOVERY = """
import json
from sfbench_jax.cli.main import to_run_config
from sfbench_jax.data.registry import DATASETS
from sfbench_jax.faults.registry import FAULTS, extra_scenarios
from sfbench_jax.methods.registry import METHODS
from sfbench_jax.models.registry import MODELS, expand_grid
from hydra import compose, initialize_config_module

with initialize_config_module(config_module="sfbench_jax.conf", version_base="1.3"):
    cfg = compose(config_name="config", overrides=[
        "model=demo_mlp", "method=demo_jitter", "dataset=demo_sensors", "profile=tiny"])
run = to_run_config(cfg)
print(json.dumps({
    "models": list(MODELS), "methods": list(METHODS), "datasets": list(DATASETS), "faults": list(FAULTS),
    "extra_scenarios": [fault.name for fault in extra_scenarios()], "model_grid": len(expand_grid("demo_mlp")),
    "method_kinds": [METHODS["demo_jitter"].kind, METHODS["demo_clip"].kind],
    "labels": [MODELS["demo_mlp"].display_label, METHODS["demo_clip"].display_label],
    "fault_id": FAULTS["demo_quantise"].index,
    "run": [run.model.name, run.method.name, run.dataset.name, dict(run.method.grid or {})],
}))
"""


def test_the_installed_plug_in_registers_every_kind_and_its_presets(demo_plugin: dict[str, str],
                                                                    tmp_path: Path) -> None:
    completed = subprocess.run([sys.executable, "-c", DISCOVERY], capture_output=True, text=True, env=demo_plugin,
                               cwd=tmp_path, timeout=300, check=False)
    assert completed.returncode == 0, completed.stderr[-3000:]
    found = json.loads(completed.stdout.strip().splitlines()[-1])
    assert found["models"][-1] == "demo_mlp" and "dlinear" in found["models"]  # built-ins first, then plug-ins
    assert found["methods"][-2:] == ["demo_clip", "demo_jitter"]  # plug-ins by entry-point name
    assert found["datasets"][-1] == "demo_sensors" and found["faults"][-1] == "demo_quantise"
    assert found["extra_scenarios"] == ["demo_quantise"] and found["fault_id"] >= 2**16
    assert found["model_grid"] == 4 and found["method_kinds"] == ["train", "wrap"]
    assert found["labels"] == ["Demo MLP", "Input clip"]
    assert found["run"][:3] == ["demo_mlp", "demo_jitter", "demo_sensors"]


def test_a_plug_in_dataset_and_fault_scenario_run_end_to_end(demo_plugin: dict[str, str], tmp_path: Path) -> None:
    run = tmp_path / "run"
    completed = _command("sfbench", "model=seasonal_naive", "dataset=demo_sensors", "profile=tiny",
                         "eval.scenarios=[demo_quantise]", f"hydra.run.dir={run}",
                         environment=demo_plugin, cwd=tmp_path)
    assert completed.returncode == 0, completed.stderr[-3000:]
    summary = pd.read_csv(run / "summary.csv").iloc[0]
    assert (summary["dataset"], summary["architecture"]) == ("demo_sensors", "seasonal_naive")
    assert {"d_demo_quantise", "mse_demo_quantise"} <= set(summary.index)
    assert summary["worst_scenario"] in PAPER_SCENARIOS  # the extra scenario is scored beside the eight, not in D_w
    assert summary["d_w"] == max(summary[f"d_{key}"] for key in PAPER_SCENARIOS)
    assert (run / "run_record.json").is_file()  # sealed: its numbers were checked against its per-window losses


@pytest.mark.slow
def test_a_sweep_of_plug_ins_beside_built_ins_reaches_table4(demo_plugin: dict[str, str], tmp_path: Path) -> None:
    """The acceptance test of issue 22: about 2 minutes on two loaded cores (six jobs of profile=tiny)."""
    sweep = tmp_path / "sweep"
    completed = _command("sfbench", "-m", "model=demo_mlp,dlinear", "method=baseline,demo_jitter,demo_clip",
                         "dataset=demo_sensors", "profile=tiny", "eval.scenarios=[demo_quantise]",
                         f"hydra.sweep.dir={sweep}", environment=demo_plugin,
                         cwd=tmp_path, timeout=1200)
    assert completed.returncode == 0, completed.stderr[-3000:]
    assert not list(sweep.glob("*/job_failed.json")), [p.read_text()[:500] for p in sweep.glob("*/job_failed.json")]
    summary = pd.read_csv(sweep / "summary.csv")
    assert {(row.architecture, row.method) for row in summary.itertuples()} == {
        (model, method) for model in ("demo_mlp", "dlinear") for method in ("baseline", "demo_jitter", "demo_clip")}
    assert summary["d_demo_quantise"].notna().all()

    report = tmp_path / "report"
    completed = _command("sfbench-report", "table4", "--runs", str(sweep), "--output", str(report),
                         environment=demo_plugin, cwd=tmp_path)
    assert completed.returncode == 0, completed.stdout[-2000:] + completed.stderr[-2000:]
    architectures = pd.read_csv(report / "table4_architectures.csv")
    methods = pd.read_csv(report / "table4_methods.csv")
    assert {"dlinear", "demo_mlp"} <= set(architectures.columns), list(architectures.columns)
    assert {"demo_clip", "demo_jitter"} <= set(methods.columns), list(methods.columns)
    assert set(architectures["dataset"]) == {"demo_sensors"}
    table = (report / "table4.md").read_text()
    for label in ("DLinear", "Demo MLP", "Gain jitter", "Input clip", "Demo sensors"):
        assert label in table, table
