"""Scenario files: schema, loader, ground-truth access and JSON-pointer helpers.

What lives here: the JSON Schema of a scenario (mcp_agent_eval.md section 5.2 plus
``reference_answer``, the scripted solution's answer projection, and ``ground_truth_recipe``,
what ``scripts/build_agent_scenarios.py`` computes), the frozen `Scenario` dataclass, loading one
file or a folder of YAML/JSON files, reading a scenario's ground-truth file, the scenario hash
and RFC 6901 JSON pointers. What does not: validation of answers (``validators.py``), lint
rules that need a server (``lint.py``).

A scenario never exposes its ground truth to an agent: `Scenario.agent_view` is what agents get.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema
import yaml

from sfbench_jax.agent_eval.modes import MODES, canonical_mode

__all__ = [
    "MODES",
    "QUERY_VARIANTS",
    "SCENARIO_SCHEMA",
    "SPLITS",
    "TASK_TYPES",
    "TRANSFER_ASSET_CLASSES",
    "TRANSFER_TAG",
    "Scenario",
    "ScenarioError",
    "canonical_json",
    "default_scenario_dir",
    "load_scenario",
    "load_scenarios",
    "resolve_pointer",
    "round_floats",
]

TASK_TYPES = ("rul_prediction", "fault_classification", "health_analysis", "cost_benefit",
              "safety_policy")
#: A scenario tagged ``transfer`` belongs to the held-out side of the cross-equipment split.
TRANSFER_TAG = "transfer"
SPLITS = ("in_distribution", "transfer")
#: The two phrasings of every query (PHMForge v2): ``explicit`` (the ``query`` field: it names what to compute
#: and may give the figures in any order) and ``fuzzy`` (``query_variants.fuzzy``: the asset and the goal only).
QUERY_VARIANTS = ("explicit", "fuzzy")
#: Asset classes held out for the cross-equipment transfer split (PHMForge v2 section 3.4: a transfer from bearing
#: diagnostics to motor diagnostics): motors and gearboxes, whose bearings, vibration limits and economics share the
#: task structure of the train-side assets.
TRANSFER_ASSET_CLASSES = ("induction_motor", "gearbox")
#: libyaml's parser where PyYAML was built with it (PyPI's wheels are): the same mappings as the pure-Python
#: `SafeLoader`, about 9x faster (the 104 packaged scenarios: 0.14 s against 1.27 s).
_YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

VALIDATOR_KINDS = ("required_fields", "numeric_range", "numeric_close", "categorical", "mcq",
                   "set_overlap", "field_relation", "recompute_metric", "classification_metrics", "boolean",
                   "trace_called", "trace_order", "all_of", "any_of", "k_of_n")

_VALIDATOR = {
    "type": "object",
    "required": ["kind"],
    "additionalProperties": False,
    "properties": {
        "kind": {"enum": list(VALIDATOR_KINDS)},
        "path": {"type": "string"},
        "predictions_path": {"type": "string"},
        "min": {"type": "number"},
        "max": {"type": "number"},
        "target": {},
        "rtol": {"type": "number", "minimum": 0},
        "atol": {"type": "number", "minimum": 0},
        "allowed": {"type": "array"},
        "synonyms": {"type": "object", "additionalProperties": {"type": "string"}},
        "gt_path": {"type": "string"},
        "range_gt_path": {"type": "string",
                          "description": "JSON pointer to a [min, max] pair in the ground truth"},
        "metric": {"enum": ["mae", "rmse", "phm08", "accuracy", "macro_f1"]},
        "tool": {"type": "string"},
        "edges": {"type": "array", "items": {"type": "array", "minItems": 2, "maxItems": 2,
                                             "items": {"type": "string"}}},
        "min_overlap": {"type": "number", "minimum": 0, "maximum": 1},
        "min_precision": {"type": "number", "minimum": 0, "maximum": 1},
        "max_items": {"type": "integer", "minimum": 1},
        "relation": {"enum": ["count_of", "member_of", "subset_of", "equals", "less_equal",
                              "greater_equal"]},
        "of": {"type": "string", "description": "answer pointer the relation compares with"},
        "children": {"type": "array", "items": {"$ref": "#/$defs/validator"}},
        "k": {"type": "integer", "minimum": 1},
        "weight": {"type": "number"},
        "description": {"type": "string"},
    },
}

_STEP = {
    "type": "object",
    "required": ["tool", "args"],
    "additionalProperties": False,
    "properties": {
        "tool": {"type": "string"},
        "args": {"type": "object"},
        "save_as": {"type": "string", "pattern": "^[a-z0-9_]+$"},
    },
}

SCENARIO_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "$id": "phm-scenario/v1",
    "type": "object",
    "additionalProperties": False,
    "required": ["id", "version", "task_type", "asset_class", "query", "query_variants", "dataset",
                 "required_tools", "output_template", "validators", "ground_truth_ref",
                 "ground_truth_recipe", "reference_solution", "reference_answer"],
    "properties": {
        "id": {"type": "string", "pattern": "^[a-z0-9_]+$"},
        "version": {"type": "integer", "minimum": 1},
        "task_type": {"enum": list(TASK_TYPES)},
        "asset_class": {"type": "string"},
        "stakeholder": {"type": "string"},
        "query": {"type": "string", "minLength": 10},
        "query_variants": {"type": "object", "additionalProperties": False, "required": ["fuzzy"],
                           "description": "the fuzzy phrasing (asset and goal, no tool name, figures not in "
                                          "a tool's parameter order); explicit, if given, equals query",
                           "properties": {"fuzzy": {"type": "string", "minLength": 10},
                                          "explicit": {"type": "string", "minLength": 10}}},
        "dataset": {
            "type": "object", "required": ["name", "provision"], "additionalProperties": False,
            "properties": {"name": {"type": "string"},
                           "provision": {"enum": ["inline", "discover"]},
                           "inline_context": {"type": "string"},
                           "handles": {"type": "array", "items": {"type": "string"}}}},
        "required_tools": {"type": "array", "minItems": 1, "uniqueItems": True,
                           "items": {"type": "string"}},
        "distractor_tools": {"type": "array", "uniqueItems": True, "items": {"type": "string"}},
        "precedence": {"type": "array", "items": {"type": "array", "minItems": 2, "maxItems": 2,
                                                  "items": {"type": "string"}}},
        "reference_order": {"type": "array", "items": {"type": "string"}},
        "handle_args": {"type": "array", "items": {"type": "string"}},
        "output_template": {"type": "object"},
        "validators": {"type": "array", "minItems": 1, "items": {"$ref": "#/$defs/validator"}},
        "pass_rule": {"enum": ["all", "completeness_80_and_gt"]},
        "ground_truth_ref": {"type": "string", "pattern": r"^ground_truth/[a-z0-9_]+\.gt\.json$"},
        "ground_truth_recipe": {"type": "object", "required": ["builder"],
                                "additionalProperties": False,
                                "properties": {"builder": {"type": "string"},
                                               "params": {"type": "object"}}},
        "reference_solution": {"type": "array", "minItems": 1, "items": {"$ref": "#/$defs/step"}},
        "reference_answer": {"type": "object"},
        "query_inputs": {"type": "array", "uniqueItems": True, "items": {"type": "string"},
                         "description": "answer fields whose value the query itself states (the "
                                        "lint lets them be literals in reference_answer)"},
        "limits": {"type": "object", "additionalProperties": False,
                   "properties": {"max_tool_calls": {"type": "integer", "minimum": 1},
                                  "max_llm_turns": {"type": "integer", "minimum": 1},
                                  "timeout_s": {"type": "number", "exclusiveMinimum": 0}}},
        "sources": {"type": "array", "items": {"type": "string"}},
        "tags": {"type": "array", "items": {"type": "string"}},
    },
    "$defs": {"validator": _VALIDATOR, "step": _STEP},
}

_SCHEMA_VALIDATOR = jsonschema.Draft202012Validator(SCENARIO_SCHEMA)

DEFAULT_LIMITS = {"max_tool_calls": 12, "max_llm_turns": 16, "timeout_s": 300.0}


class ScenarioError(ValueError):
    """A scenario file that cannot be loaded or is inconsistent."""


def canonical_json(value: Any) -> str:
    """Deterministic JSON text: sorted keys, no spaces, floats rounded to 1e-9.

    Args:
        value: A JSON-able value.

    Returns:
        The canonical text (used for hashes and byte-identical records).
    """
    return json.dumps(round_floats(value), sort_keys=True, separators=(",", ":"),
                      ensure_ascii=True, allow_nan=True)


def round_floats(value: Any) -> Any:
    if isinstance(value, float):
        return round(value, 9) if value == value and abs(value) != float("inf") else value
    if isinstance(value, Mapping):
        return {str(k): round_floats(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [round_floats(v) for v in value]
    return value


def resolve_pointer(document: Any, pointer: str) -> Any:
    """Resolve an RFC 6901 JSON pointer (``""`` is the whole document).

    Args:
        document: Parsed JSON.
        pointer: E.g. ``/overall_mae`` or ``/units/0``.

    Returns:
        The referenced value.

    Raises:
        KeyError: If the pointer does not resolve (the message names the missing part).
    """
    if pointer == "":
        return document
    if not pointer.startswith("/"):
        raise KeyError(f"JSON pointer {pointer!r} must start with '/'")
    current = document
    for raw in pointer[1:].split("/"):
        part = raw.replace("~1", "/").replace("~0", "~")
        if isinstance(current, Mapping):
            if part not in current:
                raise KeyError(f"{pointer}: no key {part!r}")
            current = current[part]
        elif isinstance(current, list):
            if not part.isdigit() or int(part) >= len(current):
                raise KeyError(f"{pointer}: no index {part!r}")
            current = current[int(part)]
        else:
            raise KeyError(f"{pointer}: cannot index into {type(current).__name__} with {part!r}")
    return current


@dataclass(frozen=True)
class Scenario:
    """One evaluation scenario (immutable view of a scenario file).

    Attributes:
        id: Unique id (file stem).
        task_type: One of `TASK_TYPES`.
        asset_class: Asset class (turbofan, li_ion_cell, rolling_bearing, ...).
        query: The stakeholder's question, explicit phrasing (``query_for("explicit")``).
        query_variants: ``{"explicit": query, "fuzzy": ...}`` (`QUERY_VARIANTS`, both always present).
        dataset: ``{name, provision, inline_context?}``.
        required_tools: T_tau.
        distractor_tools: T_tau^- (plausible but wrong for the task).
        precedence: Edges (a, b): the first ok call of a must precede the first call of b.
        handle_args: Argument names whose values must come from earlier tool outputs.
        output_template: JSON Schema of the final answer.
        validators: Validator specs (see ``validators.py``).
        pass_rule: ``all`` or ``completeness_80_and_gt``.
        ground_truth_ref: Path of the ground-truth file relative to the scenario folder.
        ground_truth_recipe: Builder name and parameters used by the ground-truth script.
        reference_solution: Scripted tool steps.
        reference_answer: Answer projection with ``{"$ref": "save_as/pointer"}`` leaves.
        limits: ``max_tool_calls``, ``max_llm_turns``, ``timeout_s``.
        tags: Free tags; ``transfer`` marks the held-out side of the cross-equipment split.
        raw: The parsed file, for hashing and re-serialisation.
        source_dir: Folder the file came from.
    """

    id: str
    task_type: str
    asset_class: str
    query: str
    query_variants: Mapping[str, str]
    dataset: Mapping[str, Any]
    required_tools: tuple[str, ...]
    distractor_tools: tuple[str, ...]
    precedence: tuple[tuple[str, str], ...]
    reference_order: tuple[str, ...]
    handle_args: tuple[str, ...]
    output_template: Mapping[str, Any]
    validators: tuple[Mapping[str, Any], ...]
    pass_rule: str
    ground_truth_ref: str
    ground_truth_recipe: Mapping[str, Any]
    reference_solution: tuple[Mapping[str, Any], ...]
    reference_answer: Mapping[str, Any]
    limits: Mapping[str, Any]
    tags: tuple[str, ...]
    raw: Mapping[str, Any] = field(repr=False)
    source_dir: Path = field(repr=False)

    @property
    def hash(self) -> str:
        """sha256 of the canonical JSON of the scenario file (first 16 hex digits)."""
        return hashlib.sha256(canonical_json(self.raw).encode()).hexdigest()[:16]

    def query_for(self, variant: str) -> str:
        """The query in one phrasing.

        Args:
            variant: One of `QUERY_VARIANTS`.

        Returns:
            The text (whitespace collapsed).

        Raises:
            ScenarioError: For an unknown variant (the message lists the choices).
        """
        if variant not in QUERY_VARIANTS:
            raise ScenarioError(f"unknown query variant {variant!r}; choose from {list(QUERY_VARIANTS)}")
        return self.query_variants[variant]

    @property
    def split(self) -> str:
        """``transfer`` for held-out asset classes (tag `TRANSFER_TAG`), else ``in_distribution``."""
        return "transfer" if TRANSFER_TAG in self.tags else "in_distribution"

    @property
    def ground_truth_path(self) -> Path:
        """Absolute path of the ground-truth file."""
        return self.source_dir / self.ground_truth_ref

    def load_ground_truth(self) -> dict[str, Any]:
        """Read the ground-truth file (evaluator side only).

        Returns:
            The parsed ground truth.

        Raises:
            ScenarioError: If the file is missing; the message says how to build it.
        """
        path = self.ground_truth_path
        if not path.is_file():
            raise ScenarioError(
                f"{self.id}: ground truth {path} is missing; build it with "
                "`python scripts/build_agent_scenarios.py --data-root <shared data>`")
        return json.loads(path.read_text(encoding="utf-8"))

    def agent_context(self, mode: str) -> str | None:
        """Dataset context an agent may see: none in unknown_tools (it must find the data), the
        inline context in every other mode (the ablations change the substrate, not the brief).

        Args:
            mode: One of `MODES`.

        Returns:
            Context text or None.
        """
        if canonical_mode(mode) == "unknown_tools":
            return None
        context = self.dataset.get("inline_context")
        return str(context) if context else f"Dataset: {self.dataset['name']}"


def _as_pairs(edges: Sequence[Sequence[str]]) -> tuple[tuple[str, str], ...]:
    return tuple((str(a), str(b)) for a, b in edges)


def load_scenario(path: Path) -> Scenario:
    """Load and schema-check one scenario file (``.yaml``, ``.yml`` or ``.json``).

    Args:
        path: The file.

    Returns:
        The scenario.

    Raises:
        ScenarioError: If the file cannot be parsed, fails the schema or its id differs from the
            file stem.
    """
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
        data = json.loads(text) if path.suffix == ".json" else yaml.load(text, Loader=_YAML_LOADER)
    except (OSError, ValueError, yaml.YAMLError) as exc:
        raise ScenarioError(f"{path}: cannot read scenario ({exc})") from exc
    if not isinstance(data, dict):
        raise ScenarioError(f"{path}: a scenario file must hold one mapping")
    errors = sorted(_SCHEMA_VALIDATOR.iter_errors(data), key=lambda e: list(e.absolute_path))
    if errors:
        details = "; ".join(f"{'/'.join(map(str, e.absolute_path)) or '<root>'}: {e.message}"
                            for e in errors[:5])
        raise ScenarioError(f"{path}: schema violation(s): {details}")
    if data["id"] != path.stem:
        raise ScenarioError(f"{path}: id {data['id']!r} must equal the file stem {path.stem!r}")
    limits = {**DEFAULT_LIMITS, **data.get("limits", {})}
    query = " ".join(str(data["query"]).split())
    variants = {name: " ".join(str(text).split()) for name, text in data["query_variants"].items()}
    if variants.setdefault("explicit", query) != query:
        raise ScenarioError(f"{path}: query_variants.explicit differs from query; the explicit phrasing is "
                            "the query field, so leave query_variants.explicit out")
    return Scenario(
        id=data["id"],
        task_type=data["task_type"],
        asset_class=data["asset_class"],
        query=query,
        query_variants={name: variants[name] for name in QUERY_VARIANTS},
        dataset=dict(data["dataset"]),
        required_tools=tuple(data["required_tools"]),
        distractor_tools=tuple(data.get("distractor_tools", ())),
        precedence=_as_pairs(data.get("precedence", ())),
        reference_order=tuple(data.get("reference_order", ())),
        handle_args=tuple(data.get("handle_args", ())),
        output_template=dict(data["output_template"]),
        validators=tuple(data["validators"]),
        pass_rule=data.get("pass_rule", "all"),
        ground_truth_ref=data["ground_truth_ref"],
        ground_truth_recipe=dict(data["ground_truth_recipe"]),
        reference_solution=tuple(data["reference_solution"]),
        reference_answer=dict(data["reference_answer"]),
        limits=limits,
        tags=tuple(data.get("tags", ())),
        raw=data,
        source_dir=path.parent,
    )


def default_scenario_dir() -> Path:
    """The scenario folder shipped inside the package."""
    return Path(str(resources.files("sfbench_jax.agent_eval") / "scenarios"))


def load_scenarios(directory: Path | None = None, *, ids: Sequence[str] | None = None,
                   task_types: Sequence[str] | None = None) -> list[Scenario]:
    """Load every scenario file in a folder, sorted by id.

    Args:
        directory: Scenario folder (the packaged one if None).
        ids: Keep only these ids (all must exist).
        task_types: Keep only these task types.

    Returns:
        The scenarios.

    Raises:
        ScenarioError: If the folder holds no scenarios, ids repeat, or a requested id is absent.
    """
    folder = Path(directory) if directory is not None else default_scenario_dir()
    files = sorted(p for p in folder.glob("*") if p.suffix in {".yaml", ".yml", ".json"})
    scenarios = [load_scenario(p) for p in files]
    if not scenarios:
        raise ScenarioError(f"{folder}: no scenario files (*.yaml, *.yml, *.json)")
    seen: set[str] = set()
    for scenario in scenarios:
        if scenario.id in seen:
            raise ScenarioError(f"{folder}: scenario id {scenario.id!r} appears twice")
        seen.add(scenario.id)
    if ids is not None:
        missing = sorted(set(ids) - seen)
        if missing:
            raise ScenarioError(f"unknown scenario id(s) {missing}; see {folder}")
        scenarios = [s for s in scenarios if s.id in set(ids)]
    if task_types is not None:
        bad = sorted(set(task_types) - set(TASK_TYPES))
        if bad:
            raise ScenarioError(f"unknown task type(s) {bad}; choose from {list(TASK_TYPES)}")
        scenarios = [s for s in scenarios if s.task_type in set(task_types)]
    return scenarios
