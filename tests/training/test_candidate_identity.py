"""Issue 43, item 1: a stored candidate is served only to the code that trained it.

Each test is the reproduction: a sweep trains into a store, the code that shapes the candidates changes (the
engine's source, a helper module a plug-in model imports, the JAX version), and the rerun retrains them, saying in
one line how many and why, while the old generation stays on disk untouched. An untouched rerun trains nothing.
The changes are real files: a copy of the engine's packages whose digest is the engine identity, a plug-in
distribution on `sys.path`, a `jax-*.dist-info` ahead of the installed one. Each test trains two tiny DLinear
candidates in one vectorised program (compiled once per test process).
"""

from __future__ import annotations

import shutil
import sys
import textwrap
from pathlib import Path

import pytest

from sfbench_jax.config import TrainConfig
from sfbench_jax.data import load, prepare
from sfbench_jax.models.registry import MODELS
from sfbench_jax.plugins import code_identity
from sfbench_jax.training import CandidateStore, plan_search, run_search

OPTIONS = TrainConfig(max_epochs=1, patience=1, steps_per_epoch=4, progress=False, candidate_budget=2)
FIXED = {"moving_avg": 25, "individual": False, "init_weights": False}
GRID = {"lr": [1e-3, 5e-4]}


@pytest.fixture(scope="module")
def etth1():
    return prepare(load("etth1"))


@pytest.fixture(autouse=True)
def fresh_identity():
    """Every digest computed anew, as a new process would (and again after the test)."""
    code_identity.clear_caches()
    yield
    code_identity.clear_caches()


def sweep(data, store: CandidateStore, architecture: str = "dlinear", **kwargs) -> tuple[list, list[str]]:
    """One cell's sweep as `sfbench` runs it; returns the records and the lines it logged."""
    lines: list[str] = []
    plan = plan_search(data, MODELS[architecture], options=OPTIONS, grid=GRID, fixed=FIXED, **kwargs)
    return run_search(data, plan, store=store, options=OPTIONS, log=lines.append), lines


def stored(store: CandidateStore) -> dict[Path, bytes]:
    return {path: path.read_bytes() for path in sorted(store.root.rglob("result.json"))}


def check_retrained(data, store: CandidateStore, before: dict[Path, bytes], reason: str) -> None:
    """The rerun after a change: both candidates retrained with one line naming the reason; the old records kept
    byte for byte; a second rerun trains nothing."""
    _, lines = sweep(data, store)
    assert "0 already in the store, 2 to train" in lines[0], lines
    assert lines[1] == (f"dlinear: 2 stored candidates were trained by other code ({reason}); retraining them "
                        "(the stored ones are kept, not used)"), lines
    after = stored(store)
    assert len(after) == 4 and all(after[path] == text for path, text in before.items())
    _, again = sweep(data, store)
    assert "2 already in the store, 0 to train" in again[0] and len(again) == 1, again


