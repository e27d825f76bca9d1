"""Ground truth: the committed files are what ``scripts/build_agent_scenarios.py`` computes (run as a
subprocess with ``--check``, which writes nothing; floats to one unit in their sixth significant digit,
which float32 kernels can move between CPUs, everything else exactly), and formula-based ground truth does
not depend on the kernels the tools wrap: a deliberately perturbed kernel constant leaves it
unchanged and makes the reference solution's check against it fail."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType

import jax
import pytest

from sfbench_jax.agent_eval.lint import check_reference_solutions
from sfbench_jax.agent_eval.scenario import Scenario, default_scenario_dir
from sfbench_jax.agent_eval.toolbox import connect
from sfbench_jax.mcp.server import ServerConfig, build_server

REPO = Path(__file__).resolve().parents[2]
BEARING_SCENARIO = "fault_motor_bearing_outer_race"  # SKF 6205 (CWRU drive-end geometry)
ZONE_SCENARIO = "health_pump_vibration_zone"  # ISO 10816-3 group 2, rigid foundation


@pytest.mark.full_data  # the committed ground truth of the data scenarios was computed from the whole files
def test_ground_truth_is_reproduced_by_the_script(data_root: Path) -> None:
    done = subprocess.run([sys.executable, str(REPO / "scripts" / "build_agent_scenarios.py"),
                           "--data-root", str(data_root), "--check"], capture_output=True,
                          text=True, timeout=900, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "0 differ" in done.stdout


def test_ground_truth_on_data_the_repository_holds_whole_is_reproduced(data_root: Path,
                                                                       scenarios: list[Scenario]) -> None:
    """The formula scenarios and those on C-MAPSS FD001, which the repository's test data holds whole."""
    ids = [s.id for s in scenarios if s.dataset["name"] in ("none", "cmapss_fd001")]
    done = subprocess.run([sys.executable, str(REPO / "scripts" / "build_agent_scenarios.py"),
                           "--data-root", str(data_root), "--check", "--ids", *ids], capture_output=True,
                          text=True, timeout=900, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"checked {len(ids)} ground-truth files, 0 differ" in done.stdout


def test_check_accepts_only_one_unit_in_the_sixth_digit(load_script: Callable[[str], ModuleType]) -> None:
    agree = load_script("build_agent_scenarios").agree_to_sixth_digit
    assert agree({"p": 0.0703646, "r": [37.0466, 342945.0]}, {"p": 0.0703647, "r": [37.0467, 342946.0]})
    assert agree(99999.9, 100000.0) and agree(0.0, 0.0) and agree(-1.5, -1.50001)
    assert not agree(0.0703646, 0.0703648)       # two units
    assert not agree(37.0466, 37.0468)
    assert not agree(1.0, 1)                     # a float never stands in for an integer
    assert not agree(True, 1) and not agree(None, 0.0) and not agree("a", "b")
    assert not agree({"a": 1.0}, {"a": 1.0, "b": 2.0}) and not agree([1.0], [1.0, 2.0])
    assert not agree({"unit": 3}, {"unit": 4})   # ids and ranks stay exact


def test_formula_builders_cover_the_standards_scenarios(
        load_script: Callable[[str], ModuleType], scenarios: list[Scenario]) -> None:
    builders = load_script("build_agent_scenarios")
    formula = [s for s in scenarios if s.ground_truth_recipe["builder"] in builders.FORMULA_BUILDERS]
    assert len(formula) >= 50
    # Every standards-based scenario (no dataset) has a kernel-independent builder.
    assert {s.id for s in scenarios if s.dataset["name"] == "none"} <= {s.id for s in formula}


@pytest.fixture
def perturbed_kernels(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Two wrong kernel constants: the 6205 ball diameter 2 % too large (read at call time) and
    the ISO 10816-3 group 2 / rigid B/C boundary moved from 2.8 to 2.5 mm/s (read when the zone
    kernel is traced, so the jit caches are cleared on the way in and out)."""
    from phm_kernels import bearing, vibration

    jax.clear_caches()
    geometry = bearing.CWRU_DRIVE_END
    monkeypatch.setattr(bearing, "CWRU_DRIVE_END",
                        geometry._replace(ball_diameter=geometry.ball_diameter * 1.02))
    table = [list(row) for row in vibration.ISO10816_3_BOUNDS_MM_S]
    row = 2 * 1 + 0  # group 2, rigid foundation (the kernel's table index)
    assert table[row] == [1.4, 2.8, 4.5], "the kernel's ISO 10816-3 table changed layout"
    table[row][1] = 2.5
    monkeypatch.setattr(vibration, "ISO10816_3_BOUNDS_MM_S", tuple(tuple(r) for r in table))
    yield
    monkeypatch.undo()
    jax.clear_caches()


@pytest.mark.anyio
async def test_a_perturbed_kernel_fails_the_check_but_not_the_ground_truth(
        perturbed_kernels: None, load_script: Callable[[str], ModuleType],
        scenario_map: dict[str, Scenario], data_root: Path) -> None:
    builders = load_script("build_agent_scenarios")
    ids = [BEARING_SCENARIO, ZONE_SCENARIO]
    rebuilt = builders.build_all(None, default_scenario_dir(), ids)
    for name, content in rebuilt.items():
        assert content == (default_scenario_dir() / "ground_truth" / name).read_bytes(), name
    async with connect(build_server(ServerConfig(data_root=data_root))) as session:
        problems = await check_reference_solutions([scenario_map[i] for i in ids], session,
                                                   repeats=1)
    assert set(problems) == set(ids), problems
    assert "numeric_close/defect_frequency_hz" in problems[BEARING_SCENARIO][0]
    assert "categorical/zone" in problems[ZONE_SCENARIO][0]
