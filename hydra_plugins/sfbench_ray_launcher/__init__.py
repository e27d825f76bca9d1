"""sfbench's Hydra launcher for Ray (`hydra/launcher=ray`), built on the maintained `ray` package.

Hydra only accepts launchers from the `hydra_plugins` namespace, hence this top-level folder. Why not the
official hydra-ray-launcher plugin: see `ray_launcher.py`.
"""
