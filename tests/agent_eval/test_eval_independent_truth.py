"""Independent ground truth: for every scenario, the answer re-derived without the kernels
(``agent_eval.independent_truth``) agrees with the committed ``.gt.json`` within the tolerance of
the scenario's own validators (read from the scenario file at run time, so a changed validator or
tolerance is followed), exactly for strings, integers, booleans and sets; and that derivation
imports neither ``phm_kernels`` nor the MCP server nor the build script that wrote the files."""

from __future__ import annotations

import ast
import json
import math
import os
import subprocess
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from sfbench_jax.agent_eval import independent_truth
from sfbench_jax.agent_eval.independent_truth import DERIVATIONS, TruthData, derive
from sfbench_jax.agent_eval.scenario import Scenario, default_scenario_dir, resolve_pointer
from sfbench_jax.agent_eval.validators import normalise_label

SCENARIO_IDS = sorted(path.stem for path in default_scenario_dir().glob("*.yaml"))
#: C-MAPSS subsets of which the repository's test data holds units 1-20 only (tests/fixtures/data_root/README.md):
#: their scenarios' answers need the whole files, so those cases are `full_data` (docs/testing.md, "Data").
WHOLE_FILE_DATASETS = ("cmapss_fd002", "cmapss_fd003", "cmapss_fd004")


def _needs_whole_files(scenario_id: str) -> bool:
    text = (default_scenario_dir() / f"{scenario_id}.yaml").read_text(encoding="utf-8")
    return any(f"name: {name}" in text for name in WHOLE_FILE_DATASETS)


SCENARIO_CASES = [pytest.param(sid, marks=pytest.mark.full_data) if _needs_whole_files(sid) else sid
                  for sid in SCENARIO_IDS]
#: Validators that compare with a literal ``target`` instead of a ground-truth path: the field of
#: the independent document that the literal must equal. (Entries whose validator has since moved
#: to a ``gt_path`` are simply unused.)
LITERAL_TARGETS = {
    ("fault_cwru_ball_missed", "/defect_missed"): "/defect_missed",
    ("fault_cwru_baseline_check", "/verified_accuracy"): "/envelope_accuracy",
    ("health_turbofan_fan_signature", "/flow_to_efficiency_ratio"): "/flow_to_efficiency_ratio",
    ("rul_cmapss_fd002_fleet", "/n_engines"): "/n_units",
    ("safety_press_fmea_override", "/severity_override_applied"): "/modes/light_curtain_bypass/severity_override",
}
#: Kinds whose ground-truth value is a set (compared as sets, exactly).
SET_KINDS = frozenset({"set_overlap", "set_match", "set_precision_recall"})
#: Kinds whose ``gt_path`` holds the facts a metric is recomputed against (compared exactly).
FACT_KINDS = frozenset({"recompute_metric", "classification_metrics"})
#: Tolerance for a float the validator gives none for (ranges, whole-document check): looser than
#: the files' 6 significant digits and the kernels' float32, far tighter than any validator.
DEFAULT_RTOL = 1e-3


@pytest.fixture(scope="module")
def truth_data(data_root: Path) -> TruthData:
    """Raw-file access shared by the module's tests (its parsed files are cached)."""
    return TruthData(data_root)


def committed_truth(scenario: Scenario) -> dict[str, Any]:
    return json.loads((default_scenario_dir() / scenario.ground_truth_ref).read_text())


def _validators(specs: list[Mapping[str, Any]]) -> Iterator[Mapping[str, Any]]:
    """Every validator spec, combinators (``all_of`` / ``any_of`` / ``k_of_n``) unfolded."""
    for spec in specs:
        yield spec
        yield from _validators(list(spec.get("children", [])))


def _numbers_agree(committed: float, independent: float, rtol: float, atol: float) -> bool:
    return abs(committed - independent) <= atol + rtol * abs(committed)


