"""`sfbench-agent-eval compare` on two recorded runs: McNemar's exact p-value equals the binomial
tail on the discordant pairs computed by hand, Wilson intervals on both pass rates, outputs."""

from __future__ import annotations

import csv
import json
import math
import shutil
from pathlib import Path

import pytest
import yaml

from sfbench_jax.agent_eval import cli
from sfbench_jax.agent_eval.compare import compare_runs
from sfbench_jax.agent_eval.runner import read_records
from sfbench_jax.agent_eval.scenario import default_scenario_dir
from sfbench_jax.agent_eval.stats import wilson_interval

IDS = ["safety_motor_unbalance_derate", "safety_pump_house_noise",
       "safety_aircraft_overdue_inspection", "cost_compressor_pm_frequency",
       "health_turbofan_lpt_component", "fault_motor_running_speed_peak"]


def scenario_copy(root: Path, failing: list[str]) -> Path:
    """The packaged scenarios, with one unsatisfiable check added to each ``failing`` scenario
    (so the scripted reference solution fails exactly there)."""
    folder = root / "scenarios"
    shutil.copytree(default_scenario_dir(), folder)
    for scenario_id in failing:
        path = folder / f"{scenario_id}.yaml"
        raw = yaml.safe_load(path.read_text())
        raw["validators"].append({"kind": "numeric_range", "path": "/field_nobody_reports",
                                  "min": 0})
        path.write_text(yaml.safe_dump(raw, sort_keys=False))
    return folder


def record_run(tmp_path: Path, name: str, failing: list[str], data_root: Path) -> Path:
    out = tmp_path / name
    scenarios = scenario_copy(tmp_path / f"{name}_src", failing)
    assert cli.main(["run", "--agent", "scripted", "--scenarios", str(scenarios), "--ids", *IDS,
                     "--out", str(out), "--data-root", str(data_root)]) == 0
    return out


def test_compare_matches_a_hand_computed_mcnemar_test(tmp_path: Path, data_root: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    run_a = record_run(tmp_path, "run_a", IDS[:1], data_root)        # A fails 1 scenario
    run_b = record_run(tmp_path, "run_b", IDS[1:5], data_root)       # B fails 4 others
    out = tmp_path / "comparison"
    assert cli.main(["compare", str(run_a), str(run_b), "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    with (out / "compare.csv").open() as handle:
        rows = {row["group"]: row for row in csv.DictReader(handle)}
    overall = rows["all"]
    only_a, only_b = int(overall["only_a"]), int(overall["only_b"])
    assert (only_a, only_b, int(overall["both"]), int(overall["neither"])) == (4, 1, 1, 0)
    # By hand: under H0 each of the 5 discordant pairs is a fair coin; two-sided exact p is twice
    # the lower binomial tail at min(b, c) = 1.
    discordant = only_a + only_b
    by_hand = 2 * (math.comb(discordant, 0) + math.comb(discordant, 1)) / 2**discordant
    assert by_hand == 0.375
    assert float(overall["mcnemar_p"]) == pytest.approx(by_hand, abs=1e-12)
    assert (int(overall["a_passed"]), int(overall["b_passed"]), int(overall["pairs"])) == (5, 2, 6)
    assert float(overall["a_ci_low"]) == pytest.approx(wilson_interval(5, 6)[0])
    assert float(overall["b_ci_high"]) == pytest.approx(wilson_interval(2, 6)[1])
    assert "task_type=safety_policy" in rows and "split=transfer" in rows
    assert "McNemar exact p" in printed and "0.375" in (out / "compare.md").read_text()
    summary = json.loads((out / "compare.json").read_text())
    assert {d["unit"] for d in summary["discordant"]} == set(IDS[:5])
    assert summary["run_a"] == "scripted/reference_solution/tools_provided"
    # The same records paired per run give the same table here (one repeat per scenario).
    by_run = compare_runs(read_records(run_a), read_records(run_b), pair_on="run")
    assert by_run["rows"][0]["mcnemar_p"] == pytest.approx(by_hand)
    with pytest.raises(SystemExit, match="no run records"):
        cli.main(["compare", str(run_a), str(tmp_path / "missing")])
