"""The one-file HTML report of stored runs (`sfbench-report html --runs FOLDER...`, also written at the end of a
multirun's collection): Table 4 with its 95% intervals (sortable), the per-scenario degradation heatmap, the
stored severity curves with their bands, the method deltas with pair-bootstrap intervals (sign and significance
marked), the extra scenarios, and every run's provenance with its verification status.

The page is self-contained: styles and the few lines of sorting script are inline (the page kit both HTML pages
share, `storage/html_page.py`), figures are inline SVG written by matplotlib, and nothing is fetched when it is
viewed. Every number is a stored number read through the verifying reader (`run_folder.loading.load_run` /
`gather_runs`) and the same report frames the Markdown and CSV tables use (`report.paper`, `report.deltas`): nothing
is recomputed differently here. A damaged run folder or an expected job without a run is named at the top of the
page and in the runs table, never left out silently.

Page building is small pure functions from frames to HTML text (`esc` for every stored string);
`read_page_runs` and `write_html_report` are the only functions that touch the disk.
"""

from __future__ import annotations

import io
import json
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from sfbench_jax.faults.registry import SCENARIO_KEYS
from sfbench_jax.report.collect import (
    EXPECTED_FILE,
    SweepFileError,
    missing_cells,
    missing_jobs,
    read_expected_cells,
    read_expected_jobs,
    read_jobs,
)
from sfbench_jax.report.realisations import NotApplicable
from sfbench_jax.run_folder.damage import DamagedRunError
from sfbench_jax.run_folder.finding import find_run_folders
from sfbench_jax.run_folder.loading import RunSet, StoredRun, gather_runs, load_run
from sfbench_jax.storage import html_page
from sfbench_jax.storage.html_page import esc, page_html, sortable_table

#: The page must stay small enough to mail and open anywhere.
MAX_PAGE_BYTES = 5 * 1024 * 1024
#: A stored report file of severity curves (`sfbench-report curves`), shown where it lies under the folders.
CURVES_FILE = "severity_curves.csv"
#: Table 4's measures: (label, summary column, pair-bootstrap column of the method delta).
TABLE4_MEASURES = (("D_w", "d_w", "delta_D_w"), ("MSE_c", "mse_c", "delta_err_clean"),
                   ("MSE_w", "mse_w", "delta_err_pert_ws"))


@dataclass(frozen=True)
class PageRuns:
    """What the page shows: the verified runs and every run that could not be shown, with the reason.

    Attributes:
        runs: the verified, distinct runs.
        damaged: `(folder, reason)` of run folders the verifying reader refused.
        missing: expected jobs of a multirun without a finished run (named, with the reason).
        folders: the folders the page was built from.
    """

    runs: RunSet
    damaged: tuple[tuple[str, str], ...] = ()
    missing: tuple[str, ...] = ()
    folders: tuple[str, ...] = ()


def sweep_missing(folder: Path) -> list[str]:
    """Expected jobs of a multirun folder without a finished run (none for a folder that is no multirun)."""
    if not (folder / EXPECTED_FILE).is_file():
        return []
    try:
        jobs = read_jobs(folder)
        expected = read_expected_jobs(folder)
        missing = missing_jobs(expected, jobs) if expected else missing_cells(read_expected_cells(folder), jobs)
    except (SweepFileError, FileNotFoundError) as error:
        return [f"{folder}: {error}"]
    return [f"{item.name}: {item.reason}" for item in missing]


def read_page_runs(folders: Sequence[Path]) -> PageRuns:
    """Every run folder under `folders`, each verified on its own (a damaged one is kept with its reason), the
    good ones gathered into one `RunSet` (copies merged; conflicting copies refused by `gather_runs`), and the
    expected jobs of any multirun folder that have no run.

    Raises:
        FileNotFoundError: a folder does not exist.
        RunConflictError: two folders hold the same run with different numbers.
    """
    good, damaged = [], []
    for directory in find_run_folders(folders):
        try:
            load_run(directory)
            good.append(directory)
        except DamagedRunError as error:
            damaged.append((str(directory), str(error)))
    missing = [line for folder in folders for line in sweep_missing(Path(folder))]
    return PageRuns(runs=gather_runs(good) if good else RunSet(runs=()), damaged=tuple(damaged),
                    missing=tuple(missing), folders=tuple(str(folder) for folder in folders))


