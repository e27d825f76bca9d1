"""A plug-in's label with dollar signs in the figures (issue 43, item 15): matplotlib read `$...$` as mathtext, so
a label such as `$\\mathbf{x$` failed when the figure was drawn, crashing the collection, the HTML page and
`figure2` without naming the label. Every figure's texts are plain now (`pipeline.outputs.heatmap.plain_text`):
the label is drawn as written. The figures are built from hand-written summary rows (no run needed)."""

from __future__ import annotations

from pathlib import Path

from sfbench_jax.pipeline.outputs.heatmap import save_figure, scenario_heatmap
from sfbench_jax.report.figures import build_scenario_facets, build_tradeoffs
from sfbench_jax.report.html import figure_svg

from .summaries import summary_rows

#: A plug-in architecture's name that is broken mathtext (an unclosed brace) and one that is valid mathtext.
HOSTILE, MATH = "$\\mathbf{x$ net", "cost $5 to $9"


def test_a_label_with_dollar_signs_is_drawn_as_written(tmp_path: Path) -> None:
    rows = summary_rows({("etth1", HOSTILE): (1.4, 0.5, 0.7), ("etth1", MATH): (1.2, 0.6, 0.72),
                         ("etth1", "dlinear"): (1.3, 0.4, 0.52)})
    assert save_figure(build_scenario_facets(rows), tmp_path / "figure2.png").stat().st_size > 0
    assert save_figure(build_tradeoffs(rows), tmp_path / "figure5.png").stat().st_size > 0
    assert scenario_heatmap(rows, tmp_path / "scenario_heatmap.png").stat().st_size > 0  # a run's own heatmap
    svg = figure_svg(build_scenario_facets(rows))  # the HTML page's figure
    assert "$\\mathbf{x$ net" in svg and "cost $5 to $9" in svg