def _values_agree(committed: Any, independent: Any, *, rtol: float, atol: float, as_set: bool = False,
                  synonyms: Mapping[str, str] | None = None) -> bool:
    """Booleans, integers, strings (as the validators normalise them), None and sets exactly;
    floats within ``atol + rtol |committed|``; lists and mappings element by element."""
    if isinstance(committed, bool) or isinstance(independent, bool) or committed is None or independent is None:
        return committed is independent or (committed == independent and type(committed) is type(independent))
    if isinstance(committed, str) or isinstance(independent, str):
        return isinstance(committed, str) and isinstance(independent, str) and \
            normalise_label(committed, synonyms) == normalise_label(independent, synonyms)
    if isinstance(committed, int):
        return isinstance(independent, int | float) and independent == committed
    if isinstance(committed, float):
        return isinstance(independent, int | float) and math.isfinite(independent) and \
            _numbers_agree(committed, float(independent), rtol, atol)
    if isinstance(committed, list):
        if not isinstance(independent, list) or len(committed) != len(independent):
            return False
        if as_set:
            return {json.dumps(x) for x in committed} == {json.dumps(x) for x in independent}
        return all(_values_agree(a, b, rtol=rtol, atol=atol, synonyms=synonyms)
                   for a, b in zip(committed, independent, strict=True))
    if isinstance(committed, Mapping):
        return isinstance(independent, Mapping) and committed.keys() <= independent.keys() and all(
            _values_agree(committed[k], independent[k], rtol=rtol, atol=atol, synonyms=synonyms) for k in committed)
    return committed == independent


def _lookup(document: Mapping[str, Any], pointer: str, what: str) -> Any:
    try:
        return resolve_pointer(document, pointer)
    except KeyError:
        raise AssertionError(f"{what} has no {pointer} (a new ground-truth field? derive it in "
                             "agent_eval/independent_truth.py)") from None


def validated_disagreements(scenario: Scenario, committed: Mapping[str, Any],
                            independent: Mapping[str, Any]) -> list[str]:
    """One line per validated ground-truth value on which the two documents disagree beyond the
    validator's tolerance (numeric_close: its rtol / atol; categorical: equal labels after its
    synonyms; sets exactly; metric facts exactly; ranges within the validator's rtol)."""
    problems = []
    for spec in _validators(list(scenario.validators)):
        kind = spec["kind"]
        rtol = float(spec.get("rtol", 0.0 if "atol" in spec else DEFAULT_RTOL))
        atol = float(spec.get("atol", 0.0))
        pointers = {key: spec[key] for key in spec if key.endswith("gt_path")}
        if "target" in spec and not pointers:
            key = (scenario.id, str(spec.get("path")))
            if key not in LITERAL_TARGETS:
                problems.append(f"{kind} {spec.get('path')}: literal target {spec['target']!r} has no independent "
                                "counterpart; add it to LITERAL_TARGETS")
                continue
            pointers = {"target": LITERAL_TARGETS[key]}
        for key, pointer in pointers.items():
            expected = spec["target"] if key == "target" else _lookup(committed, pointer, "the committed file")
            derived = _lookup(independent, pointer, "the independent derivation")
            exact = kind in FACT_KINDS and key == "gt_path"
            if not _values_agree(expected, derived, rtol=0.0 if exact else rtol, atol=0.0 if exact else atol,
                                 as_set=kind in SET_KINDS, synonyms=spec.get("synonyms")):
                problems.append(f"{kind} {spec.get('path', '')} ({key} {pointer}): committed {expected!r}, "
                                f"independent {derived!r} (rtol {rtol:g}, atol {atol:g})")
    return problems


@pytest.mark.parametrize("scenario_id", SCENARIO_CASES)
def test_validated_ground_truth_agrees_with_the_independent_derivation(
        scenario_id: str, scenario_map: dict[str, Scenario], truth_data: TruthData) -> None:
    scenario = scenario_map[scenario_id]
    independent = derive(scenario.ground_truth_recipe, truth_data)
    problems = validated_disagreements(scenario, committed_truth(scenario), independent)
    assert not problems, f"{scenario_id}:\n" + "\n".join(problems)


def _leaves(document: Any, prefix: str = "") -> Iterator[tuple[str, Any]]:
    if isinstance(document, Mapping):
        for key, value in document.items():
            yield from _leaves(value, f"{prefix}/{key}")
    elif isinstance(document, list):
        for index, value in enumerate(document):
            yield from _leaves(value, f"{prefix}/{index}")
    else:
        yield prefix, document


