"""Every table and figure of the analysis by name, built from a set of stored runs: the registry behind
`sfbench-report NAME --runs FOLDER...` and the views a multirun's collection publishes.

An output reads the rows it needs from an `Analysis` (the runs' summary rows, filtered, with every score
family, the canonical realisation, the method pairs); when the runs cannot support it, it raises
`NotApplicable` saying which runs are lacking. Outputs marked `restores` rebuild stored winners (never
training) to evaluate something new: fault examples (Figures 3/4) and severity curves. They call the
`Restorer` the command gives the analysis (`sfbench_jax.pipeline.rebuild` implements it), so an analysis that only
reads stored numbers never builds a model; the rest only read the stored numbers.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

import pandas as pd

from sfbench_jax.config import ANCHOR_MODEL
from sfbench_jax.data.registry import DISPLAY_ORDER
from sfbench_jax.evaluation.curves import DEFAULT_SEVERITIES
from sfbench_jax.faults.registry import scenario_group
from sfbench_jax.methods import METHODS
from sfbench_jax.report import extras, longform, paper
from sfbench_jax.report.architectures import ARCHITECTURE_ORDER, ordered
from sfbench_jax.report.deltas import dataset_means, pair_bootstrap_table, paired_rows
from sfbench_jax.report.families import scored_frame
from sfbench_jax.report.figures import (
    build_fault_examples,
    build_scenario_facets,
    build_severity_curves,
    build_tradeoffs,
    build_trajectories,
    save_figure,
)
from sfbench_jax.report.realisations import (
    NotApplicable,
    canonical_rows,
    is_canonical_seed,
    is_fixed_fraction,
    is_perturbed_selection,
    one_row_per_cell,
    select_rows,
    with_method_columns,
)
from sfbench_jax.report.sensitivity import eval_seed_stability, fixed_fraction_rows, fixed_fraction_summary
from sfbench_jax.run_folder.loading import RunSet
from sfbench_jax.storage.atomic import write_csv, write_text


@dataclass(frozen=True)
class ReportOptions:
    """Choices of a report.

    Attributes:
        where: keep only summary rows whose columns equal these values (e.g. `{"rng_mode": "reference"}`).
        published_frontier: fit rho-bar's frontier with the published winners (protocol 8.1/8.5) of the architectures
            the runs lack.
        method: the method of Figure 6 (default: PGD, `adversarial_training`, else the only method present).
        architecture: the model of Figures 3/4 (default: SeasonalNaive when present, else the first architecture).
        severities: the grid of the severity curves.
        curve_k: test windows of the severity curves (default: the run's K).
        pair_bootstrap_draws: resamples of the pair bootstrap (the protocol's 1,000: protocol 6.4).
    """

    where: Mapping[str, str] = field(default_factory=dict)
    published_frontier: bool = False
    method: str | None = None
    architecture: str | None = None
    severities: tuple[float, ...] = DEFAULT_SEVERITIES
    curve_k: int | None = None
    pair_bootstrap_draws: int = 1000


@dataclass(frozen=True)
class Restorer:
    """How the outputs that need a model again get it from a stored run (never training): `fault_examples(run,
    scenarios=...) -> list[dict]` and `severity_curves(run, severities=..., eval_overrides=...) -> SeverityCurves`
    (`sfbench_jax.pipeline.rebuild.fault_examples` and `run_severity_curves`)."""

    fault_examples: Callable[..., list[dict[str, Any]]]
    severity_curves: Callable[..., Any]


@dataclass
class Analysis:
    """The runs of a report and the frames its outputs read (computed once, on first use)."""

    runs: RunSet
    options: ReportOptions = field(default_factory=ReportOptions)
    restorer: Restorer | None = None

    def restoring(self) -> Restorer:
        """The restorer of stored winners.

        Raises:
            NotApplicable: none was given (the output needs `sfbench-report`, which gives one).
        """
        if self.restorer is None:
            raise NotApplicable("this output rebuilds stored winners: run it with sfbench-report")
        return self.restorer

    @cached_property
    def frame(self) -> pd.DataFrame:
        """Every run's summary row (after `options.where`)."""
        if not self.runs.runs:
            raise NotApplicable("no runs found (a run folder holds summary.csv and manifest.json)")
        return select_rows(with_method_columns(self.runs.summary), dict(self.options.where))

    @cached_property
    def _scored(self) -> tuple[pd.DataFrame, pd.DataFrame]:
        return scored_frame(self.frame, self.runs, published_frontier=self.options.published_frontier)

    @property
    def scored(self) -> pd.DataFrame:
        """Rows with mCE, relative mCE, rPC and rho-bar."""
        return self._scored[0]

    @property
    def fits(self) -> pd.DataFrame:
        """The rho-bar frontier fits."""
        return self._scored[1]

    @cached_property
    def canonical(self) -> pd.DataFrame:
        """Scored rows of the canonical realisation under clean selection."""
        return canonical_rows(self.scored)

    @cached_property
    def baselines(self) -> pd.DataFrame:
        """The canonical baseline winners, one per (dataset, architecture).

        Raises:
            NotApplicable: there is none.
        """
        rows = self.canonical[self.canonical["method"] == "baseline"]
        if rows.empty:
            seeds = sorted(set(self.frame["eval_seed"].astype(int)))
            raise NotApplicable("no baseline run at the canonical evaluation realisation (the dataset's canonical "
                                f"eval seed, no fixed channel fraction, clean selection); eval seeds found: {seeds}")
        rows = one_row_per_cell(rows, ("dataset", "architecture"), "The architecture tables")
        datasets = ordered(list(rows["dataset"].unique()), DISPLAY_ORDER)
        architectures = ordered(list(rows["architecture"].unique()), ARCHITECTURE_ORDER)
        order = rows.apply(lambda r: (datasets.index(r["dataset"]), architectures.index(r["architecture"])), axis=1)
        return rows.loc[order.sort_values().index]

    @cached_property
    def pairs(self) -> pd.DataFrame:
        """Method-baseline pairs of the canonical realisation.

        Raises:
            NotApplicable: no method run.
        """
        pairs = paired_rows(self.canonical)
        if pairs.empty:
            raise NotApplicable("no method run (summary rows with method != baseline) at the canonical realisation")
        return pairs

    @property
    def all_pairs(self) -> pd.DataFrame:
        """The canonical pairs and, when there are any, the perturbed-selection pairs.

        Raises:
            NotApplicable: no method run.
        """
        try:
            perturbed = self.perturbed_pairs
        except NotApplicable:
            return self.pairs
        return pd.concat([self.pairs, perturbed], ignore_index=True)

    @cached_property
    def perturbed_pairs(self) -> pd.DataFrame:
        """Method-baseline pairs of runs re-selected on perturbed validation (canonical seed and channel rule).

        Raises:
            NotApplicable: no such run.
        """
        scored = self.scored
        plain = is_canonical_seed(scored) & ~is_fixed_fraction(scored)
        rows = scored[plain & (is_perturbed_selection(scored) | (scored["method"] == "baseline"))]
        pairs = paired_rows(rows)
        pairs = pairs[is_perturbed_selection(pairs)] if not pairs.empty else pairs
        if pairs.empty:
            raise NotApplicable("no method run re-selected on perturbed validation (selection_metric "
                                "perturbed_worst); make them with `python scripts/selector_pressure.py`")
        return pairs


Builder = Callable[[Analysis, Path], dict[str, Path]]


@dataclass(frozen=True)
class Output:
    """One table or figure: what it is, how it is built, and whether it rebuilds stored winners."""

    description: str
    build: Builder
    is_figure: bool = False
    restores: bool = False


def _table(block: pd.DataFrame, markdown: str, out: Path, stem: str) -> dict[str, Path]:
    return {f"{stem}_csv": write_csv(block, out / f"{stem}.csv"),
            f"{stem}_md": write_text(markdown, out / f"{stem}.md")}


def build_table4(analysis: Analysis, out: Path) -> dict[str, Path]:
    """Table 4, both blocks (the method block when method runs exist)."""
    architectures = paper.table4_architecture_block(analysis.baselines)
    files = _table(architectures, paper.table4_markdown(architectures), out, "table4_architectures")
    methods = None
    try:
        methods = paper.table4_method_block(dataset_means(analysis.pairs))
        files["table4_methods_csv"] = write_csv(methods, out / "table4_methods.csv")
    except NotApplicable:
        pass
    files["table4_md"] = write_text(paper.table4_markdown(architectures, methods), out / "table4.md")
    return files


def build_table10(analysis: Analysis, out: Path) -> dict[str, Path]:
    """Table 10: evaluation-seed stability."""
    stability = eval_seed_stability(analysis.frame)
    return _table(stability, paper.table10_markdown(stability), out, "table10_eval_seeds")


def build_table11(analysis: Analysis, out: Path) -> dict[str, Path]:
    """Table 11: method deltas under perturbed-validation selection, with the change from clean selection."""
    try:
        clean = dataset_means(analysis.pairs)
    except NotApplicable:
        clean = pd.DataFrame()
    block = paper.table11_block(dataset_means(analysis.perturbed_pairs), clean)
    return _table(block, paper.table11_markdown(block), out, "table11_selector_pressure")


def build_table12(analysis: Analysis, out: Path) -> dict[str, Path]:
    """Table 12 and `fixed_channel_fraction.csv`."""
    frame = analysis.frame
    if not is_fixed_fraction(frame).any():
        raise NotApplicable("no run with a fixed channel fraction (eval.channel_fraction=0.25 or 0.5)")
    per_run = fixed_fraction_rows(frame)
    summary = fixed_fraction_summary(per_run)
    files = _table(summary, paper.table12_markdown(summary), out, "table12_channel_fraction")
    files["fixed_channel_fraction"] = write_csv(per_run, out / "fixed_channel_fraction.csv")
    return files


def build_table16(analysis: Analysis, out: Path) -> dict[str, Path]:
    """Table 16: winner and runner-up with bootstrap intervals."""
    table = paper.table16(analysis.baselines)
    return _table(table, paper.table16_markdown(table), out, "table16_intervals")


def build_table17(analysis: Analysis, out: Path) -> dict[str, Path]:
    """Table 17: method-delta pair-bootstrap intervals."""
    intervals = pair_bootstrap_table(analysis.pairs, draws=analysis.options.pair_bootstrap_draws)
    return _table(intervals, paper.table17_markdown(intervals), out, "table17_method_intervals")


def build_table19(analysis: Analysis, out: Path) -> dict[str, Path]:
    """Table 19: score families of the architectures."""
    block = paper.table19_block(analysis.baselines)
    return _table(block, paper.block_markdown(block, higher_is_better=("ρ̄",)), out, "table19_score_families")


def build_table20(analysis: Analysis, out: Path) -> dict[str, Path]:
    """Table 20: score families of the methods (dataset means)."""
    block = paper.table20_block(dataset_means(analysis.pairs))
    return _table(block, paper.block_markdown(block, higher_is_better=("τ̄",)), out, "table20_method_families")


def build_figure2(analysis: Analysis, out: Path) -> dict[str, Path]:
    """Figure 2: per-dataset scenario heatmap of the baseline winners."""
    return {"figure2": save_figure(build_scenario_facets(analysis.baselines), out / "scenario_heatmap.png")}


def build_figure5(analysis: Analysis, out: Path) -> dict[str, Path]:
    """Figure 5: clean vs robust trade-offs."""
    return {"figure5": save_figure(build_tradeoffs(analysis.baselines), out / "tradeoffs.png")}


def _trajectory_data_file(method: str) -> str | None:
    """The trajectory data file a method's spec names (Figure 6 features it), None if it names none."""
    spec = METHODS.get(method)
    return None if spec is None else spec.trajectory_data_file


def trajectory_method(analysis: Analysis) -> str:
    """The method Figure 6 shows: the option, else the one its spec features (PGD), else the only method present."""
    methods = ordered(list(analysis.pairs["method"].unique()), paper.METHOD_ORDER)
    wanted = analysis.options.method
    if wanted is not None:
        if wanted not in methods:
            raise NotApplicable(f"no run of method {wanted!r}; methods present: {methods}")
        return wanted
    featured = [name for name in methods if _trajectory_data_file(name)]
    if featured:
        return featured[0]
    if len(methods) == 1:
        return methods[0]
    raise NotApplicable(f"several methods present ({methods}) and no PGD run: choose one with --method")


def build_figure6(analysis: Analysis, out: Path) -> dict[str, Path]:
    """Figure 6: baseline -> method trajectories with the Pareto frontier."""
    method = trajectory_method(analysis)
    pairs = analysis.pairs[analysis.pairs["method"] == method]
    data_name = _trajectory_data_file(method) or f"trajectory_data_{method}.csv"
    return {"figure6": save_figure(build_trajectories(pairs, method_label=paper.label_of(method)),
                                   out / f"trajectories_{method}.png"),
            "figure6_data": write_csv(longform.trajectory_data(pairs, method), out / data_name)}


def example_runs(analysis: Analysis) -> list:
    """One canonical baseline run per dataset for the fault examples (`options.architecture`, else SeasonalNaive,
    else the first architecture in table order)."""
    baselines = analysis.baselines
    chosen = []
    for dataset, rows in baselines.groupby("dataset", sort=False):
        names = ordered(list(rows["architecture"]), ARCHITECTURE_ORDER)
        wanted = analysis.options.architecture or (ANCHOR_MODEL if ANCHOR_MODEL in names else names[0])
        if wanted not in names:
            raise NotApplicable(f"no canonical baseline run of {wanted!r} on {dataset}; present: {names}")
        chosen.append(analysis.runs.by_directory(rows[rows["architecture"] == wanted]["run_dir"].iloc[0]))
    return chosen


#: The scenarios of Figures 3 and 4, in panel order (each spec's `group` and `group_rank`).
VALUE_SCENARIOS = scenario_group("value")
TIMING_AVAILABILITY_SCENARIOS = scenario_group("timing_availability")


def _examples_figure(analysis: Analysis, out: Path, scenarios: tuple[str, ...], name: str, title: str) -> Path:
    fault_examples = analysis.restoring().fault_examples
    examples = [example for run in example_runs(analysis) for example in fault_examples(run, scenarios=scenarios)]
    return save_figure(build_fault_examples(examples, title=title), out / name)


def build_figure3(analysis: Analysis, out: Path) -> dict[str, Path]:
    """Figure 3: per-window examples of the value scenarios on real windows."""
    return {"figure3": _examples_figure(analysis, out, VALUE_SCENARIOS, "fault_examples_value.png",
                                       "Value faults: one test window per scenario")}


def build_figure4(analysis: Analysis, out: Path) -> dict[str, Path]:
    """Figure 4: per-window examples of the timing and availability scenarios on real windows."""
    return {"figure4": _examples_figure(analysis, out, TIMING_AVAILABILITY_SCENARIOS,
                                        "fault_examples_timing_availability.png",
                                        "Timing and availability faults: one test window per scenario")}


def severity_curve_frame(analysis: Analysis) -> pd.DataFrame:
    """Severity curves of every canonical baseline winner (stored winners, no training)."""
    run_severity_curves = analysis.restoring().severity_curves
    frames = []
    overrides = {} if analysis.options.curve_k is None else {"k": analysis.options.curve_k}
    for _, row in analysis.baselines.iterrows():
        curves = run_severity_curves(analysis.runs.by_directory(row["run_dir"]), severities=analysis.options.severities,
                                     eval_overrides=overrides)
        frame = curves.to_frame()
        frame.insert(0, "run_dir", row["run_dir"])
        frame.insert(0, "model", paper.label_of(row["architecture"]))
        frame.insert(0, "dataset", row["dataset"])
        frame["eval_seed"], frame["k"] = curves.options.seed, curves.options.k
        frames.append(frame)
    return pd.concat(frames, ignore_index=True)


def build_curves(analysis: Analysis, out: Path) -> dict[str, Path]:
    """Severity-response curves: `severity_curves.csv` and one figure per dataset."""
    curves = severity_curve_frame(analysis)
    files = {"curves_csv": write_csv(curves, out / "severity_curves.csv")}
    for dataset in curves["dataset"].unique():
        files[f"curves_{dataset}"] = save_figure(build_severity_curves(curves, dataset=dataset),
                                                 out / f"severity_curves_{dataset}.png")
    return files


def build_longform(analysis: Analysis, out: Path) -> dict[str, Path]:
    """The reference's long-form CSVs (method files only when method runs exist)."""
    full = longform.full_results(analysis.scored)
    files = {"full_results": write_csv(full, out / "full_results.csv"),
             "analysis": write_csv(longform.analysis(full), out / "analysis.csv"),
             "scenario_summary": write_csv(longform.scenario_summary(analysis.scored), out / "scenario_summary.csv"),
             "anchors": write_csv(longform.anchors(analysis.scored), out / "reference_normalization_anchors.csv"),
             "rho_eff_fits": write_csv(longform.rho_fits_table(analysis.fits), out / "rho_eff_fits.csv")}
    try:
        baselines = analysis.baselines
        files["main_table_backbone"] = write_csv(longform.main_table_backbone(baselines),
                                                 out / "main_table_backbone.csv")
        files["heatmap_data"] = write_csv(longform.heatmap_data(baselines), out / "backbone_scenario_heatmap_data.csv")
        pairs = analysis.all_pairs
    except NotApplicable:
        return files
    deltas = longform.improvement_deltas(pairs)
    files["improvement_deltas_selected"] = write_csv(deltas, out / "improvement_deltas_selected.csv")
    files["improvement_deltas_long"] = write_csv(longform.improvement_deltas_long(deltas),
                                                 out / "improvement_deltas_long.csv")
    intervals = pair_bootstrap_table(pairs, draws=analysis.options.pair_bootstrap_draws)
    files["pipeline_method_delta_results"] = write_csv(intervals, out / "pipeline_method_delta_results.csv")
    return files


def build_extras(analysis: Analysis, out: Path) -> dict[str, Path]:
    """The extra fault scenarios the runs scored: `extras.csv`, `extras.md` and `extras.png` (`report/extras.py`),
    apart from the paper's tables (D_w stays over the eight)."""
    keys = extras.extra_scenario_keys(run.manifest for run in analysis.runs.runs)
    table = extras.extras_table(analysis.frame, keys) if keys else pd.DataFrame()
    if table.empty:
        raise NotApplicable("no run scored an extra fault scenario (eval.scenarios=[NAME] scores one)")
    return {"extras_csv": write_csv(table, out / "extras.csv"),
            "extras_md": write_text(extras.extras_markdown(table), out / "extras.md"),
            "extras_figure": save_figure(extras.extras_figure(table), out / "extras.png")}


OUTPUTS: dict[str, Output] = {
    "table4": Output("Table 4: architecture block (D_w, MSE_c, MSE_w) and method block (dataset-mean deltas)",
                     build_table4),
    "table10": Output("Table 10: evaluation-seed sensitivity (shifts, rank correlation, worst-scenario agreement)",
                      build_table10),
    "table11": Output("Table 11: method deltas under perturbed-validation selection", build_table11),
    "table12": Output("Table 12: fixed channel-fraction sensitivity", build_table12),
    "table16": Output("Table 16: winner and runner-up with bootstrap intervals", build_table16),
    "table17": Output("Table 17: method-delta pair-bootstrap intervals", build_table17),
    "table19": Output("Table 19: score families of the architectures", build_table19),
    "table20": Output("Table 20: score families of the methods", build_table20),
    "figure2": Output("Figure 2: per-dataset scenario heatmap", build_figure2, is_figure=True),
    "figure3": Output("Figure 3: value-fault examples on real windows", build_figure3, is_figure=True, restores=True),
    "figure4": Output("Figure 4: timing/availability-fault examples on real windows", build_figure4, is_figure=True,
                      restores=True),
    "figure5": Output("Figure 5: clean vs robust trade-offs with Pareto frontiers", build_figure5, is_figure=True),
    "figure6": Output("Figure 6: baseline -> method trajectories (PGD by default)", build_figure6, is_figure=True),
    "curves": Output("Severity-response curves D_p(s) with bootstrap bands, one figure per dataset", build_curves,
                     is_figure=True, restores=True),
    "extras": Output("Extra fault scenarios: D per run beside the paper's D_w (never part of it), table and figure",
                     build_extras, is_figure=True),
    "longform": Output("The reference's long-form CSVs (full_results, analysis, scenario_summary, deltas, anchors, "
                       "rho_eff_fits, ...)", build_longform),
}
#: Outputs a multirun's collection publishes when its runs support them (none rebuilds a model).
COLLECTED_VIEWS = ("table4", "table10", "table11", "table12", "table16", "table17", "table19", "table20", "figure2",
                   "figure5", "figure6", "extras", "longform")


def build_output(name: str, analysis: Analysis, out: Path) -> dict[str, Path]:
    """Build one output into `out`.

    Raises:
        ValueError: an unknown name (listing the valid ones).
        NotApplicable: the runs cannot support it.
    """
    if name not in OUTPUTS:
        raise ValueError(f"Unknown output {name!r}. Valid: {', '.join(OUTPUTS)}, all.")
    out.mkdir(parents=True, exist_ok=True)
    return OUTPUTS[name].build(analysis, out)


@dataclass(frozen=True)
class Published:
    """What `publish_views` wrote, and per view "written" or why it was skipped."""

    files: dict[str, Path]
    notes: dict[str, str]


def publish_views(runs: RunSet, out: Path, *, figures: bool = True, names: tuple[str, ...] = COLLECTED_VIEWS,
                  options: ReportOptions | None = None) -> Published:
    """Build every view of `names` the runs support; the others are noted with the reason."""
    analysis = Analysis(runs, options or ReportOptions())
    files: dict[str, Path] = {}
    notes: dict[str, str] = {}
    for name in names:
        if OUTPUTS[name].is_figure and not figures:
            notes[name] = "skipped: figures are off"
            continue
        try:
            files.update(build_output(name, analysis, out))
            notes[name] = "written"
        except NotApplicable as reason:
            notes[name] = f"skipped: {reason}"
    return Published(files=files, notes=notes)
