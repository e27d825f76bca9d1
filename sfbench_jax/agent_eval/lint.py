"""Scenario lint rules (mcp_agent_eval.md section 5.4), static and against a live server.

What lives here: `lint_static` (rules that need only the files and a tool catalogue),
`check_reference_solutions` (the CI gate: every scripted reference solution passes all its
validators, identically on repeated runs, through a real MCP session) and the ground-truth
manifest helpers. What does not: building ground truth (``scripts/build_agent_scenarios.py``).

Static rules:

* ``schema``: the file validates against the schema (enforced by the loader).
* ``tools_exist``: every required and distractor tool is in the server's catalogue.
* ``disjoint_tools``: required and distractor tools do not overlap.
* ``distractors``: every scenario offers 2 to 4 distractor tools (PHMForge's T-).
* ``transfer_split``: the ``transfer`` tag is set exactly on the held-out asset classes
  (`scenario.TRANSFER_ASSET_CLASSES`).
* ``substantive_validator``: some validator checks more than presence.
* ``ground_truth``: the ground-truth file exists, its sha256 matches ``MANIFEST.json``, and
  every ``gt_path`` resolves in it.
* ``precedence``: every precedence edge joins two required tools.
* ``reference_solution``: it uses only required tools, uses each of them, and its answer
  projection covers the template's required fields.
* ``handles``: every ``handle_args`` name is an argument of some reference step.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from sfbench_jax.agent_eval.agents.scripted import ScriptedAgent
from sfbench_jax.agent_eval.runner import execute_run
from sfbench_jax.agent_eval.scenario import (
    TRANSFER_ASSET_CLASSES,
    TRANSFER_TAG,
    Scenario,
    resolve_pointer,
)
from sfbench_jax.agent_eval.toolbox import Session
from sfbench_jax.agent_eval.validators import PRESENCE_ONLY

__all__ = ["DISTRACTOR_RANGE", "MANIFEST_NAME", "check_reference_solutions", "file_sha256", "lint_static",
           "read_manifest"]

MANIFEST_NAME = "MANIFEST.json"
DISTRACTOR_RANGE = (2, 4)


def file_sha256(path: Path) -> str:
    """sha256 hex digest of a file's bytes."""
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def read_manifest(ground_truth_dir: Path) -> dict[str, str]:
    """Ground-truth file name -> sha256, as written by the ground-truth script.

    Args:
        ground_truth_dir: The ``ground_truth`` folder.

    Returns:
        The manifest (empty if there is none).
    """
    path = Path(ground_truth_dir) / MANIFEST_NAME
    if not path.is_file():
        return {}
    return dict(json.loads(path.read_text(encoding="utf-8"))["files"])


def _walk_validators(specs: Iterable[Mapping[str, Any]]) -> Iterable[Mapping[str, Any]]:
    for spec in specs:
        yield spec
        yield from _walk_validators(spec.get("children", ()))


def _refs(value: Any) -> Iterable[str]:
    if isinstance(value, Mapping):
        if set(value) == {"$ref"}:
            yield str(value["$ref"])
        else:
            for item in value.values():
                yield from _refs(item)
    elif isinstance(value, list):
        for item in value:
            yield from _refs(item)


def _lint_one(scenario: Scenario, catalog: set[str], manifest: Mapping[str, str]) -> list[str]:
    problems: list[str] = []
    required, distractors = set(scenario.required_tools), set(scenario.distractor_tools)
    for tool in sorted((required | distractors) - catalog):
        problems.append(f"tools_exist: {tool!r} is not served (known tools: call list_tools)")
    if required & distractors:
        problems.append(f"disjoint_tools: {sorted(required & distractors)} are both required "
                        "and distractors")
    low, high = DISTRACTOR_RANGE
    if not low <= len(distractors) <= high:
        problems.append(f"distractors: {len(distractors)} distractor tools; offer {low} to {high} "
                        "plausible but wrong tools")
    held_out = scenario.asset_class in TRANSFER_ASSET_CLASSES
    if held_out != (TRANSFER_TAG in scenario.tags):
        problems.append(f"transfer_split: asset class {scenario.asset_class!r} is "
                        f"{'' if held_out else 'not '}held out, so the {TRANSFER_TAG!r} tag must "
                        f"be {'set' if held_out else 'absent'} (held out: "
                        f"{list(TRANSFER_ASSET_CLASSES)})")
    kinds = {spec["kind"] for spec in _walk_validators(scenario.validators)}
    if not kinds - PRESENCE_ONLY:
        problems.append("substantive_validator: every validator only checks presence")
    problems += _lint_ground_truth(scenario, manifest)
    for first, second in scenario.precedence:
        if first not in required or second not in required:
            problems.append(f"precedence: edge ({first}, {second}) must join required tools")
    return problems + _lint_reference(scenario, required)


