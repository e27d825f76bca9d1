"""Agents for the evaluator, one interface (``base.Agent``), looked up by kind name.

What lives here: the agent registry `AGENT_KINDS` and re-exports. Kinds: ``scripted`` (the
reference solution), ``replay`` (re-issue a recorded trace), ``fault:<mutation>`` (the scripted
solution with one deliberate mistake), ``llm`` (an OpenAI-compatible chat-completions model) and the
floors ``floor:template_constant`` / ``floor:random_tool`` (answers from the output template alone; random
tools and a random answer).
"""

from __future__ import annotations

from sfbench_jax.agent_eval.agents.base import Agent, AgentResult, AgentTask
from sfbench_jax.agent_eval.agents.fault_injecting import (
    EXPECTED_LABEL,
    MUTATIONS,
    FaultInjectingAgent,
)
from sfbench_jax.agent_eval.agents.floors import (
    FLOOR_KINDS,
    RandomToolAgent,
    TemplateConstantAgent,
    floor_agent,
)
from sfbench_jax.agent_eval.agents.llm import HttpChatBackend, LLMAgent, LLMConfig
from sfbench_jax.agent_eval.agents.replay import ReplayAgent
from sfbench_jax.agent_eval.agents.scripted import ScriptedAgent

__all__ = ["AGENT_KINDS", "EXPECTED_LABEL", "FLOOR_KINDS", "MUTATIONS", "Agent", "AgentResult", "AgentTask",
           "FaultInjectingAgent", "HttpChatBackend", "LLMAgent", "LLMConfig", "RandomToolAgent", "ReplayAgent",
           "ScriptedAgent", "TemplateConstantAgent", "floor_agent"]

AGENT_KINDS = ("scripted", "replay", "llm", *(f"fault:{m}" for m in MUTATIONS), *FLOOR_KINDS)
