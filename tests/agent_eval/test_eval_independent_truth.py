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

import pytest

from sfbench_jax.agent_eval import independent_truth
from sfbench_jax.agent_eval.independent_truth import DERIVATIONS, TruthData, derive
from sfbench_jax.agent_eval.scenario import Scenario, default_scenario_dir, resolve_pointer
from sfbench_jax.agent_eval.validators import normalise_label

SCENARIO_IDS = sorted(path.stem for path in default_scenario_dir().glob("*.yaml"))
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


@pytest.mark.parametrize("scenario_id", SCENARIO_IDS)
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


@pytest.mark.parametrize("scenario_id", SCENARIO_IDS)
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


def test_independent_derivation_imports_no_kernel() -> None:
    """Statically (the module's own imports) and at run time (after deriving one scenario of every
    builder in a fresh interpreter, no kernel, server or build-script module is loaded)."""
    tree = ast.parse(Path(independent_truth.__file__).read_text())
    imported = {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
    imported |= {node.module or "" for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
    allowed_roots = {"__future__", "bisect", "collections", "functools", "gzip", "math", "pathlib", "re",
                     "typing", "numpy", "scipy", "pandas"}
    assert {name.split(".")[0] for name in imported} <= allowed_roots, imported
    script = (
        "import sys\n"
        "from sfbench_jax.agent_eval.independent_truth import TruthData, derive\n"
        "from sfbench_jax.agent_eval.scenario import load_scenarios\n"
        "seen, data = set(), TruthData(sys.argv[1])\n"
        "def large(s):  # FD002 / FD004 last: each builder runs on its quickest scenario\n"
        "    return 'fd002' in str(s.ground_truth_recipe) or 'fd004' in str(s.ground_truth_recipe)\n"
        "for s in sorted(load_scenarios(), key=large):\n"
        "    if s.ground_truth_recipe['builder'] not in seen:\n"
        "        seen.add(s.ground_truth_recipe['builder'])\n"
        "        derive(s.ground_truth_recipe, data)\n"
        "loaded = [m for m in sys.modules if m.split('.')[0] in ('phm_kernels', 'kernels', 'jax', 'jaxlib', 'mcp')\n"
        "          or m.startswith('sfbench_jax.mcp') or 'build_agent_scenarios' in m]\n"
        "print(len(seen), loaded)\n")
    done = subprocess.run([sys.executable, "-c", script, os.environ["SFBENCH_DATA_ROOT"]], capture_output=True,
                          text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stderr
    count, loaded = done.stdout.strip().split(" ", 1)
    assert int(count) >= 30 and loaded == "[]", done.stdout