def _lint_ground_truth(scenario: Scenario, manifest: Mapping[str, str]) -> list[str]:
    """The ground-truth file exists, matches the manifest, and every validator's pointer resolves in it."""
    problems: list[str] = []
    gt_path = scenario.ground_truth_path
    if not gt_path.is_file():
        problems.append(f"ground_truth: {gt_path} is missing "
                        "(run scripts/build_agent_scenarios.py)")
    else:
        name = Path(scenario.ground_truth_ref).name
        if manifest.get(name) != file_sha256(gt_path):
            problems.append(f"ground_truth: {name} does not match {MANIFEST_NAME} (hand-edited or "
                            "stale; rebuild with scripts/build_agent_scenarios.py)")
        ground_truth = json.loads(gt_path.read_text(encoding="utf-8"))
        for spec in _walk_validators(scenario.validators):
            for key in ("gt_path", "range_gt_path"):
                if key in spec:
                    try:
                        resolve_pointer(ground_truth, spec[key])
                    except KeyError as exc:
                        problems.append(f"ground_truth: {key} {spec[key]} does not resolve "
                                        f"({exc})")
    return problems


def _lint_reference(scenario: Scenario, required: set[str]) -> list[str]:
    """The reference solution calls exactly the required tools, its $refs resolve, its answer is complete."""
    problems: list[str] = []
    steps = [step["tool"] for step in scenario.reference_solution]
    if set(steps) - required:
        problems.append("reference_solution: uses non-required tools "
                        f"{sorted(set(steps) - required)}")
    if required - set(steps):
        problems.append("reference_solution: never calls required tools "
                        f"{sorted(required - set(steps))}")
    saved = {step.get("save_as") for step in scenario.reference_solution}
    for ref in _refs([step["args"] for step in scenario.reference_solution]):
        if ref.partition("/")[0] not in saved:
            problems.append(f"reference_solution: $ref {ref!r} names no saved step")
    for ref in _refs(scenario.reference_answer):
        if ref.partition("/")[0] not in saved:
            problems.append(f"reference_answer: $ref {ref!r} names no saved step")
    missing = set(scenario.output_template.get("required", [])) - set(scenario.reference_answer)
    if missing:
        problems.append(f"reference_solution: answer lacks required fields {sorted(missing)}")
    arg_names = {name for step in scenario.reference_solution for name in step["args"]}
    for handle in scenario.handle_args:
        if handle not in arg_names:
            problems.append(f"handles: handle argument {handle!r} is used by no reference step")
    return problems


def lint_static(scenarios: Sequence[Scenario], catalog: Iterable[str]) -> dict[str, list[str]]:
    """Apply the static rules to every scenario.

    Args:
        scenarios: Loaded scenarios (loading already enforced the schema).
        catalog: Names of all tools the server(s) serve.

    Returns:
        Scenario id -> problems (only scenarios with problems appear).
    """
    names = set(catalog)
    manifests: dict[Path, dict[str, str]] = {}
    report: dict[str, list[str]] = {}
    for scenario in scenarios:
        folder = scenario.ground_truth_path.parent
        if folder not in manifests:
            manifests[folder] = read_manifest(folder)
        problems = _lint_one(scenario, names, manifests[folder])
        if problems:
            report[scenario.id] = problems
    return report


async def check_reference_solutions(scenarios: Sequence[Scenario], session: Session, *,
                                    repeats: int = 3,
                                    mode: str = "tools_provided") -> dict[str, list[str]]:
    """Run every scripted reference solution ``repeats`` times and check it passes identically.

    Args:
        scenarios: Scenarios.
        session: A connected MCP session.
        repeats: How many times to run each solution.
        mode: Mode to run in (tools_provided checks the allow-list too).

    Returns:
        Scenario id -> problems (only failing scenarios appear).
    """
    agent = ScriptedAgent(scenarios)
    report: dict[str, list[str]] = {}
    for scenario in scenarios:
        problems: list[str] = []
        answers: list[str] = []
        for run_index in range(repeats):
            _events, record = await execute_run(scenario, agent, session, mode=mode,
                                                run_index=run_index)
            answers.append(json.dumps(record["final_answer"], sort_keys=True))
            if record["status"] != "scored":
                problems.append(f"run {run_index}: {record['status']}: {record['evaluator_error']}")
            elif not record["success"]:
                failed = [f"{r['kind']}{r['path']}: {r['detail']}"
                          for r in record["validator_results"] if not r["passed"]]
                bad_calls = [f"{c['tool']}: {c['detail']}" for c in _failed_calls(_events)]
                problems.append(f"run {run_index} failed validators {failed}; calls {bad_calls}")
        if len(set(answers)) > 1:
            problems.append("reference answers differ between repeats")
        if problems:
            report[scenario.id] = problems
    return report


def _failed_calls(events: Sequence[Mapping[str, Any]]) -> list[dict[str, str]]:
    return [{"tool": str(e["tool"]), "detail": f"{e['status']}: {str(e['error_text'])[:300]}"}
            for e in events if e.get("kind") == "tool_call" and e.get("status") != "ok"]
