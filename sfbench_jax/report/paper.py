"""The paper's tables in its layouts (protocol 7.3, 8): each as a CSV-ready frame (full precision) and Markdown
(three decimals, the best entry of each dataset-measure row in bold within its block).

Tables 4 (both blocks; the one Table 4 renderer), 10, 11, 12, 16, 17, 19 and 20. Labels and display orders come
from the model and method specs (registry order). Inputs are stored summary rows and the frames of
`deltas`, `families` and `sensitivity`; nothing here computes a score.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from sfbench_jax.data.registry import DISPLAY_ORDER
from sfbench_jax.faults.registry import SCENARIOS
from sfbench_jax.methods import METHODS
from sfbench_jax.report.architectures import (
    ARCHITECTURE_LABELS,
    ARCHITECTURE_ORDER,
    RegisteredNames,
    SpecFacts,
    dataset_label,
    ordered,
)

#: Method display order (paper Table 4 right block): the registry's, without the baseline.
METHOD_ORDER = RegisteredNames(METHODS, keep=lambda spec: spec.kind != "baseline")
#: Method display labels, from the specs.
METHOD_LABELS = SpecFacts(METHODS, lambda spec: spec.display_label, keep=lambda spec: spec.kind != "baseline")
SCENARIO_LABELS = {fault.key: fault.display_name for fault in SCENARIOS}
#: The summary's flag of a model whose forecast ignores its input, and the block column naming the flagged entries of
#: a row (present only where one is flagged).
IGNORES_INPUT = "ignores_input"
#: The marker of a flagged entry in Markdown, and the note under a table that holds one.
IGNORES_INPUT_MARK = "†"
IGNORES_INPUT_NOTE = (f"{IGNORES_INPUT_MARK} ignores its input (the same forecast for every window, so D is 1 under "
                      "every fault): never marked best.")
NON_VALUE_COLUMNS = ("dataset", "measure", "best", IGNORES_INPUT)


def is_flagged(value: object) -> bool:
    """Whether a summary's `ignores_input` value is set (True, "True", 1; missing or NaN is not)."""
    if isinstance(value, str):
        return value.strip().lower() in ("true", "1")
    return value is not None and not (isinstance(value, float) and np.isnan(value)) and bool(value)


def label_of(name: str) -> str:
    """Display label of an architecture or method key."""
    return ARCHITECTURE_LABELS.get(name, METHOD_LABELS.get(name, name))


def wide_block(rows: pd.DataFrame, *, column: str, order: Sequence[str],
               measures: Sequence[tuple[str, str]], higher_is_better: Sequence[str] = ()) -> pd.DataFrame:
    """Rows dataset x measure, one column per `column` value (architectures or methods), plus `best`.

    Args:
        rows: one row per (dataset, `column` value) with the measure columns.
        column: "architecture" or "method".
        order: display order of the column values.
        measures: `(label, source column)` per row of a dataset.
        higher_is_better: measure labels whose best entry is the highest (rho-bar, tau-bar).
    """
    datasets = ordered(list(rows["dataset"].astype(str).unique()), DISPLAY_ORDER)
    names = ordered(list(rows[column].astype(str).unique()), order)
    records = []
    any_flagged = False
    for dataset in datasets:
        subset = rows[rows["dataset"].astype(str) == dataset].set_index(column)
        flagged = [name for name in names if IGNORES_INPUT in subset.columns and name in subset.index
                   and is_flagged(subset.loc[name, IGNORES_INPUT])]
        any_flagged = any_flagged or bool(flagged)
        for label, source in measures:
            record: dict[str, object] = {"dataset": dataset, "measure": label}
            for name in names:
                record[name] = float(subset.loc[name, source]) if name in subset.index else np.nan
            record["best"] = _best(record, [name for name in names if name not in flagged],
                                   label in higher_is_better)
            record[IGNORES_INPUT] = " ".join(flagged)
            records.append(record)
    flag = [IGNORES_INPUT] if any_flagged else []  # the column appears only where an entry is flagged
    return pd.DataFrame(records, columns=["dataset", "measure", *names, "best", *flag])


def _best(record: dict, names: list[str], highest: bool) -> str:
    values = {name: record[name] for name in names if not np.isnan(record[name])}
    if not values:
        return ""
    sign = -1.0 if highest else 1.0
    return min(values, key=lambda name: (sign * round(values[name], 3), names.index(name)))


