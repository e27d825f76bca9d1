"""Method-baseline deltas (protocol 6.4): every method winner paired with the baseline winner of its (dataset,
architecture) on the same test realisation, the dataset means over the available pairs, the pair bootstrap
and tau-bar.

Input is a stored summary frame (`RunSet.summary`, rows of any realisation); the statistics themselves are
`sfbench_jax.evaluation.normalised.pair_bootstrap` and friends.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from sfbench_jax.data.registry import DATASETS
from sfbench_jax.evaluation.normalised import PAIR_BOOTSTRAP_COLUMNS, pair_bootstrap, pair_group_seed
from sfbench_jax.report.realisations import (
    REALISATION_COLUMNS,
    NotApplicable,
    is_perturbed_selection,
    one_row_per_cell,
    with_method_columns,
)

#: Quantities compared per pair: summary column -> reference name (the long-form CSVs' spelling).
DELTA_QUANTITIES = {"mse_c": "err_clean", "d_w": "D_w", "mse_w": "err_pert_ws", "d_mean": "D_mean",
                    "mpc": "err_pert_mean", "mce": "mCE_snaive", "rel_mce": "relative_mCE_snaive"}
#: The pair-bootstrap columns (reference order) and the summary quantity each one resamples.
BOOTSTRAP_QUANTITIES = dict(zip(PAIR_BOOTSTRAP_COLUMNS, ("mse_c", "d_w", "d_mean", "mse_w", "mpc"), strict=True))
PAIR_KEYS = ("dataset", "architecture", *REALISATION_COLUMNS)


class MissingBaselineError(NotApplicable):
    """A method run has no baseline winner on the same realisation."""


def selection_kind(frame: pd.DataFrame) -> pd.Series:
    """"clean" (the winner chosen on clean validation, whatever its metric) or the perturbed-validation mode."""
    metric = frame["selection_metric"].astype(str)
    return metric.where(is_perturbed_selection(frame), "clean")


def _realisation_key(frame: pd.DataFrame) -> pd.DataFrame:
    keys = frame[list(PAIR_KEYS)].copy()
    keys["channel_fraction"] = pd.to_numeric(keys["channel_fraction"], errors="coerce").fillna(-1.0)
    for column in ("eval_seed", "k"):
        keys[column] = keys[column].astype("int64")
    return keys.astype({"dataset": str, "architecture": str, "rng_mode": str})


def paired_rows(frame: pd.DataFrame) -> pd.DataFrame:
    """One row per method winner with its baseline: `<q>_method`, `<q>_baseline`, `delta_<q>`,
    `pct_change_<q>` for every q of `DELTA_QUANTITIES`, and `tau` = mPC(baseline) - mPC(method).

    Baselines are the clean-selected baseline rows of `frame`; every method row (any selection) is paired.

    Raises:
        MissingBaselineError: a method row has no baseline on its realisation (naming its folder).
        ValueError: a (dataset, architecture, method, realisation, selection) cell has several rows.
    """
    frame = with_method_columns(frame)
    is_baseline = frame["method"].astype(str) == "baseline"
    baselines = frame[is_baseline & ~is_perturbed_selection(frame)]
    methods = frame[~is_baseline]
    if methods.empty:
        return pd.DataFrame()
    baselines = one_row_per_cell(baselines.assign(**_realisation_key(baselines)), PAIR_KEYS, "A baseline pair")
    methods = methods.assign(**_realisation_key(methods), selection=selection_kind(methods))
    methods = one_row_per_cell(methods, (*PAIR_KEYS, "method", "selection"), "A method pair")
    merged = methods.merge(baselines, on=list(PAIR_KEYS), how="left", suffixes=("_method", "_baseline"),
                           indicator=True)
    unmatched = merged[merged["_merge"] == "left_only"]
    if not unmatched.empty:
        row = unmatched.iloc[0]
        raise MissingBaselineError(
            f"{len(unmatched)} method run(s) have no baseline winner on the same realisation, e.g. "
            f"{row['run_dir_method']} ({row['dataset']}, {row['architecture']}, {row['method_method']}, eval_seed "
            f"{row['eval_seed']}, rng {row['rng_mode']}, k {row['k']}). Add the baseline run of that cell.")
    return _with_deltas(merged.drop(columns="_merge"))


def _with_deltas(merged: pd.DataFrame) -> pd.DataFrame:
    merged = merged.rename(columns={"method_method": "method", "variant_method": "variant",
                                    "selection_metric_method": "selection_metric",
                                    "selection_value_method": "selection_value"})
    for quantity in DELTA_QUANTITIES:
        method = pd.to_numeric(merged.get(f"{quantity}_method", np.nan), errors="coerce")
        baseline = pd.to_numeric(merged.get(f"{quantity}_baseline", np.nan), errors="coerce")
        merged[f"{quantity}_method"], merged[f"{quantity}_baseline"] = method, baseline
        merged[f"delta_{quantity}"] = method - baseline
        merged[f"pct_change_{quantity}"] = 100.0 * (method - baseline) / baseline
    merged["tau"] = merged["mpc_baseline"] - merged["mpc_method"]
    merged["channel_fraction"] = merged["channel_fraction"].where(merged["channel_fraction"] >= 0)
    return merged.sort_values(["dataset", "method", "architecture", "variant"]).reset_index(drop=True)


def dataset_means(pairs: pd.DataFrame) -> pd.DataFrame:
    """Per (dataset, method, selection kind, realisation): `pairs` (count) and the plain mean of every delta and
    tau."""
    if pairs.empty:
        return pd.DataFrame()
    columns = [f"delta_{q}" for q in DELTA_QUANTITIES] + [f"pct_change_{q}" for q in DELTA_QUANTITIES] + ["tau"]
    keys = ["dataset", "method", "selection", *REALISATION_COLUMNS]
    filled = pairs.assign(channel_fraction=pairs["channel_fraction"].fillna(-1.0))
    grouped = filled.groupby(keys, sort=False, dropna=False)
    means = grouped[columns].mean().reset_index()
    means.insert(len(keys), "pairs", grouped.size().to_numpy())
    means["channel_fraction"] = means["channel_fraction"].where(means["channel_fraction"] >= 0)
    return means


def pair_bootstrap_table(pairs: pd.DataFrame, *, draws: int = 1000) -> pd.DataFrame:
    """Per (dataset, method, selection, realisation): count, the bootstrap seeds and, for every pair-bootstrap
    column in the reference's order, `<column>_mean`, `_CI_lo`, `_CI_hi` (protocol 6.4; pairs sorted by
    (architecture, variant id))."""
    records = []
    keys = ["dataset", "method", "selection", *REALISATION_COLUMNS]
    filled = pairs.assign(channel_fraction=pairs["channel_fraction"].fillna(-1.0))
    for values, group in filled.groupby(keys, sort=False, dropna=False):
        record = dict(zip(keys, values, strict=True))
        group = group.sort_values(["architecture", "variant"])
        spec = DATASETS[str(record["dataset"])]
        seed = pair_group_seed(int(record["eval_seed"]), dataset_reference_key=spec.reference_key,
                               signature=spec.signature, method=str(record["method"]))
        record.update(count=len(group), delta_bootstrap_seed=seed, delta_bootstrap_draws=draws,
                      architectures=",".join(group["architecture"].astype(str)))
        for column, quantity in BOOTSTRAP_QUANTITIES.items():
            interval = pair_bootstrap(group[f"delta_{quantity}"].to_numpy(float), group_seed=seed, column=column,
                                      draws=draws)
            record.update({f"{column}_mean": interval.mean, f"{column}_CI_lo": interval.low,
                           f"{column}_CI_hi": interval.high})
        record["channel_fraction"] = record["channel_fraction"] if record["channel_fraction"] >= 0 else np.nan
        records.append(record)
    return pd.DataFrame(records)
