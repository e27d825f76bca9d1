"""Scenario lint rules (mcp_agent_eval.md section 5.4), static and against a live server.

What lives here: `lint_static` (rules that need only the files and a tool catalogue),
`check_reference_solutions` (the CI gate: every scripted reference solution passes all its
validators, identically on repeated runs, through a real MCP session, in either query phrasing, and its pass
depends on every required tool: `required_tool_dependence`) and the ground-truth
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
* ``derived_answer``: every answer field a substantive validator reads is derived from a tool
  output in ``reference_answer`` (a ``$ref``, possibly inside an ``answer_ops`` operator), unless
  the scenario declares it in ``query_inputs`` (a value the query itself states). A typed-in
  answer would make the scripted reference's pass say nothing about the tools.
* ``gt_target``: substantive validators compare with the ground truth (``gt_path`` /
  ``range_gt_path``), never with a ``target`` or ``allowed`` literal typed into the scenario.
* ``query_leak``: each phrasing of the query (explicit, fuzzy) with the inline context does not
  state a validated value: a category or label the answer must give (unless the query lists every alternative of
  the template's enum, as a choice question does), or a validated number (to the validator's
  tolerance). Fields in ``query_inputs`` are exempt.
* ``fuzzy_query``: the scenario has a fuzzy phrasing (``query_variants.fuzzy``, PHMForge v2's second
  query style: the asset and the goal) that names no served tool (`names_a_tool`) and does not give a
  reference step's literal figures one after the other in its tool's parameter order (`lists_in_order`), so
  an agent cannot fill a tool's arguments by position from it.
* ``record_number``: nothing the agent is handed names a CWRU record number
  (`sfbench_jax.mcp.datasets.CWRU_NEUTRAL_NAMES`): neither a dataset name the scenario gives
  (``dataset.name``, the reference solution's arguments, the answer's keys) nor, in a scenario on
  a CWRU recording, the query, its variants or the inline context. The published CWRU table maps
  record numbers to fault classes, so a number would let an agent answer from memory.
* ``label_hint``: in a diagnosis (``task_type`` fault_classification), each phrasing of the query
  with the inline context does not single out the class an enum-valued categorical field must give.
  If they mention the expected class (its label, a synonym the validator accepts, or a domain name
  for it such as BPFO for ``outer_race`` or "no defect" for ``normal``), they must name every
  alternative of the enum too (a "no finding" option such as ``none`` or ``inconclusive`` may go
  unnamed), and the expected class no more often than the most-mentioned alternative: a choice
  question names the options equally; a query that names none passes. Stricter than
  ``query_leak``, which a stray alternative satisfies ("healthy or is there a defect ... the
  outer-race ball-pass frequency"). Other task types compute a category from figures the query
  states (a cost option, an FMEA risk band), whose words belong to the question.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from sfbench_jax.agent_eval.agents.scripted import ScriptedAgent
from sfbench_jax.agent_eval.answer_ops import is_derived
from sfbench_jax.agent_eval.modes import has_domain_tools
from sfbench_jax.agent_eval.runner import execute_run, score_trace
from sfbench_jax.agent_eval.scenario import (
    TRANSFER_ASSET_CLASSES,
    TRANSFER_TAG,
    Scenario,
    resolve_pointer,
)
from sfbench_jax.agent_eval.toolbox import Session
from sfbench_jax.agent_eval.validators import PRESENCE_ONLY, TRACE_KINDS, normalise_label
from sfbench_jax.mcp.datasets import CWRU_NEUTRAL_NAMES, PHM_DATASETS

__all__ = ["DISTRACTOR_RANGE", "MANIFEST_NAME", "check_reference_solutions", "file_sha256", "lint_static",
           "lists_in_order", "names_a_tool", "parameter_order", "read_manifest", "required_tool_dependence",
           "step_figures"]

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


def _lint_one(scenario: Scenario, catalog: set[str], manifest: Mapping[str, str],
              parameters: Mapping[str, Sequence[str]]) -> list[str]:
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
    return problems + _lint_reference(scenario, required) + _lint_derived(scenario) \
        + _lint_leaks(scenario) + _lint_label_hints(scenario) + _lint_record_numbers(scenario) \
        + _lint_fuzzy(scenario, catalog, parameters)


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


_STRUCTURAL = PRESENCE_ONLY | TRACE_KINDS | {"all_of", "any_of", "k_of_n", "field_relation"}


def _field(pointer: str) -> str:
    """The top-level answer field an answer pointer reads (``/a/b`` -> ``a``)."""
    return pointer.split("/")[1].replace("~1", "/").replace("~0", "~") if pointer.startswith("/") else pointer


def _value_checks(scenario: Scenario) -> list[Mapping[str, Any]]:
    """Validators that compare an answer value with an expected one."""
    return [spec for spec in _walk_validators(scenario.validators) if spec["kind"] not in _STRUCTURAL]


def _lint_derived(scenario: Scenario) -> list[str]:
    """Validated answer fields come from tool outputs, and validators compare with ground truth."""
    problems: list[str] = []
    inputs = set(scenario.raw.get("query_inputs", ()))
    for name in sorted(inputs - set(scenario.reference_answer)):
        problems.append(f"derived_answer: query_inputs names {name!r}, which reference_answer lacks")
    fields: set[str] = set()
    for spec in _value_checks(scenario):
        fields |= {_field(spec[key]) for key in ("path", "predictions_path") if key in spec}
        typed = sorted(key for key in ("target", "allowed") if key in spec)
        if typed:
            problems.append(f"gt_target: {spec['kind']} {spec.get('path', '')} compares with the literal "
                            f"{typed[0]} {spec[typed[0]]!r}; put the value in the ground truth and use gt_path")
    for name in sorted(fields - inputs):
        if name in scenario.reference_answer and not is_derived(scenario.reference_answer[name]):
            problems.append(f"derived_answer: reference_answer gives validated field {name!r} as the literal "
                            f"{scenario.reference_answer[name]!r}; derive it from a tool output ($ref, "
                            "answer_ops) or declare it in query_inputs")
    return problems


def _query_texts(scenario: Scenario) -> str:
    texts = [scenario.query, *dict(scenario.raw.get("query_variants", {})).values(),
             str(scenario.dataset.get("inline_context", ""))]
    return " ".join(str(t) for t in texts)


def _variant_texts(scenario: Scenario) -> list[tuple[str, str]]:
    """``(suffix, text)`` for each phrasing an agent may be given, with the inline context: each is checked on
    its own (an agent sees one), problems of the non-explicit ones are marked with the suffix."""
    context = str(scenario.dataset.get("inline_context", ""))
    return [("" if variant == "explicit" else f" [{variant} query]", f"{text} {context}")
            for variant, text in scenario.query_variants.items()]


_NUMBER = re.compile(r"(?<![\w.])[-+]?\d+(?:,\d{3})*(?:\.\d+)?(?:[eE][-+]?\d+)?")


def _numbers_in(text: str) -> list[float]:
    return [float(m.group().replace(",", "")) for m in _NUMBER.finditer(text)]


def _label_in(label: str, text: str) -> bool:
    return f"_{label}_" in f"_{normalise_label(re.sub(r'[^A-Za-z0-9]+', ' ', text).strip())}_"


def _enum_of(scenario: Scenario, pointer: str) -> list[Any]:
    """The ``enum`` the output template declares at an answer pointer (empty if none)."""
    schema: Any = scenario.output_template
    for part in pointer.split("/")[1:]:
        if not isinstance(schema, Mapping):
            return []
        properties = schema.get("properties", {})
        if isinstance(properties, Mapping) and part in properties:
            schema = properties[part]
        elif isinstance(schema.get("additionalProperties"), Mapping):
            schema = schema["additionalProperties"]
        elif isinstance(schema.get("items"), Mapping) and part.isdigit():
            schema = schema["items"]
        else:
            return []
    return list(schema.get("enum", ())) if isinstance(schema, Mapping) else []


def _offers_a_choice(expected: Any, options: Sequence[Any], present: Callable[[Any], bool]) -> bool:
    """Whether the query names some alternative besides the expected value (a choice question)."""
    return any(present(o) for o in options if o != expected)


#: How many words either side of a small whole number `_lint_leaks` looks for a word of the answer field's name.
NEAR_WORDS = 3
#: Words of an answer field's name too general to tie a number to the field.
_GENERIC_FIELD_WORDS = frozenset({"the", "and", "for", "number", "value", "total", "per"})
_WORD_OR_NUMBER = re.compile(_NUMBER.pattern + r"|[A-Za-z]+")


def _stem(word: str) -> str:
    word = word.lower()
    return word[:-1] if len(word) > 3 and word.endswith("s") else word


def _small_number_beside_field(text: str, expected: float, tolerance: float, field: str) -> list[float]:
    """The numbers of ``text`` within ``tolerance`` of ``expected`` that stand within `NEAR_WORDS` words of a word
    of ``field`` (its ``_``-separated parts of 3 or more letters, plural ``s`` ignored)."""
    words = {_stem(w) for w in re.split(r"[^A-Za-z]+", field) if len(w) >= 3} - _GENERIC_FIELD_WORDS
    tokens = [m.group() for m in _WORD_OR_NUMBER.finditer(text)]
    found = []
    for index, token in enumerate(tokens):
        if token[0].isalpha() or not math.isclose(float(token.replace(",", "")), expected, rel_tol=0.0,
                                                   abs_tol=tolerance):
            continue
        window = tokens[max(index - NEAR_WORDS, 0):index] + tokens[index + 1:index + 1 + NEAR_WORDS]
        if any(_stem(w) in words for w in window if w[0].isalpha()):
            found.append(float(token.replace(",", "")))
    return found


def _lint_leaks(scenario: Scenario) -> list[str]:
    """The query and context do not single out a validated category or number.

    A value counts as stated when it appears in the text and no alternative of the template's
    ``enum`` does (a question that offers the options is a choice, not a leak). Single-letter
    labels (zones A-D, PL a-e) are not checked: they occur in almost every text as names. A number
    counts as stated when the text holds one within the validator's tolerance, so a tolerance wider
    than the gap between the answer and a number of the query (an observed peak next to the
    theoretical frequency) is reported too. A whole number below 10 (a count, a SIL level, a ratio
    of 3.0) occurs in almost every text as a rating or a parameter, so it counts as stated only where
    the text puts it within `NEAR_WORDS` words of a word of the answer field's name ("is the SIL 3
    requirement met?" states ``achieved_sil`` = 3; "at least 3 consecutive cycles" does not state
    ``n_anomalous_sensors`` = 3).
    """
    if not scenario.ground_truth_path.is_file():
        return []
    ground_truth = json.loads(scenario.ground_truth_path.read_text(encoding="utf-8"))
    problems: list[str] = []
    for suffix, text in _variant_texts(scenario):
        problems += [problem + suffix for problem in _leaks_in(scenario, text, ground_truth)]
    return problems


def _leaks_in(scenario: Scenario, text: str, ground_truth: Any) -> list[str]:
    """`_lint_leaks` on one text."""
    numbers = _numbers_in(text)
    inputs = set(scenario.raw.get("query_inputs", ()))
    problems: list[str] = []
    for spec in _value_checks(scenario):
        if "gt_path" not in spec or "path" not in spec or _field(spec["path"]) in inputs:
            continue
        try:
            expected = resolve_pointer(ground_truth, spec["gt_path"])
        except KeyError:
            continue  # reported by the ground_truth rule
        options = _enum_of(scenario, spec["path"])
        if spec["kind"] == "categorical" and isinstance(expected, str) and len(expected.strip()) > 1:
            synonyms = spec.get("synonyms")
            label = normalise_label(expected, synonyms)
            if _label_in(label, text) and not _offers_a_choice(
                    label, [normalise_label(o, synonyms) for o in options], lambda o: _label_in(o, text)):
                problems.append(f"query_leak: the query or context names {expected!r}, the value "
                                f"{spec['path']} must give")
        elif spec["kind"] == "numeric_close" and isinstance(expected, int | float) \
                and not isinstance(expected, bool):
            tolerance = float(spec.get("atol", 0.0)) + float(spec.get("rtol", 0.0)) * abs(expected)
            tolerance = max(tolerance, 1e-9 * max(1.0, abs(expected)))
            if float(expected).is_integer() and abs(expected) < 10:
                near = _small_number_beside_field(text, float(expected), tolerance, _field(spec["path"]))
            else:
                near = [n for n in numbers if math.isclose(n, expected, rel_tol=0.0, abs_tol=tolerance)]
            if near and not _offers_a_choice(expected, options, lambda o: o in numbers):
                problems.append(f"query_leak: the query or context states {near[0]!r}, within "
                                f"{tolerance:.3g} of the value {spec['path']} must give ({expected!r})")
    return problems


#: Domain names for a class label, beyond the label itself and the validator's synonyms (normalised
#: token sequences). A class is hinted at when any of them occurs in the query.
LABEL_HINTS: dict[str, tuple[str, ...]] = {
    "outer_race": ("bpfo", "outer", "outer_ring", "outer_raceway"),
    "inner_race": ("bpfi", "inner", "inner_ring", "inner_raceway"),
    "ball": ("bsf", "balls", "rolling_element", "rolling_elements", "ball_spin"),
    "cage": ("ftf", "fundamental_train", "retainer"),
    "normal": ("healthy", "no_defect", "no_bearing_defect", "no_fault", "defect_free", "fault_free"),
    "normal_aging": ("normal_ageing",),
    "shaft_1x": ("running_speed", "shaft_speed", "shaft_frequency", "1x"),
}
#: Phrases that contain a label's word without naming that class; consumed before counting
#: ("ball-pass frequency" belongs to a race, "ball bearing" is the machine element, "ball diameter" geometry).
NEUTRAL_PHRASES: tuple[str, ...] = ("ball_pass", "ball_passing", "ball_bearing", "ball_bearings", "ball_diameter")
#: Options meaning "no finding", which a choice question need not offer by name.
NO_FINDING = frozenset({"none", "inconclusive", "unknown"})
#: The task type whose categorical answers are diagnoses read from data (``label_hint`` applies).
DIAGNOSIS_TASK = "fault_classification"


def _tokens(text: str) -> list[str]:
    return normalise_label(re.sub(r"[^A-Za-z0-9]+", " ", text).strip()).split("_")


def _class_mentions(text: str, phrases: Mapping[str, set[str]]) -> dict[str, int]:
    """How often the text mentions each class (option -> count), longest phrase first, each word once."""
    table: list[tuple[list[str], str | None]] = [(p.split("_"), option) for option, names in phrases.items()
                                                 for p in names]
    table += [(p.split("_"), None) for p in NEUTRAL_PHRASES]
    table.sort(key=lambda item: (-len(item[0]), item[1] is not None))  # neutral phrases win ties
    tokens, counts, index = _tokens(text), dict.fromkeys(phrases, 0), 0
    while index < len(tokens):
        for words, option in table:
            if tokens[index:index + len(words)] == words:
                if option is not None:
                    counts[option] += 1
                index += len(words)
                break
        else:
            index += 1
    return counts


def _lint_label_hints(scenario: Scenario) -> list[str]:
    """The query does not single out the class an enum-valued field must give, by name or synonym."""
    if scenario.task_type != DIAGNOSIS_TASK or not scenario.ground_truth_path.is_file():
        return []
    ground_truth = json.loads(scenario.ground_truth_path.read_text(encoding="utf-8"))
    problems: list[str] = []
    for suffix, text in _variant_texts(scenario):
        problems += [problem + suffix for problem in _label_hints_in(scenario, text, ground_truth)]
    return problems


def _label_hints_in(scenario: Scenario, text: str, ground_truth: Any) -> list[str]:
    """`_lint_label_hints` on one text."""
    inputs = set(scenario.raw.get("query_inputs", ()))
    problems: list[str] = []
    for spec in _value_checks(scenario):
        if spec["kind"] != "categorical" or "gt_path" not in spec or "path" not in spec \
                or _field(spec["path"]) in inputs:
            continue
        options = [o for o in _enum_of(scenario, spec["path"]) if isinstance(o, str)]
        try:
            expected = resolve_pointer(ground_truth, spec["gt_path"])
        except KeyError:
            continue  # reported by the ground_truth rule
        synonyms = spec.get("synonyms")
        canonical = {normalise_label(o, synonyms) for o in options}
        label = normalise_label(expected, synonyms) if isinstance(expected, str) else None
        if len(canonical) < 2 or label not in canonical or len(label) < 2:
            continue
        phrases: dict[str, set[str]] = {o: {o, *LABEL_HINTS.get(o, ())} for o in canonical}
        for variant, target in dict(synonyms or {}).items():
            # two-letter abbreviations (``or``, ``ir``) are ordinary words in a sentence
            if normalise_label(target) in phrases and len(normalise_label(variant)) > 2:
                phrases[normalise_label(target)].add(normalise_label(variant))
        counts = _class_mentions(text, phrases)
        alternatives = sorted(canonical - {label})
        unnamed = [o for o in alternatives if not counts[o] and o not in NO_FINDING]
        most_alternative = max(counts[o] for o in alternatives)
        if counts[label] and (unnamed or counts[label] > most_alternative):
            problems.append(f"label_hint: the query or context mentions {expected!r} ({counts[label]}x), the "
                            f"class {spec['path']} must give, " + (f"but not {unnamed}" if unnamed else
                            f"more often than any alternative (at most {most_alternative}x)")
                            + "; name every option or none")
    return problems


def parameter_order(catalog: Iterable[Any]) -> dict[str, list[str]]:
    """Tool name -> parameter names in input-schema order, from a session's catalogue (`ToolSpec`-like items
    with ``name`` and ``input_schema``)."""
    return {str(spec.name): list(dict(spec.input_schema or {}).get("properties") or {}) for spec in catalog}


def names_a_tool(text: str, tool: str) -> bool:
    """Whether ``text`` names ``tool``: its name as one word, with ``_`` written as ``_``, ``-`` or a space
    (``compare_to_baseline``, "compare to baseline"), any case."""
    words = [re.escape(part) for part in tool.split("_") if part]
    pattern = r"(?<![A-Za-z0-9])" + r"[ _-]+".join(words) + r"(?![A-Za-z0-9])"
    return bool(words) and re.search(pattern, text, flags=re.IGNORECASE) is not None


def step_figures(step: Mapping[str, Any], order: Sequence[str] | None = None) -> list[float]:
    """A reference step's literal scalar numbers, in the tool's parameter order (``order``; the step's own
    argument order for names ``order`` lacks)."""
    args = step["args"]
    names = [n for n in (order or ()) if n in args] + [n for n in args if n not in set(order or ())]
    return [float(args[n]) for n in names
            if isinstance(args[n], int | float) and not isinstance(args[n], bool)]


def lists_in_order(numbers: Sequence[float], figures: Sequence[float]) -> bool:
    """Whether ``figures`` (two or more) occur in ``numbers`` one right after the other, in that order."""
    width = len(figures)
    return width >= 2 and any(
        all(math.isclose(numbers[i + k], figures[k], rel_tol=1e-9, abs_tol=1e-12) for k in range(width))
        for i in range(len(numbers) - width + 1))


def _lint_fuzzy(scenario: Scenario, catalog: set[str], parameters: Mapping[str, Sequence[str]]) -> list[str]:
    """The fuzzy phrasing exists, names no served tool, and gives no step's figures in its tool's parameter order."""
    fuzzy = scenario.query_variants.get("fuzzy")
    if fuzzy is None:
        return ["fuzzy_query: no fuzzy phrasing; add query_variants.fuzzy (the asset and the goal, no tool name, "
                "the figures not in a tool's parameter order)"]
    problems = [f"fuzzy_query: names the tool {tool!r}; say what is wanted, not which tool gives it"
                for tool in sorted(catalog) if names_a_tool(fuzzy, tool)]
    numbers = _numbers_in(f"{fuzzy} {scenario.dataset.get('inline_context', '')}")
    for step in scenario.reference_solution:
        figures = step_figures(step, parameters.get(step["tool"]))
        if lists_in_order(numbers, figures):
            problems.append(f"fuzzy_query: gives {step['tool']}'s figures {figures} one after the other in its "
                            "parameter order; an agent could fill the arguments by position")
    return list(dict.fromkeys(problems))


def lint_static(scenarios: Sequence[Scenario], catalog: Iterable[str], *,
                parameters: Mapping[str, Sequence[str]] | None = None) -> dict[str, list[str]]:
    """Apply the static rules to every scenario.

    Args:
        scenarios: Loaded scenarios (loading already enforced the schema).
        catalog: Names of all tools the server(s) serve.
        parameters: Tool name -> its parameter names in input-schema order (`parameter_order` of a session's
            catalogue), for the ``fuzzy_query`` rule; a tool missing here is read in its reference step's
            argument order.

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
        problems = _lint_one(scenario, names, manifests[folder], dict(parameters or {}))
        if problems:
            report[scenario.id] = problems
    return report


