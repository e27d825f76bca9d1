"""Figures in the paper's style: Figure 2's per-scenario degradation heatmaps (one facet per dataset; a single
run's heatmap is `sfbench_jax.pipeline.outputs.heatmap`), the clean-vs-robust trade-off scatter with Pareto frontiers
(Figure 5), baseline -> method trajectories (Figure 6), per-window fault examples (Figures 3/4) and
severity-response curves.

Each `build_*` function returns a matplotlib Figure (tests read its axes, texts and artists); the functions
without the prefix build and save one PNG atomically. Nothing here computes scores."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from sfbench_jax.data.registry import DISPLAY_ORDER
from sfbench_jax.faults.registry import SCENARIOS
from sfbench_jax.pipeline.outputs.heatmap import heatmap_scale, plain_text_figure, save_figure
from sfbench_jax.report.architectures import (
    ARCHITECTURE_FAMILIES,
    ARCHITECTURE_LABELS,
    ARCHITECTURE_ORDER,
    dataset_label,
    ordered,
)

#: Family colours of the trade-off figure (paper Figure 5 families).
FAMILY_COLOURS = {"Statistical": "#7F7F7F", "Fully Connected": "#1F77B4", "Recurrent": "#2CA02C",
                  "Convolution": "#FF7F0E", "Attention": "#D62728", "Foundation": "#9467BD"}


def pareto_frontier(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Indices of the non-dominated points (lower is better in both), ordered by x.

    A point is dropped if another one is <= in both coordinates and < in at least one.
    """
    x, y = np.asarray(x, float), np.asarray(y, float)
    keep = []
    for i in range(len(x)):
        dominated = np.any((x <= x[i]) & (y <= y[i]) & ((x < x[i]) | (y < y[i])))
        if not dominated:
            keep.append(i)
    return np.asarray(sorted(keep, key=lambda i: (x[i], y[i])), dtype=int)


def tradeoff_figure(summary: pd.DataFrame, target: Path) -> Path:
    """Write paper Figure 5 (`build_tradeoffs`) as PNG."""
    return save_figure(build_tradeoffs(summary), target)


@plain_text_figure
def build_tradeoffs(summary: pd.DataFrame) -> plt.Figure:
    """Paper Figure 5: per dataset (columns), clean MSE vs D_w (top) and vs MSE_w (bottom), one point per
    architecture coloured by family, dashed Pareto frontier per panel."""

    datasets = ordered(list(summary["dataset"].astype(str).unique()), DISPLAY_ORDER)
    fig, axes = plt.subplots(2, len(datasets), figsize=(3.6 * len(datasets) + 1.2, 6.4), squeeze=False)
    for col, dataset in enumerate(datasets):
        rows = summary[summary["dataset"].astype(str) == dataset]
        x = rows["mse_c"].to_numpy(float)
        for row_index, (column, label) in enumerate((("d_w", "worst-case degradation D_w"),
                                                     ("mse_w", "worst-case MSE_w"))):
            ax = axes[row_index, col]
            y = rows[column].to_numpy(float)
            frontier = pareto_frontier(x, y)
            ax.plot(x[frontier], y[frontier], linestyle="--", color="black", linewidth=0.9, zorder=1)
            for (_, row), xi, yi in zip(rows.iterrows(), x, y, strict=True):
                architecture = str(row["architecture"])
                family = ARCHITECTURE_FAMILIES.get(architecture, "Other")
                ax.scatter([xi], [yi], color=FAMILY_COLOURS.get(family, "#9467BD"), s=36, zorder=2,
                           edgecolor="black", linewidth=0.5)
                ax.annotate(ARCHITECTURE_LABELS.get(architecture, architecture), (xi, yi), fontsize=7,
                            xytext=(4, 3), textcoords="offset points")
            ax.set_xlabel("clean MSE_c", fontsize=8)
            if col == 0:
                ax.set_ylabel(label, fontsize=8)
            if row_index == 0:
                ax.set_title(dataset_label(dataset), fontsize=9)
            ax.tick_params(labelsize=7)
            ax.grid(alpha=0.3)
    handles = [plt.Line2D([], [], marker="o", linestyle="", color=colour, markeredgecolor="black", label=family)
               for family, colour in FAMILY_COLOURS.items()]
    handles.append(plt.Line2D([], [], linestyle="--", color="black", label="Pareto frontier"))
    fig.legend(handles=handles, loc="center right", fontsize=7, frameon=False)
    fig.tight_layout(rect=(0, 0, 1 - 1.1 / fig.get_figwidth(), 1))
    return fig


# --- Figure 2: one facet per dataset -----------------------------------------------------------------------

SCENARIO_GROUPS = (("Value", 0, 3), ("Timing", 4, 5), ("Availability", 6, 7))


