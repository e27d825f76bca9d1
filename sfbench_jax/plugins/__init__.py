"""How the benchmark is extended without editing it: plug-ins found through Python entry points
(`entry_points`: discovery, merging into the registries, `origin_of`, `PluginError`) and the grids of the Hydra
presets, the packaged ones and those of installed plug-ins (`presets`). The bottom layer: it imports nothing
else of the package."""
