"""The reference's long-form analysis CSVs (protocol 7.2-7.3) with the reference's column names, so that people
who know the original find their files: `full_results.csv`, `analysis.csv`, `scenario_summary.csv`,
`main_table_backbone.csv`, `backbone_scenario_heatmap_data.csv`, `improvement_deltas_selected.csv`,
`improvement_deltas_long.csv`, `pipeline_method_delta_results.csv`, `reference_normalization_anchors.csv`,
`rho_eff_fits.csv`, `pgd_trajectory_data.csv`.

These names (`MSE_test`, `err_pert_ws`, `D_mean`, ...) are used in these files only; everything else uses the
summary's names (`mse_c`, `mse_w`, `d_mean`, ...). Inputs are the frames of `families` and `deltas`.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from sfbench_jax.config import ANCHOR_MODEL
from sfbench_jax.data.registry import DATASETS, DISPLAY_ORDER
from sfbench_jax.faults.registry import SCENARIOS
from sfbench_jax.methods import METHODS
from sfbench_jax.report.architectures import ARCHITECTURE_FAMILIES, ARCHITECTURE_ORDER, dataset_label, ordered
from sfbench_jax.report.deltas import DELTA_QUANTITIES
from sfbench_jax.report.paper import label_of
from sfbench_jax.report.realisations import is_perturbed_selection

#: Summary column -> reference name of the interval-carrying scores.
SCORE_NAMES = {"d_w": "D_w", "d_mean": "D_mean", "mse_w": "err_pert_ws", "mpc": "err_pert_mean"}


def _signature(dataset: str) -> str:
    return DATASETS[dataset].signature if dataset in DATASETS else ""


def _selection_pool(row: pd.Series) -> str:
    metric = str(row.get("selection_metric", "") or "")
    return metric if metric.startswith("perturbed") else "clean_validation"


def full_results(scored: pd.DataFrame) -> pd.DataFrame:
    """One row per evaluated winner (`full_results.csv`)."""
    records = []
    for _, row in scored.iterrows():
        method = str(row["method"])
        perturbed = bool(is_perturbed_selection(pd.DataFrame([row])).iloc[0])
        record = {
            "dataset": row["dataset"], "data_config_signature": _signature(row["dataset"]), "run_id": row["run_dir"],
            "model": label_of(row["architecture"]), "model_architecture": row["architecture"],
            "pipeline_id": row["variant"], "pipeline_method": method,
            "pipeline_kind": METHODS[method].kind if method in METHODS else "",
            "robustness_method": label_of(method), "backbone_architecture": row["architecture"],
            "eval_data_seed": row["eval_seed"], "rng_mode": row["rng_mode"], "MSE_val": row["mse_val"],
            "MSE_pert_ws_val": row["selection_value"] if perturbed and "worst" in str(row["selection_metric"])
            else np.nan,
            "MSE_pert_mean_val": row["selection_value"] if perturbed and "mean" in str(row["selection_metric"])
            else np.nan,
            "MSE_test": row["mse_c"], "MSE_test_CI_lo": row.get("mse_c_ci_lo"),
            "MSE_test_CI_hi": row.get("mse_c_ci_hi"),
            "best_val_loss": row["mse_val"],
            "perturbation_channel_fraction_max": row["channel_fraction"] if pd.notna(row["channel_fraction"]) else 0.5,
            "perturbation_channel_fraction_fixed": row["channel_fraction"],
        }
        for column, name in SCORE_NAMES.items():
            record.update({name: row[column], f"{name}_CI_lo": row[f"{column}_ci_lo"],
                           f"{name}_CI_hi": row[f"{column}_ci_hi"]})
        record.update({"MSE_w": row["mse_w"], "worst_scenario": row["worst_scenario"], "n_test_samples": row["k"],
                       "selection_pool": _selection_pool(row), "mCE_snaive": row["mce"],
                       "relative_mCE_snaive": row["rel_mce"], "mPC": row["mpc"], "rPC": row["rpc"],
                       "rho_eff": row["rho"], "rho_eff_status": row["rho_status"]})
        records.append(record)
    return pd.DataFrame(records)


def analysis(full: pd.DataFrame) -> pd.DataFrame:
    """`analysis.csv`: `full_results` plus the validation-to-test drop."""
    frame = full.copy()
    frame["val_to_test_drop_abs"] = frame["MSE_val"] - frame["MSE_test"]
    frame["val_to_test_drop"] = frame["val_to_test_drop_abs"] / frame["MSE_val"]
    return frame


def scenario_summary(scored: pd.DataFrame) -> pd.DataFrame:
    """Per run and scenario: D and err_pert with intervals (`scenario_summary.csv`)."""
    records = []
    for _, row in scored.iterrows():
        for fault in SCENARIOS:
            key = fault.key
            records.append({"run_id": row["run_dir"], "dataset": row["dataset"], "model": label_of(row["architecture"]),
                            "pipeline_method": row["method"], "pipeline_id": row["variant"],
                            "eval_data_seed": row["eval_seed"], "pert_idx": fault.index, "scenario": fault.display_name,
                            "n_test_samples": row["k"], "err_clean_global": row["mse_c"],
                            "err_pert": row[f"mse_{key}"], "err_pert_CI_lo": row[f"mse_{key}_ci_lo"],
                            "err_pert_CI_hi": row[f"mse_{key}_ci_hi"], "D": row[f"d_{key}"],
                            "D_CI_lo": row[f"d_{key}_ci_lo"], "D_CI_hi": row[f"d_{key}_ci_hi"]})
    return pd.DataFrame(records)


def _baseline_order(baselines: pd.DataFrame) -> tuple[list[str], list[str]]:
    return (ordered(list(baselines["dataset"].unique()), DISPLAY_ORDER),
            ordered(list(baselines["architecture"].unique()), ARCHITECTURE_ORDER))


def main_table_backbone(baselines: pd.DataFrame) -> pd.DataFrame:
    """Table 4's input (`main_table_backbone.csv`): one row per baseline winner in table order."""
    datasets, architectures = _baseline_order(baselines)
    records = []
    for _, row in baselines.iterrows():
        records.append({"dataset_order": datasets.index(row["dataset"]), "dataset": row["dataset"],
                        "dataset_label": dataset_label(row["dataset"]),
                        "backbone_order": architectures.index(row["architecture"]), "backbone": row["architecture"],
                        "backbone_label": label_of(row["architecture"]), "run_id": row["run_dir"],
                        "data_config_signature": _signature(row["dataset"]), "D_w": row["d_w"],
                        "D_w_CI_lo": row["d_w_ci_lo"], "D_w_CI_hi": row["d_w_ci_hi"], "MSE_c": row["mse_c"],
                        "MSE_w": row["mse_w"], "D_mean": row["d_mean"], "MSE_mean_fault_time": row["mpc"],
                        "worst_scenario": row["worst_scenario"], "n_test_samples": row["k"],
                        "selection_pool": _selection_pool(row)})
    return pd.DataFrame(records).sort_values(["dataset_order", "backbone_order"]).reset_index(drop=True)


