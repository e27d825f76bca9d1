"""sfbench's Hydra search-path plugin: installed plug-in packages' presets become `model=`, `method=`, `dataset=`
choices (`searchpath.py`). Hydra only accepts plugins from the `hydra_plugins` namespace, hence this folder."""
