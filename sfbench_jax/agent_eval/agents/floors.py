"""Floor agents: what a pass rate is worth when nothing is understood.

What lives here: three agents that read nothing but the task's output template, the visible tools' input
schemas and (the sweep) the numbers in the query and the names of the tools' output fields, and the schema
fillers they use:

* ``floor:template_constant`` (`TemplateConstantAgent`) makes no tool call and answers with the template
  filled by constants (`constant_fill`): the first enum value (or the ``const``), ``false``, ``0`` (moved to
  the nearest allowed value where the template declares a range), ``""`` and ``[]`` (``minItems`` copies of
  the item's constant where a size is required). Deterministic, no seed.
* ``floor:random_tool`` (`RandomToolAgent`) calls between 1 and ``max_calls`` tools chosen uniformly from
  the visible ones, each with arguments drawn from the tool's input schema (`random_fill`: schema-valid,
  rarely meaningful), then answers with a random fill of the output template. Every draw comes from one
  ``random.Random`` seeded with a SHA-256 of (task seed, scenario id, run index), so the same seed gives the
  same calls and answer on any machine.
* ``floor:sweep`` (`SweepAgent`) calls every visible tool once (in name order, up to the scenario's call
  budget; tools taking no ``*handle*`` argument first), each with its numeric arguments filled positionally
  from the numbers of the query (and dataset context) in the order they appear (`query_numbers`), strings from
  the query's snake_case identifiers (a registered dataset name) or, for a handle, the latest handle a tool
  returned (`sweep_arguments`), then answers each field of the
  output template with the value of the tool-output field whose name best matches it (`best_output_match`,
  difflib's ratio over the flattened output keys). It understands nothing, but a scenario whose answer is a
  tool's output copied by name, with the evaluator ignoring which tools ran, would fall to it.
  Deterministic, no seed.

A model's pass@1 is read against these floors (``agent_eval.floors``). What does not live here: running
them beside a model, the floors' table.
"""

from __future__ import annotations

import difflib
import hashlib
import math
import random
import re
import string
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, NamedTuple

from sfbench_jax.agent_eval.agents.base import ZERO_USAGE, AgentResult, AgentTask

__all__ = ["FLOOR_KINDS", "RANDOM_NUMBER_SPAN", "RandomToolAgent", "SweepAgent", "TemplateConstantAgent",
           "best_output_match", "constant_fill", "flat_outputs", "floor_agent", "floor_rng", "query_identifiers",
           "query_numbers", "random_fill", "sweep_arguments"]

FLOOR_KINDS = ("floor:template_constant", "floor:random_tool", "floor:sweep")
#: Width of the range a random number is drawn from when the schema bounds it on one side or not at all.
RANDOM_NUMBER_SPAN = 100.0
_NUMERIC = ("integer", "number")


def _kind(schema: Mapping[str, Any]) -> str | None:
    """The schema's JSON type (the first of a list; ``object`` when it only lists properties)."""
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = kind[0] if kind else None
    if kind is None and "properties" in schema:
        return "object"
    return kind


def _bounds(schema: Mapping[str, Any], integer: bool) -> tuple[float | None, float | None]:
    """The inclusive bounds a number may take (exclusive bounds moved inwards: by 1 for integers, by a
    millionth of the span or of the bound for numbers)."""
    low, high = schema.get("minimum"), schema.get("maximum")
    step = 1.0 if integer else None
    if "exclusiveMinimum" in schema:
        bound = float(schema["exclusiveMinimum"])
        low = bound + (step or max(abs(bound), 1.0) * 1e-6)
    if "exclusiveMaximum" in schema:
        bound = float(schema["exclusiveMaximum"])
        high = bound - (step or max(abs(bound), 1.0) * 1e-6)
    if integer:
        low = None if low is None else math.ceil(low)
        high = None if high is None else math.floor(high)
    return low, high


def _constant_number(schema: Mapping[str, Any], integer: bool) -> int | float:
    low, high = _bounds(schema, integer)
    value = 0.0
    if low is not None and value < low:
        value = low
    if high is not None and value > high:
        value = high
    return int(value) if integer else float(value)


