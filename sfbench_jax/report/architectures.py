"""The architecture block of paper Table 4 (D_w, MSE_c, MSE_w per dataset and architecture) as a
wide table, Markdown (three decimals, the lowest entry of each row in bold) and CSV-ready frame.

Input is a summary table (`tables.summary_table` rows, possibly merged across jobs); nothing here
computes scores. Display orders follow the paper (spec 3.8, 7.3).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from sfbench_jax.data.registry import DATASETS, DISPLAY_ORDER

#: Architecture display order and labels (paper Table 4 / Figure 2).
ARCHITECTURE_ORDER = ("seasonal_naive", "dlinear", "gru", "moderntcn", "tsmixer", "patchtst", "chronos2")
ARCHITECTURE_LABELS = {"seasonal_naive": "SeasonalNaive", "dlinear": "DLinear", "gru": "GRU",
                       "moderntcn": "ModernTCN", "tsmixer": "TSMixer", "patchtst": "PatchTST", "chronos2": "Chronos-2"}
#: Architecture families (paper Figure 5 colours).
ARCHITECTURE_FAMILIES = {"seasonal_naive": "Statistical", "dlinear": "Fully Connected",
                         "tsmixer": "Fully Connected", "gru": "Recurrent", "moderntcn": "Convolution",
                         "patchtst": "Attention", "chronos2": "Foundation"}
#: Table 4 measures: (label, summary column).
TABLE4_MEASURES = (("D_w", "d_w"), ("MSE_c", "mse_c"), ("MSE_w", "mse_w"))


def ordered(values: list[str], order: tuple[str, ...]) -> list[str]:
    """`values` in `order`, unknown ones appended alphabetically."""
    known = [value for value in order if value in values]
    return known + sorted(value for value in values if value not in order)


def dataset_label(key: str) -> str:
    """Display label of a dataset key."""
    return DATASETS[key].label if key in DATASETS else key


def table4_block(summary: pd.DataFrame, *, method: str = "baseline") -> pd.DataFrame:
    """Rows dataset x measure (D_w, MSE_c, MSE_w), one column per architecture, plus `best`.

    Raises:
        ValueError: a (dataset, architecture) cell appears more than once.
    """
    rows = summary[summary["method"].astype(str) == method]
    duplicated = rows.duplicated(["dataset", "architecture"], keep=False)
    if duplicated.any():
        cells = sorted(set(zip(rows.loc[duplicated, "dataset"], rows.loc[duplicated, "architecture"], strict=True)))
        raise ValueError(f"Cells with more than one row: {cells}; Table 4 needs one winner per cell.")
    datasets = ordered(list(rows["dataset"].astype(str).unique()), DISPLAY_ORDER)
    architectures = ordered(list(rows["architecture"].astype(str).unique()), ARCHITECTURE_ORDER)
    records = []
    for dataset in datasets:
        subset = rows[rows["dataset"].astype(str) == dataset].set_index("architecture")
        for label, column in TABLE4_MEASURES:
            record: dict[str, object] = {"dataset": dataset, "measure": label}
            for architecture in architectures:
                record[architecture] = (float(subset.loc[architecture, column]) if architecture in subset.index
                                        else np.nan)
            values = {a: record[a] for a in architectures if not np.isnan(record[a])}
            record["best"] = min(values, key=lambda a: (round(values[a], 3), architectures.index(a))) if values else ""
            records.append(record)
    return pd.DataFrame(records, columns=["dataset", "measure", *architectures, "best"])


def table4_markdown(block: pd.DataFrame) -> str:
    """Markdown of `table4_block` (three decimals; every entry equal to the row's rounded minimum in bold)."""
    architectures = [c for c in block.columns if c not in ("dataset", "measure", "best")]
    header = "| dataset | measure | " + " | ".join(ARCHITECTURE_LABELS.get(a, a) for a in architectures) + " |"
    lines = [header, "|" + "---|" * (len(architectures) + 2)]
    for row in block.itertuples(index=False):
        values = dict(zip(block.columns, row, strict=True))
        finite = [round(values[a], 3) for a in architectures if not np.isnan(values[a])]
        lowest = min(finite) if finite else None
        cells = []
        for architecture in architectures:
            value = values[architecture]
            if np.isnan(value):
                cells.append("–")
            elif round(value, 3) == lowest:
                cells.append(f"**{value:.3f}**")
            else:
                cells.append(f"{value:.3f}")
        lines.append(f"| {dataset_label(values['dataset'])} | {values['measure']} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"
