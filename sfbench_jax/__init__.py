"""sfbench-jax: fast, exact SensorFault-Bench in JAX."""
