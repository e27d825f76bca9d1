"""One copy of each default: the dataclasses of `sfbench_jax.config` hold every run, dataset, model, method,
training and evaluation default; a Hydra preset under `conf/` states only what differs from them (a restated
default is a second copy that can drift from the first)."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest
import yaml

from sfbench_jax.config import DatasetConfig, EvalConfig, MethodConfig, ModelConfig, RunConfig, TrainConfig

CONF = Path(__file__).resolve().parents[1] / "conf"
#: Sections whose settings are checked, by the config group that sets them at its own level.
SECTIONS = {"train": TrainConfig, "eval": EvalConfig, "dataset": DatasetConfig, "model": ModelConfig,
            "method": MethodConfig}
#: A preset's `name` selects it (the default one's equals the dataclass default): not a restated default.
SELECTORS = {"dataset.name", "model.name", "method.name"}


def _defaults(config_type: type) -> dict[str, Any]:
    defaults = {}
    for item in dataclasses.fields(config_type):
        if item.default is not dataclasses.MISSING:
            defaults[item.name] = item.default
        elif item.default_factory is not dataclasses.MISSING:
            defaults[item.name] = item.default_factory()
    return defaults


def _settings(path: Path) -> list[tuple[str, Any, dict[str, Any]]]:
    """(dotted name, value, defaults of its dataclass) for every run, train and eval setting a preset sets."""
    text = path.read_text()
    data = yaml.safe_load(text) or {}
    group = path.relative_to(CONF).parts[0]
    if group in SECTIONS and "@package _global_" not in text:
        return [(f"{group}.{key}", value, _defaults(SECTIONS[group])) for key, value in data.items()
                if key != "defaults"]
    if group not in ("profile", "experiment", "config.yaml"):
        return []
    found = []
    for key, value in data.items():
        if key in SECTIONS and isinstance(value, dict):
            found += [(f"{key}.{name}", setting, _defaults(SECTIONS[key])) for name, setting in value.items()]
        elif key not in ("defaults", "hydra"):
            found.append((key, value, _defaults(RunConfig)))
    return found


PRESETS = sorted(path for path in CONF.rglob("*.yaml") if path.relative_to(CONF).parts[0] != "hydra")


@pytest.mark.parametrize("path", PRESETS, ids=lambda path: str(path.relative_to(CONF)))
def test_no_preset_restates_a_dataclass_default(path: Path) -> None:
    restated = [f"{name}: {value!r}" for name, value, defaults in _settings(path) if name not in SELECTORS
                and name.rsplit(".", 1)[-1] in defaults and defaults[name.rsplit(".", 1)[-1]] == value]
    assert not restated, (f"conf/{path.relative_to(CONF)} restates the dataclass defaults {restated} "
                          "(sfbench_jax/config.py holds them); delete those lines")


def test_the_check_sees_the_presets() -> None:
    checked = {str(path.relative_to(CONF)): _settings(path) for path in PRESETS}
    assert any(name == "train.store_dir" for name, _, _ in checked["train/default.yaml"])
    assert {name for name, _, _ in checked["profile/tiny.yaml"]} >= {"train.max_epochs", "eval.k", "figures"}
    assert {name for name, _, _ in checked["model/dlinear.yaml"]} == {"model.name", "model.grid"}