def test_an_engine_edit_retrains_stored_candidates(etth1, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The engine digest is of a real copy of the packages; the copy's `ADAM_EPS` is edited between the runs."""
    copies = []
    for root in code_identity.engine_roots():
        copies.append(tmp_path / "engine" / root.name)
        shutil.copytree(root, copies[-1], ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    monkeypatch.setattr(code_identity, "engine_roots", lambda: copies)
    store = CandidateStore(tmp_path / "store")
    _, lines = sweep(etth1, store)
    assert "0 already in the store, 2 to train" in lines[0] and len(lines) > 1
    _, lines = sweep(etth1, store)  # untouched: nothing trained
    assert "2 already in the store, 0 to train" in lines[0] and len(lines) == 1, lines
    before = stored(store)
    loop = tmp_path / "engine" / "sfbench_jax" / "training" / "loop.py"
    loop.write_text(loop.read_text().replace("ADAM_EPS = 0.9, 0.999, 1e-8", "ADAM_EPS = 0.9, 0.999, 1e-7"))
    code_identity.clear_caches()
    check_retrained(etth1, store, before, "engine source changed")


def test_a_jax_version_change_retrains_stored_candidates(etth1, tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """Another JAX: a `jax-99.0.0.dist-info` ahead of the installed one on `sys.path` (what `pip install` of another
    version leaves for `importlib.metadata`)."""
    import jax

    store = CandidateStore(tmp_path / "store")
    sweep(etth1, store)
    before = stored(store)
    info = tmp_path / "site" / "jax-99.0.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: jax\nVersion: 99.0.0\n")
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    code_identity.clear_caches()
    assert code_identity.library_versions()["jax"] == "99.0.0"
    check_retrained(etth1, store, before, f"library versions changed: jax {jax.__version__} -> 99.0.0")


def test_an_old_store_keeps_working_and_says_why_it_retrains(etth1, tmp_path: Path) -> None:
    """Candidates stored before the engine's identity was recorded (no `engine` field): kept, not served."""
    import json

    from sfbench_jax.training.store import candidate_hash

    store = CandidateStore(tmp_path / "store")
    sweep(etth1, store)
    for path in list(store.root.rglob("result.json")):  # what an older sfbench-jax wrote: no engine identity
        record = json.loads(path.read_text())
        del record["identity"]["engine"]
        record["candidate_hash"] = candidate_hash(record["identity"])
        new = path.parent.parent / record["candidate_hash"]
        path.parent.rename(new)
        (new / "result.json").write_text(json.dumps(record))
    check_retrained(etth1, store, stored(store),
                    "engine source and JAX versions not recorded: stored by an older sfbench-jax")


HELPER = "SCALE = {scale}\n"
MODEL = """
    import dataclasses

    import jax.numpy as jnp
    from flax import nnx

    from sfbench_jax.data.windows import select_targets
    from sfbench_jax.models.spec import ModelSpec
    from helper_plugin_pkg.helper import SCALE


    @dataclasses.dataclass(frozen=True)
    class TinyConfig:
        width: int = 4


    class Tiny(nnx.Module):
        def __init__(self, *, width=4, input_len, horizon, num_channels, target_indices, rngs):
            self.target_indices = tuple(target_indices)
            self.linear = nnx.Linear(input_len, horizon, rngs=rngs)

        def predict_all_channels(self, x):
            return SCALE * jnp.swapaxes(self.linear(jnp.swapaxes(x, 1, 2)), 1, 2)

        def __call__(self, x):
            return select_targets(self.predict_all_channels(x), self.target_indices)


    SPEC = ModelSpec(name="helper_tiny", config_cls=TinyConfig, is_valid=lambda hparams, *, input_len=96: True,
                     module_cls=Tiny, is_trainable=True, is_channel_independent=False, supports_revin=True,
                     label="HelperTiny")
    """


def test_a_helper_module_edit_in_a_plug_in_retrains_its_candidates(etth1, tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """A plug-in model whose forward reads a constant from a helper module (not its spec module); the helper is
    edited in place, the distribution's version unchanged (an editable install's everyday case)."""
    from sfbench_jax.models.registry import MODELS
    from sfbench_jax.models.spec import ModelSpec
    from sfbench_jax.plugins import entry_points as plugins

    site = tmp_path / "site"
    package = site / "helper_plugin_pkg"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "helper.py").write_text(HELPER.format(scale=1.0))
    (package / "model.py").write_text(textwrap.dedent(MODEL))
    info = site / "helper_plugin-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: helper-plugin\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[sfbench_jax.models]\nhelper_tiny = helper_plugin_pkg.model:SPEC\n")
    monkeypatch.syspath_prepend(str(site))

    try:
        plugins.discovered.cache_clear()  # registered as the registry does at import
        for spec in plugins.discovered("models", ModelSpec):
            monkeypatch.setitem(MODELS, spec.name, spec)
        store = CandidateStore(tmp_path / "store")
        options_fixed = {"width": 4}
        lines: list[str] = []

        def run() -> list[str]:
            lines.clear()
            plan = plan_search(etth1, MODELS["helper_tiny"], options=OPTIONS, grid=GRID, fixed=options_fixed)
            run_search(etth1, plan, store=store, options=OPTIONS, log=lines.append)
            return list(lines)

        assert "0 already in the store, 2 to train" in run()[0]
        assert "2 already in the store, 0 to train" in run()[0]
        before = stored(store)
        (package / "helper.py").write_text(HELPER.format(scale=2.0))
        code_identity.clear_caches()  # a new process reads the files anew (the loaded module is kept: one compile)
        first = run()
        assert "0 already in the store, 2 to train" in first[0], first
        assert first[1] == ("helper_tiny: 2 stored candidates were trained by other code (plug-in package files "
                            "changed: helper-plugin==0.1); retraining them (the stored ones are kept, not used)"), first
        after = stored(store)
        assert len(after) == 4 and all(after[path] == text for path, text in before.items())
        assert "2 already in the store, 0 to train" in run()[0]
    finally:
        plugins.discovered.cache_clear()
        for name in [module for module in sys.modules if module.startswith("helper_plugin_pkg")]:
            del sys.modules[name]


def test_an_external_models_target_code_is_part_of_its_identity(etth1, tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """`model=external model.target=pkg.module:predict`: a helper of the target's package edited, new identity."""
    package = tmp_path / "ext_forecast_pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "helper.py").write_text("LAST = -1\n")
    (package / "forecast.py").write_text("import numpy as np\nfrom ext_forecast_pkg.helper import LAST\n"
                                         "def predict(x, *, horizon, target_indices):\n"
                                         "    return np.repeat(x[:, LAST:, list(target_indices)], horizon, axis=1)\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    fixed = {"target": "ext_forecast_pkg.forecast:predict"}
    try:
        first = plan_search(etth1, MODELS["external"], options=OPTIONS, fixed=fixed)
        (package / "helper.py").write_text("LAST = -2\n")
        again = plan_search(etth1, MODELS["external"], options=OPTIONS, fixed=fixed)
        assert again.keys == first.keys  # once per process
        code_identity.clear_caches()
        second = plan_search(etth1, MODELS["external"], options=OPTIONS, fixed=fixed)
        assert second.keys != first.keys
        from sfbench_jax.training.sweep import code_changes

        assert code_changes(first.identities[0], second.identities[0]) == ["the external model's target code changed"]
    finally:
        for name in [module for module in sys.modules if module.startswith("ext_forecast_pkg")]:
            del sys.modules[name]
