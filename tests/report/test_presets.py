"""The analysis presets in conf/experiment: one per table or figure, each composes, is a multirun, and expands to
the runs its table reads (the sensitivity sweeps re-evaluate stored winners; the method sweep's RevIN-on-PatchTST
job is no expected cell: 34 method pairs per dataset)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hydra import compose, initialize_config_module

from sfbench_jax.cli.callbacks import applies, sweep_jobs
from sfbench_jax.cli.main import to_run_config
from sfbench_jax.report.collect import Cell

EXPERIMENTS = Path(__file__).resolve().parents[2] / "conf" / "experiment"
DATASETS = 4
TRAINABLE = 5

#: preset -> number of jobs it expands to
EXPECTED_JOBS = {
    "table4_architectures": DATASETS * 6, "figure2_scenario_heatmap": DATASETS * 6, "figure5_tradeoffs": DATASETS * 6,
    "table16_intervals": DATASETS * 6, "table19_score_families": DATASETS * 6, "severity_curves": DATASETS * 6,
    "table10_eval_seeds": DATASETS * 6 * 5, "table12_channel_fraction": DATASETS * 6 * 3,
    "methods": DATASETS * TRAINABLE * 7, "table4_methods": DATASETS * TRAINABLE * 7,
    "table17_method_intervals": DATASETS * TRAINABLE * 7, "table20_method_families": DATASETS * TRAINABLE * 7,
    "table11_selector_pressure": DATASETS * TRAINABLE * 7,
    "figure6_pgd_trajectories": DATASETS * TRAINABLE, "figures3_4_fault_examples": DATASETS * 2,
}


def test_every_preset_is_listed() -> None:
    assert sorted(path.stem for path in EXPERIMENTS.glob("*.yaml")) == sorted(EXPECTED_JOBS)


@pytest.mark.parametrize("name", sorted(EXPECTED_JOBS))
def test_preset_expands_to_its_runs(name: str) -> None:
    with initialize_config_module(version_base="1.3", config_module="sfbench_jax.conf"):
        cfg = compose(config_name="config", overrides=[f"experiment={name}"], return_hydra_config=True)
        jobs = sweep_jobs(cfg)
        assert str(cfg.hydra.mode) == "RunMode.MULTIRUN"
        assert len(jobs) == EXPECTED_JOBS[name]
        first = compose(config_name="config", overrides=[o for o in jobs[-1] if not o.startswith("hydra")])
        to_run_config(first)  # the last job's config validates (registries and method applicability)
    if name == "methods":
        cells = [Cell(**{key: value for key, value in (o.split("=", 1) for o in job)
                         if key in ("dataset", "method")}, architecture=dict(o.split("=", 1) for o in job)["model"])
                 for job in jobs]
        assert sum(applies(cell) for cell in cells) == DATASETS * 34  # RevIN on PatchTST is no cell
    if name == "table10_eval_seeds":
        assert {o for job in jobs for o in job if o.startswith("eval.seed=")} == {
            "eval.seed=null", "eval.seed=0", "eval.seed=1", "eval.seed=2", "eval.seed=3"}
    if name == "table12_channel_fraction":
        assert {o for job in jobs for o in job if o.startswith("eval.channel_fraction=")} == {
            "eval.channel_fraction=null", "eval.channel_fraction=0.25", "eval.channel_fraction=0.5"}
