"""Issue 43, item 2: a method with state changes what a candidate hash means, so it is refused before any work.

A method's functions get their recipe read-only (one that pops or sets a key fails loudly instead of leaving the
run's `hyperparameters` and `candidates.csv` without the value), and its transform must be pure: built twice from
one recipe and traced twice on the same inputs, it gives the same programs (a global counter, NumPy's global RNG
or state kept between candidates gives two). Each reproduction is a plug-in distribution (`stateful-plugin`) on
`sys.path`, registered into the live registries, and `sfbench` run in this process (as in
tests/test_plugin_contracts.py): exit 2, one line naming the package, the entry point and the broken property, no
run folder, nothing trained.
"""

from __future__ import annotations

import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
from test_plugin_contracts import TINY, sfbench

from sfbench_jax.methods.registry import METHODS
from sfbench_jax.methods.spec import MethodSpec
from sfbench_jax.plugins import entry_points as plugins
from sfbench_jax.plugins import presets

DIST = "stateful-plugin"

METHODS_MODULE = """
    from dataclasses import dataclass

    import jax
    import jax.numpy as jnp
    import numpy as np

    from sfbench_jax.methods.spec import MethodSpec
    from sfbench_jax.methods.training import PlainTraining

    BUILT = 0  # candidates built so far (the counter that makes a hash mean two models)
    TRACED = 0


    @dataclass(frozen=True)
    class Jitter(PlainTraining):
        sigma: float

        VALUE_FIELDS = ("sigma",)

        def training_inputs(self, key, x, loss_at):
            return x * (1.0 + self.sigma * jax.random.normal(key, x.shape, jnp.float32))


    @dataclass(frozen=True)
    class TraceCounting(Jitter):
        def training_inputs(self, key, x, loss_at):
            global TRACED
            TRACED += 1  # a Python constant baked into each trace
            return x * (1.0 + 0.01 * TRACED)


    @dataclass(frozen=True)
    class GlobalNoise(Jitter):
        def training_inputs(self, key, x, loss_at):
            return x + np.random.normal(size=x.shape).astype(np.float32)  # NumPy's global RNG, not the key


    def popping(recipe, facts):
        return Jitter(sigma=float(recipe.pop("sigma")))


    def counting(recipe, facts):
        global BUILT
        BUILT += 1
        return Jitter(sigma=float(recipe["sigma"]) * BUILT)


    def plain(cls):
        return lambda recipe, facts: cls(sigma=float(recipe["sigma"]))


    def _spec(name, transform, variant_id=lambda recipe: f"sigma{recipe['sigma']}"):
        return MethodSpec(name=name, kind="train", label=name, transform=transform, variant_id=variant_id)


    def _popping_id(recipe):
        recipe["seen"] = True
        return f"sigma{recipe['sigma']}"


    POPPING = _spec("popping", popping)
    COUNTING = _spec("counting", counting)
    TRACE_COUNTING = _spec("trace_counting", plain(TraceCounting))
    GLOBAL_NOISE = _spec("global_noise", plain(GlobalNoise))
    MARKING_ID = _spec("marking_id", plain(Jitter), variant_id=_popping_id)
    PURE = _spec("pure_jitter", plain(Jitter))
    """

NAMES = {"popping": "POPPING", "counting": "COUNTING", "trace_counting": "TRACE_COUNTING",
         "global_noise": "GLOBAL_NOISE", "marking_id": "MARKING_ID", "pure_jitter": "PURE"}
PRESET = """
    defaults:
      - /schema/method@_here_
    name: {name}
    grid:
      sigma: [0.1, 0.2]
    """


def _clear_caches() -> None:
    plugins.discovered.cache_clear()
    plugins.preset_packages.cache_clear()
    presets.preset_grid.cache_clear()


