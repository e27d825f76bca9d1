"""The grids of the Hydra presets: the packaged ones (`conf/<group>/<name>.yaml`, installed as
`sfbench_jax.conf`), then those of installed plug-ins (`sfbench_jax.plugins.entry_points.preset_packages`).

A model's hyperparameter grid and a method's recipe grid each live in one place, their preset; the
registries read them from here, so the command line, the library and the tests see the same grid. The packages
are searched in the order Hydra's search path has them (`hydra_plugins/sfbench_searchpath`): the built-in
presets first, then each plug-in's, so `preset_grid` and `sfbench model=<name>` read the same file.
"""

from __future__ import annotations

import functools
import types
from importlib import resources
from importlib.resources.abc import Traversable

import yaml

from sfbench_jax.plugins.entry_points import preset_packages

BUILT_IN_PRESETS = "sfbench_jax.conf"


def preset_path(group: str, name: str) -> Traversable:
    """The file of preset `<group>/<name>.yaml`: the built-in one, else the first plug-in package's.

    Raises:
        FileNotFoundError: no installed package holds that preset (the message names where it looked).
    """
    packages = (BUILT_IN_PRESETS, *preset_packages())
    for package in packages:
        path = resources.files(package) / group / f"{name}.yaml"
        if path.is_file():
            return path
    raise FileNotFoundError(f"No preset {group}/{name}.yaml in the installed packages {', '.join(packages)}; "
                            f"add it to conf/{group}/ or to a plug-in's preset package (docs/extending.md).")


@functools.cache
def preset_grid(group: str, name: str) -> types.MappingProxyType:
    """The `grid` of preset `<group>/<name>.yaml` (see `preset_path`) as `{key: tuple(values)}` in file order.

    Raises:
        FileNotFoundError: no such preset.
    """
    grid = yaml.safe_load(preset_path(group, name).read_text()).get("grid") or {}
    return types.MappingProxyType({key: tuple(values) for key, values in grid.items()})