@pytest.mark.parametrize("scenario_id", SCENARIO_CASES)
def test_every_committed_field_is_reproduced(scenario_id: str, scenario_map: dict[str, Scenario],
                                             truth_data: TruthData) -> None:
    """Unvalidated fields too (reports and reference answers quote them): within 1e-3 relative."""
    scenario = scenario_map[scenario_id]
    committed = committed_truth(scenario)
    independent = derive(scenario.ground_truth_recipe, truth_data)
    differing = [f"{pointer}: committed {value!r}, independent {resolve_pointer(independent, pointer)!r}"
                 for pointer, value in _leaves(committed) if pointer not in ("/scenario_id", "/builder")
                 and not _values_agree(value, _lookup(independent, pointer, "the independent derivation"),
                                       rtol=DEFAULT_RTOL, atol=1e-9)]
    assert not differing, f"{scenario_id}:\n" + "\n".join(differing)


def test_every_builder_and_literal_target_is_covered(scenarios: list[Scenario]) -> None:
    assert {s.ground_truth_recipe["builder"] for s in scenarios} <= set(DERIVATIONS)
    literal = {(s.id, spec.get("path")) for s in scenarios for spec in _validators(list(s.validators))
               if "target" in spec and not any(k.endswith("gt_path") for k in spec)}
    assert literal <= set(LITERAL_TARGETS)


def test_a_wrong_committed_value_is_caught(scenario_map: dict[str, Scenario], truth_data: TruthData) -> None:
    """The comparison can fail: each kind of perturbation of a committed file is reported."""
    scenario = scenario_map["rul_battery_b0005_linear"]
    independent = derive(scenario.ground_truth_recipe, truth_data)
    committed = committed_truth(scenario)
    assert validated_disagreements(scenario, committed, independent) == []
    assert validated_disagreements(scenario, {**committed, "actual_eol_cycle": committed["actual_eol_cycle"] + 1},
                                   independent)                      # an integer, exactly
    nudged = {**committed, "predicted_rul": committed["predicted_rul"] * 1.03}
    assert validated_disagreements(scenario, nudged, independent)   # beyond rtol 0.02
    within = {**committed, "predicted_rul": committed["predicted_rul"] * 1.01}
    assert validated_disagreements(scenario, within, independent) == []
    fleet = scenario_map["health_cmapss_fd003_engine_signals"]
    truth = derive(fleet.ground_truth_recipe, truth_data)
    extra = {**committed_truth(fleet), "anomalous_sensors": [*truth["anomalous_sensors"], "s2"]}
    assert validated_disagreements(fleet, extra, truth)             # a set, exactly
    module = scenario_map["fault_turbofan_lpc_coupled"]
    wrong = {**committed_truth(module), "signature": "FLOW_DOMINANT"}
    assert validated_disagreements(module, wrong, derive(module.ground_truth_recipe, truth_data))  # a label