def heatmap_data(baselines: pd.DataFrame) -> pd.DataFrame:
    """Figure 2's input (`backbone_scenario_heatmap_data.csv`): one row per baseline winner and scenario."""
    records = []
    for _, row in baselines.iterrows():
        for fault in SCENARIOS:
            key = fault.key
            records.append({"dataset": row["dataset"], "dataset_label": dataset_label(row["dataset"]),
                            "backbone": row["architecture"], "backbone_label": label_of(row["architecture"]),
                            "scenario_order": fault.index, "scenario": key, "scenario_label": fault.display_name,
                            "scenario_group": fault.fault_class, "D": row[f"d_{key}"],
                            "D_CI_lo": row[f"d_{key}_ci_lo"], "D_CI_hi": row[f"d_{key}_ci_hi"],
                            "err_pert": row[f"mse_{key}"], "err_pert_CI_lo": row[f"mse_{key}_ci_lo"],
                            "err_pert_CI_hi": row[f"mse_{key}_ci_hi"], "MSE_c": row["mse_c"], "D_w": row["d_w"],
                            "MSE_w": row["mse_w"], "worst_scenario": row["worst_scenario"],
                            "is_worst_scenario": row["worst_scenario"] == key, "run_id": row["run_dir"]})
    return pd.DataFrame(records)