def constant_fill(schema: Mapping[str, Any]) -> Any:
    """The template-constant answer for a JSON Schema.

    Args:
        schema: An output template (or any part of it).

    Returns:
        ``const``, else the first enum value; the first ``anyOf`` / ``oneOf`` branch; for objects every
        declared property filled; ``false``, ``0`` (or the nearest value the bounds allow), ``""`` (or
        ``minLength`` x ``"a"``), ``[]`` (or ``minItems`` copies of the item's fill); ``None`` for ``null``
        or an untyped schema.
    """
    if "const" in schema:
        return schema["const"]
    if schema.get("enum"):
        return schema["enum"][0]
    for key in ("anyOf", "oneOf"):
        if schema.get(key):
            return constant_fill(schema[key][0])
    kind = _kind(schema)
    if kind == "object":
        return {name: constant_fill(sub) for name, sub in (schema.get("properties") or {}).items()}
    if kind == "boolean":
        return False
    if kind in _NUMERIC:
        return _constant_number(schema, kind == "integer")
    if kind == "string":
        return "a" * int(schema.get("minLength", 0))
    if kind == "array":
        items = schema.get("items")
        item = items if isinstance(items, Mapping) else {}
        return [constant_fill(item) for _ in range(int(schema.get("minItems", 0)))]
    return None


def _random_number(schema: Mapping[str, Any], integer: bool, rng: random.Random) -> int | float:
    low, high = _bounds(schema, integer)
    if low is None:
        low = 0.0 if high is None else high - RANDOM_NUMBER_SPAN
    if high is None:
        high = low + RANDOM_NUMBER_SPAN
    if integer:
        return rng.randint(int(low), int(high))
    return round(rng.uniform(low, high), 6) if high > low else float(low)


def _random_string(schema: Mapping[str, Any], rng: random.Random) -> str:
    shortest = int(schema.get("minLength", 1))
    longest = max(shortest, min(int(schema.get("maxLength", 12)), 12))
    return "".join(rng.choice(string.ascii_lowercase + "_") for _ in range(rng.randint(shortest, longest)))


def random_fill(schema: Mapping[str, Any], rng: random.Random) -> Any:
    """A random value that satisfies a JSON Schema's keywords (types, enums, ranges, sizes).

    Args:
        schema: A tool's input schema or an output template (or any part of it).
        rng: The draw's generator (the only source of randomness).

    Returns:
        ``const``; a uniform enum value; a uniform ``anyOf`` / ``oneOf`` branch filled; for objects every
        required property and each optional one with probability 1/2; a fair boolean; an integer or number
        uniform over the declared range (one-sided or missing bounds span `RANDOM_NUMBER_SPAN`; numbers
        rounded to 6 decimals); a string of 1-12 random letters within its length bounds; an array of
        ``minItems``..``maxItems`` (at most ``minItems + 3``) random items.
    """
    if "const" in schema:
        return schema["const"]
    if schema.get("enum"):
        return rng.choice(list(schema["enum"]))
    for key in ("anyOf", "oneOf"):
        if schema.get(key):
            return random_fill(rng.choice(list(schema[key])), rng)
    kind = schema.get("type")
    kind = rng.choice(kind) if isinstance(kind, list) and kind else _kind(schema)
    if kind == "object":
        required = set(schema.get("required") or ())
        return {name: random_fill(sub, rng) for name, sub in (schema.get("properties") or {}).items()
                if name in required or rng.random() < 0.5}
    if kind == "boolean":
        return rng.random() < 0.5
    if kind in _NUMERIC:
        return _random_number(schema, kind == "integer", rng)
    if kind == "string":
        return _random_string(schema, rng)
    if kind == "array":
        items = schema.get("items")
        item = items if isinstance(items, Mapping) else {}
        shortest = int(schema.get("minItems", 0))
        longest = int(schema.get("maxItems", shortest + 3))
        return [random_fill(item, rng) for _ in range(rng.randint(shortest, max(shortest, longest)))]
    return None


def floor_rng(task: AgentTask) -> random.Random:
    """The generator of one run: seeded by SHA-256 of (task seed, scenario id, run index), so a run's draws
    depend on nothing else (not on which scenarios ran before it)."""
    digest = hashlib.sha256(f"{task.seed}|{task.scenario_id}|{task.run_index}".encode()).digest()
    return random.Random(int.from_bytes(digest[:8], "big"))


class TemplateConstantAgent:
    """No tool calls; the output template filled with constants (`constant_fill`)."""

    name = "floor:template_constant"
    model = "output_template"
    sampling: Mapping[str, Any] = {}

    async def run(self, task: AgentTask, tools: Any) -> AgentResult:
        """Answer from the template alone.

        Args:
            task: The task (only its output template is read).
            tools: The ToolBox (never used).

        Returns:
            The constant answer, stop reason ``final``.
        """
        del tools
        return AgentResult(final_answer=constant_fill(task.output_template), stop_reason="final",
                           usage=dict(ZERO_USAGE))


