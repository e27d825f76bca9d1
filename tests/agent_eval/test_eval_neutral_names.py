"""CWRU recordings under neutral names (issue 33, item 2): an agent must not be able to answer a
bearing scenario from memory.

The published CWRU table maps record numbers to fault classes (97 normal, 105 inner race, 118 ball,
130 outer race). Queries used to say "recording 130" and the tools served ``cwru_rec_130``, so the
label was one lookup in the model's memory away. These tests reproduce that: a scenario that names
a record number, in its text or in a dataset name, fails the lint; and nothing an agent can get
from the server (catalogue, summaries, ground-truth handles, diagnoses, errors, evidence passages)
carries a record number or the old names.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any

import pytest
from eval_helpers import copy_scenario
from mcp.server import MCPServer

from sfbench_jax.agent_eval.evidence import dataset_chunks
from sfbench_jax.agent_eval.lint import lint_static
from sfbench_jax.agent_eval.scenario import Scenario
from sfbench_jax.agent_eval.toolbox import connect
from sfbench_jax.agent_eval.trace import TraceRecorder
from sfbench_jax.mcp.datasets import CWRU_NEUTRAL_NAMES, PHM_DATASETS, DataStore, resolve_dataset
from sfbench_jax.mcp.errors import UnknownDatasetError

#: The four record numbers, typed here rather than read from the registry under test.
RECORDS = (97, 105, 118, 130)
RECORD_WORD = re.compile(r"(?<![\w.])0*(97|105|118|130)(?![\w]|\.\d)|cwru_rec")


def _neutral_name(record: int) -> str:
    """The documented derivation: sha256 of ``sfbench-jax/cwru/v1:<record>``, base 26, low digit first."""
    value = int(hashlib.sha256(f"sfbench-jax/cwru/v1:{record}".encode()).hexdigest(), 16)
    letters = ""
    for _ in range(3):
        value, digit = divmod(value, 26)
        letters += chr(ord("a") + digit)
    return f"cwru_bearing_{letters}"


def test_the_committed_table_follows_its_documented_derivation() -> None:
    assert {record: _neutral_name(record) for record in RECORDS} == CWRU_NEUTRAL_NAMES
    cwru = [name for name, ds in PHM_DATASETS.items() if ds.family == "cwru_bearing"]
    assert sorted(cwru) == sorted(CWRU_NEUTRAL_NAMES.values())
    # listed in name order, which is not the records' order (that would map positions to labels)
    assert cwru == sorted(cwru) and cwru != [CWRU_NEUTRAL_NAMES[r] for r in RECORDS]
    for name in cwru:
        ds = PHM_DATASETS[name]
        assert not RECORD_WORD.search(f"{name} {ds.description} {ds.info.get('note', '')}"), name
    for old in ("cwru_rec_130", "cwru_rec_097", "CWRU_REC_118"):
        with pytest.raises(UnknownDatasetError, match="cwru_bearing_"):
            resolve_dataset(old)


def test_lint_fails_a_scenario_that_names_a_cwru_record(tmp_path: Path,
                                                         scenario_map: dict[str, Scenario]) -> None:
    source = scenario_map["fault_cwru_outer_race_verified"]
    catalog = [*source.required_tools, *source.distractor_tools]
    raw = json.loads(json.dumps(source.raw))
    assert lint_static([copy_scenario(tmp_path, source, raw)], catalog) == {}
    # The query as it read before: "Diagnose drive-end recording 130 ..." (130 is the published
    # 0.007 in outer-race fault), with the neutral dataset names left in place.
    raw["query"] = source.query.replace("cwru_bearing_ose", "130")
    problems = lint_static([copy_scenario(tmp_path, source, raw)], catalog)[source.id]
    assert problems == ["record_number: the query or context names '130', a CWRU record number whose fault "
                        "class is published; name the recording by its neutral name"]
    # The handles as they were: cwru_rec_130 in the dataset, the reference calls and the context.
    old = json.loads(json.dumps(source.raw).replace("cwru_bearing_ose", "cwru_rec_130"))
    problems = lint_static([copy_scenario(tmp_path, source, old)], catalog)[source.id]
    assert problems and all(p.startswith("record_number:") for p in problems), problems
    assert any("dataset name 'cwru_rec_130'" in p for p in problems), problems
    assert any("names '130'" in p for p in problems), problems  # the inline context


def test_no_packaged_scenario_names_a_cwru_record(scenarios: list[Scenario]) -> None:
    cwru = [s for s in scenarios if "cwru" in s.tags]
    assert len(cwru) == 7
    for scenario in cwru:
        text = " ".join([scenario.query, str(scenario.dataset), json.dumps(scenario.reference_solution),
                         json.dumps(scenario.reference_answer)])
        assert not RECORD_WORD.search(text), (scenario.id, RECORD_WORD.search(text))
    report = lint_static(cwru, {t for s in cwru for t in (*s.required_tools, *s.distractor_tools)})
    assert report == {}


def _texts(value: Any) -> str:
    if isinstance(value, dict):
        return " ".join(f"{k} {_texts(v)}" for k, v in value.items())
    if isinstance(value, list):
        return " ".join(_texts(v) for v in value)
    return str(value)


@pytest.mark.anyio
async def test_no_tool_output_names_a_cwru_record(eval_server: MCPServer, data_root: Path) -> None:
    seen: list[str] = []
    async with connect(eval_server) as session:
        tools = session.toolbox(allowed=None, recorder=TraceRecorder(run_id="t", scenario_id="t"))

        async def output(tool: str, arguments: dict[str, Any], *, ok: bool = True) -> Any:
            outcome = await tools.call(tool, arguments)
            assert outcome.ok is ok, (tool, outcome.text)
            seen.append(f"{outcome.text} {_texts(outcome.structured or {})}")
            return outcome.structured

        catalogue = await output("list_phm_datasets", {})
        names = [d["name"] for d in catalogue["datasets"] if d["family"] == "cwru_bearing"]
        assert sorted(names) == sorted(_neutral_name(r) for r in RECORDS)
        for name in names:
            loaded = await output("load_dataset", {"dataset_name": name, "split": "signal"})
            await output("diagnose_bearing_fault", {"dataset_handle": loaded["handle"]})
            truth = await output("load_ground_truth", {"dataset_name": name})
            await output("calculate_accuracy", {"ground_truth": [truth["handle"]], "predictions": ["normal"]})
        await output("load_dataset", {"dataset_name": "cwru_rec_130", "split": "signal"}, ok=False)
    # the refusal echoes the name it was given, and offers only the neutral names
    refusal = seen.pop()
    assert "not a registered dataset" in refusal and all(name in refusal for name in names)
    assert not RECORD_WORD.search(refusal.replace("'cwru_rec_130'", "")), refusal
    leaks = [m.group() for text in seen for m in [RECORD_WORD.search(text)] if m]
    assert leaks == []
    store = DataStore(data_root)
    for name in names:
        passages = list(dataset_chunks(store, name))
        prose = " ".join([passages[0].text, *(c.text.split("\n")[0] for c in passages[1:])])
        assert name in prose and not RECORD_WORD.search(prose), prose
