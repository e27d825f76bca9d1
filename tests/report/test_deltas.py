"""Method-baseline deltas of real runs (protocol 6.4): pair values, dataset means, tau-bar, and the pair bootstrap
recomputed here with NumPy from the stored per-pair deltas (seeds, column order, percentile method).

The method rows are real PGD (`adversarial_training`) and ensemble runs of DLinear; the second PGD pair per
dataset is the fixture's documented stand-in (a SeasonalNaive with a pinned season, labelled as PGD)."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from sfbench_jax.data.registry import DATASETS
from sfbench_jax.report.deltas import MissingBaselineError, paired_rows
from sfbench_jax.run_folder.loading import gather_runs

from .conftest import report_command


def _derive_seed(base: int, key: str) -> int:
    return (base + int(hashlib.sha256(key.encode("utf-8")).hexdigest()[:8], 16)) % (2**31 - 1)


def test_pairs_and_dataset_means(report_dir: Path) -> None:
    deltas = pd.read_csv(report_dir / "improvement_deltas_selected.csv")
    canonical = deltas[deltas.selection_metric != "perturbed_worst"]
    assert sorted(set(zip(canonical.dataset, canonical.pipeline_method, canonical.backbone_architecture,
                          strict=True))) == sorted(
        ("etth1", m, a) for m, a in
        (("adversarial_training", "dlinear"), ("adversarial_training", "seasonal_naive"), ("ensemble", "dlinear")))
    for name in ("err_clean", "D_w", "err_pert_ws", "D_mean", "err_pert_mean", "mCE_snaive", "relative_mCE_snaive"):
        difference = canonical[f"{name}_improved"] - canonical[f"{name}_baseline"]
        assert np.allclose(canonical[f"delta_{name}"], difference, rtol=0, atol=1e-15)
        assert np.allclose(canonical[f"pct_change_{name}"], 100 * difference / canonical[f"{name}_baseline"])
    assert np.allclose(canonical.tau_mean, canonical.err_pert_mean_baseline - canonical.err_pert_mean_improved)
    assert set(canonical.pipeline_id[canonical.backbone_architecture == "dlinear"]) <= {
        "advtrain_eps0.05_steps3_alpha0.02_channelsall", "advtrain_eps0.1_steps3_alpha0.02_channelsall",
        "ensemble_top2_mean", "ensemble_top2_median"}
    block = pd.read_csv(report_dir / "table4_methods.csv").set_index(["dataset", "measure"])
    pgd = canonical[(canonical.dataset == "etth1") & (canonical.pipeline_method == "adversarial_training")]
    assert block.loc[("etth1", "ΔD_w"), "adversarial_training"] == pytest.approx(pgd.delta_D_w.mean(), rel=1e-12)
    assert block.loc[("etth1", "ΔMSE_c"), "adversarial_training"] == pytest.approx(pgd.delta_err_clean.mean())


def test_pair_bootstrap_by_hand(report_dir: Path) -> None:
    deltas = pd.read_csv(report_dir / "improvement_deltas_selected.csv")
    intervals = pd.read_csv(report_dir / "pipeline_method_delta_results.csv")
    spec = DATASETS["etth1"]
    pairs = deltas[(deltas.dataset == "etth1") & (deltas.pipeline_method == "adversarial_training")
                   & (deltas.selection_metric != "perturbed_worst")]
    pairs = pairs.sort_values(["backbone_architecture", "pipeline_id"])
    assert len(pairs) == 2
    eval_seed = int(pairs.eval_data_seed.iloc[0])
    group_seed = _derive_seed(eval_seed, f"bootstrap_ci:method_delta:MSE:ETTh1:{spec.signature}:adversarial_training:"
                                         "method_delta_pair_percentile")
    row = intervals[(intervals.dataset == "etth1") & (intervals.method == "adversarial_training")
                    & (intervals.selection == "clean")].iloc[0]
    assert row["count"] == 2 and row.delta_bootstrap_seed == group_seed
    for column in ("delta_err_clean", "delta_D_w", "delta_D_mean", "delta_err_pert_ws", "delta_err_pert_mean"):
        values = pairs[column].to_numpy()
        rng = np.random.default_rng(_derive_seed(group_seed, column))
        means = [values[rng.integers(0, len(values), len(values))].mean() for _ in range(1000)]
        low, high = np.quantile(means, [0.025, 0.975], method="linear")
        assert (row[f"{column}_mean"], row[f"{column}_CI_lo"], row[f"{column}_CI_hi"]) == pytest.approx(
            (values.mean(), low, high), rel=1e-12, abs=1e-15)
    markdown = (report_dir / "table17_method_intervals.md").read_text()
    assert f"| ETTh1 | PGD | 2 | {row.delta_D_w_mean:.3f} ({row.delta_D_w_CI_lo:.3f}, {row.delta_D_w_CI_hi:.3f}) |" \
        in markdown


def test_method_run_without_its_baseline_is_named(analysis_root: Path, tmp_path: Path) -> None:
    shutil.copytree(analysis_root / "methods" / "etth1", tmp_path / "methods")
    shutil.copytree(analysis_root / "runs" / "etth1" / "seasonal_naive" / "canonical", tmp_path / "sn")
    runs = gather_runs([tmp_path])
    with pytest.raises(MissingBaselineError, match="have no baseline winner on the same realisation") as raised:
        paired_rows(runs.summary)
    assert str(tmp_path / "methods") in str(raised.value)
    completed = report_command("table17", "--runs", str(tmp_path), "--output", str(tmp_path / "out"))
    assert completed.returncode == 1 and "no baseline winner" in completed.stderr
