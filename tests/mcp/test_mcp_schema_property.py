"""Every tool answer matches its output schema (issue 21, defect 6), as a property: arguments drawn by hypothesis
from each tool's published input schema (extreme finite floats included), sent through the official MCP client;
every successful answer validates against the tool's output schema and every failure is a tagged tool error (or
an argument-validation message), never a protocol error or an untagged crash.

The default run draws a few examples per tool (about a minute on a 2-core CPU); ``-m slow`` runs the exhaustive
variant. The server runs with a 3 s call budget, so a drawn argument that asks for minutes of work answers
``[over_budget]`` (a tagged error) instead of stalling the suite.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import anyio
import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcp import Client
from mcp.server import MCPServer

from sfbench_jax.mcp.errors import error_code_of
from sfbench_jax.mcp.server import ServerConfig, build_server
from sfbench_jax.mcp.tools import declared_tools

TOOL_NAMES = [tool.name for tool in declared_tools()]
EXTREME_FLOATS = (0.0, -0.0, 1.0, -1.0, 5e-324, -5e-324, 2.2250738585072014e-308, 1e-300, 1e30, -1e30, 3.5e38,
                  -3.5e38, 1e300, -1e300, 1e308, -1e308, 1.7976931348623157e308, -1.7976931348623157e308)
# Registered names per argument, so the draws reach the tools' success paths as well as their refusals.
NAMES: dict[str, tuple[str, ...]] = {
    "dataset_name": ("cmapss_fd001", "cmapss_fd003", "cwru_bearing_nie", "cwru_bearing_vaw", "nasa_battery_b0005",
                     "FD001"),
    "split": ("train", "test", "signal", "discharge", "impedance"),
    "model_type": ("linear_health_index",),
    "dataset_handle": ("ds:cmapss_fd001:test", "ds:cmapss_fd001:train", "ds:cwru_bearing_nie:signal",
                       "ds:cwru_bearing_ose:signal", "ds:cmapss_fd003:test"),
    "model_handle": ("model:cmapss_fd001:linear_health_index", "model:cmapss_fd003:linear_health_index"),
    "battery_id": ("B0005", "B0006", "B0007", "B0018"),
    "baseline_ids": ("B0005", "B0006", "B0007", "B0018"),
    "sensor": ("sensor_11", "s11", "T50", "sensor_4"),
    "sensors": ("sensor_11", "sensor_4", "sensor_7"),
    "from_unit": ("mm/s", "m/s2", "g", "um", "in/s"),
    "to_unit": ("mm/s", "m/s2", "g", "um", "in/s"),
    "target_level": ("1", "2", "SIL3", "4", "a", "PL d", "e"),
    "dataset": ("etth1", "synthetic_small"),
    "run": ("seasonal_naive",),
}
LIST_CAP = 24


def _number(schema: Mapping[str, Any]) -> st.SearchStrategy[Any]:
    low = schema.get("minimum", schema.get("exclusiveMinimum"))
    high = schema.get("maximum", schema.get("exclusiveMaximum"))

    def inside(value: float) -> bool:
        return ((low is None or value > low or (value == low and "minimum" in schema))
                and (high is None or value < high or (value == high and "maximum" in schema)))

    floats = st.floats(min_value=low, max_value=high, allow_nan=False, allow_infinity=False,
                       exclude_min="exclusiveMinimum" in schema, exclude_max="exclusiveMaximum" in schema)
    extremes = [value for value in EXTREME_FLOATS if inside(value)]
    return st.one_of(floats, st.sampled_from(extremes)) if extremes else floats


def _integer(schema: Mapping[str, Any]) -> st.SearchStrategy[int]:
    low = schema.get("minimum", -(2**31))
    high = schema.get("maximum", 2**31)
    low += 1 if "exclusiveMinimum" in schema and "minimum" not in schema else 0
    return st.integers(min_value=low, max_value=high)


def _string(schema: Mapping[str, Any], name: str) -> st.SearchStrategy[str]:
    text = st.text(max_size=min(schema.get("maxLength", 40), 40), min_size=schema.get("minLength", 0))
    names = [value for value in NAMES.get(name, ()) if len(value) <= schema.get("maxLength", 1000)]
    return st.one_of(st.sampled_from(names), text) if names else text


def strategy(schema: Mapping[str, Any], name: str = "") -> st.SearchStrategy[Any]:
    """A hypothesis strategy for the values a JSON schema (as the SDK publishes it) accepts."""
    if "enum" in schema:
        return st.sampled_from(schema["enum"])
    if "const" in schema:
        return st.just(schema["const"])
    if "anyOf" in schema:
        options = schema["anyOf"]
        arrays = [option for option in options if option.get("type") == "array"]
        if arrays and any(option.get("type") == "string" for option in options):
            # a list may also be sent as its JSON text (the SDK parses it): draw both forms
            listed = strategy(arrays[0], name)
            others = [strategy(o, name) for o in options if o.get("type") not in ("array", "string")]
            return st.one_of(listed, listed.map(json.dumps), *others)
        return st.one_of(*(strategy(option, name) for option in options))
    kind = schema.get("type")
    if kind == "null":
        return st.none()
    if kind == "boolean":
        return st.booleans()
    if kind == "integer":
        return _integer(schema)
    if kind == "number":
        return _number(schema)
    if kind == "string":
        return _string(schema, name)
    if kind == "array":
        items = strategy(schema.get("items", {"type": "number"}), name)
        return st.lists(items, min_size=schema.get("minItems", 0),
                        max_size=max(schema.get("minItems", 0), min(schema.get("maxItems", LIST_CAP), LIST_CAP)))
    raise AssertionError(f"input schema type {kind!r} of {name!r} has no strategy: {schema}")


def arguments_of(input_schema: Mapping[str, Any]) -> st.SearchStrategy[dict[str, Any]]:
    """Argument dicts for a tool: every required argument, any subset of the optional ones."""
    properties = input_schema.get("properties", {})
    required = set(input_schema.get("required", ()))
    return st.fixed_dictionaries(
        {name: strategy(properties[name], name) for name in properties if name in required},
        optional={name: strategy(properties[name], name) for name in properties if name not in required})


@pytest.fixture(scope="module")
def guarded_server(data_root: Path) -> MCPServer:
    """The full server over the real data root, with a short call budget."""
    return build_server(ServerConfig(data_root=data_root, call_timeout_s=3.0))


@pytest.fixture(scope="module")
def schemas(guarded_server: MCPServer) -> dict[str, tuple[dict[str, Any], dict[str, Any]]]:
    """Tool name -> (input schema, output schema), as the official client lists them."""
    async def listed() -> dict[str, tuple[dict[str, Any], dict[str, Any]]]:
        async with Client(guarded_server) as client:
            return {t.name: (t.input_schema, t.output_schema) for t in (await client.list_tools()).tools}

    return anyio.run(listed)


async def _call(server: MCPServer, name: str, arguments: dict[str, Any]) -> Any:
    async with Client(server) as client:
        return await client.call_tool(name, arguments)


def _check_answer(server: MCPServer, name: str, output_schema: Mapping[str, Any], arguments: dict[str, Any]) -> None:
    result = anyio.run(_call, server, name, arguments)  # a protocol error (defect 6) raises here
    text = "\n".join(getattr(item, "text", "") for item in result.content)
    if result.is_error:
        assert error_code_of(text) is not None or "validation error" in text, \
            f"{name}({arguments!r}) failed without a tag: {text}"
        return
    jsonschema.validate(result.structured_content, output_schema)
    assert _all_finite(result.structured_content), (name, arguments, result.structured_content)


def _all_finite(value: Any) -> bool:
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, dict):
        return all(_all_finite(item) for item in value.values())
    if isinstance(value, list):
        return all(_all_finite(item) for item in value)
    return True


def _run_property(server: MCPServer, schemas: dict[str, Any], name: str, examples: int) -> None:
    input_schema, output_schema = schemas[name]
    assert output_schema, f"{name} publishes no output schema"

    @settings(max_examples=examples, deadline=None, database=None, derandomize=True,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much, HealthCheck.data_too_large])
    @given(arguments=arguments_of(input_schema))
    def answers_match_their_schema(arguments: dict[str, Any]) -> None:
        _check_answer(server, name, output_schema, arguments)

    answers_match_their_schema()


def test_defect6_non_finite_answer_is_a_tagged_tool_error(guarded_server: MCPServer) -> None:
    # Issue 21, defect 6: velocity_rms_mm_s=1e308 (finite, so accepted) returned a null where the schema says
    # number, and the official client rejected the response as a protocol error.
    result = anyio.run(_call, guarded_server, "assess_vibration_severity", {"velocity_rms_mm_s": 1e308})
    assert result.is_error and "[domain_error]" in result.content[0].text, result.content


@pytest.mark.parametrize("name", TOOL_NAMES)
def test_every_answer_matches_its_output_schema(guarded_server: MCPServer, schemas: dict[str, Any],
                                                name: str) -> None:
    _run_property(guarded_server, schemas, name, examples=4)


@pytest.mark.slow
@pytest.mark.parametrize("name", TOOL_NAMES)
def test_every_answer_matches_its_output_schema_exhaustive(guarded_server: MCPServer, schemas: dict[str, Any],
                                                           name: str) -> None:
    _run_property(guarded_server, schemas, name, examples=60)
