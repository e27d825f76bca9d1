"""Agent evaluator: PHMForge-style scenarios, agents, client-side traces, scoring and reports.

What lives here (one module each): ``scenario`` (format, loader), ``modes`` (tools_provided,
unknown_tools, no_domain_tools, rag: allow-lists and context), ``validators`` (answer checks),
``toolbox`` (MCP client harness and recording ToolBox), ``generic_server`` and ``calculator``
(the generic tools of the no_domain_tools mode), ``evidence`` and ``standards_notes`` (the rag
mode's BM25 corpus), ``agents`` (scripted, replay, fault-injecting, OpenAI-compatible LLM),
``trace``, ``metrics`` (process and pass metrics), ``stats`` (Wilson intervals, McNemar's exact
test), ``taxonomy`` (failure labels), ``runner`` (run and score), ``report`` (Markdown/CSV
tables), ``compare`` (paired comparison of two runs), ``lint`` (scenario rules) and ``cli``
(``sfbench-agent-eval``). Scenario files and their ground truth live in ``scenarios/``;
``independent_truth`` re-derives every ground truth without the kernels. What does
not: domain tool implementations (``sfbench_jax.mcp``).
"""