def improvement_deltas(pairs: pd.DataFrame) -> pd.DataFrame:
    """Per method pair: improved and baseline values, deltas, percentage changes, tau (`improvement_deltas_selected
    .csv`)."""
    records = []
    for _, row in pairs.iterrows():
        record = {"dataset": row["dataset"], "pipeline_method": row["method"], "pipeline_id": row["variant"],
                  "backbone_architecture": row["architecture"],
                  "architecture_family": ARCHITECTURE_FAMILIES.get(row["architecture"], ""),
                  "eval_data_seed": row["eval_seed"], "run_id": row["run_dir_method"],
                  "matched_baseline_run_id": row["run_dir_baseline"], "selection_metric": row["selection_metric"],
                  "selection_value": row["selection_value"]}
        for quantity, name in DELTA_QUANTITIES.items():
            record.update({f"{name}_improved": row[f"{quantity}_method"],
                           f"{name}_baseline": row[f"{quantity}_baseline"], f"delta_{name}": row[f"delta_{quantity}"],
                           f"pct_change_{name}": row[f"pct_change_{quantity}"]})
        record["tau_mean"] = row["tau"]
        records.append(record)
    return pd.DataFrame(records)


def improvement_deltas_long(deltas: pd.DataFrame) -> pd.DataFrame:
    """`improvement_deltas_long.csv`: one row per pair and metric."""
    keys = ["dataset", "pipeline_method", "pipeline_id", "backbone_architecture", "eval_data_seed", "run_id",
            "matched_baseline_run_id"]
    records = []
    for _, row in deltas.iterrows():
        for name in DELTA_QUANTITIES.values():
            records.append({**{k: row[k] for k in keys}, "metric": name, "improved": row[f"{name}_improved"],
                            "baseline": row[f"{name}_baseline"], "delta": row[f"delta_{name}"],
                            "pct_change": row[f"pct_change_{name}"]})
    return pd.DataFrame(records)


def anchors(scored: pd.DataFrame) -> pd.DataFrame:
    """`reference_normalization_anchors.csv`: the SeasonalNaive anchor of each dataset and realisation."""
    rows = scored[(scored["architecture"] == ANCHOR_MODEL) & (scored["method"] == "baseline")]
    return pd.DataFrame([{"dataset": r["dataset"], "eval_data_seed": r["eval_seed"], "rng_mode": r["rng_mode"],
                          "n_test_samples": r["k"], "perturbation_channel_fraction_fixed": r["channel_fraction"],
                          "anchor_model": "SeasonalNaive", "anchor_run_id": r["run_dir"],
                          "anchor_hyperparameters": r["hyperparameters"], "anchor_MSE_test": r["mse_c"],
                          "anchor_err_pert_mean": r["mpc"], "anchor_D_mean": r["d_mean"]} for _, r in rows.iterrows()])


def rho_fits_table(fits: pd.DataFrame) -> pd.DataFrame:
    """`rho_eff_fits.csv`: the per-dataset log-log fit."""
    return fits.rename(columns={"eval_seed": "eval_data_seed", "k": "n_test_samples"})


def trajectory_data(pairs: pd.DataFrame, method: str) -> pd.DataFrame:
    """Figure 6's input (`pgd_trajectory_data.csv` for PGD): one row per pair of `method`."""
    rows = pairs[pairs["method"] == method]
    records = []
    for _, row in rows.iterrows():
        record = {"dataset": row["dataset"], "architecture": row["architecture"],
                  "architecture_family": ARCHITECTURE_FAMILIES.get(row["architecture"], ""),
                  "baseline_run_id": row["run_dir_baseline"], "improvement_method": method,
                  "improvement_run_id": row["run_dir_method"], "improvement_pipeline_id": row["variant"]}
        for side, suffix in (("baseline", "_baseline"), ("improvement", "_method")):
            record.update({f"{side}_MSE_c": row[f"mse_c{suffix}"], f"{side}_D_w": row[f"d_w{suffix}"],
                           f"{side}_MSE_w": row[f"mse_w{suffix}"], f"{side}_D_mean": row[f"d_mean{suffix}"],
                           f"{side}_MSE_mean_fault_time": row[f"mpc{suffix}"],
                           f"{side}_worst_scenario": row[f"worst_scenario{suffix}"]})
        record.update({"delta_MSE_c": row["delta_mse_c"], "delta_D_w": row["delta_d_w"],
                       "delta_MSE_w": row["delta_mse_w"], "delta_D_mean": row["delta_d_mean"],
                       "delta_MSE_mean_fault_time": row["delta_mpc"], "selection_pool": _selection_pool(row)})
        records.append(record)
    return pd.DataFrame(records)