def required_tool_dependence(scenario: Scenario, events: Sequence[Mapping[str, Any]]) -> list[str]:
    """How a passing run's pass could survive without a required tool: for each required tool, the trace re-scored
    (`runner.score_trace`, no tool is called) with that tool's calls turned into errors and with them removed, the
    answer left as it was. Every such re-score must fail, or the scenario's pass does not depend on the tool.

    Args:
        scenario: The scenario.
        events: The trace of a passing run (e.g. its scripted reference solution).

    Returns:
        One line per surviving variant (``"<tool> failed"`` / ``"<tool> not called"``); empty when every
        required tool is needed.
    """
    survivors: list[str] = []
    for tool in scenario.required_tools:
        failed = [{**e, "status": "domain_error", "is_error": True, "structured": None,
                   "error_text": "turned into an error by the required-tool check"}
                  if e.get("kind") == "tool_call" and e.get("tool") == tool else e for e in events]
        removed = [e for e in events if not (e.get("kind") == "tool_call" and e.get("tool") == tool)]
        for how, trace in (("failed", failed), ("not called", removed)):
            if score_trace(scenario, trace)["success"]:
                survivors.append(f"{tool} {how}")
    return survivors


async def check_reference_solutions(scenarios: Sequence[Scenario], session: Session, *,
                                    repeats: int = 3, mode: str = "tools_provided",
                                    variant: str = "explicit") -> dict[str, list[str]]:
    """Run every scripted reference solution ``repeats`` times and check it passes identically, and that its
    pass depends on every required tool (`required_tool_dependence`, on the first run).

    Args:
        scenarios: Scenarios.
        session: A connected MCP session.
        repeats: How many times to run each solution.
        mode: Mode to run in (tools_provided checks the allow-list too).
        variant: The query phrasing the runs are given (`scenario.QUERY_VARIANTS`).

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
                                                run_index=run_index, variant=variant)
            answers.append(json.dumps(record["final_answer"], sort_keys=True))
            if run_index == 0 and record["success"] and has_domain_tools(mode):  # the ablations withhold them
                problems += [f"required_tool: the reference still passes with {survivor}"
                             for survivor in required_tool_dependence(scenario, _events)]
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


#: A CWRU record number as a word: ``130``, ``097``, not ``1130``, ``130.5`` or ``s130``.
_CWRU_RECORD = re.compile(r"(?<![\w.])0*(?:" + "|".join(str(r) for r in sorted(CWRU_NEUTRAL_NAMES))
                          + r")(?![\w]|\.\d)")
_CWRU_NAMES = frozenset(name for name, ds in PHM_DATASETS.items() if ds.family == "cwru_bearing")


def _strings_in(value: Any) -> Iterable[str]:
    """Every string in a nested value, mapping keys included."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, Mapping):
        for key, item in value.items():
            yield str(key)
            yield from _strings_in(item)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from _strings_in(item)


def _lint_record_numbers(scenario: Scenario) -> list[str]:
    """No dataset name the agent sees, and no query text of a CWRU scenario, names a CWRU record number."""
    handed = [str(scenario.dataset.get("name", "")),
              *_strings_in([step["args"] for step in scenario.reference_solution]),
              *_strings_in(scenario.reference_answer)]
    problems = [f"record_number: the dataset name {name!r} carries a CWRU record number; use the neutral "
                "name from sfbench_jax.mcp.datasets.CWRU_NEUTRAL_NAMES"
                for name in dict.fromkeys(handed) if "cwru" in name.lower() and _CWRU_RECORD.search(
                    re.sub(r"[^0-9]+", " ", name))]
    text = _query_texts(scenario)
    on_cwru = bool(_CWRU_NAMES & set(handed)) or "cwru" in " ".join(scenario.tags).lower() \
        or "cwru" in text.lower()
    found = _CWRU_RECORD.search(text.replace("_", " ")) if on_cwru else None  # also cwru_rec_130
    if found:
        problems.append(f"record_number: the query or context names {found.group()!r}, a CWRU record number "
                        "whose fault class is published; name the recording by its neutral name")
    return problems
