"""The files one run writes into its folder, called by `pipeline.runner`: the tidy tables (`tables`: summary
row, per-window losses, candidates and training curves), the run manifest (`manifest`) with the process's start-up
phases (`startup`), and the scenario heatmap (`heatmap`). The analysis of stored runs is `sfbench_jax.report`,
which may read these modules; nothing here imports it."""
