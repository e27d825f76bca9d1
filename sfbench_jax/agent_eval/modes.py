"""Evaluation modes: which tools an agent sees, what context it gets, which checks apply.

What lives here: the mode names (`MODES`, with hyphenated aliases for the command line), the
generic tool server's label and the domain-free stubs of the main server, `allowed_tools` (the
ToolBox allow-list of a scenario in a mode), `has_domain_tools` (whether trace checks that name a
domain tool can apply) and `canonical_mode`. What does not: the ToolBox itself (``toolbox.py``),
the RAG evidence (``evidence.py``).

The four modes (PHMForge v2 sections 2.3 and 3.4):

* ``tools_provided``: the scenario's required and distractor tools, plus the dataset context.
* ``unknown_tools``: the whole domain catalogue (every tool of every domain server), no dataset
  context: the agent must find the tools and the data.
* ``no_domain_tools``: the domain tools are withheld; the agent gets only generic tools (raw data
  reader and calculator of the generic-tools server, plus the main server's offline web-search
  and weather stubs) and the dataset context. PHMForge's "without domain tools" ablation.
* ``rag``: no tools at all; the scenario's evidence (the numbers the tools would read from the
  real data, and standards notes) is rendered as text chunks and the top BM25 hits are put into
  the prompt. PHMForge's MCP-versus-text-RAG ablation.

In the two ablation modes the validators that inspect the tool trace (``trace_called``,
``trace_order``) name domain tools the mode withholds by design, so they are reported as not
applicable; every answer check applies unchanged.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

__all__ = ["ABLATION_MODES", "GENERIC_SERVER", "GENERIC_STUB_TOOLS", "MODES", "TOOL_MODES",
           "allowed_tools", "canonical_mode", "has_domain_tools"]

TOOL_MODES = ("tools_provided", "unknown_tools")
ABLATION_MODES = ("no_domain_tools", "rag")
MODES = (*TOOL_MODES, *ABLATION_MODES)
_ALIASES = {mode.replace("_", "-"): mode for mode in MODES}

#: Server label (tool ``meta.server``) of the evaluator's generic-tools server.
GENERIC_SERVER = "generic-tools"
#: Main-server tools that hold no domain algorithm (offline stubs), offered in no_domain_tools.
GENERIC_STUB_TOOLS = ("web_search", "weather_data_loader")


def canonical_mode(name: str) -> str:
    """The canonical (underscored) name of a mode.

    Args:
        name: ``tools_provided`` or ``tools-provided`` style.

    Returns:
        One of `MODES`.

    Raises:
        ValueError: For an unknown mode (the message lists the valid ones).
    """
    mode = _ALIASES.get(name, name)
    if mode not in MODES:
        raise ValueError(f"unknown mode {name!r}; choose from {', '.join(MODES)} "
                         "(hyphens are accepted too, e.g. no-domain-tools)")
    return mode


def has_domain_tools(mode: str) -> bool:
    """Whether the mode offers the domain tools (so trace checks naming them apply)."""
    return canonical_mode(mode) in TOOL_MODES


def allowed_tools(scenario: Any, mode: str, catalog: Sequence[Any]) -> tuple[str, ...] | None:
    """The ToolBox allow-list of a scenario in a mode.

    Args:
        scenario: The scenario (``required_tools``, ``distractor_tools``).
        mode: A mode name.
        catalog: The session's tool specs (``name``, ``server``).

    Returns:
        Tool names, or None for "every catalogued tool" (unknown_tools without a generic server).

    Raises:
        ValueError: For an unknown mode, or no_domain_tools without the generic-tools server.
    """
    mode = canonical_mode(mode)
    generic = [spec.name for spec in catalog if spec.server == GENERIC_SERVER]
    if mode == "tools_provided":
        return tuple(dict.fromkeys([*scenario.required_tools, *scenario.distractor_tools]))
    if mode == "unknown_tools":
        if not generic:
            return None
        return tuple(spec.name for spec in catalog if spec.server != GENERIC_SERVER)
    if mode == "rag":
        return ()
    if not generic:
        raise ValueError("mode no_domain_tools needs the generic-tools server in the session; "
                         "connect sfbench_jax.agent_eval.generic_server.build_generic_server(...) "
                         "next to the domain server (the CLI does this for you)")
    names = {spec.name for spec in catalog}
    return (*generic, *(name for name in GENERIC_STUB_TOOLS if name in names))
