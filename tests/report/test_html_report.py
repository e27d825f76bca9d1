"""`sfbench-report html` on a real multirun (DLinear and SeasonalNaive x baseline and RevIN, `profile=tiny` with
one 5-step epoch: three jobs, as RevIN does not apply to SeasonalNaive), opened in headless Chromium: one
self-contained file under 5 MB, Table 4 holding exactly the numbers `sfbench-report table4` writes, the runs table
exactly the sweep's runs with the numbers of their `summary.csv`, the heatmap drawn, sorting working, no network
request and no console error; a damaged run is named at the top and in the runs table, never left out silently. A
screenshot of the page is kept (tests/browser_check.py). Slow: the multirun trains four small candidates and
compiles its programs."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from browser_check import artifact_folder, opened, screenshot, table_cells

from .conftest import report_command, shared_folder

pytestmark = pytest.mark.slow  # the multirun: about a minute on 2 cores
#: The sweep: two architectures x two methods, as small as a real multirun gets (SeasonalNaive has no RevIN job).
SWEEP = ("-m", "model=dlinear,seasonal_naive", "method=baseline,revin", "profile=tiny", "train.steps_per_epoch=5",
         "train.max_epochs=1")
ARCHITECTURES, METHODS = ("dlinear", "seasonal_naive"), ("baseline", "revin")
JOBS = 3


@pytest.fixture(scope="module")
def sweep(tmp_path_factory: pytest.TempPathFactory, data_root: Path) -> Path:
    def build(root: Path) -> None:
        environment = {**os.environ, "SFBENCH_DATA_ROOT": str(data_root)}
        completed = subprocess.run(
            [str(Path(sys.executable).parent / "sfbench"), *SWEEP, f"hydra.sweep.dir={root / 'sweep'}",
             f"train.store_dir={root / 'store'}"],
            capture_output=True, text=True, env=environment, timeout=1800, check=False)
        assert completed.returncode == 0, completed.stderr[-4000:]
        (root / "stderr.txt").write_text(completed.stderr)

    return shared_folder(tmp_path_factory, "html_sweep", build) / "sweep"


def written_page(sweep: Path, target: Path) -> subprocess.CompletedProcess:
    return report_command("html", "--runs", str(sweep), "--output", str(target))


def test_report_page_holds_table4_and_the_runs_of_the_sweep(sweep: Path, tmp_path: Path) -> None:
    assert (sweep / "report.html").is_file()  # written by the multirun's collection
    page_file = tmp_path / "report.html"
    completed = written_page(sweep, page_file)
    assert completed.returncode == 0, completed.stderr[-3000:]
    assert page_file.stat().st_size < 5 * 2**20
    text = page_file.read_text()
    assert "<link" not in text and "src=\"http" not in text and "@import" not in text  # nothing to fetch
    table4 = report_command("table4", "--runs", str(sweep), "--output", str(tmp_path / "table4"))
    assert table4.returncode == 0, table4.stderr[-3000:]
    architectures = pd.read_csv(tmp_path / "table4" / "table4_architectures.csv")
    methods = pd.read_csv(tmp_path / "table4" / "table4_methods.csv")
    jobs = sorted(p for p in sweep.iterdir() if (p / "run_record.json").is_file())
    assert len(jobs) == JOBS

    with opened(page_file) as view:
        shown = table_cells(view, "table4-architectures")
        assert sorted(row["data"]["architecture"] for row in shown) == sorted(ARCHITECTURES)
        for row in shown:
            for index, measure in enumerate(("D_w", "MSE_c", "MSE_w"), start=2):
                expected = architectures[(architectures.dataset == row["data"]["dataset"])
                                         & (architectures.measure == measure)][row["data"]["architecture"]]
                assert float(row["cells"][index]["value"]) == float(expected.iloc[0])
        shown_methods = table_cells(view, "table4-methods")
        assert [row["data"]["method"] for row in shown_methods] == ["revin"]
        for row in shown_methods:
            for index, measure in enumerate(("ΔD_w", "ΔMSE_c", "ΔMSE_w"), start=3):
                expected = methods[(methods.dataset == row["data"]["dataset"]) & (methods.measure == measure)]
                assert float(row["cells"][index]["value"]) == float(expected[row["data"]["method"]].iloc[0])
            assert "[" in row["cells"][3]["text"]  # the pair-bootstrap interval is shown

        runs = table_cells(view, "runs")
        assert sorted(Path(row["data"]["runDir"]).resolve() for row in runs) == [job.resolve() for job in jobs]
        for row in runs:
            summary = pd.read_csv(Path(row["data"]["runDir"]) / "summary.csv").iloc[0]
            assert row["data"]["status"] == "verified"
            assert [c["text"] for c in row["cells"][1:4]] == [summary.dataset, summary.architecture, summary.method]
            for index, column in enumerate(("d_w", "mse_c", "mse_w", "d_mean", "mpc"), start=5):
                assert float(row["cells"][index]["value"]) == float(summary[column])
            assert row["cells"][13]["text"] == json.loads((Path(row["data"]["runDir"]) / "manifest.json")
                                                          .read_text())["code_revision"]

        heatmap = view.page.locator("#heatmap svg")
        box = heatmap.bounding_box()
        assert box is not None and box["width"] > 200 and box["height"] > 100
        assert heatmap.locator("image, path").count() > 10  # the tiles and the axes are drawn
        assert view.page.locator("#method-deltas tbody tr").count() == 1
        view.page.click("#table4-architectures th:nth-child(3)")
        values = [float(row["cells"][2]["value"]) for row in table_cells(view, "table4-architectures")]
        assert values == sorted(values)  # sorted by D_w
        assert view.refused == [] and view.console_errors == []
        shot = screenshot(view, artifact_folder(tmp_path) / "sweep_report.png")
    assert shot.stat().st_size > 10_000


def test_a_damaged_run_is_named_at_the_top(sweep: Path, tmp_path: Path) -> None:
    copy = tmp_path / "sweep"
    shutil.copytree(sweep, copy)
    damaged = sorted(p for p in copy.iterdir() if (p / "run_record.json").is_file())[0]
    summary = damaged / "summary.csv"
    summary.write_text(summary.read_text().replace(",", ", ", 1))  # one changed byte: the record no longer agrees
    completed = written_page(copy, tmp_path / "page.html")
    assert completed.returncode == 1
    assert f"damaged {damaged}" in completed.stderr
    with opened(tmp_path / "page.html") as view:
        problems = view.page.locator("#problems").inner_text()
        assert str(damaged) in problems and "summary.csv" in problems
        statuses = {Path(row["data"]["runDir"]).name: row["data"]["status"] for row in table_cells(view, "runs")}
        assert statuses[damaged.name] == "damaged" and list(statuses.values()).count("verified") == JOBS - 1
        assert view.console_errors == [] and view.refused == []


def test_stored_severity_curves_are_drawn_with_their_bands(sweep: Path, tmp_path: Path) -> None:
    curves = report_command("curves", "--runs", str(sweep), "--output", str(tmp_path / "curves"),
                            "--severities", "0,1", "--curve-k", "50", "--select", "architecture=dlinear")
    assert curves.returncode == 0, curves.stderr[-3000:]
    stored = pd.read_csv(tmp_path / "curves" / "severity_curves.csv")
    completed = written_page(sweep, tmp_path / "page.html")
    assert completed.returncode == 0 and "No severity curves stored" in (tmp_path / "page.html").read_text()
    completed = report_command("html", "--runs", str(sweep), str(tmp_path / "curves"), "--output",
                               str(tmp_path / "page.html"))
    assert completed.returncode == 0, completed.stderr[-3000:]
    with opened(tmp_path / "page.html") as view:
        figures = view.page.locator("#curves svg")
        assert figures.count() == stored["dataset"].nunique() == 1
        box = figures.first.bounding_box()
        assert box is not None and box["width"] > 400 and box["height"] > 150
        panel_titles = figures.first.locator("text").all_text_contents()
        assert sum("(Value)" in t or "(Timing)" in t or "(Availability)" in t for t in panel_titles) == 8
        assert view.refused == [] and view.console_errors == []
