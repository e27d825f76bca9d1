"""Score families of real runs (protocol 6.5-6.6): the SeasonalNaive anchor's mCE and relative mCE are exactly 1,
D_mean * MSE_c = mPC in every row, the in-run mCE equals the one recomputed from the stored per-window files
(and a NumPy recomputation written out here), rho-bar's log-log fit by hand, and Table 19's SeasonalNaive
columns in reference mode equal the published digits (protocol 8.5)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from sfbench_jax.faults import SCENARIO_KEYS
from sfbench_jax.report.families import normalised_from_stored
from sfbench_jax.report.published import PUBLISHED_SEASONAL_NAIVE_TABLE19

from .conftest import report_command


def test_anchor_scores_one_and_mean_case_identity(analysis: object) -> None:
    frame = analysis.frame
    anchors = frame[(frame.architecture == "seasonal_naive") & (frame.method == "baseline")]
    assert len(anchors) == 6  # per dataset: canonical and two eval seeds (the fixed-fraction runs are DLinear's)
    assert (anchors.mce == 1.0).all() and (anchors.rel_mce == 1.0).all()  # exactly
    assert np.allclose(frame.d_mean * frame.mse_c, frame.mpc, rtol=1e-12, atol=0)
    assert np.allclose(frame.rpc, frame.mse_c / frame.mpc, rtol=1e-12, atol=0)
    assert frame.mce.notna().all() and frame.rel_mce.notna().all()


def _binned_error(faulted: np.ndarray, severity: np.ndarray) -> float:
    """E_i written out: the sum over the ten severity bins of the bin's mean faulted MSE."""
    total = 0.0
    for b in range(10):
        inside = np.floor(np.minimum(severity, 0.999999) / 0.1) == b
        if inside.any():
            total += faulted[inside].mean()
    return total


def test_mce_from_stored_windows_equals_the_run_and_numpy(analysis_root: Path, analysis: object) -> None:
    runs = analysis.runs
    model = runs.by_directory(analysis_root / "runs" / "etth1" / "dlinear" / "canonical")
    anchor = runs.by_directory(analysis_root / "runs" / "etth1" / "seasonal_naive" / "canonical")
    mce, rel_mce = normalised_from_stored(model, anchor)
    assert mce == pytest.approx(model.row["mce"], rel=1e-12)
    assert rel_mce == pytest.approx(model.row["rel_mce"], rel=1e-12)
    mine, reference = model.per_window(), anchor.per_window()
    ce, rel_ce = [], []
    for key in SCENARIO_KEYS:
        severity = mine[f"severity_{key}"].to_numpy(np.float64)
        assert np.array_equal(severity, reference[f"severity_{key}"].to_numpy(np.float64))  # same faults
        e_model = _binned_error(mine[f"mse_{key}"].to_numpy(np.float64), severity)
        e_anchor = _binned_error(reference[f"mse_{key}"].to_numpy(np.float64), severity)
        ce.append(e_model / e_anchor)
        rel_ce.append((e_model - mine.mse_clean.to_numpy(np.float64).mean())
                      / (e_anchor - reference.mse_clean.to_numpy(np.float64).mean()))
    assert np.mean(ce) == pytest.approx(model.row["mce"], rel=1e-9)
    assert np.mean(rel_ce) == pytest.approx(model.row["rel_mce"], rel=1e-9)


def test_rho_fit_by_hand(report_dir: Path) -> None:
    fits = pd.read_csv(report_dir / "rho_eff_fits.csv")
    full = pd.read_csv(report_dir / "full_results.csv")
    canonical = full[(full.pipeline_method == "baseline") & full.perturbation_channel_fraction_fixed.isna()
                     & (full.selection_pool == "clean_validation")]
    etth1 = canonical[canonical.dataset == "etth1"].sort_values("eval_data_seed")
    seed = int(fits[fits.dataset == "etth1"].eval_data_seed.max())
    rows = etth1[etth1.eval_data_seed == seed]
    slope, intercept = np.polyfit(np.log(rows.MSE_test), np.log(rows.mPC), deg=1)
    fit = fits[(fits.dataset == "etth1") & (fits.eval_data_seed == seed)].iloc[0]
    assert (fit.slope, fit.intercept) == pytest.approx((slope, intercept), rel=1e-9)
    rho = np.exp(intercept + slope * np.log(rows.MSE_test)) - rows.mPC
    assert rows.rho_eff.to_numpy() == pytest.approx(rho.to_numpy(), abs=1e-12)


def test_table19_seasonal_naive_columns_match_the_paper(analysis_root: Path, tmp_path: Path) -> None:
    completed = report_command("table19", "--runs", str(analysis_root / "reference"), "--select", "rng_mode=reference",
                               "--published-frontier", "--output", str(tmp_path))
    assert completed.returncode == 0, completed.stderr[-3000:]
    block = pd.read_csv(tmp_path / "table19_score_families.csv").set_index(["dataset", "measure"])
    names = {"D_w": "D_w", "D̄": "D_mean", "mPC": "mPC", "mCE": "mCE", "rel. mCE": "rel_mCE", "ρ̄": "rho"}
    for dataset in ("etth1", "beijing_air_tiantan"):
        for measure, key in names.items():
            value = block.loc[(dataset, measure), "seasonal_naive"]
            assert f"{value:.3f}" == f"{PUBLISHED_SEASONAL_NAIVE_TABLE19[dataset][key]:.3f}", (dataset, measure)
    markdown = (tmp_path / "table19_score_families.md").read_text().splitlines()
    assert markdown[0] == "| dataset | measure | SeasonalNaive |"
    assert "| ETTh1 | D_w | **1.288** |" in markdown and "| ETTh1 | ρ̄ | **-0.040** |" in markdown
