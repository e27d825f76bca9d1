"""Which stored summary rows a table reads: the canonical evaluation realisation, the explicit eval seeds, the
fixed channel fractions, clean or perturbed-validation selection, and the check that a table cell has one row.

A row's *realisation* is what its test evaluation drew: eval seed, RNG mode, K and channel fraction. The
paper's main tables read the canonical realisation (the dataset's canonical eval seed, the severity channel
rule) under clean-validation selection; the sensitivity tables compare other realisations with it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from sfbench_jax.data.registry import DATASETS


class NotApplicable(ValueError):
    """The runs cannot support a table or figure; the message says which runs are lacking."""


class AmbiguousRowsError(NotApplicable):
    """A table cell has several runs (e.g. two RNG modes); the message names their folders."""


#: Columns that identify a row's test realisation (besides the dataset).
REALISATION_COLUMNS = ("eval_seed", "rng_mode", "k", "channel_fraction")
#: Summary columns of method runs, filled with defaults for rows written without them.
METHOD_COLUMNS = {"variant": "", "selection_metric": "", "selection_value": np.nan}


def with_method_columns(frame: pd.DataFrame) -> pd.DataFrame:
    """The frame with `variant`, `selection_metric`, `selection_value` present (baselines: variant = method)."""
    frame = frame.copy()
    for column, default in METHOD_COLUMNS.items():
        if column not in frame.columns:
            frame[column] = default
    frame["variant"] = frame["variant"].fillna("").astype(str)
    frame.loc[frame["variant"] == "", "variant"] = frame.loc[frame["variant"] == "", "method"].astype(str)
    frame["selection_metric"] = frame["selection_metric"].fillna("").astype(str)
    return frame


def canonical_seed(dataset: str) -> int | None:
    """The dataset's canonical evaluation seed (None for unregistered names)."""
    return DATASETS[dataset].seeds.canonical_eval_seed if dataset in DATASETS else None


def is_canonical_seed(frame: pd.DataFrame) -> pd.Series:
    """Rows evaluated with their dataset's canonical eval seed."""
    return frame.apply(lambda row: canonical_seed(str(row["dataset"])) == int(row["eval_seed"]), axis=1)


def is_fixed_fraction(frame: pd.DataFrame) -> pd.Series:
    """Rows evaluated under a fixed channel fraction."""
    return pd.to_numeric(frame["channel_fraction"], errors="coerce").notna()


def is_perturbed_selection(frame: pd.DataFrame) -> pd.Series:
    """Rows whose variant was chosen on perturbed validation (protocol 5.5)."""
    return frame["selection_metric"].astype(str).str.startswith("perturbed")


def canonical_rows(frame: pd.DataFrame) -> pd.DataFrame:
    """Canonical eval seed, severity channel rule, clean-validation selection."""
    frame = with_method_columns(frame)
    if frame.empty:
        return frame
    keep = is_canonical_seed(frame) & ~is_fixed_fraction(frame) & ~is_perturbed_selection(frame)
    return frame[keep]


def select_rows(frame: pd.DataFrame, where: Mapping[str, str]) -> pd.DataFrame:
    """Rows whose columns equal the given values (compared as text; `null` matches missing values).

    Raises:
        ValueError: an unknown column, naming the valid ones.
    """
    for column, wanted in where.items():
        if column not in frame.columns:
            raise ValueError(f"--select {column}=...: no such summary column. Columns: {', '.join(frame.columns)}.")
        values = frame[column]
        if wanted in ("null", "none", ""):
            frame = frame[values.isna() | (values.astype(str) == "")]
        else:
            frame = frame[values.astype(str).isin(_spellings(wanted))]
    return frame


def _spellings(value: str) -> set[str]:
    """A value as text in the forms a CSV round trip may give it (`2` and `2.0`)."""
    spellings = {value}
    try:
        number = float(value)
    except ValueError:
        return spellings
    spellings |= {str(number), str(int(number))} if number.is_integer() else {str(number)}
    return spellings


def one_row_per_cell(frame: pd.DataFrame, cell: Sequence[str], what: str) -> pd.DataFrame:
    """`frame` unchanged when every cell has one row.

    Raises:
        AmbiguousRowsError: a cell has several rows; names their folders and the settings that differ, and how to
            pick.
    """
    duplicated = frame.duplicated(list(cell), keep=False)
    if not duplicated.any():
        return frame
    name, rows = next(iter(frame[duplicated].groupby(list(cell), sort=False)))
    differing = [c for c in (*REALISATION_COLUMNS, "selection_metric", "variant", "hyperparameters")
                 if c in rows.columns and rows[c].astype(str).nunique() > 1]
    folders = ", ".join(rows["run_dir"].astype(str)) if "run_dir" in rows.columns else "(no folders)"
    shown = dict(zip(cell, np.atleast_1d(name), strict=False))
    differ = differing or "settings not in the summary"
    raise AmbiguousRowsError(f"{what} needs one run per cell {shown}, found {len(rows)}: {folders} (they differ in "
                             f"{differ}). Pick one with --select COLUMN=VALUE (e.g. --select rng_mode=jax) or pass "
                             "fewer folders.")
