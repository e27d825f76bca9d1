"""The report page's pure pieces (sfbench_jax/report/html.py): a delta's sign and significance, numbers shown and
carried at full precision, stored text escaped, extra scenarios in their own section, damaged and missing runs
named at the top and kept in the runs table. The whole page in a browser: test_html_report.py."""

from __future__ import annotations

from pathlib import Path

from sfbench_jax.report.html import (
    PageRuns,
    delta_mark,
    extras_section,
    number_cell,
    problems_section,
    runs_section,
)
from sfbench_jax.run_folder.loading import RunSet, StoredRun


def test_delta_sign_and_significance() -> None:
    assert delta_mark(-0.2, -0.3, -0.1) == ("better significant", " ▼*")
    assert delta_mark(0.05, -0.01, 0.1) == ("worse", " ▲")
    assert delta_mark(0.05, 0.01, 0.1) == ("worse significant", " ▲*")
    assert delta_mark(None, None, None) == ("", "")


def test_number_cell_shows_four_digits_and_carries_the_exact_value() -> None:
    cell = number_cell(1.2345678912345, 1.1, 1.4)
    assert 'data-value="1.2345678912345"' in cell and ">1.235<" in cell and "[1.1, 1.4]" in cell
    assert number_cell(float("nan")) == '<td data-value="">–</td>'
    assert ">200<" in number_cell(200.0)


def _run(directory: str, scenarios: list[str], row: dict) -> StoredRun:
    manifest = {"config": {"eval": {"scenarios": scenarios}}, "code_revision": "abc<def>", "versions": {"jax": "0"}}
    base = {"dataset": "etth1", "architecture": "dlinear", "method": "baseline", "eval_seed": 1, "k": 200,
            "rng_mode": "jax", "variant": "", "hyperparameters": '{"lr": 0.001}'}
    return StoredRun(directory=Path(directory), key={}, row=base | row, manifest=manifest)


def test_extra_scenarios_have_their_own_section_and_text_is_escaped() -> None:
    runs = RunSet(runs=(_run("/r/<one>", ["drift", "quantisation"], {"mse_quantisation": 0.5, "d_quantisation": 1.25,
                                                                        "d_w": 1.1, "mse_w": 0.7}),))
    section = extras_section(runs)
    assert "quantisation" in section and 'data-value="1.25"' in section and "drift" not in section
    assert "&lt;one&gt;" in section and "<one>" not in section
    table = runs_section(PageRuns(runs=runs))
    assert "abc&lt;def&gt;" in table and 'data-status="verified"' in table
    assert "No run scored an extra scenario" in extras_section(RunSet(runs=(_run("/r/b", ["drift"], {}),)))


def test_damaged_and_missing_runs_are_named_at_the_top_and_kept_in_the_table() -> None:
    page = PageRuns(runs=RunSet(runs=()), damaged=(("/sweep/2_job", "summary.csv differs from its record"),),
                    missing=("(dataset=etth1, architecture=gru, method=revin): job 3 failed: boom",))
    top = problems_section(page)
    assert 'class="alert"' in top and "2 run(s) are not in the tables below" in top
    assert "/sweep/2_job" in top and "summary.csv differs" in top and "job 3 failed: boom" in top
    assert 'data-status="damaged"' in runs_section(page)
    assert 'class="ok"' in problems_section(PageRuns(runs=RunSet(runs=())))
