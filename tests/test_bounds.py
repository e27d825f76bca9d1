"""Issue 21, defect 7 (bounds before work): settings whose extreme values are meaningless or exhaust the machine
are refused when the config is built, with one line naming the setting, the allowed range and why.

Each case is the issue's reproduction through the same path as `sfbench` (compose conf/config.yaml with the
overrides, then `to_run_config`), so nothing is loaded, trained or scored.
"""

from __future__ import annotations

import numpy as np
import pytest
from hydra import compose, initialize_config_module

from sfbench_jax.cli.main import to_run_config
from sfbench_jax.config import (
    BOOTSTRAP_ROWS,
    MAX_BOOTSTRAP_DRAWS,
    MIN_BOOTSTRAP_DRAWS,
    DatasetConfig,
    EvalConfig,
    RunConfig,
    bootstrap_bytes,
)
from sfbench_jax.evaluation.scores import bootstrap_intervals, bootstrap_means
from sfbench_jax.methods import METHODS, check_method


def _run_config(*overrides: str) -> RunConfig:
    with initialize_config_module(version_base="1.3", config_module="sfbench_jax.conf"):
        return to_run_config(compose(config_name="config", overrides=list(overrides)))


@pytest.mark.parametrize(("overrides", "message"), [
    # the reproduction: one draw gave an "interval" [1.240186, 1.240186] that missed the estimate 1.272357
    (["eval=quick", "eval.bootstrap_draws=1"],
     r"eval\.bootstrap_draws must be in \[40, 100,000\], got 1: a 95% percentile interval needs at least one draw "
     r"in each 2\.5% tail"),
    (["eval=quick", "eval.bootstrap_draws=39"], r"eval\.bootstrap_draws must be in \[40, 100,000\], got 39"),
    # the reproduction: 1e9 draws ran out of memory after the evaluation
    (["eval=quick", "eval.bootstrap_draws=1000000000"],
     r"got 1000000000: .*beyond 100,000 draws the bootstrap costs minutes"),
    (["eval.bootstrap_draws=100000", "eval.memory_budget_mb=32"],
     r"eval\.bootstrap_draws=100000 with eval\.k=10000 needs about \d+ MiB for the bootstrap, over "
     r"eval\.memory_budget_mb=32; lower eval\.bootstrap_draws or eval\.k, or raise eval\.memory_budget_mb"),
    # the reproduction: a huge block ran out of memory after the evaluation
    (["eval=quick", "eval.block_size=100000000"],
     r"eval\.block_size=100000000 exceeds the \d+ windows of etth1 that fit eval\.memory_budget_mb=1024 \(about 16 x "
     r"5,376 bytes of temporaries per window\); lower eval\.block_size"),
    (["dataset=traffic_synthetic", "eval.block_size=512"], r"eval\.block_size=512 exceeds the 101 windows of "
                                                           r"traffic_synthetic"),
])
def test_eval_settings_out_of_range_are_refused(overrides: list[str], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        _run_config(*overrides)


def test_boundary_and_preset_eval_settings_are_accepted() -> None:
    for draws in (MIN_BOOTSTRAP_DRAWS, MAX_BOOTSTRAP_DRAWS):
        assert EvalConfig(bootstrap_draws=draws).bootstrap_draws == draws
    for profile in ("tiny", "quick", "paper"):
        assert _run_config(f"profile={profile}").eval.bootstrap_draws >= MIN_BOOTSTRAP_DRAWS
    assert _run_config("dataset=traffic_synthetic", "eval.block_size=101").eval.block_size == 101
    RunConfig(dataset=DatasetConfig(name="traffic"), eval=EvalConfig(block_size=None))


def test_bootstrap_memory_estimate_covers_the_measured_peak() -> None:
    """The estimate the budget check uses is an upper bound of what the bootstrap allocates (tracemalloc)."""
    import tracemalloc

    rng = np.random.default_rng(0)
    windows, draws = 10_000, 5_000
    clean, faulted = rng.random(windows) + 0.5, rng.random((BOOTSTRAP_ROWS - 1, windows)) + 0.6
    tracemalloc.start()
    try:
        bootstrap_intervals(clean, faulted, eval_seed=3, draws=draws)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak <= bootstrap_bytes(draws, windows)


def test_smaller_batches_for_huge_k_give_the_same_means() -> None:
    losses = np.random.default_rng(1).random((3, 500))
    np.testing.assert_allclose(bootstrap_means(losses, 5, 70), bootstrap_means(losses, 5, 70, draws_per_batch=1),
                               rtol=1e-12)


def test_library_bootstrap_refuses_too_few_draws() -> None:
    with pytest.raises(ValueError, match="needs at least 40 draws for a 95% percentile interval"):
        bootstrap_intervals(np.ones(10), np.ones((8, 10)), eval_seed=1, draws=1)


@pytest.mark.parametrize(("overrides", "message"), [
    # the reproduction: a severity above 1 was trained and scored
    (["model=dlinear", "method=fault_augmentation", "method.grid.s_max=[1.5]"],
     r"method\.grid\.s_max=\[1\.5\] for fault_augmentation: each value must be in \(0, 1\] \(the largest fault "
     r"severity; severities live in \[0, 1\]\); got 1\.5\."),
    (["model=dlinear", "method=fault_augmentation", "method.grid.s_max=[0.0]"], r"s_max=\[0\.0\].*in \(0, 1\]"),
    (["model=dlinear", "method=fault_augmentation", "method.grid.p=[-0.1,0.5]"], r"method\.grid\.p=.*in \[0, 1\] "
                                                                                 r"\(the probability"),
    (["model=dlinear", "method=fault_augmentation", "method.grid.frac_max=[2]"], r"frac_max=\[2\].*in \(0, 1\]"),
    (["model=dlinear", "method=fault_augmentation", "method.grid.profile=[holdout_bogus]"],
     r"profile=\['holdout_bogus'\].*one of \['holdout', 'holdout_simple', 'holdout_varying'\]"),
    (["model=dlinear", "method=adversarial_training", "method.grid.eps=[-0.1]"], r"eps=\[-0\.1\].*finite number > 0"),
    (["model=dlinear", "method=adversarial_training", "method.grid.steps=[0]"], r"steps=\[0\].*integer in \[1, 100\]"),
    (["model=dlinear", "method=adversarial_training", "method.grid.steps=[2.5]"], r"steps=\[2\.5\].*an integer"),
    (["model=dlinear", "method=randomized_training", "method.grid.sigma=[-1]"], r"sigma=\[-1\].*finite number >= 0"),
    (["model=dlinear", "method=randomized_smoothing", "method.grid.sigma=[inf]"], r"sigma=\[inf\].*finite"),
    (["model=dlinear", "method=randomized_smoothing", "method.grid.samples=[2]"], r"samples=\[2\].*\[3, 1000\]"),
    (["model=dlinear", "method=randomized_smoothing", "method.grid.samples=[100000]"], r"samples=\[100000\]"),
    (["model=dlinear", "method=ensemble", "method.grid.top_k=[1]"], r"top_k=\[1\].*an integer >= 2"),
    (["model=dlinear", "method=ensemble", "method.grid.combine=[max]"], r"combine=\['max'\].*one of \['mean', "
                                                                        r"'median'\]"),
    (["model=dlinear", "method=revin", "method.grid.affine=[maybe]"], r"affine=\['maybe'\].*true or false"),
    (["model=dlinear", "method=adaptive_robust_loss", "method.grid.alpha_lo=[-0.5]"], r"alpha_lo=\[-0\.5\].*"
                                                                                      r"in \[0, 1\.999\)"),
    (["model=dlinear", "method=adaptive_robust_loss", "method.grid.alpha_init=[2.5]"], r"alpha_init=\[2\.5\]"),
    (["model=dlinear", "method=adaptive_robust_loss", "method.grid.scale_lo=[0]"], r"scale_lo=\[0\].*> 0"),
    (["model=dlinear", "method=adaptive_robust_loss", "method.grid.alpha_lo=[1.5]"],
     r"method\.grid\.alpha_init=1\.0 with method\.grid\.alpha_lo=1\.5 .*every alpha_init must exceed every alpha_lo"),
    (["model=dlinear", "method=adaptive_robust_loss", "method.grid.scale_init=[0.001]"],
     r"scale_init=0\.001 with method\.grid\.scale_lo=0\.001"),
])
def test_method_recipe_values_out_of_range_are_refused(overrides: list[str], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        _run_config(*overrides)


def test_every_method_preset_is_inside_its_bounds() -> None:
    for name, spec in METHODS.items():
        architecture = "seasonal_naive" if not spec.applies_to("dlinear") else "dlinear"
        check_method(name, architecture, None, num_baseline_candidates=40)