# --- formatting -------------------------------------------------------------------------------------------

def number_text(value: Any, digits: int = 4) -> str:
    """A stored number as shown (4 significant digits), `–` where missing."""
    number = as_float(value)
    if number is None:
        return "–"
    return str(int(number)) if number.is_integer() and abs(number) < 1e15 else f"{number:.{digits}g}"


def as_float(value: Any) -> float | None:
    """A finite float or None."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


def value_attribute(value: Any) -> str:
    """The full-precision number a cell carries (`data-value`, what sorting and the tests read)."""
    number = as_float(value)
    return "" if number is None else repr(number)


def number_cell(value: Any, low: Any = None, high: Any = None, *, extra: str = "", css: str = "") -> str:
    """A table cell with a number, its interval below it when given, and the exact value in `data-value`."""
    interval = ""
    if as_float(low) is not None and as_float(high) is not None:
        interval = (f'<br><span class="ci" data-low="{value_attribute(low)}" data-high="{value_attribute(high)}">'
                    f"[{number_text(low)}, {number_text(high)}]</span>")
    classes = f' class="{css}"' if css else ""
    return f'<td{classes} data-value="{value_attribute(value)}">{number_text(value)}{extra}{interval}</td>'


def text_cell(value: Any) -> str:
    """A table cell with text (sorted as text)."""
    return f"<td>{esc(value)}</td>"


def note(text: str) -> str:
    """A paragraph saying why a section is empty."""
    return f'<p class="note">{esc(text)}</p>'


def figure_svg(fig: Any) -> str:
    """A matplotlib figure as inline SVG (text kept as text, so it stays small); the figure is closed."""
    import matplotlib.pyplot as plt

    from sfbench_jax.pipeline.outputs.heatmap import PLAIN_TEXT, plain_text

    buffer = io.StringIO()
    try:
        plain_text(fig)  # a label with dollar signs is text, not mathtext
        with plt.rc_context({"svg.fonttype": "none", **PLAIN_TEXT}):
            fig.savefig(buffer, format="svg", bbox_inches="tight")
    finally:
        plt.close(fig)
    text = buffer.getvalue()
    return '<div class="figure">' + text[text.index("<svg"):] + "</div>"


# --- sections ---------------------------------------------------------------------------------------------

def problems_section(page: PageRuns) -> str:
    """The top of the page: every damaged or missing run named, or the verification status of all of them."""
    lines = [f"<li><b>{refusal_label(reason)}</b> {esc(folder)}: {esc(reason)}</li>" for folder, reason in page.damaged]
    lines += [f"<li><b>missing</b> {esc(item)}</li>" for item in page.missing]
    if not lines:
        return (f'<div id="problems" class="ok">All {len(page.runs.runs)} run(s) verified: completion record '
                "(every file's size and SHA-256) and summary recomputed from the per-window losses.</div>")
    return (f'<div id="problems" class="alert"><b>{len(lines)} run(s) are not in the tables below:</b>'
            f"<ul>{''.join(lines)}</ul></div>")


def table4_architecture_rows(baselines: pd.DataFrame) -> list[str]:
    """Table 4's architecture block in long form: one row per (dataset, architecture) with D_w, MSE_c and MSE_w
    and their 95% window-bootstrap intervals, the best entry of each dataset marked; a model whose forecast ignores
    its input (the summary's `ignores_input`) is marked as such and never best."""
    from sfbench_jax.report.architectures import dataset_label
    from sfbench_jax.report.paper import IGNORES_INPUT, IGNORES_INPUT_MARK, is_flagged, label_of

    flagged = baselines.get(IGNORES_INPUT, pd.Series(False, index=baselines.index)).map(is_flagged)
    ranked = baselines[~flagged]
    best = {(dataset, column): rows[column].astype(float).round(3).min()
            for dataset, rows in ranked.groupby("dataset") for _, column, _ in TABLE4_MEASURES}
    rows = []
    for index, row in baselines.iterrows():
        ignores = bool(flagged[index])
        label = label_of(row["architecture"])
        cells = [text_cell(dataset_label(row["dataset"])),
                 f'<td class="ignores-input">{esc(label)} {IGNORES_INPUT_MARK} ignores its input</td>' if ignores
                 else text_cell(label)]
        for _, column, _ in TABLE4_MEASURES:
            is_best = not ignores and round(float(row[column]), 3) == best.get((row["dataset"], column))
            cells.append(number_cell(row[column], row.get(f"{column}_ci_lo"), row.get(f"{column}_ci_hi"),
                                     extra=IGNORES_INPUT_MARK if ignores else "", css="best" if is_best else ""))
        mark = ' data-ignores-input="true"' if ignores else ""
        rows.append(f'<tr data-dataset="{esc(row["dataset"])}" data-architecture="{esc(row["architecture"])}"{mark}>'
                    + "".join(cells) + "</tr>")
    return rows


def table4_method_rows(means: pd.DataFrame, intervals: pd.DataFrame) -> list[str]:
    """Table 4's method block in long form: per (dataset, method) the dataset-mean deltas ΔD_w, ΔMSE_c, ΔMSE_w
    with the pair-bootstrap 95% intervals of the same pairs."""
    from sfbench_jax.report.architectures import dataset_label
    from sfbench_jax.report.paper import label_of

    by_cell = {(r["dataset"], r["method"]): r for _, r in intervals.iterrows()}
    rows = []
    for _, row in means.iterrows():
        bootstrap = by_cell.get((row["dataset"], row["method"]), {})
        cells = [text_cell(dataset_label(row["dataset"])), text_cell(label_of(row["method"])),
                 number_cell(row["pairs"])]
        for _, column, interval in TABLE4_MEASURES:
            cells.append(number_cell(row[f"delta_{column}"], bootstrap.get(f"{interval}_CI_lo"),
                                     bootstrap.get(f"{interval}_CI_hi")))
        rows.append(f'<tr data-dataset="{esc(row["dataset"])}" data-method="{esc(row["method"])}">'
                    + "".join(cells) + "</tr>")
    return rows


def table4_section(analysis: Any) -> str:
    """Table 4, both blocks (the method block where method runs exist)."""
    from sfbench_jax.report.deltas import dataset_means, pair_bootstrap_table

    try:
        baselines = analysis.baselines
    except NotApplicable as reason:
        return "<h2>Table 4</h2>" + note(f"No architecture block: {reason}")
    parts = ["<h2>Table 4</h2>", sortable_table(
        "table4-architectures", ["dataset", "architecture", "D_w", "MSE_c", "MSE_w"],
        table4_architecture_rows(baselines),
        "Architectures: baseline winners at the canonical realisation; 95% window-bootstrap intervals below each "
        "value; bold = best of its dataset (3 decimals); † = the model ignores its input (the same forecast for "
        "every window), never best. Click a header to sort.")]
    try:
        pairs = analysis.pairs
    except NotApplicable as reason:
        return "".join(parts) + note(f"No method block: {reason}")
    intervals = pair_bootstrap_table(pairs, draws=analysis.options.pair_bootstrap_draws)
    parts.append(sortable_table("table4-methods", ["dataset", "method", "pairs", "ΔD_w", "ΔMSE_c", "ΔMSE_w"],
                       table4_method_rows(dataset_means(pairs), intervals),
                       "Methods: dataset means of the method-minus-baseline deltas over the (architecture) pairs; "
                       "pair-bootstrap 95% intervals below each value."))
    return "".join(parts)


def delta_mark(mean: Any, low: Any, high: Any) -> tuple[str, str]:
    """(`css class`, mark) of a delta: lower is better, so a negative delta is an improvement; significant when
    the interval excludes 0."""
    mean, low, high = as_float(mean), as_float(low), as_float(high)
    if mean is None:
        return "", ""
    sign = "better" if mean < 0 else "worse" if mean > 0 else "same"
    arrow = {"better": "▼", "worse": "▲", "same": "="}[sign]
    significant = low is not None and high is not None and (high < 0 or low > 0)
    return f"{sign}{' significant' if significant else ''}", f" {arrow}{'*' if significant else ''}"


def deltas_section(analysis: Any) -> str:
    """Method deltas per (dataset, method) with their pair-bootstrap intervals, sign (▼ lower = better, ▲ worse)
    and significance (* = the 95% interval excludes 0)."""
    from sfbench_jax.evaluation.normalised import PAIR_BOOTSTRAP_COLUMNS
    from sfbench_jax.report.architectures import dataset_label
    from sfbench_jax.report.deltas import pair_bootstrap_table
    from sfbench_jax.report.paper import label_of

    try:
        intervals = pair_bootstrap_table(analysis.all_pairs, draws=analysis.options.pair_bootstrap_draws)
    except NotApplicable as reason:
        return "<h2>Method deltas</h2>" + note(f"No method deltas: {reason}")
    rows = []
    for _, row in intervals.iterrows():
        cells = [text_cell(dataset_label(row["dataset"])), text_cell(label_of(row["method"])),
                 text_cell(row["selection"]), number_cell(row["count"])]
        for column in PAIR_BOOTSTRAP_COLUMNS:
            mean, low, high = row[f"{column}_mean"], row[f"{column}_CI_lo"], row[f"{column}_CI_hi"]
            css, mark = delta_mark(mean, low, high)
            cells.append(number_cell(mean, low, high, extra=esc(mark), css=css))
        rows.append(f'<tr data-dataset="{esc(row["dataset"])}" data-method="{esc(row["method"])}">'
                    + "".join(cells) + "</tr>")
    return ("<h2>Method deltas</h2>" + sortable_table(
        "method-deltas", ["dataset", "method", "selection", "pairs", *PAIR_BOOTSTRAP_COLUMNS], rows,
        "Method minus baseline, mean over the pairs with the pair-bootstrap 95% interval: ▼ lower (better), "
        "▲ higher (worse), * the interval excludes 0."))


def heatmap_section(analysis: Any) -> str:
    """The per-scenario degradation heatmap of the baseline winners (paper Figure 2)."""
    from sfbench_jax.report.figures import build_scenario_facets

    try:
        baselines = analysis.baselines
    except NotApplicable as reason:
        return "<h2>Per-scenario degradation</h2>" + note(f"No heatmap: {reason}")
    return ('<h2>Per-scenario degradation</h2><div id="heatmap">' + figure_svg(build_scenario_facets(baselines))
            + "</div>")


def stored_curves(folders: Iterable[Path], runs: RunSet) -> pd.DataFrame:
    """Rows of every stored `severity_curves.csv` under `folders` that belong to a verified run."""
    directories = {str(run.directory.resolve()) for run in runs.runs}
    frames = []
    for folder in folders:
        for path in sorted(Path(folder).rglob(CURVES_FILE)):
            frame = pd.read_csv(path)
            if "run_dir" in frame.columns:
                frames.append(frame[frame["run_dir"].map(lambda d: str(Path(d).resolve())).isin(directories)])
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def curves_section(curves: pd.DataFrame) -> str:
    """The stored severity-response curves with their 95% bands, one figure per dataset."""
    from sfbench_jax.report.figures import build_severity_curves

    if curves.empty:
        return ("<h2>Severity curves</h2>" + note("No severity curves stored under these folders (write them with "
                                                  "`sfbench-report curves --runs FOLDER --output FOLDER`)."))
    figures = [figure_svg(build_severity_curves(curves, dataset=dataset)) for dataset in curves["dataset"].unique()]
    return '<h2>Severity curves</h2><div id="curves">' + "".join(figures) + "</div>"


def extra_scenarios(run: StoredRun) -> list[str]:
    """The extra (non-paper) scenarios a run scored: its `eval.scenarios` beyond the paper's eight."""
    listed = run.manifest.get("config", {}).get("eval", {}).get("scenarios") or ()
    listed = [listed] if isinstance(listed, str) else list(listed)
    return [key for key in listed if key not in SCENARIO_KEYS]


def extras_section(runs: RunSet) -> str:
    """Extra scenarios, scored beside the paper's eight (never in D_w, MSE_w, D-bar or mPC)."""
    rows = []
    for run in runs.runs:
        for key in extra_scenarios(run):
            rows.append(f'<tr data-run-dir="{esc(run.directory)}">' + "".join([
                text_cell(run.directory.name), text_cell(run.row["dataset"]), text_cell(run.row["architecture"]),
                text_cell(run.row["method"]), text_cell(key), number_cell(run.row[f"mse_{key}"]),
                number_cell(run.row[f"d_{key}"])]) + "</tr>")
    if not rows:
        return "<h2>Extra scenarios</h2>" + note("No run scored an extra scenario (eval.scenarios).")
    return "<h2>Extra scenarios</h2>" + sortable_table(
        "extra-scenarios", ["run", "dataset", "architecture", "method", "scenario", "MSE", "D"], rows,
        "Scored beside the paper's eight scenarios; never part of D_w, MSE_w, D-bar or mPC.")


#: Summary columns of the runs table (label, column).
RUN_NUMBERS = (("D_w", "d_w"), ("MSE_c", "mse_c"), ("MSE_w", "mse_w"), ("D̄", "d_mean"), ("mPC", "mpc"))


def provenance(run: StoredRun) -> dict[str, Any]:
    """A run's provenance as stored: data, hyperparameters, evaluation settings, code revision and versions."""
    manifest, row = run.manifest, run.row
    config = manifest.get("config", {})
    return {"dataset": row.get("dataset"), "data_sha256": manifest.get("data", {}).get("content_sha256"),
            "model": row.get("architecture"), "method": row.get("method"), "variant": row.get("variant"),
            "hyperparameters": row.get("hyperparameters"), "method_grid": config.get("method", {}).get("grid"),
            "eval_seed": row.get("eval_seed"), "k": row.get("k"), "rng_mode": row.get("rng_mode"),
            "code_revision": manifest.get("code_revision"), "versions": manifest.get("versions", {})}


def run_row(run: StoredRun) -> str:
    """One verified run: its numbers and its provenance."""
    facts = provenance(run)
    versions = ", ".join(f"{name} {version}" for name, version in sorted(facts["versions"].items()))
    details = esc(json.dumps({k: facts[k] for k in ("hyperparameters", "method_grid", "data_sha256")},
                             default=str))
    from sfbench_jax.report.paper import IGNORES_INPUT, IGNORES_INPUT_MARK, is_flagged

    model = (f'<td class="ignores-input">{esc(facts["model"])} {IGNORES_INPUT_MARK} ignores its input</td>'
             if is_flagged(run.row.get(IGNORES_INPUT)) else text_cell(facts["model"]))
    cells = [text_cell(run.directory.name), text_cell(facts["dataset"]), model,
             text_cell(facts["method"]), text_cell(facts["variant"] or ""),
             *(number_cell(run.row.get(column)) for _, column in RUN_NUMBERS),
             number_cell(facts["eval_seed"]), number_cell(facts["k"]), text_cell(facts["rng_mode"]),
             text_cell(facts["code_revision"] or "unknown"),
             f"<td><details><summary>settings</summary><code>{details}</code><br>{esc(versions)}</details></td>",
             '<td class="verified">verified</td>']
    return f'<tr data-run-dir="{esc(run.directory)}" data-status="verified">' + "".join(cells) + "</tr>"


def damaged_row(folder: str, reason: str, columns: int) -> str:
    """A run that could not be read: named, with the reason, and no numbers."""
    return (f'<tr data-run-dir="{esc(folder)}" data-status="damaged"><td>{esc(Path(folder).name)}</td>'
            f'<td colspan="{columns - 2}">{esc(reason)}</td><td class="damaged">{refusal_label(reason)}</td></tr>')


def refusal_label(reason: str) -> str:
    """How a run the reader could not read is labelled: "being written" (a running sfbench holds it, see
    `run_folder.damage.RunInProgressError`) or "damaged"."""
    return "being written" if " is being written now by a running sfbench " in reason else "damaged"


RUN_HEADERS = ("run", "dataset", "model", "method", "variant", *(label for label, _ in RUN_NUMBERS), "eval seed",
               "K", "rng", "code revision", "settings and versions", "status")


def runs_section(page: PageRuns) -> str:
    """Every run: its stored numbers, provenance and verification status (damaged ones named, not dropped)."""
    rows = [run_row(run) for run in page.runs.runs]
    rows += [damaged_row(folder, reason, len(RUN_HEADERS)) for folder, reason in page.damaged]
    duplicates = "".join(f"<li>{esc(b)} repeats {esc(a)} (same settings, same numbers)</li>"
                         for a, b in page.runs.duplicates)
    return ("<h2>Runs and provenance</h2>"
            + sortable_table("runs", RUN_HEADERS, rows, "Every run folder found, as stored.")
            + (f"<ul>{duplicates}</ul>" if duplicates else ""))


#: The report page's own classes (the style both pages share is `storage.html_page.STYLE`).
PAGE_STYLE = """
.best{font-weight:bold}.better{color:#17661b}.worse{color:#a11}.significant{font-weight:bold}
.alert{background:#fde8e8;border:1px solid #d33;padding:.6em}.ok{background:#e8f6e8;border:1px solid #393;padding:.6em}
.ignores-input{color:#a11;font-weight:bold}.verified{color:#17661b}.damaged{color:#a11;font-weight:bold}
.figure svg{max-width:100%;height:auto}details code{white-space:pre-wrap;word-break:break-all;font-size:11px}
"""


def report_html(page: PageRuns, curves: pd.DataFrame | None = None, options: Any = None) -> str:
    """The whole report page of some stored runs (`options`: the `ReportOptions` of the tables, e.g. `where`)."""
    from sfbench_jax.report.catalog import Analysis, ReportOptions

    analysis = Analysis(page.runs, options or ReportOptions())
    header = (f"<h1>sfbench report</h1><p>{len(page.runs.runs)} verified run(s) from "
              f"{esc(', '.join(page.folders))}</p>")
    if not page.runs.runs:
        sections = [note("No verified run under these folders.")]
    else:
        sections = [table4_section(analysis), heatmap_section(analysis), curves_section(
            pd.DataFrame() if curves is None else curves), deltas_section(analysis), extras_section(page.runs)]
    body = header + problems_section(page) + "".join(sections) + runs_section(page)
    return page_html("sfbench report", body, style=PAGE_STYLE)


def write_page(text: str, target: Path) -> Path:
    """Write a page atomically.

    Raises:
        ValueError: the page would exceed `MAX_PAGE_BYTES` (nothing is written).
    """
    size = len(text.encode("utf-8"))
    if size > MAX_PAGE_BYTES:
        raise ValueError(f"The page would be {size / 2**20:.1f} MB (limit 5 MB); report fewer runs at a time "
                         "(pass a narrower --runs folder).")
    return html_page.write_page(text, target)


def write_html_report(folders: Sequence[Path], target: Path) -> Path:
    """Read the runs under `folders` and write the report page to `target` (atomically).

    Raises:
        ValueError: the page would exceed `MAX_PAGE_BYTES` (nothing is written).
    """
    page = read_page_runs([Path(folder) for folder in folders])
    return write_page(report_html(page, stored_curves(folders, page.runs)), target)
