"""MCP adapter: the ``sfbench-mcp`` server exposing PHM kernels and benchmark summaries as tools.

What lives here: ``server`` (assembly, transports, entry point), ``tools`` (the tool registry
and one thin adapter module per group), ``datasets`` (registered dataset names and the read-only
data layer), ``runs`` (stored runs by folder name under the runs root), ``handles`` (names of
server-side objects), ``inputs`` (argument coercion), ``strict`` (undeclared arguments are errors),
``guard`` (per-call time budget, answers checked against their output schema, no server path in an
error), ``http`` (the HTTP transport's bind rules, Host/Origin allow-list and bearer token) and
``errors`` (tagged tool errors). What does not: computation, which is `phm_kernels` and the
engine's library API (``sfbench_jax.api``).
"""