class RandomToolAgent:
    """Random tools with schema-valid random arguments, then a random fill of the template."""

    name = "floor:random_tool"
    model = "uniform_random"

    def __init__(self, max_calls: int = 3) -> None:
        """Set the most calls a run makes.

        Args:
            max_calls: Upper end of the uniform number of calls (also capped by the scenario's budget).

        Raises:
            ValueError: If ``max_calls < 1``.
        """
        if max_calls < 1:
            raise ValueError(f"max_calls must be >= 1, got {max_calls}")
        self.max_calls = max_calls
        self.sampling: Mapping[str, Any] = {"max_calls": max_calls}

    async def run(self, task: AgentTask, tools: Any) -> AgentResult:
        """Call random tools, then answer at random (every draw from `floor_rng`).

        Args:
            task: The task (its seed, scenario id, run index, limits and output template).
            tools: The ToolBox.

        Returns:
            The random answer, stop reason ``final``.
        """
        rng = floor_rng(task)
        specs = sorted(tools.specs(), key=lambda spec: spec.name)
        budget = min(self.max_calls, int(task.limits.get("max_tool_calls", self.max_calls)))
        if specs and budget >= 1:
            for _ in range(rng.randint(1, budget)):
                spec = rng.choice(specs)
                await tools.call(spec.name, random_fill(spec.input_schema, rng))
        return AgentResult(final_answer=random_fill(task.output_template, rng), stop_reason="final",
                           usage=dict(ZERO_USAGE))


_NUMBER = re.compile(r"(?<![A-Za-z_\d])[-+]?(?:\d{1,3}(?:,\d{3})+|\d+)?(?:\.\d+)?(?:[eE][-+]?\d+)?(?![A-Za-z_\d])")
_IDENTIFIER = re.compile(r"\b[a-z][a-z0-9]*(?:_[a-z0-9]+)+\b")


def query_numbers(text: str) -> list[float]:
    """The numbers written in a text, in order (``1,500`` is 1500; a digit glued to a letter, as in ``B0005``,
    ``FD001`` or ``cwru_12k``, is not a number).

    Args:
        text: The query (and dataset context).

    Returns:
        The numbers as floats.
    """
    return [float(match.replace(",", "")) for match in _NUMBER.findall(text) if any(c.isdigit() for c in match)]


def query_identifiers(text: str) -> list[str]:
    """The snake_case identifiers written in a text (registered dataset names such as ``cwru_bearing_nie``), in
    order, each once."""
    return list(dict.fromkeys(_IDENTIFIER.findall(text)))


class _SweepInputs(NamedTuple):
    """What the sweep fills arguments from: the query's numbers and identifiers, the handles returned so far."""

    numbers: Sequence[float]
    identifiers: Sequence[str]
    handles: Sequence[str]


def _branch(schema: Mapping[str, Any]) -> Mapping[str, Any]:
    """The ``anyOf`` / ``oneOf`` branch the sweep fills: an array of numbers, else a number, else the first."""
    branches = [dict(b) for b in schema.get("anyOf") or schema.get("oneOf") or ()]
    if not branches:
        return schema
    for wanted in ("array", "number", "integer"):
        for branch in branches:
            if _kind(branch) == wanted and (wanted != "array"
                                            or _kind(dict(branch.get("items") or {})) in _NUMERIC):
                return branch
    return branches[0]


def _sweep_value(name: str, schema: Mapping[str, Any], numbers: Iterator[float], inputs: _SweepInputs) -> Any:
    """One argument: the next query number for a number, all the query's numbers for an array of numbers, the
    latest handle for a ``*handle*`` string, the first query identifier for another string, the constant fill
    (`constant_fill`) for anything else or when the source has run dry."""
    schema = _branch(schema)
    kind = _kind(schema)
    if "enum" in schema or "const" in schema:
        return constant_fill(schema)
    if kind in _NUMERIC:
        value = next(numbers, None)
        if value is None:
            return constant_fill(schema)
        return int(value) if kind == "integer" and float(value).is_integer() else value
    if kind == "string" and "handle" in name and inputs.handles:
        return inputs.handles[-1]
    if kind == "string" and inputs.identifiers:
        return inputs.identifiers[0]
    if kind == "array" and _kind(dict(schema.get("items") or {})) in _NUMERIC:
        return list(numbers) or constant_fill(schema)
    return constant_fill(schema)


def sweep_arguments(input_schema: Mapping[str, Any], inputs: _SweepInputs) -> dict[str, Any]:
    """The sweep's arguments for one tool: every required parameter, in schema order (optional ones keep the
    tool's defaults), numeric ones taking the query's numbers one after the other from the first
    (`_sweep_value`).

    Args:
        input_schema: The tool's input schema.
        inputs: The query's numbers and identifiers, the handles returned so far.

    Returns:
        The arguments.
    """
    queue = iter(inputs.numbers)
    required = set(input_schema.get("required") or ())
    return {name: _sweep_value(name, dict(sub), queue, inputs)
            for name, sub in dict(input_schema.get("properties") or {}).items() if name in required}


