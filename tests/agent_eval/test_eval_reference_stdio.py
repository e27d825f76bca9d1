"""CI gate: every scenario's scripted reference solution passes all its validators, identically on
three repeats in tools_provided mode, once more given the fuzzy phrasing of its query, and once more with the
whole catalogue visible (unknown_tools), through one real server launched as a stdio subprocess
(``python -m sfbench_jax.mcp.server``); and no scenario's pass survives a required tool's calls turned into
errors or removed (`lint.required_tool_dependence`, issue 44)."""

from __future__ import annotations

from pathlib import Path

import pytest
from eval_helpers import stdio_params

from sfbench_jax.agent_eval.lint import check_reference_solutions
from sfbench_jax.agent_eval.scenario import Scenario
from sfbench_jax.agent_eval.toolbox import connect


@pytest.mark.slow  # ~1.3 min on 2 cores: .ci/run runs it after the default suite
@pytest.mark.anyio
async def test_every_reference_solution_passes_over_stdio(checkable_scenarios: list[Scenario],
                                                          data_root: Path) -> None:
    """Every scenario with the full data; with the repository's data, all but the whole-file C-MAPSS ones."""
    scenarios = checkable_scenarios
    assert len(scenarios) >= 95
    async with connect(stdio_params(data_root)) as session:
        assert session.catalog, "the stdio server listed no tools"
        problems = await check_reference_solutions(scenarios, session, repeats=3)
        assert problems == {}, problems  # also: no scenario passes without an ok call of each required tool
        fuzzy = await check_reference_solutions(scenarios, session, repeats=1, variant="fuzzy")
        assert fuzzy == {}, fuzzy
        unknown = await check_reference_solutions(scenarios, session, repeats=1,
                                                  mode="unknown_tools")
        assert unknown == {}, unknown
