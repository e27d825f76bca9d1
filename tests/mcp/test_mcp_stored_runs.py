"""Stored files are data, never code (issue 21, defect 4 and the run-name items of defect 7), against the real
server over stdio: a planted run folder whose manifest names an external model imports nothing; the runs root is
an explicit setting; unknown, path-like and symlinked run names, a candidate store outside the roots and a
symbolic link out of the data root are tagged tool errors that reveal no server path and no other run's name.

The runs root holds one real SeasonalNaive run of ETTh1 (the `sfbench` job, eval=quick, run in the test's
process) and copies of it with planted manifests.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters
from mcp_helpers import subprocess_env
from sfbench_cli import run_in_process

pytestmark = pytest.mark.anyio

EVIL_MODULE = '''import os, pathlib
pathlib.Path(__file__).with_name(f"pwned_{os.getpid()}").write_text("imported")
def predict(x):
    return x[:, -1:, :1]
'''


def _plant(source: Path, target: Path, **config: Any) -> None:
    shutil.copytree(source, target)
    manifest = json.loads((target / "manifest.json").read_text())
    for dotted, value in config.items():
        section, _, key = dotted.partition("__")
        if key:
            manifest["config"][section][key] = value
        else:
            manifest["config"][section] = value
    (target / "manifest.json").write_text(json.dumps(manifest))
    record = target / "run_record.json"
    if record.exists():  # a planter re-records the folder, as anyone can: the record is no signature
        from sfbench_jax.run_folder.record import write_record

        write_record(target, run_key=json.loads(record.read_text())["run_key"])


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory, data_root: Path) -> dict[str, Path]:
    """runs/etth1/{sn_quick (real), evil (external model), far_store (store outside), linked (a symlink out)}."""
    base = tmp_path_factory.mktemp("stored_runs")
    runs, store, real = base / "runs", base / "store", base / "runs" / "etth1" / "sn_quick"
    run_in_process(["model=seasonal_naive", "eval=quick", "eval.progress=false", f"train.store_dir={store}",
                    f"data_root={data_root}"], real)
    store.mkdir(exist_ok=True)
    _plant(real, runs / "etth1" / "evil",
           model={"name": "external", "target": "evil_mod:predict", "grid": {}, "hparams": {}})
    _plant(real, runs / "etth1" / "far_store", train__store_dir=str(base / "elsewhere"))
    _plant(real, base / "outside" / "linked")
    (runs / "etth1" / "linked").symlink_to(base / "outside" / "linked", target_is_directory=True)
    cwd = base / "cwd"  # the server's working folder: where `external` would find evil_mod
    cwd.mkdir()
    (cwd / "evil_mod.py").write_text(EVIL_MODULE)
    return {"base": base, "runs": runs, "store": store, "cwd": cwd, "data_root": data_root}


def _params(tree: dict[str, Path], *extra: str, runs_root: bool = True) -> StdioServerParameters:
    args = ["-m", "sfbench_jax.mcp.server", "--data-root", str(tree["data_root"]), "--group", "benchmark"]
    if runs_root:
        args += ["--runs-root", str(tree["runs"]), "--store-root", str(tree["store"])]
    return StdioServerParameters(command=sys.executable, args=[*args, *extra], env=subprocess_env(),
                                 cwd=str(tree["cwd"]))


async def _curves(params: StdioServerParameters, *runs: str) -> list[Any]:
    async with Client(params) as client:
        return [await client.call_tool("severity_curves", {"dataset": "etth1", "run": run, "k": 200,
                                                           "severities": [0.0, 1.0]}) for run in runs]


def _assert_private(text: str, tree: dict[str, Path], *names: str) -> None:
    for secret in (str(tree["base"]), str(tree["base"].resolve()), str(Path.home()), *names):
        assert secret not in text, (secret, text)


def test_the_planted_module_would_run_if_imported(tree: dict[str, Path]) -> None:
    # Guards the next test: from the server's working folder, importing evil_mod leaves a marker.
    subprocess.run([sys.executable, "-c", "import evil_mod"], cwd=tree["cwd"], check=True, env=subprocess_env())
    markers = list(tree["cwd"].glob("pwned_*"))
    assert markers
    for marker in markers:
        marker.unlink()


async def test_defect4_planted_manifest_imports_nothing(tree: dict[str, Path]) -> None:
    # Issue 21, defect 4: `severity_curves(dataset, run)` on a planted run whose manifest says
    # model: {name: external, target: evil_mod:predict} imported and ran evil_mod.
    (result,) = await _curves(_params(tree), "evil")
    text = result.content[0].text
    assert result.is_error and "[refused]" in text and "host model 'external'" in text, text
    assert list(tree["cwd"].glob("pwned_*")) == []
    _assert_private(text, tree, "sn_quick", "far_store", "linked")


async def test_runs_root_is_explicit_and_the_real_run_works(tree: dict[str, Path]) -> None:
    (absent,) = await _curves(_params(tree, runs_root=False), "sn_quick")
    assert absent.is_error and "[unavailable]" in absent.content[0].text
    assert "--runs-root" in absent.content[0].text
    (stored,) = await _curves(_params(tree), "sn_quick")
    assert not stored.is_error, stored.content
    assert stored.structured_content["curves"]["model"] == "seasonal_naive"
    assert stored.structured_content["curves"]["severities"] == [0.0, 1.0]


#: Run names that must reveal nothing, with the tag of their error.
REFUSED_NAMES = [
    ("gru_paper", "[unknown_run]"),          # no such run: other runs are not listed
    ("../etth1/sn_quick", "[unknown_run]"),  # path-like
    ("/etc/passwd", "[unknown_run]"),
    ("sn_quick/../evil", "[unknown_run]"),
    (".hidden", "[unknown_run]"),
    ("=x", "[unknown_run]"),
    ("linked", "[refused]"),                 # a symlink out of the runs root
]


async def test_run_names_reveal_nothing(tree: dict[str, Path]) -> None:
    # Issue 21, defect 7: an unknown run name answered with the absolute runs path and the other runs' names.
    # One server answers every name (a server per name took ~5 s each).
    results = await _curves(_params(tree), *(run for run, _ in REFUSED_NAMES))
    for (run, code), result in zip(REFUSED_NAMES, results, strict=True):
        text = result.content[0].text
        assert result.is_error and code in text, (run, text)
        _assert_private(text, tree, *(name for name in ("sn_quick", "evil", "far_store", "linked") if name not in run))


async def test_symlink_out_of_the_data_root_is_a_tagged_error(tmp_path: Path, data_root: Path) -> None:
    # Issue 21, defect 7: a symlink out of the data root was refused with an untagged "Error executing tool".
    root = tmp_path / "data"
    (root / "phm" / "cmapss").mkdir(parents=True)
    for name in ("train_fd002.txt.gz", "test_fd002.txt.gz", "rul_fd002.txt.gz"):
        (root / "phm" / "cmapss" / name).symlink_to(data_root / "phm" / "cmapss" / name)
    params = StdioServerParameters(command=sys.executable, env=subprocess_env(), args=[
        "-m", "sfbench_jax.mcp.server", "--data-root", str(root), "--group", "prognostics"])
    async with Client(params) as client:
        result = await client.call_tool("load_dataset", {"dataset_name": "cmapss_fd002", "split": "test"})
    text = result.content[0].text
    assert result.is_error and "[refused]" in text and "outside the server's data root" in text, text
    assert str(tmp_path) not in text and str(data_root) not in text


def test_rebuild_policy_refuses_before_anything_is_built(tmp_path: Path) -> None:
    from sfbench_jax.pipeline.rebuild import RebuildPolicy, UntrustedRunError, check_manifest, run_config

    policy = RebuildPolicy(roots=(tmp_path,), data_root=tmp_path / "data")
    external = {"config": {"model": {"name": "external", "target": "evil_mod:predict"}}}
    refused = [external, {"config": {"model": {"name": "evil"}}}, {"config": {"method": {"name": "evil"}}},
               {"config": {"model": {"name": "dlinear", "hparams": {"target": "evil_mod:predict"}}}},
               {"config": {"model": {"name": "chronos2", "weights": "/elsewhere"}}}, {"config": None}, []]
    for manifest in refused:
        with pytest.raises(UntrustedRunError):
            check_manifest(manifest, policy)
    check_manifest(external, RebuildPolicy(roots=(tmp_path,), allow_host_models=True))  # the explicit option
    manifest = {"config": {"dataset": {"name": "etth1"}, "data_root": "/etc", "cache_dir": "/var/cache/x",
                           "eval": {"memory_budget_mb": 4096, "chunk_size": 4096}}}
    cfg = run_config(manifest, policy=policy)
    assert (cfg.data_root, cfg.cache_dir, cfg.compilation_cache) == (str(tmp_path / "data"), None, False)
    assert (cfg.eval.memory_budget_mb, cfg.eval.chunk_size) == (1024, None)  # resources: the defaults
    assert policy.confine(tmp_path / "runs" / "a", "the run folder") == (tmp_path / "runs" / "a").resolve()
    with pytest.raises(UntrustedRunError, match="the run's candidate store lies outside") as outside:
        policy.confine(Path("/etc"), "the run's candidate store")
    assert "/etc" not in str(outside.value)


async def test_an_untrained_run_needs_no_store_wherever_its_store_lies(tree: dict[str, Path]) -> None:
    # Issue 30, defect 11: a SeasonalNaive run, which reads no candidate store, was refused because its manifest's
    # train.store_dir lay outside the roots (as the sfbench command's default store does).
    (result,) = await _curves(_params(tree), "far_store")
    assert not result.is_error, result.content
    assert result.structured_content["curves"]["model"] == "seasonal_naive"
