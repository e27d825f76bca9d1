"""The grids of the packaged Hydra presets (`conf/<group>/<name>.yaml`, installed as `sfbench_jax.conf`).

A model's hyperparameter grid and a method's recipe grid each live in one place, their preset; the
registries read them from here, so the command line, the library and the tests see the same grid.
"""

from __future__ import annotations

import functools
import types
from importlib import resources

import yaml


@functools.cache
def preset_grid(group: str, name: str) -> types.MappingProxyType:
    """The `grid` of preset `conf/<group>/<name>.yaml` as `{key: tuple(values)}` in file order.

    Raises:
        FileNotFoundError: no such preset.
    """
    path = resources.files("sfbench_jax.conf") / group / f"{name}.yaml"
    if not path.is_file():
        raise FileNotFoundError(f"No preset conf/{group}/{name}.yaml in the installed package.")
    grid = yaml.safe_load(path.read_text()).get("grid") or {}
    return types.MappingProxyType({key: tuple(values) for key, values in grid.items()})