def test_independent_derivation_imports_no_kernel(data_root: Path) -> None:
    """Statically (the module's own imports) and at run time (after deriving one scenario of every
    builder in a fresh interpreter, no kernel, server or build-script module is loaded)."""
    tree = ast.parse(Path(independent_truth.__file__).read_text())
    imported = {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
    imported |= {node.module or "" for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
    allowed_roots = {"__future__", "bisect", "collections", "functools", "gzip", "hashlib", "math", "pathlib", "re",
                     "typing", "numpy", "scipy", "pandas"}
    assert {name.split(".")[0] for name in imported} <= allowed_roots, imported
    script = (
        "import sys\n"
        "from sfbench_jax.agent_eval.independent_truth import TruthData, derive\n"
        "from sfbench_jax.agent_eval.scenario import load_scenarios\n"
        "seen, data, whole = set(), TruthData(sys.argv[1]), sys.argv[2] == '1'\n"
        "def large(s):  # FD002-4 last (and only with whole files): each builder runs on its quickest scenario\n"
        "    return any(f'fd00{n}' in str(s.ground_truth_recipe) for n in (2, 3, 4))\n"
        "for s in sorted((s for s in load_scenarios() if whole or not large(s)), key=large):\n"
        "    if s.ground_truth_recipe['builder'] not in seen:\n"
        "        seen.add(s.ground_truth_recipe['builder'])\n"
        "        derive(s.ground_truth_recipe, data)\n"
        "loaded = [m for m in sys.modules if m.split('.')[0] in ('phm_kernels', 'kernels', 'jax', 'jaxlib', 'mcp')\n"
        "          or m.startswith('sfbench_jax.mcp') or 'build_agent_scenarios' in m]\n"
        "print(len(seen), loaded)\n")
    done = subprocess.run([sys.executable, "-c", script, str(data_root),
                           "1" if os.environ.get("SFBENCH_DATA_ROOT") else "0"], capture_output=True,
                          text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stderr
    count, loaded = done.stdout.strip().split(" ", 1)
    assert int(count) >= 30 and loaded == "[]", done.stdout


def test_independent_formulas_reproduce_the_published_worked_examples() -> None:
    """The second path is itself right, not only equal to the first: the spec's and standards'
    worked examples (shared/spec/phm_kernels.md sections 2-7 and 9) through the derivations."""
    no_data = TruthData(None)
    approx = pytest.approx
    freqs = derive({"builder": "bearing_peak_match",
                    "params": {"rpm": 1797, "bearing": "cwru_drive_end", "peak_hz": 107.4}}, no_data)
    assert [round(freqs["frequencies_hz"][k], 3) for k in ("ftf", "bpfo", "bpfi", "bsf")] == \
        [11.929, 107.364, 162.186, 70.584]
    assert freqs["matched_component"] == "outer_race"
    mk = independent_truth._mann_kendall([1.0, 1.2, 1.1, 1.5, 1.7, 1.6, 2.0, 2.2])
    assert (mk["s"], round(mk["p_value"], 6), round(mk["sen_slope"], 6), mk["trend"]) == \
        (24.0, 0.004434, 0.166667, "INCREASING")
    ties = independent_truth._mann_kendall([1, 1, 2, 2, 3])
    assert (round(ties["p_value"], 6), ties["trend"]) == (0.067577, "NO_TREND")
    line = independent_truth._trend_to_threshold([2.0 - 0.01 * t for t in range(1, 11)], 1.4)
    assert line["time_to_threshold"] == approx(50.0)
    age = derive({"builder": "age_replacement",
                  "params": {"beta": 2, "eta": 1000, "preventive_cost": 1, "failure_cost": 10}}, no_data)
    assert age["optimal_age"] == approx(336.451, abs=1e-3) and age["cost_rate"] == approx(0.0060561, rel=1e-4)
    assert age["savings_fraction"] == approx(1 - 0.0060561 / 0.0112838, abs=1e-4)
    for std, t_star, p_fail in ((20.0, 58.0, 0.018), (10.0, 74.5, 0.0054)):
        plan = derive({"builder": "rul_schedule", "params": {"rul_mean": 100.0, "rul_std": std,
                                                             "preventive_cost": 1.0, "failure_cost": 10.0}}, no_data)
        assert plan["maintain_in"] == approx(t_star, abs=0.5) and plan["p_fail_before"] == approx(p_fail, rel=0.1)
    sil = derive({"builder": "sil_check", "params": {"architecture": "1oo1", "lambda_du": 2e-6,
                                                     "proof_test_h": 8760, "targets": [2, 3]}}, no_data)
    assert (sil["pfd_avg"], sil["achieved_sil"], sil["compliant"]) == (approx(8.76e-3), 2, {"2": True, "3": False})
    redundant = derive({"builder": "sil_check", "params": {"architecture": "1oo2", "lambda_du": 2e-6,
                                                           "proof_test_h": 8760, "beta": 0.1, "targets": [3]}}, no_data)
    assert redundant["pfd_avg"] == approx(9.589e-4, rel=1e-4) and redundant["achieved_sil"] == 3
    assert derive({"builder": "pl_check", "params": {"pfh_d": 2e-6, "required_pl": "d"}}, no_data) == \
        {"achieved_pl": "c", "compliant": False, "pl_margin": -1}
    noise = derive({"builder": "noise", "params": {"levels_dba": [95.0], "hours": [6.0]}}, no_data)
    assert noise["dose_pct"] == approx(150.0) and noise["twa_dba"] == approx(92.92, abs=0.005) and noise["over_pel"]
    nema = derive({"builder": "voltage_unbalance", "params": {"voltages": [462, 463, 455]}}, no_data)
    assert nema["unbalance_pct"] == approx(1.087, abs=5e-4) and nema["derating_required"]
    assert independent_truth._velocity_mm_s_rms(0.15, "in/s pk", None) == approx(2.694077, abs=1e-6)
    assert independent_truth._velocity_mm_s_rms(1.0, "g rms", 100.0) == approx(15.608, abs=1e-3)
    assert [independent_truth._zone(v, (1.12, 2.8, 7.1)) for v in (0.5, 1.12, 2.79, 2.8, 7.1, 10.0)] == \
        list("ABBCDD")
    assert derive({"builder": "hand_arm", "params": {"acceleration": [4.0], "hours": [2.0], "kind": "hand_arm"}},
                  no_data)["a8"] == approx(2.0)
    roi = derive({"builder": "pm_roi", "params": {"pm": [5000, 4, 8, 1000], "failure": [1.0, 50000, 48, 1000, 20000],
                                                   "residual_fraction": 0.05, "program_cost": 40000}}, no_data)
    assert roi["roi"] == approx(0.5025) and roi["payback_months"] == approx(7.99, abs=0.005)
    cycles = np.arange(1.0, 61.0)
    fade = independent_truth._fade_prediction({"cycle": cycles, "capacity_ah": 1.86 * np.exp(-0.0025 * cycles)},
                                              "empirical", 60)
    assert fade["k_eol"] == approx(113.6417, abs=1e-4) and fade["rul"] == approx(53.6417, abs=1e-4)
    ten = np.arange(1.0, 11.0)
    linear = independent_truth._fade_prediction({"cycle": ten, "capacity_ah": 2.0 - 0.01 * ten}, "linear", 10)
    assert linear["k_eol"] == approx(60.0) and linear["rul"] == approx(50.0)
    flags, events = independent_truth._zscore_detector(
        np.array([10, 10.2, 9.8, 10.1, 9.9, 10.0, 13.0, 13.5, 14.0, 14.2, 10.0, 10.1]), window=5)
    assert [i for i, f in enumerate(flags) if f] == [8, 9] and events == 1


def test_independent_envelope_finds_the_spec_synthetic_outer_race_fault() -> None:
    """Spec 4.3's test signal: impacts at BPFO (1797 r/min) ringing a 3 kHz resonance (decay
    e^(-800 t)), noise sigma 0.5, 1 s at 12 kHz: the envelope peak in 5-500 Hz is 107 Hz and the
    label is outer race."""
    fs_hz, bpfo_hz = 12_000.0, 107.364
    t = np.arange(int(fs_hz)) / fs_hz
    signal = np.random.default_rng(0).normal(0.0, 0.5, t.size)
    for start in np.arange(0.0, 1.0, 1.0 / bpfo_hz):
        ringing = t >= start
        signal[ringing] += np.exp(-800.0 * (t[ringing] - start)) * np.sin(2 * np.pi * 3000.0 * (t[ringing] - start))
    freqs, amplitude = independent_truth._averaged_envelope_spectrum(signal, fs_hz, (2000.0, 4000.0))
    window = (freqs >= 5.0) & (freqs <= 500.0)
    assert freqs[window][np.argmax(amplitude[window])] == pytest.approx(107.0)
    record = {"drive_end": signal, "rpm": 1797.0, "fs_hz": fs_hz}
    assert independent_truth._envelope_label(record, (2000.0, 4000.0)) == "outer_race"
    noise_only = np.random.default_rng(1).normal(0.0, 0.5, t.size)
    assert independent_truth._envelope_label({**record, "drive_end": noise_only}, (2000.0, 4000.0)) == "normal"
