"""Query variants (issue 44 item 4): every scenario carries an explicit and a fuzzy phrasing (PHMForge v2's two query
styles); no fuzzy phrasing names a served tool or gives a reference step's figures one after the other in its tool's
parameter order (what lets an agent that reads nothing fill a tool's arguments by position)."""

from __future__ import annotations

import pytest
from mcp.server import MCPServer

from sfbench_jax.agent_eval.lint import (
    _numbers_in,
    lists_in_order,
    names_a_tool,
    parameter_order,
    step_figures,
)
from sfbench_jax.agent_eval.scenario import QUERY_VARIANTS, Scenario
from sfbench_jax.agent_eval.toolbox import connect


def test_every_scenario_has_an_explicit_and_a_fuzzy_phrasing(scenarios: list[Scenario]) -> None:
    assert len(scenarios) >= 99
    for scenario in scenarios:
        assert tuple(scenario.query_variants) == QUERY_VARIANTS, scenario.id
        assert scenario.query_for("explicit") == scenario.query, scenario.id
        fuzzy = scenario.query_for("fuzzy")
        assert fuzzy != scenario.query and len(fuzzy.split()) >= 12, scenario.id
    assert len({s.query_for("fuzzy") for s in scenarios}) == len(scenarios)  # written per scenario


def test_the_checks_catch_a_tool_name_and_figures_in_parameter_order(scenario_map: dict[str, Scenario]) -> None:
    """The checks are not vacuous: the explicit query of the gearbox FMEA lists severity, occurrence and detection
    in the order assess_safety_risk takes them; a tool's name is caught however its words are joined."""
    fmea = scenario_map["safety_gearbox_fmea_risk"]
    order = ["failure_mode", "severity", "probability", "detectability"]
    (step,) = fmea.reference_solution
    assert step_figures(step, order) == [8.0, 5.0, 4.0]
    assert lists_in_order(_numbers_in(fmea.query), step_figures(step, order))
    assert not lists_in_order(_numbers_in(fmea.query_for("fuzzy")), step_figures(step, order))
    assert not lists_in_order([8.0, 5.0, 4.0], [8.0])  # one figure has no order
    for text in ("Run compare_to_baseline on B0005.", "please COMPARE TO BASELINE", "compare-to-baseline it"):
        assert names_a_tool(text, "compare_to_baseline"), text
    assert not names_a_tool("compare it to the baseline fleet", "compare_to_baseline")
    assert not names_a_tool("a web searcher", "web_search")


@pytest.mark.anyio
async def test_no_fuzzy_query_names_a_tool_or_lists_its_parameters_in_order(
        scenarios: list[Scenario], eval_server: MCPServer) -> None:
    async with connect(eval_server) as session:
        tools = [spec.name for spec in session.catalog]
        order = parameter_order(session.catalog)
    assert len(tools) >= 40
    offending: dict[str, list[str]] = {}
    for scenario in scenarios:
        fuzzy = scenario.query_for("fuzzy")
        found = [f"names {tool}" for tool in tools if names_a_tool(fuzzy, tool)]
        numbers = _numbers_in(f"{fuzzy} {scenario.dataset.get('inline_context', '')}")
        found += [f"lists {step['tool']}'s figures in order" for step in scenario.reference_solution
                  if lists_in_order(numbers, step_figures(step, order.get(step["tool"])))]
        if found:
            offending[scenario.id] = found
    assert offending == {}
