"""Agent evaluator: PHMForge-style scenarios, agents, client-side traces, scoring and reports.

What lives here (one module each): ``scenario`` (format, loader), ``validators`` (answer checks),
``toolbox`` (MCP client harness and recording ToolBox), ``agents`` (scripted, replay,
fault-injecting, OpenAI-compatible LLM), ``trace``, ``metrics`` (process and pass metrics),
``taxonomy`` (failure labels), ``runner`` (run and score), ``report`` (Markdown/CSV tables),
``lint`` (scenario rules) and ``cli`` (``sfbench-agent-eval``). Scenario files and their
ground truth live in ``scenarios/``. What does not: tool implementations (``sfbench_jax.mcp``).
"""
