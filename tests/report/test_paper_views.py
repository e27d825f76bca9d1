"""Table 4 architecture block, Figure 5 trade-offs (Pareto frontier) and the merged heatmap, from
hand-written summary rows."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from sfbench_jax.pipeline.outputs.heatmap import scenario_heatmap
from sfbench_jax.report.figures import pareto_frontier, tradeoff_figure
from sfbench_jax.report.paper import table4_architecture_block as table4_block
from sfbench_jax.report.paper import table4_markdown

from .summaries import summary_rows

PNG = b"\x89PNG\r\n\x1a\n"


PAPER_ETTH1 = {("etth1", "seasonal_naive"): (1.288, 0.634, 0.817), ("etth1", "dlinear"): (1.251, 0.438, 0.548),
               ("etth1", "gru"): (1.064, 0.664, 0.707), ("etth1", "moderntcn"): (1.216, 0.462, 0.562),
               ("etth1", "tsmixer"): (1.169, 0.475, 0.555), ("etth1", "patchtst"): (1.312, 0.431, 0.566)}


def test_table4_block_layout_and_bold_best() -> None:
    summary = summary_rows({**PAPER_ETTH1, ("beijing_air_tiantan", "dlinear"): (1.628, 0.329, 0.536),
                            ("beijing_air_tiantan", "gru"): (1.251, 0.281, 0.352)})
    block = table4_block(summary.iloc[::-1])  # input order does not matter
    assert list(block.columns) == ["dataset", "measure", "seasonal_naive", "dlinear", "gru", "moderntcn", "tsmixer",
                                   "patchtst", "best"]
    assert list(zip(block.dataset, block.measure, strict=True)) == [
        ("beijing_air_tiantan", "D_w"), ("beijing_air_tiantan", "MSE_c"), ("beijing_air_tiantan", "MSE_w"),
        ("etth1", "D_w"), ("etth1", "MSE_c"), ("etth1", "MSE_w")]  # paper dataset order
    assert list(block.best) == ["gru", "gru", "gru", "gru", "patchtst", "dlinear"]  # paper Table 4 ETTh1 bolds
    markdown = table4_markdown(block)
    lines = markdown.splitlines()
    assert lines[0] == "| dataset | measure | SeasonalNaive | DLinear | GRU | ModernTCN | TSMixer | PatchTST |"
    assert lines[5] == "| ETTh1 | D_w | 1.288 | 1.251 | **1.064** | 1.216 | 1.169 | 1.312 |"
    assert lines[6] == "| ETTh1 | MSE_c | 0.634 | 0.438 | 0.664 | 0.462 | 0.475 | **0.431** |"
    assert lines[2] == "| Beijing Air Tiantan | D_w | – | 1.628 | **1.251** | – | – | – |"


def test_table4_refuses_duplicate_cells() -> None:
    summary = summary_rows(PAPER_ETTH1)
    with pytest.raises(ValueError, match=r"Cells with more than one row: \[\('etth1', 'gru'\)\]"):
        table4_block(pd.concat([summary, summary[summary.architecture == "gru"]]))


def test_pareto_frontier_by_hand() -> None:
    x = np.array([0.634, 0.438, 0.664, 0.462, 0.475, 0.431])  # MSE_c, paper ETTh1
    y = np.array([1.288, 1.251, 1.064, 1.216, 1.169, 1.312])  # D_w
    # PatchTST (lowest MSE_c), DLinear, ModernTCN, TSMixer, GRU (lowest D_w); SeasonalNaive is dominated
    assert pareto_frontier(x, y).tolist() == [5, 1, 3, 4, 2]
    assert pareto_frontier(np.array([1.0, 1.0]), np.array([2.0, 2.0])).tolist() == [0, 1]  # ties both stay
    assert pareto_frontier(np.array([1.0, 1.0]), np.array([2.0, 3.0])).tolist() == [0]


def test_figures_cover_every_model(tmp_path: Path) -> None:
    summary = summary_rows({**PAPER_ETTH1, ("beijing_air_tiantan", "gru"): (1.251, 0.281, 0.352)})
    tradeoffs = tradeoff_figure(summary, tmp_path / "tradeoffs.png")
    heatmap = scenario_heatmap(summary, tmp_path / "heatmap.png")
    assert tradeoffs.read_bytes()[:8] == PNG and heatmap.read_bytes()[:8] == PNG
    assert sorted(p.name for p in tmp_path.iterdir()) == ["heatmap.png", "tradeoffs.png"]  # no temp files left
