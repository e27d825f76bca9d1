"""The per-run scenario heatmap (`scenario_heatmap.png` in a run folder): D_p per model and scenario in the paper's
colour scale, the atomic PNG writer the analysis figures (`sfbench_jax.report.figures`) share, and `plain_text`, which
and `plain_text_figure`, which every figure passes (a plug-in's label such as `$x$` is shown as written, never as
mathtext)."""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar, cast

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.colors import LinearSegmentedColormap, Normalize
from matplotlib.text import Text

from sfbench_jax.faults.registry import SCENARIOS
from sfbench_jax.storage.atomic import write_atomically

WHITE, PALE, RED = "#FFFFFF", "#F3D5C7", "#D92523"


#: Matplotlib settings of every figure: texts are plain (the figures write no math).
PLAIN_TEXT: Any = {"text.parse_math": False}  # typed Any: matplotlib types rc names as literals
F = TypeVar("F", bound=Callable[..., Any])


def plain_text(fig: plt.Figure) -> plt.Figure:
    """Every text of a figure shown as written: no mathtext, so a label with dollar signs (a plug-in's name, a
    dataset's) is drawn literally instead of failing to parse when the figure is drawn. The figures write no math."""
    for text in fig.findobj(Text):
        text.set_parse_math(False)
    return fig


def plain_text_figure(build: F) -> F:
    """A figure builder whose texts are plain (`PLAIN_TEXT` while it builds and lays out, then `plain_text`)."""
    @functools.wraps(build)
    def built(*args: Any, **kwargs: Any) -> Any:
        with plt.rc_context(PLAIN_TEXT):
            result = build(*args, **kwargs)
        return plain_text(result) if isinstance(result, plt.Figure) else result

    return cast(F, built)


def save_figure(fig: plt.Figure, target: Path, *, dpi: int = 150) -> Path:
    """Write a figure as PNG atomically (its texts plain: `plain_text`) and close it."""
    try:
        plain_text(fig)
        with plt.rc_context(PLAIN_TEXT):
            return write_atomically(target, lambda path: fig.savefig(path, dpi=dpi, format="png"))
    finally:
        plt.close(fig)


def heatmap_scale(values: np.ndarray) -> tuple[LinearSegmentedColormap, Normalize]:
    """The spec's colour scale: white -> #F3D5C7 at D = 1 -> red at D = 2, lower limit min(1, floor(20 min D)/20)."""
    lower = min(1.0, math.floor(20 * float(np.nanmin(values))) / 20)
    pale_at = (1.0 - lower) / (2.0 - lower)  # D = 1 on the [lower, 2] scale
    anchors = [(0.0, PALE), (1.0, RED)] if pale_at == 0.0 else [(0.0, WHITE), (pale_at, PALE), (1.0, RED)]
    return LinearSegmentedColormap.from_list("sfbench", anchors), Normalize(vmin=lower, vmax=2.0)


@plain_text_figure
def scenario_heatmap(summary: pd.DataFrame, target: Path) -> Path:
    """Heatmap of D_p per model (rows) and scenario (columns, canonical order, grouped by class).

    Colour: white -> #F3D5C7 at D = 1 -> red at D = 2 (lower limit min(1, floor(20 min D)/20)); the cell
    text is D with two decimals, white where D >= 1.45.
    """
    labels = [f"{row.architecture} ({row.dataset})" if summary["dataset"].nunique() > 1 else
              f"{row.architecture}" for row in summary.itertuples()]
    values = np.array([[row[f"d_{fault.key}"] for fault in SCENARIOS] for _, row in summary.iterrows()])
    cmap, norm = heatmap_scale(values)
    lower = norm.vmin
    assert lower is not None  # heatmap_scale sets both limits
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
