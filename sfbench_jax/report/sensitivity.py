"""Sensitivity diagnostics of stored runs (protocol 6.7, paper Tables 10-12): evaluation-seed stability, fixed
channel fractions, and selector pressure. Each compares rows of another realisation (or selection) with the
canonical rows of the same winners; runs the comparison needs but the set lacks are named in the error.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
from scipy.stats import spearmanr

from sfbench_jax.data.registry import DATASETS, DISPLAY_ORDER
from sfbench_jax.faults.registry import SCENARIOS
from sfbench_jax.report.architectures import ARCHITECTURE_ORDER, ordered
from sfbench_jax.report.families import channel_scoped
from sfbench_jax.report.realisations import (
    NotApplicable,
    canonical_seed,
    is_fixed_fraction,
    is_perturbed_selection,
    one_row_per_cell,
    with_method_columns,
)

SCENARIO_CLASS = {fault.key: fault.fault_class for fault in SCENARIOS}
CHANNEL_SCOPED = tuple(fault.key for fault in SCENARIOS if fault.is_channel_scoped)


class MissingRunsError(NotApplicable):
    """A sensitivity comparison lacks runs; the message names each missing (dataset, architecture, setting)."""


def _baselines(frame: pd.DataFrame) -> pd.DataFrame:
    frame = with_method_columns(frame)
    return frame[(frame["method"] == "baseline") & ~is_perturbed_selection(frame)]


def _min_spearman(table: pd.DataFrame) -> float:
    """Minimum pairwise Spearman correlation between the columns (realisations) of an architecture x
    realisation table; NaN with fewer than two architectures."""
    if len(table) < 2:
        return np.nan
    values = [spearmanr(table[a], table[b]).statistic for a, b in itertools.combinations(table.columns, 2)]
    return float(np.min(values)) if values else np.nan


def _agreement(worst: pd.DataFrame, reference: str) -> tuple[int, int]:
    """Architectures whose exact worst scenario (and scenario class) equals the reference column's in every other
    column."""
    others = [c for c in worst.columns if c != reference]
    exact = sum(all(worst.loc[a, c] == worst.loc[a, reference] for c in others) for a in worst.index)
    same_class = sum(all(SCENARIO_CLASS.get(worst.loc[a, c]) == SCENARIO_CLASS.get(worst.loc[a, reference])
                         for c in others) for a in worst.index)
    return exact, same_class


def _complete(rows: pd.DataFrame, dataset: str, column: str, settings: list, what: str) -> list[str]:
    """Architectures present for every setting; raise naming the missing (architecture, setting) runs."""
    architectures = ordered(list(rows["architecture"].unique()), ARCHITECTURE_ORDER)
    missing = [f"({dataset}, {architecture}, {column}={setting})" for architecture in architectures
               for setting in settings if rows[(rows["architecture"] == architecture)
                                               & (rows["_setting"] == setting)].empty]
    if missing:
        raise MissingRunsError(f"{what} lacks {len(missing)} run(s): {', '.join(missing)}. Run them (stored winners "
                               "are re-evaluated without training) or pass the folders that hold them.")
    return architectures


def eval_seed_stability(frame: pd.DataFrame) -> pd.DataFrame:
    """Paper Table 10 per dataset: mean and largest absolute shift of D_w, MSE_w (and MSE_c) from the canonical
    realisation over architectures x explicit seeds, the minimum pairwise Spearman correlation of the
    architecture rankings across all realisations, and the worst-scenario agreement (exact, class).

    Raises:
        MissingRunsError: a dataset has no explicit seed, or an architecture lacks a realisation.
    """
    rows = _baselines(frame)
    rows = rows[~is_fixed_fraction(rows)]
    records = []
    for dataset in ordered(list(rows["dataset"].unique()), DISPLAY_ORDER):
        subset = rows[rows["dataset"] == dataset].copy()
        canonical = canonical_seed(dataset)
        subset["_setting"] = ["canonical" if int(s) == canonical else int(s) for s in subset["eval_seed"]]
        seeds = sorted(s for s in subset["_setting"].unique() if s != "canonical")
        if not seeds:
            continue
        architectures = _complete(subset, dataset, "eval_seed", ["canonical", *seeds], "Table 10")
        one_row_per_cell(subset, ("architecture", "_setting"), "Table 10")
        records.append(_stability_record(dataset, subset, architectures, ["canonical", *seeds]))
    if not records:
        raise MissingRunsError("Table 10 needs baseline runs at the canonical eval seed and at explicit seeds "
                               "(e.g. eval.seed=0,1,2,3); none of the runs has an explicit seed.")
    return pd.DataFrame(records)


def _stability_record(dataset: str, subset: pd.DataFrame, architectures: list[str], settings: list) -> dict:
    pivot = {column: subset.pivot(index="architecture", columns="_setting", values=column).loc[architectures,
                                                                                                 settings]
             for column in ("d_w", "mse_w", "mse_c", "worst_scenario")}
    record: dict = {"dataset": dataset, "architectures": len(architectures), "seeds": ",".join(map(str, settings[1:]))}
    for column in ("d_w", "mse_w", "mse_c"):
        shifts = (pivot[column][settings[1:]].astype(float).sub(pivot[column]["canonical"].astype(float), axis=0)).abs()
        record[f"mean_abs_shift_{column}"] = float(shifts.to_numpy().mean())
        record[f"max_abs_shift_{column}"] = float(shifts.to_numpy().max())
    record["min_spearman_d_w"] = _min_spearman(pivot["d_w"].astype(float))
    record["min_spearman_mse_w"] = _min_spearman(pivot["mse_w"].astype(float))
    exact, same_class = _agreement(pivot["worst_scenario"], "canonical")
    record.update(worst_exact=exact, worst_class=same_class)
    return record


def fixed_fraction_rows(frame: pd.DataFrame) -> pd.DataFrame:
    """Per fixed-fraction baseline run: its canonical counterpart (same eval seed, severity rule) and the
    reference's `fixed_channel_fraction.csv` columns.

    Raises:
        MissingRunsError: a fixed-fraction run has no counterpart under the severity rule.
    """
    rows = _baselines(frame)
    fixed, plain = rows[is_fixed_fraction(rows)], rows[~is_fixed_fraction(rows)]
    keys = ["dataset", "architecture", "eval_seed", "rng_mode", "k"]
    plain = one_row_per_cell(plain, keys, "Table 12")
    merged = fixed.merge(plain, on=keys, how="left", suffixes=("", "_canonical"), indicator=True)
    lacking = merged[merged["_merge"] == "left_only"]
    if not lacking.empty:
        names = ", ".join(f"({r.dataset}, {r.architecture}, eval_seed={r.eval_seed})" for r in lacking.itertuples())
        raise MissingRunsError(f"Table 12 lacks the severity-rule run(s) of {names}: run them with the same "
                               "eval.seed and no eval.channel_fraction.")
    records = []
    for _, row in merged.iterrows():
        canonical_row = {key.removesuffix("_canonical"): row[key] for key in row.index if key.endswith("_canonical")}
        scoped, scoped_canonical = channel_scoped(row, CHANNEL_SCOPED), channel_scoped(canonical_row, CHANNEL_SCOPED)
        pool = len(DATASETS[row["dataset"]].continuous_pool) if row["dataset"] in DATASETS else np.nan
        records.append({
            "dataset": row["dataset"], "architecture": row["architecture"], "eval_seed": row["eval_seed"],
            "channel_fraction": float(row["channel_fraction"]),
            "fixed_channel_count": math.ceil(float(row["channel_fraction"]) * pool),
            "canonical_D_w": row["d_w_canonical"], "fixed_fraction_D_w": row["d_w"],
            "delta_D_w_fixed_fraction": row["d_w"] - row["d_w_canonical"],
            "canonical_MSE_w": row["mse_w_canonical"], "fixed_fraction_MSE_w": row["mse_w"],
            "delta_MSE_w_fixed_fraction": row["mse_w"] - row["mse_w_canonical"],
            "canonical_D_mean": row["d_mean_canonical"], "fixed_fraction_D_mean": row["d_mean"],
            "delta_D_mean_fixed_fraction": row["d_mean"] - row["d_mean_canonical"],
            "canonical_worst_scenario": row["worst_scenario_canonical"],
            "fixed_fraction_worst_scenario": row["worst_scenario"],
            "canonical_channel_scoped_D_w": scoped_canonical[0], "fixed_fraction_channel_scoped_D_w": scoped[0],
            "canonical_channel_scoped_D_mean": scoped_canonical[1], "fixed_fraction_channel_scoped_D_mean": scoped[1],
            "run_dir": row["run_dir"], "canonical_run_dir": row["run_dir_canonical"],
        })
    return pd.DataFrame(records)


def fixed_fraction_summary(per_run: pd.DataFrame) -> pd.DataFrame:
    """Paper Table 12 per (dataset, q): k_fix, mean signed and largest absolute shift of D_w and MSE_w, the
    Spearman correlation of the architecture rankings (canonical vs fixed) and the worst-scenario match."""
    records = []
    for (dataset, fraction), group in per_run.groupby(["dataset", "channel_fraction"], sort=False):
        group = group.set_index("architecture")
        record = {"dataset": dataset, "channel_fraction": fraction,
                  "fixed_channel_count": int(group["fixed_channel_count"].iloc[0]), "architectures": len(group)}
        for name, column in (("d_w", "D_w"), ("mse_w", "MSE_w")):
            delta = group[f"delta_{column}_fixed_fraction"].astype(float)
            record[f"mean_signed_shift_{name}"] = float(delta.mean())
            record[f"max_abs_shift_{name}"] = float(delta.abs().max())
            record[f"spearman_{name}"] = _min_spearman(group[[f"canonical_{column}", f"fixed_fraction_{column}"]])
        record["worst_exact"] = int((group["canonical_worst_scenario"] == group["fixed_fraction_worst_scenario"]).sum())
        record["worst_class"] = int(sum(SCENARIO_CLASS.get(a) == SCENARIO_CLASS.get(b) for a, b in zip(
            group["canonical_worst_scenario"], group["fixed_fraction_worst_scenario"], strict=True)))
        records.append(record)
    frame = pd.DataFrame(records)
    if frame.empty:
        return frame
    order = ordered(list(frame["dataset"].unique()), DISPLAY_ORDER)
    return frame.sort_values(["dataset", "channel_fraction"], key=lambda c: c.map(order.index)
                             if c.name == "dataset" else c).reset_index(drop=True)