@plain_text_figure
def build_scenario_facets(baselines: pd.DataFrame) -> plt.Figure:
    """Paper Figure 2: one facet per dataset (columns), x = the eight scenarios in canonical order grouped
    Value / Timing / Availability, y = the architectures in table order, tile fill D_p on the spec's scale,
    cell text D with two decimals (white from 1.45), legend ticks 1, 1.5, 2."""

    datasets = ordered(list(baselines["dataset"].astype(str).unique()), DISPLAY_ORDER)
    architectures = ordered(list(baselines["architecture"].astype(str).unique()), ARCHITECTURE_ORDER)
    columns = [f"d_{fault.key}" for fault in SCENARIOS]
    cmap, norm = heatmap_scale(baselines[columns].to_numpy(float))
    fig, axes = plt.subplots(1, len(datasets), figsize=(4.2 * len(datasets) + 1.4, 2.4 + 0.42 * len(architectures)),
                             squeeze=False, sharey=True, layout="constrained")
    image = None
    for ax, dataset in zip(axes[0], datasets, strict=True):
        rows = baselines[baselines["dataset"].astype(str) == dataset].set_index("architecture")
        values = np.array([[float(rows.loc[a, c]) if a in rows.index else np.nan for c in columns]
                           for a in architectures])
        image = ax.imshow(np.clip(values, norm.vmin, norm.vmax), cmap=cmap, norm=norm, aspect="auto")
        for (row, col), value in np.ndenumerate(values):
            if not np.isnan(value):
                ax.text(col, row, f"{value:.2f}", ha="center", va="center", fontsize=7,
                        color="white" if value >= 1.45 else "black")
        ax.set_xticks(range(len(SCENARIOS)), [fault.display_name for fault in SCENARIOS], rotation=60, ha="right",
                      fontsize=7)
        ax.set_yticks(range(len(architectures)), [ARCHITECTURE_LABELS.get(a, a) for a in architectures], fontsize=8)
        for name, first, last in SCENARIO_GROUPS:
            ax.text((first + last) / 2, -0.55, name, ha="center", va="bottom", fontsize=7, style="italic")
        for boundary in (3.5, 5.5):
            ax.axvline(boundary, color="black", linewidth=0.8)
        ax.set_title(dataset_label(dataset), fontsize=9, pad=16)
        ax.set_xlabel("scenario", fontsize=8)
    axes[0][0].set_ylabel("architecture", fontsize=8)
    assert image is not None and norm.vmin is not None  # one facet per dataset; heatmap_scale sets both limits
    colorbar = fig.colorbar(image, ax=list(axes[0]), ticks=[t for t in (1.0, 1.5, 2.0) if t >= norm.vmin],
                            fraction=0.025)
    colorbar.set_label("degradation D", fontsize=8)
    return fig


# --- Figure 6: baseline -> method trajectories ---------------------------------------------------------

@plain_text_figure
def build_trajectories(pairs: pd.DataFrame, *, method_label: str) -> plt.Figure:
    """Paper Figure 6: per dataset, MSE_c (x) vs D_w (y); filled marker = baseline winner, hollow = the selected
    method variant, an arrow baseline -> method per architecture, dashed Pareto frontier over the panel's points."""

    datasets = ordered(list(pairs["dataset"].astype(str).unique()), DISPLAY_ORDER)
    fig, axes = plt.subplots(1, len(datasets), figsize=(3.8 * len(datasets) + 1.2, 3.8), squeeze=False)
    for ax, dataset in zip(axes[0], datasets, strict=True):
        rows = pairs[pairs["dataset"].astype(str) == dataset]
        x = np.concatenate([rows["mse_c_baseline"].to_numpy(float), rows["mse_c_method"].to_numpy(float)])
        y = np.concatenate([rows["d_w_baseline"].to_numpy(float), rows["d_w_method"].to_numpy(float)])
        frontier = pareto_frontier(x, y)
        ax.plot(x[frontier], y[frontier], linestyle="--", color="black", linewidth=0.9, zorder=1)
        for _, row in rows.iterrows():
            colour = FAMILY_COLOURS.get(ARCHITECTURE_FAMILIES.get(str(row["architecture"]), ""), "#9467BD")
            start, end = (row["mse_c_baseline"], row["d_w_baseline"]), (row["mse_c_method"], row["d_w_method"])
            ax.annotate("", xy=end, xytext=start, arrowprops={"arrowstyle": "->", "color": colour, "lw": 1.1})
            ax.scatter(*start, color=colour, s=34, zorder=3, edgecolor="black", linewidth=0.5)
            ax.scatter(*end, facecolor="white", edgecolor=colour, s=34, zorder=3, linewidth=1.2)
            ax.annotate(ARCHITECTURE_LABELS.get(str(row["architecture"]), row["architecture"]), start, fontsize=7,
                        xytext=(4, 3), textcoords="offset points")
        ax.set_title(dataset_label(dataset), fontsize=9)
        ax.set_xlabel("clean MSE_c", fontsize=8)
        ax.set_ylabel("worst-case degradation D_w", fontsize=8)
        ax.tick_params(labelsize=7)
        ax.grid(alpha=0.3)
    handles = [plt.Line2D([], [], marker="o", linestyle="", color="grey", markeredgecolor="black", label="baseline"),
               plt.Line2D([], [], marker="o", linestyle="", markerfacecolor="white", color="grey", label=method_label),
               plt.Line2D([], [], linestyle="--", color="black", label="Pareto frontier")]
    fig.legend(handles=handles, loc="lower center", ncol=3, fontsize=7, frameon=False)
    fig.tight_layout(rect=(0, 0.07, 1, 1))
    return fig


