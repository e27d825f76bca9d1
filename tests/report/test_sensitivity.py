"""Sensitivity variants from stored winners (protocol 5.5, 6.7): Table 10 (evaluation seeds 0 and 1, SeasonalNaive
and DLinear) and Table 12 (fixed channel fraction 0.25 on ETTh1, 0.5 on Beijing; DLinear) with zero candidates
trained, recomputed here from the summary rows; Table 11 from ETTh1's stored PGD candidates re-selected on
perturbed validation (the PGD runs are real; the second PGD pair is the fixture's stand-in)."""

from __future__ import annotations

import itertools
import json
import math
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy.stats import spearmanr

from sfbench_jax.data.registry import DATASETS

from .fixture_runs import CHANNEL_FRACTION, EVAL_SEEDS

DATASET_NAMES = ("beijing_air_tiantan", "etth1")


def test_re_evaluations_train_nothing(analysis_root: Path) -> None:
    logs = [*(analysis_root / "runs").glob("*/dlinear/seed_*/run.log"),
            *(analysis_root / "runs").glob("*/dlinear/fraction_*/run.log")]
    assert len(logs) == 4  # Beijing's two seeds, one fraction per dataset
    for log in logs:
        text = log.read_text()
        assert "dlinear: 2 of 84 valid candidates" in text and "2 already in the store, 0 to train" in text, log
        assert " group 1/" not in text  # no training group started
    multirun = (analysis_root / "multirun.log").read_text()
    # the two DLinear jobs share the store: each candidate is trained once, by whichever job claims it first
    assert len(re.findall(r"dlinear trial \d+: best val", multirun)) == 2, multirun[-3000:]


def test_table10_from_stored_winners(report_dir: Path) -> None:
    table = pd.read_csv(report_dir / "table10_eval_seeds.csv").set_index("dataset")
    summary = pd.read_csv(report_dir / "full_results.csv")
    assert sorted(table.index) == sorted(DATASET_NAMES)
    for dataset in DATASET_NAMES:
        rows = summary[(summary.dataset == dataset) & (summary.pipeline_method == "baseline")
                       & summary.perturbation_channel_fraction_fixed.isna()
                       & (summary.selection_pool == "clean_validation")]
        canonical = DATASETS[dataset].seeds.canonical_eval_seed
        pivot = rows.pivot(index="model_architecture", columns="eval_data_seed", values="D_w")
        assert list(pivot.columns) == [*EVAL_SEEDS, canonical] and len(pivot) == 2
        shifts = pivot[list(EVAL_SEEDS)].sub(pivot[canonical], axis=0).abs().to_numpy()
        assert table.loc[dataset, "mean_abs_shift_d_w"] == pytest.approx(shifts.mean(), rel=1e-12)
        assert table.loc[dataset, "max_abs_shift_d_w"] == pytest.approx(shifts.max(), rel=1e-12)
        correlations = [spearmanr(pivot[a], pivot[b]).statistic for a, b in itertools.combinations(pivot.columns, 2)]
        assert table.loc[dataset, "min_spearman_d_w"] == pytest.approx(min(correlations))
        worst = rows.pivot(index="model_architecture", columns="eval_data_seed", values="worst_scenario")
        exact = sum(all(worst.loc[a, s] == worst.loc[a, canonical] for s in EVAL_SEEDS) for a in worst.index)
        assert table.loc[dataset, "worst_exact"] == exact
    markdown = (report_dir / "table10_eval_seeds.md").read_text().splitlines()
    assert markdown[0].startswith("| dataset | mean abs. shift D_w | mean abs. shift MSE_w |")
    assert [line.split(" | ")[0] for line in markdown[2:]] == ["| Beijing Air Tiantan", "| ETTh1"]


def test_table12_channel_fraction_shifts(report_dir: Path) -> None:
    per_run = pd.read_csv(report_dir / "fixed_channel_fraction.csv")
    assert len(per_run) == 2 and set(per_run.architecture) == {"dlinear"}  # one fraction per dataset (fixture_runs.py)
    assert np.allclose(per_run.delta_D_w_fixed_fraction, per_run.fixed_fraction_D_w - per_run.canonical_D_w)
    expected_counts = {"etth1": 2, "beijing_air_tiantan": 6}  # ceil(q m_c), protocol 2.1
    for dataset, count in expected_counts.items():
        fraction = CHANNEL_FRACTION[dataset]
        rows = per_run[(per_run.dataset == dataset) & (per_run.channel_fraction == fraction)]
        assert len(rows) == 1
        pool = len(DATASETS[dataset].continuous_pool)
        assert set(rows.fixed_channel_count) == {count} == {math.ceil(fraction * pool)}
    table = pd.read_csv(report_dir / "table12_channel_fraction.csv")
    for _, row in table.iterrows():
        rows = per_run[(per_run.dataset == row.dataset) & (per_run.channel_fraction == row.channel_fraction)]
        assert row.mean_signed_shift_d_w == pytest.approx(rows.delta_D_w_fixed_fraction.mean(), rel=1e-12)
        assert row.max_abs_shift_mse_w == pytest.approx(rows.delta_MSE_w_fixed_fraction.abs().max(), rel=1e-12)
    full = pd.read_csv(report_dir / "scenario_summary.csv")
    run = per_run.iloc[0]
    scoped = full[(full.run_id == run.run_dir) & (full.scenario != "MissingData")]
    assert run.fixed_fraction_channel_scoped_D_w == pytest.approx(scoped.D.max(), rel=1e-12)
    assert run.fixed_fraction_channel_scoped_D_mean == pytest.approx(scoped.D.mean(), rel=1e-12)


def test_selector_pressure_reselects_stored_candidates(analysis_root: Path, report_dir: Path) -> None:
    folders = sorted((analysis_root / "selector_pressure").rglob("summary.csv"))
    assert len(folders) == 2  # ETTh1's PGD run and its stand-in
    for path in folders:
        summary = pd.read_csv(path).iloc[0]
        candidates = pd.read_csv(path.parent / "candidates.csv")
        assert summary.selection_metric == "perturbed_worst" and summary.method == "adversarial_training"
        assert summary.selection_value == pytest.approx(candidates.mse_pert_ws_val.min(), rel=1e-12)
        winner = candidates[candidates.is_winner].iloc[0]
        assert winner.mse_pert_ws_val == candidates.mse_pert_ws_val.min()
        manifest = json.loads((path.parent / "manifest.json").read_text())["selection_pressure"]
        assert manifest["winner"] == winner.candidate_hash
        assert manifest["noise_seed"] == DATASETS[summary.dataset].seeds.noise_seed
    dlinear = [p for p in folders if "dlinear" in str(p)]
    assert all(len(pd.read_csv(p.parent / "candidates.csv")) == 2 for p in dlinear)  # both PGD variants scored
    block = pd.read_csv(report_dir / "table11_selector_pressure.csv").set_index(["dataset", "measure"])
    deltas = pd.read_csv(report_dir / "improvement_deltas_selected.csv")
    perturbed = deltas[(deltas.selection_metric == "perturbed_worst") & (deltas.dataset == "etth1")]
    assert block.loc[("etth1", "ΔD_w"), "adversarial_training"] == pytest.approx(perturbed.delta_D_w.mean())
    clean = pd.read_csv(report_dir / "table4_methods.csv").set_index(["dataset", "measure"])
    change = round(block.loc[("etth1", "ΔD_w"), "adversarial_training"], 3) - round(
        clean.loc[("etth1", "ΔD_w"), "adversarial_training"], 3)
    assert block.loc[("etth1", "ΔD_w"), "adversarial_training_change"] == pytest.approx(change, abs=1e-12)
