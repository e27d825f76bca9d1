"""The extra fault scenarios of stored runs: a table and a figure of their own, never mixed into the paper's D_w.

A run scores an extra scenario (a plug-in's or one of this package's own modules) when `eval.scenarios` names it;
its summary then holds `d_<name>`, `mse_<name>` and their intervals beside the eight's, while D_w, MSE_w and the
worst scenario stay over the paper's eight. This module lists, per run and extra scenario, its degradation D with
its 95% interval and MSE next to the run's D_w and worst paper scenario, and says where an extra scenario degrades
the forecast more than every one of the eight (`exceeds_paper_worst`), so such a fault is named, not hidden in a CSV.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import pandas as pd

from sfbench_jax.faults.registry import FAULTS, SCENARIO_KEYS
from sfbench_jax.pipeline.outputs.heatmap import plain_text_figure

#: The columns of the extras table, in order.
COLUMNS = ("dataset", "architecture", "method", "scenario", "label", "d", "d_ci_lo", "d_ci_hi", "mse", "d_w",
           "worst_scenario", "exceeds_paper_worst")


def extra_scenario_keys(manifests: Iterable[Mapping[str, Any]]) -> tuple[str, ...]:
    """The extra scenarios the runs scored (their manifests' `eval.scenarios` beyond the eight), first seen first."""
    keys: dict[str, None] = {}
    for manifest in manifests:
        scenarios = ((manifest.get("config") or {}).get("eval") or {}).get("scenarios") or ()
        keys.update((str(key), None) for key in scenarios if str(key) not in SCENARIO_KEYS)
    return tuple(keys)


def _value(row: Mapping[str, Any], column: str) -> float:
    value = row.get(column)
    return float("nan") if value is None else float(value)


def extras_table(frame: pd.DataFrame, keys: Iterable[str]) -> pd.DataFrame:
    """One row per (run, extra scenario) that the run scored, in the frame's run order."""
    rows = []
    for _, row in frame.iterrows():
        for key in keys:
            if f"d_{key}" not in frame.columns or pd.isna(row.get(f"d_{key}")):
                continue
            d = float(row[f"d_{key}"])
            rows.append({"dataset": row["dataset"], "architecture": row["architecture"], "method": row["method"],
                         "scenario": key, "label": FAULTS[key].label if key in FAULTS else key, "d": d,
                         "d_ci_lo": _value(row, f"d_{key}_ci_lo"), "d_ci_hi": _value(row, f"d_{key}_ci_hi"),
                         "mse": _value(row, f"mse_{key}"), "d_w": float(row["d_w"]),
                         "worst_scenario": row["worst_scenario"], "exceeds_paper_worst": d > float(row["d_w"])})
    return pd.DataFrame(rows, columns=list(COLUMNS))


def extras_markdown(table: pd.DataFrame) -> str:
    """The table as Markdown, with a line naming every extra scenario worse than the paper's worst."""
    lines = ["# Extra fault scenarios (scored beside the paper's eight; not part of D_w)", "",
             "| dataset | architecture | method | scenario | D [95% CI] | MSE | D_w (worst of the eight) |",
             "|---|---|---|---|---|---|---|"]
    for row in table.itertuples():
        flag = " **worse than the eight**" if row.exceeds_paper_worst else ""
        lines.append(f"| {row.dataset} | {row.architecture} | {row.method} | {row.label} | {row.d:.3f} "
                     f"[{row.d_ci_lo:.3f}, {row.d_ci_hi:.3f}]{flag} | {row.mse:.3f} | {row.d_w:.3f} "
                     f"({row.worst_scenario}) |")
    worse = table[table["exceeds_paper_worst"]]
    if not worse.empty:
        named = "; ".join(f"{row.label} on {row.dataset} / {row.architecture} / {row.method} (D {row.d:.3f} > "
                          f"D_w {row.d_w:.3f})" for row in worse.itertuples())
        lines += ["", f"Extra scenarios that degrade the forecast more than all of the paper's eight: {named}."]
    return "\n".join(lines) + "\n"


@plain_text_figure
def extras_figure(table: pd.DataFrame) -> plt.Figure:
    """Horizontal bars: each (run, extra scenario)'s D with its 95% interval, the run's D_w as a black tick."""
    labels = [f"{row.dataset} / {row.architecture} / {row.method}: {row.label}" for row in table.itertuples()]
    positions = range(len(table))
    fig, ax = plt.subplots(figsize=(8.0, 1.2 + 0.35 * len(table)), layout="constrained")
    error = [table["d"] - table["d_ci_lo"], table["d_ci_hi"] - table["d"]]
    colours = ["#c0392b" if worse else "#7f8c8d" for worse in table["exceeds_paper_worst"]]
    ax.barh(list(positions), table["d"], xerr=error, color=colours, capsize=2)
    ax.scatter(table["d_w"], list(positions), marker="|", s=200, color="black", label="D_w (worst of the eight)",
               zorder=3)
    ax.axvline(1.0, color="grey", linewidth=0.6, linestyle=":")
    ax.set_yticks(list(positions), labels, fontsize=7)
    ax.invert_yaxis()
    ax.set_xlabel("degradation D (red: worse than every paper scenario)", fontsize=8)
    ax.set_title("Extra fault scenarios (not part of D_w)", fontsize=9)
    ax.legend(fontsize=7, loc="lower right")
    return fig