# --- Figures 3/4: per-window fault examples --------------------------------------------------------------

@plain_text_figure
def build_fault_examples(examples: list[dict], *, title: str) -> plt.Figure:
    """Paper Figures 3/4: rows = scenarios, columns = datasets; each panel shows up to three affected input
    channels (clean dashed, faulted solid) over the input history, a vertical boundary at the end of the input,
    and over the horizon the first target's truth and the model's forecasts from the clean and faulted inputs.

    Args:
        examples: one dict per panel with `dataset`, `scenario`, `severity`, `channels` (names), `clean` and
            `faulted` `(n, c)` inputs of those channels, `target_name`, `truth`, `forecast_clean`,
            `forecast_faulted` `(H,)`, `model` (label).
    """

    datasets = list(dict.fromkeys(example["dataset"] for example in examples))
    scenarios = list(dict.fromkeys(example["scenario"] for example in examples))
    fig, axes = plt.subplots(len(scenarios), len(datasets), figsize=(4.6 * len(datasets), 2.1 * len(scenarios)),
                             squeeze=False)
    colours = ("#1F77B4", "#FF7F0E", "#2CA02C")
    for example in examples:
        ax = axes[scenarios.index(example["scenario"])][datasets.index(example["dataset"])]
        n = example["clean"].shape[0]
        steps, horizon = np.arange(n), np.arange(n, n + len(example["truth"]))
        for index, name in enumerate(example["channels"]):
            ax.plot(steps, example["clean"][:, index], linestyle="--", linewidth=0.8, color=colours[index], alpha=0.6)
            ax.plot(steps, example["faulted"][:, index], linewidth=1.0, color=colours[index], label=name)
        ax.plot(horizon, example["truth"], color="black", linewidth=1.0, label=f"{example['target_name']} (truth)")
        ax.plot(horizon, example["forecast_clean"], color="#7F7F7F", linewidth=1.0, label="forecast, clean input")
        ax.plot(horizon, example["forecast_faulted"], color="#D62728", linewidth=1.0, label="forecast, faulted input")
        ax.axvline(n - 0.5, color="black", linewidth=0.8)
        ax.set_title(f"{dataset_label(example['dataset'])}: {example['scenario']} (s = {example['severity']:.2f}, "
                     f"{example['model']})", fontsize=8)
        ax.set_xlabel("time step", fontsize=7)
        ax.set_ylabel("standardised value", fontsize=7)
        ax.tick_params(labelsize=6)
        ax.legend(fontsize=5, loc="upper left", frameon=False)
    fig.suptitle(title, fontsize=9)
    fig.tight_layout()
    return fig


# --- severity-response curves ----------------------------------------------------------------------------

@plain_text_figure
def build_severity_curves(curves: pd.DataFrame, *, dataset: str) -> plt.Figure:
    """One panel per scenario: D_p(s) against the severity s for every model of the dataset, with the 95%
    window-bootstrap band, and the line D = 1.

    Args:
        curves: long frame with `dataset`, `model` (label), `scenario`, `severity`, `d`, `d_ci_lo`, `d_ci_hi`.
    """

    rows = curves[curves["dataset"].astype(str) == dataset]
    models = list(dict.fromkeys(rows["model"].astype(str)))
    fig, axes = plt.subplots(2, 4, figsize=(13.0, 5.6), sharex=True, squeeze=False)
    palette = plt.get_cmap("tab10")
    for index, fault in enumerate(SCENARIOS):
        ax = axes[index // 4][index % 4]
        for number, model in enumerate(models):
            line = rows[(rows["model"].astype(str) == model) & (rows["scenario"] == fault.key)].sort_values("severity")
            ax.fill_between(line["severity"], line["d_ci_lo"], line["d_ci_hi"], color=palette(number), alpha=0.2,
                            linewidth=0)
            ax.plot(line["severity"], line["d"], color=palette(number), linewidth=1.2, marker="o", markersize=2,
                    label=model)
        ax.axhline(1.0, color="black", linewidth=0.6, linestyle=":")
        ax.set_title(f"{fault.display_name} ({fault.fault_class})", fontsize=8)
        ax.tick_params(labelsize=7)
        ax.grid(alpha=0.3)
        if index // 4 == 1:
            ax.set_xlabel("severity s", fontsize=8)
        if index % 4 == 0:
            ax.set_ylabel("degradation D_p(s)", fontsize=8)
    axes[0][0].legend(fontsize=7, frameon=False)
    fig.suptitle(f"{dataset_label(dataset)}: severity-response curves (95% window-bootstrap bands)", fontsize=9)
    fig.tight_layout()
    return fig