def block_markdown(block: pd.DataFrame, *, higher_is_better: Sequence[str] = (), decimals: int = 3) -> str:
    """Markdown of a `wide_block`: every entry equal to the row's rounded best in bold, `–` where missing; an entry
    that ignores its input marked `†` (never bold), with a note under the table."""
    names = [c for c in block.columns if c not in NON_VALUE_COLUMNS]
    lines = ["| dataset | measure | " + " | ".join(label_of(n) for n in names) + " |",
             "|" + "---|" * (len(names) + 2)]
    for _, row in block.iterrows():
        lines.append(f"| {dataset_label(row['dataset'])} | {row['measure']} | "
                     + " | ".join(_cells(row, names, row["measure"] in higher_is_better, decimals)) + " |")
    return "\n".join(lines) + "\n" + _flag_note(block)


def _flagged_names(row: pd.Series) -> set[str]:
    value = row.get(IGNORES_INPUT, "")
    return set(value.split()) if isinstance(value, str) else set()


def _flag_note(*blocks: pd.DataFrame) -> str:
    """The note under a table one of whose entries ignores its input ("" otherwise)."""
    flagged = any(IGNORES_INPUT in block.columns and block[IGNORES_INPUT].astype(str).str.strip().ne("").any()
                  for block in blocks)
    return f"\n{IGNORES_INPUT_NOTE}\n" if flagged else ""


def _cells(row: pd.Series, names: list[str], highest: bool, decimals: int) -> list[str]:
    flagged = _flagged_names(row)
    finite = [round(float(row[n]), decimals) for n in names if not np.isnan(row[n]) and n not in flagged]
    best = (max(finite) if highest else min(finite)) if finite else None
    cells = []
    for name in names:
        value = float(row[name])
        if np.isnan(value):
            cells.append("–")
        elif name in flagged:
            cells.append(f"{value:.{decimals}f}{IGNORES_INPUT_MARK}")
        else:
            text = f"{value:.{decimals}f}"
            cells.append(f"**{text}**" if round(value, decimals) == best else text)
    return cells


# --- Table 4 -------------------------------------------------------------------------------------------

ARCHITECTURE_MEASURES = (("D_w", "d_w"), ("MSE_c", "mse_c"), ("MSE_w", "mse_w"))
METHOD_MEASURES = (("ΔD_w", "delta_d_w"), ("ΔMSE_c", "delta_mse_c"), ("ΔMSE_w", "delta_mse_w"))


def table4_architecture_block(summary: pd.DataFrame, *, method: str = "baseline") -> pd.DataFrame:
    """Table 4's left block: rows dataset x measure (D_w, MSE_c, MSE_w), one column per architecture, plus `best`,
    from summary rows (one winner per cell) of `method`.

    Raises:
        ValueError: a (dataset, architecture) cell appears more than once.
    """
    rows = summary[summary["method"].astype(str) == method]
    duplicated = rows.duplicated(["dataset", "architecture"], keep=False)
    if duplicated.any():
        cells = sorted(set(zip(rows.loc[duplicated, "dataset"], rows.loc[duplicated, "architecture"], strict=True)))
        raise ValueError(f"Cells with more than one row: {cells}; Table 4 needs one winner per cell.")
    return wide_block(rows, column="architecture", order=ARCHITECTURE_ORDER, measures=ARCHITECTURE_MEASURES)


def table4_method_block(means: pd.DataFrame) -> pd.DataFrame:
    """Table 4's right block: dataset means of ΔD_w, ΔMSE_c, ΔMSE_w per method."""
    return wide_block(means, column="method", order=METHOD_ORDER, measures=METHOD_MEASURES)


def table4_markdown(architectures: pd.DataFrame, methods: pd.DataFrame | None = None) -> str:
    """Both blocks of Table 4 side by side (a row's method measure is the delta of its architecture measure),
    the best entry of each row in bold within each block; only the left block without method rows."""
    if methods is None or methods.empty:
        return block_markdown(architectures)
    left = [c for c in architectures.columns if c not in NON_VALUE_COLUMNS]
    right = [c for c in methods.columns if c not in NON_VALUE_COLUMNS]
    lines = ["| dataset | measure | " + " | ".join(label_of(n) for n in left) + " | measure | "
             + " | ".join(label_of(n) for n in right) + " |", "|" + "---|" * (len(left) + len(right) + 3)]
    by_row = {(r["dataset"], r["measure"]): r for _, r in methods.iterrows()}
    for _, row in architectures.iterrows():
        partner = by_row.get((row["dataset"], "Δ" + row["measure"]))
        tail = ([partner["measure"], *_cells(partner, right, False, 3)] if partner is not None
                else ["–"] * (len(right) + 1))
        lines.append(f"| {dataset_label(row['dataset'])} | {row['measure']} | "
                     + " | ".join([*_cells(row, left, False, 3), *tail]) + " |")
    return "\n".join(lines) + "\n" + _flag_note(architectures)


