"""Figures in the paper's style: the per-scenario degradation heatmap (Figure 2) and the clean-vs-robust
trade-off scatter with Pareto frontiers (Figure 5). Nothing here computes scores."""

from __future__ import annotations

import math
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.colors import LinearSegmentedColormap, Normalize

from sfbench_jax.faults.registry import SCENARIOS
from sfbench_jax.files import write_atomically

WHITE, PALE, RED = "#FFFFFF", "#F3D5C7", "#D92523"


def save_figure(fig: plt.Figure, target: Path, *, dpi: int = 150) -> Path:
    """Write a figure as PNG atomically and close it."""
    try:
        return write_atomically(target, lambda path: fig.savefig(path, dpi=dpi, format="png"))
    finally:
        plt.close(fig)


def scenario_heatmap(summary: pd.DataFrame, target: Path) -> Path:
    """Heatmap of D_p per model (rows) and scenario (columns, canonical order, grouped by class).

    Colour: white -> #F3D5C7 at D = 1 -> red at D = 2 (lower limit min(1, floor(20 min D)/20)); the cell
    text is D with two decimals, white where D >= 1.45.
    """
    labels = [f"{row.architecture} ({row.dataset})" if summary["dataset"].nunique() > 1 else
              f"{row.architecture}" for row in summary.itertuples()]
    values = np.array([[row[f"d_{fault.key}"] for fault in SCENARIOS] for _, row in summary.iterrows()])
    lower = min(1.0, math.floor(20 * float(np.nanmin(values))) / 20)
    pale_at = (1.0 - lower) / (2.0 - lower)  # D = 1 on the [lower, 2] scale
    anchors = [(0.0, PALE), (1.0, RED)] if pale_at == 0.0 else [(0.0, WHITE), (pale_at, PALE), (1.0, RED)]
    cmap = LinearSegmentedColormap.from_list("sfbench", anchors)
    norm = Normalize(vmin=lower, vmax=2.0)
    height = 1.2 + 0.45 * len(labels)
    fig, ax = plt.subplots(figsize=(9.0, height))
    image = ax.imshow(np.clip(values, lower, 2.0), cmap=cmap, norm=norm, aspect="auto")
    for (row, col), value in np.ndenumerate(values):
        ax.text(col, row, f"{value:.2f}", ha="center", va="center", fontsize=8,
                color="white" if value >= 1.45 else "black")
    ax.set_xticks(range(len(SCENARIOS)), [f"{f.display_name}\n({f.fault_class})" for f in SCENARIOS],
                  fontsize=7)
    ax.set_yticks(range(len(labels)), labels, fontsize=8)
    for boundary in (3.5, 5.5):  # Value | Timing | Availability
        ax.axvline(boundary, color="black", linewidth=0.8)
    colorbar = fig.colorbar(image, ax=ax, ticks=[tick for tick in (1.0, 1.5, 2.0) if tick >= lower])
    colorbar.set_label("degradation D")
    ax.set_title("Per-scenario degradation D = MSE_p / MSE_c")
    fig.tight_layout()
    return save_figure(fig, target)


#: Family colours of the trade-off figure (paper Figure 5 families).
FAMILY_COLOURS = {"Statistical": "#7F7F7F", "Fully Connected": "#1F77B4", "Recurrent": "#2CA02C",
                  "Convolution": "#FF7F0E", "Attention": "#D62728"}


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
    """Paper Figure 5: per dataset (columns), clean MSE vs D_w (top) and vs MSE_w (bottom), one point per
    architecture coloured by family, dashed Pareto frontier per panel."""
    from sfbench_jax.data.registry import DISPLAY_ORDER
    from sfbench_jax.report.architectures import (
        ARCHITECTURE_FAMILIES,
        ARCHITECTURE_LABELS,
        dataset_label,
        ordered,
    )

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
    return save_figure(fig, target)
