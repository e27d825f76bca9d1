"""Appends each installed plug-in's preset package to sfbench's Hydra search path (docs/extending.md).

A package that registers a model, method or dataset through entry points names the package holding its presets
in entry-point group `sfbench_jax.conf` (`sfbench_jax.plugins.entry_points.preset_packages`); this plugin appends
`pkg://<that package>` after sfbench's own `pkg://sfbench_jax.conf`, so `sfbench model=my_model` composes
`<package>/model/my_model.yaml` exactly like a built-in preset (validated against the same ConfigStore schema,
`defaults: [/schema/model@_here_]`). Built-in presets come first: a plug-in preset never shadows one. Other Hydra
applications in the same environment are left alone (the path is changed only when sfbench's presets are on it).
(No `from __future__ import annotations`: Hydra's plugin scanner executes this module.)
"""

from hydra.core.config_search_path import ConfigSearchPath
from hydra.plugins.search_path_plugin import SearchPathPlugin

from sfbench_jax.plugins.entry_points import preset_packages

#: sfbench's own presets (`sfbench_jax.cli.main.CONFIG_PATH`).
SFBENCH_CONF = "pkg://sfbench_jax.conf"


class SfbenchPluginPresets(SearchPathPlugin):
    """Adds `pkg://<package>` for every `sfbench_jax.conf` entry point, after sfbench's presets."""

    def manipulate_search_path(self, search_path: ConfigSearchPath) -> None:
        if not any(element.path == SFBENCH_CONF for element in search_path.get_path()):
            return
        present = {element.path for element in search_path.get_path()}
        for package in preset_packages():
            if f"pkg://{package}" not in present:
                search_path.append(provider=f"sfbench-plugin:{package}", path=f"pkg://{package}")
