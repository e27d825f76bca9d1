"""A run stored before a setting was renamed (`eval.rng` -> `eval.rng_mode`, `train.devices` -> `train.num_devices`,
README "Renamed settings") still loads: its key and its rebuilt configuration are those of the same run stored under the
new names (`run_folder.manifest.RENAMED_SETTINGS`, the one place old names are read)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from sfbench_jax.config import EvalConfig, RunConfig, TrainConfig
from sfbench_jax.pipeline.rebuild import run_config
from sfbench_jax.pipeline.runner import run
from sfbench_jax.run_folder.loading import load_run
from sfbench_jax.run_folder.manifest import RENAMED_SETTINGS
from sfbench_jax.run_folder.names import MANIFEST_FILE
from sfbench_jax.run_folder.record import seal_run


@pytest.fixture(scope="module")
def stored_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real SeasonalNaive run (ETTh1, 200 windows) in the reference RNG mode, written by the pipeline."""
    folder = tmp_path_factory.mktemp("renamed") / "run"
    cfg = RunConfig(eval=EvalConfig(rng_mode="reference", k=200, bootstrap_draws=50, progress=False),
                    train=TrainConfig(num_devices=3, progress=False), figures=False, compilation_cache=False)
    run(cfg, folder)
    return folder


def test_a_run_stored_under_the_old_names_loads_as_under_the_new(stored_run: Path, tmp_path: Path) -> None:
    old = tmp_path / "old"
    shutil.copytree(stored_run, old)
    manifest = json.loads((old / MANIFEST_FILE).read_text())
    for previous, current in RENAMED_SETTINGS.items():
        (section, name), new_name = previous.split("."), current.split(".")[1]
        manifest["config"][section][name] = manifest["config"][section].pop(new_name)
    assert manifest["config"]["eval"]["rng"] == "reference" and "rng_mode" not in manifest["config"]["eval"]
    (old / MANIFEST_FILE).write_text(json.dumps(manifest))
    seal_run(old)  # the old run's own completion record over its old-named manifest

    new_run, old_run = load_run(stored_run), load_run(old)
    assert old_run.key == new_run.key and old_run.identity == new_run.identity
    assert (old / "summary.csv").read_bytes() == (stored_run / "summary.csv").read_bytes()
    cfg = run_config(old_run.manifest)
    assert cfg.eval.rng_mode == "reference" and cfg.train.num_devices == 3
    assert cfg == run_config(new_run.manifest)