# --- Table 16 ------------------------------------------------------------------------------------------

def table16(canonical_baselines: pd.DataFrame) -> pd.DataFrame:
    """Per dataset and score (D_w, MSE_c, MSE_w): the winner and runner-up architectures with their 95% window
    bootstrap intervals."""
    records = []
    for dataset in ordered(list(canonical_baselines["dataset"].unique()), DISPLAY_ORDER):
        rows = canonical_baselines[canonical_baselines["dataset"] == dataset]
        for label, column in ARCHITECTURE_MEASURES:
            ranked = rows.sort_values(column, kind="stable")
            record = {"dataset": dataset, "score": label}
            for rank, prefix in enumerate(("winner", "runner_up")):
                if rank < len(ranked):
                    row = ranked.iloc[rank]
                    record.update({prefix: row["architecture"], f"{prefix}_estimate": row[column],
                                   f"{prefix}_ci_lo": row[f"{column}_ci_lo"],
                                   f"{prefix}_ci_hi": row[f"{column}_ci_hi"]})
            records.append(record)
    return pd.DataFrame(records)


def table16_markdown(table: pd.DataFrame) -> str:
    """Markdown of `table16`: `Winner | estimate (lo, hi) | Runner-up | estimate (lo, hi)`."""
    lines = ["| dataset | score | winner | estimate (95% CI) | runner-up | estimate (95% CI) |",
             "|---|---|---|---|---|---|"]
    for _, row in table.iterrows():
        cells = []
        for prefix in ("winner", "runner_up"):
            if isinstance(row.get(prefix), str):
                cells += [label_of(row[prefix]), _interval(row[f"{prefix}_estimate"], row[f"{prefix}_ci_lo"],
                                                           row[f"{prefix}_ci_hi"])]
            else:
                cells += ["–", "–"]
        lines.append(f"| {dataset_label(row['dataset'])} | {row['score']} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def _interval(value: float, low: float, high: float) -> str:
    return f"{value:.3f} ({low:.3f}, {high:.3f})"


# --- Table 17 ------------------------------------------------------------------------------------------

TABLE17_COLUMNS = (("ΔD_w", "delta_D_w"), ("ΔMSE_c", "delta_err_clean"), ("ΔMSE_w", "delta_err_pert_ws"))


def table17_markdown(intervals: pd.DataFrame) -> str:
    """Markdown of the pair-bootstrap table: per dataset and method, pairs and mean (95% CI) of three deltas."""
    lines = ["| dataset | method | pairs | " + " | ".join(label for label, _ in TABLE17_COLUMNS) + " |",
             "|---|---|---|" + "---|" * len(TABLE17_COLUMNS)]
    for _, row in _method_sorted(intervals).iterrows():
        cells = [_interval(row[f"{c}_mean"], row[f"{c}_CI_lo"], row[f"{c}_CI_hi"]) for _, c in TABLE17_COLUMNS]
        lines.append(f"| {dataset_label(row['dataset'])} | {label_of(row['method'])} | {int(row['count'])} | "
                     + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def _method_sorted(frame: pd.DataFrame) -> pd.DataFrame:
    datasets = ordered(list(frame["dataset"].unique()), DISPLAY_ORDER)
    methods = ordered(list(frame["method"].unique()), METHOD_ORDER)
    keys = frame.apply(lambda r: (datasets.index(r["dataset"]), methods.index(r["method"])), axis=1)
    return frame.loc[keys.sort_values().index] if len(frame) else frame


# --- Tables 19 and 20 ----------------------------------------------------------------------------------

TABLE19_MEASURES = (("D_w", "d_w"), ("D̄", "d_mean"), ("mPC", "mpc"), ("mCE", "mce"), ("rel. mCE", "rel_mce"),
                    ("ρ̄", "rho"))
TABLE20_MEASURES = (("ΔD_w", "delta_d_w"), ("ΔD̄", "delta_d_mean"), ("τ̄", "tau"), ("ΔmCE", "delta_mce"),
                    ("Δrel. mCE", "delta_rel_mce"))


def table19_block(scored_baselines: pd.DataFrame) -> pd.DataFrame:
    """Table 19: D_w, D-bar, mPC, mCE, relative mCE and rho-bar per dataset and architecture."""
    return wide_block(scored_baselines, column="architecture", order=ARCHITECTURE_ORDER, measures=TABLE19_MEASURES,
                      higher_is_better=("ρ̄",))


def table20_block(means: pd.DataFrame) -> pd.DataFrame:
    """Table 20: dataset means of ΔD_w, ΔD-bar, tau-bar, ΔmCE and Δ relative mCE per method."""
    return wide_block(means, column="method", order=METHOD_ORDER, measures=TABLE20_MEASURES,
                      higher_is_better=("τ̄",))


# --- Tables 10, 11, 12 ----------------------------------------------------------------------------------

def table10_markdown(stability: pd.DataFrame) -> str:
    """Markdown of Table 10 (paper layout)."""
    lines = ["| dataset | mean abs. shift D_w | mean abs. shift MSE_w | largest abs. shift D_w | largest abs. shift "
             "MSE_w | rank corr. D_w | rank corr. MSE_w | worst-scenario exact | worst-scenario class |",
             "|---|---|---|---|---|---|---|---|---|"]
    for _, row in stability.iterrows():
        n = int(row["architectures"])
        lines.append(f"| {dataset_label(row['dataset'])} | {row['mean_abs_shift_d_w']:.3f} | "
                     f"{row['mean_abs_shift_mse_w']:.3f} | {row['max_abs_shift_d_w']:.3f} | "
                     f"{row['max_abs_shift_mse_w']:.3f} | {_maybe(row['min_spearman_d_w'])} | "
                     f"{_maybe(row['min_spearman_mse_w'])} | {int(row['worst_exact'])}/{n} | "
                     f"{int(row['worst_class'])}/{n} |")
    return "\n".join(lines) + "\n"


def _maybe(value: float) -> str:
    return "–" if value is None or np.isnan(value) else f"{value:.3f}"


def table12_markdown(summary: pd.DataFrame) -> str:
    """Markdown of Table 12 (paper layout)."""
    lines = ["| dataset | q | k_fix | mean signed shift D_w | mean signed shift MSE_w | largest abs. shift D_w | "
             "largest abs. shift MSE_w | rank corr. D_w | rank corr. MSE_w | worst-scenario exact | "
             "worst-scenario class |", "|---|---|---|---|---|---|---|---|---|---|---|"]
    for _, row in summary.iterrows():
        n = int(row["architectures"])
        lines.append(f"| {dataset_label(row['dataset'])} | {row['channel_fraction']:.2f} | "
                     f"{int(row['fixed_channel_count'])} | {row['mean_signed_shift_d_w']:.3f} | "
                     f"{row['mean_signed_shift_mse_w']:.3f} | {row['max_abs_shift_d_w']:.3f} | "
                     f"{row['max_abs_shift_mse_w']:.3f} | {_maybe(row['spearman_d_w'])} | "
                     f"{_maybe(row['spearman_mse_w'])} | {int(row['worst_exact'])}/{n} | "
                     f"{int(row['worst_class'])}/{n} |")
    return "\n".join(lines) + "\n"


def table11_block(perturbed: pd.DataFrame, clean: pd.DataFrame) -> pd.DataFrame:
    """Table 11: Table 4's method block under perturbed-validation selection, with `<method>_change` = the
    change from the clean-selected value computed from the three-decimal entries (NaN where there is none)."""
    block = table4_method_block(perturbed)
    reference = table4_method_block(clean) if not clean.empty else pd.DataFrame(columns=block.columns)
    reference = reference.set_index(["dataset", "measure"])
    for name in [c for c in block.columns if c not in NON_VALUE_COLUMNS]:
        changes = []
        for _, row in block.iterrows():
            key = (row["dataset"], row["measure"])
            before = reference.loc[key, name] if key in reference.index and name in reference.columns else np.nan
            changes.append(round(row[name], 3) - round(before, 3) if not np.isnan(before) else np.nan)
        block[f"{name}_change"] = changes
    return block


def table11_markdown(block: pd.DataFrame) -> str:
    """Markdown of Table 11: `value (change)` per method, the lowest value of each row in bold."""
    plain = block[[c for c in block.columns if not c.endswith("_change")]]
    lines = block_markdown(plain).splitlines()
    names = [c for c in plain.columns if c not in NON_VALUE_COLUMNS]
    out = lines[:2]
    for index, line in enumerate(lines[2:]):
        head, *cells = line.rstrip(" |").split(" | ")
        label, cells = cells[0], cells[1:]
        row = block.iloc[index]
        shown = [cell if np.isnan(row[f"{name}_change"]) else f"{cell} ({row[f'{name}_change']:+.3f})"
                 for cell, name in zip(cells, names, strict=True)]
        out.append(" | ".join([head, label, *shown]) + " |")
    return "\n".join(out) + "\n"