@pytest.fixture
def stateful_plugin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The `stateful-plugin` distribution as pip installs it, registered as the registries do at import."""
    site = tmp_path / "site"
    info = site / "stateful_plugin-0.2.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {DIST}\nVersion: 0.2\n")
    entries = "\n".join(f"{name} = stateful_plugin_pkg.methods:{value}" for name, value in NAMES.items())
    (info / "entry_points.txt").write_text(f"[sfbench_jax.methods]\n{entries}\n"
                                           "[sfbench_jax.conf]\nstateful_plugin_pkg = stateful_plugin_pkg.conf\n")
    files = {"stateful_plugin_pkg/__init__.py": "", "stateful_plugin_pkg/methods.py": METHODS_MODULE,
             "stateful_plugin_pkg/conf/__init__.py": "",
             **{f"stateful_plugin_pkg/conf/method/{name}.yaml": PRESET.format(name=name) for name in NAMES}}
    for relative, text in files.items():
        (site / relative).parent.mkdir(parents=True, exist_ok=True)
        (site / relative).write_text(textwrap.dedent(text))
    monkeypatch.syspath_prepend(str(site))
    _clear_caches()
    for spec in plugins.discovered("methods", MethodSpec):
        monkeypatch.setitem(METHODS, spec.name, spec)
    yield site
    _clear_caches()
    for name in [module for module in sys.modules if module.startswith("stateful_plugin_pkg")]:
        del sys.modules[name]


def refused(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, method: str) -> str:
    """`sfbench model=dlinear method=METHOD` (profile=tiny) refused: exit 2, one line naming the package and the
    entry point, no run folder, nothing stored. Returns the line."""
    run, store = tmp_path / "run", tmp_path / "store"
    code, stderr = sfbench(monkeypatch, "model=dlinear", f"method={method}", *TINY, f"hydra.run.dir={run}",
                           f"train.store_dir={store}")
    lines = stderr.strip().splitlines()
    assert code == 2, stderr[-3000:]
    assert len(lines) == 1 and lines[0].startswith("sfbench: error: "), stderr[-3000:]
    assert f"Method {method!r} (package {DIST!r} 0.2, entry point '{method} = stateful_plugin_pkg.methods:" \
        in lines[0], lines[0]
    assert not run.exists() and not (store.exists() and any(store.rglob("result.json")))
    return lines[0]


def test_a_method_that_pops_its_recipe_is_refused_before_any_work(stateful_plugin, tmp_path, monkeypatch) -> None:
    line = refused(monkeypatch, tmp_path, "popping")
    assert "transform(recipe, facts) must return a step transform; it returned nothing: it raised AttributeError: " \
           "'mappingproxy' object has no attribute 'pop' (recipes are read-only: copy one with dict(recipe) before " \
           "changing it)" in line, line


def test_a_variant_id_that_writes_into_its_recipe_is_refused(stateful_plugin, tmp_path, monkeypatch) -> None:
    line = refused(monkeypatch, tmp_path, "marking_id")
    assert "variant_id(recipe) must return a str; it returned nothing: it raised TypeError: 'mappingproxy' object " \
           "does not support item assignment (recipes are read-only" in line, line


def test_a_method_counting_the_candidates_it_built_is_refused(stateful_plugin, tmp_path, monkeypatch) -> None:
    line = refused(monkeypatch, tmp_path, "counting")
    assert "is not pure: transform(recipe, facts) built Jitter(sigma=" in line, line
    assert "from the same recipe, so one candidate hash would name different trained models" in line, line
    assert line.endswith("See docs/extending.md, Method purity."), line


def test_a_transform_with_a_trace_time_counter_is_refused(stateful_plugin, tmp_path, monkeypatch) -> None:
    line = refused(monkeypatch, tmp_path, "trace_counting")
    assert "is not pure: transform.training_inputs(key, x (2, 96, 12), loss_at), traced twice on the same inputs, " \
           "gave two different programs" in line, line


def test_a_transform_drawing_from_numpys_global_rng_is_refused(stateful_plugin, tmp_path, monkeypatch) -> None:
    line = refused(monkeypatch, tmp_path, "global_noise")
    assert "is not pure: transform.training_inputs(key, x (2, 96, 12), loss_at), traced twice" in line, line


def test_pure_methods_pass_and_get_their_recipe_read_only(stateful_plugin) -> None:
    """A pure plug-in method and the fast built-ins pass the checks; what reaches a method cannot be changed."""
    from sfbench_jax.data.registry import get_dataset
    from sfbench_jax.models.registry import get_spec
    from sfbench_jax.pipeline.contracts import Shapes, check_transform, check_variant_id

    shapes = Shapes.of(get_dataset("beijing_air_tiantan"))
    hparams = {"moving_avg": 25, "individual": False, "init_weights": False, "lr": 1e-3}
    for name, recipe in (("pure_jitter", {"sigma": 0.1}), ("randomized_training", {"sigma": 0.1}),
                         ("adversarial_training", {"eps": 0.05, "steps": 3}), ("revin", {"affine": True})):
        check_variant_id(METHODS[name], recipe)
        check_transform(METHODS[name], recipe, get_spec("dlinear"), hparams, shapes)
    seen = []
    spec = MethodSpec(name="looker", kind="train", label="", variant_id=lambda recipe: seen.append(recipe) or "v")
    check_variant_id(spec, {"sigma": 0.1})
    with pytest.raises(TypeError):
        seen[0]["sigma"] = 0.2  # type: ignore[index]