def _takes_handle(spec: Any) -> bool:
    return any("handle" in name for name in dict(spec.input_schema.get("properties") or {}))


def flat_outputs(value: Any, prefix: str = "") -> dict[str, Any]:
    """Every field of a tool's structured output under its key name (nested keys flattened as ``a.b``; the
    object itself is kept under its key beside its fields).

    Args:
        value: A structured tool output.
        prefix: Key path so far.

    Returns:
        Key path -> value.
    """
    out: dict[str, Any] = {}
    if isinstance(value, Mapping):
        for key, sub in value.items():
            path = f"{prefix}.{key}" if prefix else str(key)
            out[path] = sub
            if isinstance(sub, Mapping):
                out.update(flat_outputs(sub, path))
    return out


def _fits(value: Any, schema: Mapping[str, Any]) -> bool:
    """Whether an output value has the JSON type an answer field declares (any value for an untyped field)."""
    kind = _kind(_branch(schema))
    checks = {"boolean": lambda v: isinstance(v, bool),
              "integer": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
              "number": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
              "string": lambda v: isinstance(v, str), "array": lambda v: isinstance(v, list),
              "object": lambda v: isinstance(v, Mapping)}
    return kind not in checks or checks[kind](value)


def best_output_match(field: str, outputs: Mapping[str, Any], schema: Mapping[str, Any] | None = None) -> str | None:
    """The output key whose last name part best matches an answer field (difflib's ratio, ties to the first
    key in order), among the values of the field's JSON type; None when there is none.

    Args:
        field: An answer field name.
        outputs: `flat_outputs` of the tool results.
        schema: The field's schema in the output template (None: any type).

    Returns:
        The key, or None.
    """
    best, score = None, -1.0
    for key, value in outputs.items():
        if schema is not None and not _fits(value, schema):
            continue
        ratio = difflib.SequenceMatcher(None, field.lower(), key.rsplit(".", 1)[-1].lower()).ratio()
        if ratio > score:
            best, score = key, ratio
    return best


class SweepAgent:
    """Every visible tool once with the query's numbers as arguments; answer fields copied from the outputs by
    name (`best_output_match`)."""

    name = "floor:sweep"
    model = "every_tool_by_name"
    sampling: Mapping[str, Any] = {}

    async def run(self, task: AgentTask, tools: Any) -> AgentResult:
        """Call every visible tool once, then copy the best-named output fields into the template.

        Args:
            task: The task (its query, dataset context, limits and output template).
            tools: The ToolBox.

        Returns:
            The copied answer, stop reason ``final``.
        """
        text = f"{task.query} {task.dataset_context or ''}"
        numbers, identifiers = query_numbers(text), query_identifiers(text)
        budget = int(task.limits.get("max_tool_calls", 12))
        outputs: dict[str, Any] = {}
        handles: list[str] = []
        # tools that take no handle first (a loader's handle can then reach the others), each group by name
        for spec in sorted(tools.specs(), key=lambda spec: (_takes_handle(spec), spec.name))[:budget]:
            arguments = sweep_arguments(spec.input_schema, _SweepInputs(numbers, identifiers, handles))
            outcome = await tools.call(spec.name, arguments)
            if outcome.ok and outcome.structured is not None:
                flat = flat_outputs(outcome.structured)
                handles += [v for k, v in flat.items() if k.endswith("handle") and isinstance(v, str)]
                outputs.update({k: v for k, v in flat.items() if k not in outputs})
        template = task.output_template
        answer = constant_fill(template)
        if isinstance(answer, dict):
            properties = dict(template.get("properties") or {})
            for field in answer:
                key = best_output_match(field, outputs, dict(properties.get(field) or {}))
                if key is not None:
                    answer[field] = outputs[key]
        return AgentResult(final_answer=answer, stop_reason="final", usage=dict(ZERO_USAGE))


def floor_agent(kind: str) -> TemplateConstantAgent | RandomToolAgent | SweepAgent:
    """The floor agent of a kind name.

    Args:
        kind: One of `FLOOR_KINDS`.

    Returns:
        A new agent.

    Raises:
        ValueError: For an unknown kind, naming the known ones.
    """
    if kind == "floor:template_constant":
        return TemplateConstantAgent()
    if kind == "floor:random_tool":
        return RandomToolAgent()
    if kind == "floor:sweep":
        return SweepAgent()
    raise ValueError(f"unknown floor agent {kind!r}; choose from {list(FLOOR_KINDS)}")
