"""Reporting and analysis of stored results: tidy tables, the run manifest, paper-style tables and figures, the
collection of sweeps, and the analysis layer over stored runs (run keys, method-baseline pairs, score families,
sensitivity diagnostics, the reference's long-form CSVs). Nothing here evaluates a model: the statistics come
from `sfbench_jax.evaluation` (normalised scores, pair bootstrap, curves) applied to stored numbers."""
