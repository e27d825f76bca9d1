"""Hydra configuration presets for `sfbench` (YAML files; installed as `sfbench_jax.conf`)."""
