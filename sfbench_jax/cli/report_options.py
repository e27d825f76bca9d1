"""The options of a `sfbench-report` command from its command line (`--select`, `--published-frontier`,
`--method`, `--architecture`, `--severities`, `--curve-k`), shared by the tables and figures
(`sfbench_jax.cli.sfbench_report`) and the one-file page (`sfbench_jax.cli.pages`), which both import it."""

from __future__ import annotations

import argparse

from sfbench_jax.report.catalog import ReportOptions


def parse_where(tokens: list[str]) -> dict[str, str]:
    """`COLUMN=VALUE` tokens -> `{column: value}`."""
    where = {}
    for token in tokens:
        column, _, value = token.partition("=")
        if not column or not _:
            raise ValueError(f"--select takes COLUMN=VALUE (e.g. rng_mode=reference), got {token!r}.")
        where[column] = value
    return where


def report_options(args: argparse.Namespace) -> ReportOptions:
    """The options of a report from the command line."""
    options = ReportOptions(where=parse_where(args.select), published_frontier=args.published_frontier,
                            method=args.method, architecture=args.architecture, curve_k=args.curve_k)
    if args.severities:
        severities = tuple(float(value) for value in args.severities.split(","))
        options = ReportOptions(**{**options.__dict__, "severities": severities})
    return options
