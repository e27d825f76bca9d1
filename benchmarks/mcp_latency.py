"""Warm in-process MCP tool-call latency of the light PHM kernels (target: p50 < 20 ms).

Each tool is called once cold (first call: kernel compile plus data loading; reported
separately as ``first_call_ms``), then ``--warmup`` times untimed, then ``--calls`` timed calls
through the official MCP client connected in-process to the ``sfbench-mcp`` server. The
latency is the wall time of one ``call_tool`` round trip as the client sees it (argument
validation, worker-thread dispatch, the jitted kernel, result serialisation).

Usage::

    python benchmarks/mcp_latency.py --data-root ../shared/data
    python benchmarks/mcp_latency.py --data-root ../shared/data --json > latency.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from importlib.metadata import version
from pathlib import Path
from typing import Any

import anyio

TARGET_P50_MS = 20.0

# Light kernels: closed-form or small-array tools (the heavy ones, such as model fitting or
# envelope analysis of a 10-second recording, are excluded by design).
LIGHT_CALLS: list[tuple[str, dict[str, Any]]] = [
    ("calculate_maintenance_cost", {"preventive_cost": 5000, "frequency_per_year": 4,
                                    "downtime_hours": 8, "hourly_rate": 1000}),
    ("calculate_failure_cost", {"failure_probability": 0.3, "repair_cost": 50000,
                                "downtime_hours": 48, "hourly_rate": 1000,
                                "consequential_cost": 20000}),
    ("calculate_maintenance_roi", {"reactive_annual_cost": 118000,
                                   "preventive_annual_cost": 52000,
                                   "residual_failure_annual_cost": 5900, "program_cost": 40000}),
    ("assess_safety_risk", {"failure_mode": "seal", "severity": 8, "probability": 5,
                            "detectability": 4}),
    ("check_compliance", {"standard": "IEC61508", "target_level": "SIL 2",
                          "failure_measure": 8.76e-3}),
    ("calculate_pfd", {"architecture": "1oo2", "lambda_du_per_hour": 2e-6,
                       "proof_test_interval_hours": 8760, "common_cause_beta": 0.1}),
    ("assess_noise_exposure", {"levels_dba": [95.0, 85.0], "hours": [4.0, 4.0]}),
    ("check_voltage_unbalance", {"line_voltages": [462, 463, 455]}),
    ("check_inspection_status", {"hours_since_100h": 105, "months_since_annual": 3,
                                 "for_hire": True}),
    ("assess_vibration_severity", {"velocity_rms_mm_s": 2.7, "standard": "ISO10816-3",
                                   "group": 2, "foundation": "rigid"}),
    ("convert_vibration_units", {"value": 0.15, "from_unit": "in/s pk", "to_unit": "mm/s rms"}),
    ("calculate_bearing_frequencies", {"rpm": 1797}),
    ("calculate_mae", {"ground_truth": [112, 98, 69, 82], "predictions": [100, 105, 69, 90]}),
    ("verify_ground_truth", {"ground_truth": "gt:cmapss_fd001", "predictions": [80.0] * 100,
                             "mae_range": [7, 18], "rmse_range": [11, 26]}),
    ("assess_component_health", {"component": "HPC", "efficiency": -0.021,
                                 "flow_modifier": -0.008}),
    ("diagnose_timing_issues", {"efficiency_deviation": -0.01, "flow_deviation": -0.03}),
    ("capacity_soh_calculator", {"battery_id": "B0005", "cycle": 100}),
    ("degradation_stage_classifier", {"battery_id": "B0006", "cycle": 100}),
]


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))
    return ordered[index]


async def measure(data_root: Path, *, calls: int, warmup: int) -> list[dict[str, Any]]:
    """Latency statistics per tool (milliseconds)."""
    from mcp import Client

    from sfbench_jax.mcp.server import ServerConfig, build_server

    server = build_server(ServerConfig(data_root=data_root))
    rows = []
    async with Client(server) as client:
        await client.list_tools()
        for name, arguments in LIGHT_CALLS:
            start = time.perf_counter()
            first = await client.call_tool(name, arguments)
            first_ms = (time.perf_counter() - start) * 1000.0
            if first.is_error:
                raise RuntimeError(f"{name} failed: {first.content}")
            for _ in range(warmup):
                await client.call_tool(name, arguments)
            samples = []
            for _ in range(calls):
                start = time.perf_counter()
                result = await client.call_tool(name, arguments)
                samples.append((time.perf_counter() - start) * 1000.0)
                if result.is_error:
                    raise RuntimeError(f"{name} failed: {result.content}")
            p50 = statistics.median(samples)
            rows.append({"tool": name, "calls": calls, "first_call_ms": round(first_ms, 2),
                         "p50_ms": round(p50, 3), "p90_ms": round(_percentile(samples, 0.9), 3),
                         "min_ms": round(min(samples), 3), "mean_ms": round(
                             statistics.fmean(samples), 3),
                         "calls_per_s": round(1000.0 / p50, 1),
                         "meets_target": p50 < TARGET_P50_MS})
    return rows


def _environment() -> dict[str, Any]:
    import jax

    device = jax.devices()[0]
    return {"device": f"{device.platform}:{getattr(device, 'device_kind', '')}",
            "cpu_count": os.cpu_count(), "python": platform.python_version(),
            "jax": version("jax"), "mcp": version("mcp"), "transport": "in-process (auto)",
            "target_p50_ms": TARGET_P50_MS}


def _table(rows: list[dict[str, Any]], env: dict[str, Any]) -> str:
    header = ("tool", "p50 ms", "p90 ms", "min ms", "first ms", "calls/s", "< 20 ms")
    lines = [f"# MCP tool-call latency, warm, {env['transport']} on {env['device']} "
             f"({env['cpu_count']} CPUs), jax {env['jax']}, mcp {env['mcp']}",
             "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for row in rows:
        lines.append(f"| {row['tool']} | {row['p50_ms']:.2f} | {row['p90_ms']:.2f} | "
                     f"{row['min_ms']:.2f} | {row['first_call_ms']:.0f} | "
                     f"{row['calls_per_s']:.0f} | {'yes' if row['meets_target'] else 'NO'} |")
    worst = max(r["p50_ms"] for r in rows)
    lines.append(f"\nworst p50 {worst:.2f} ms over {len(rows)} light tools "
                 f"({'all below' if worst < TARGET_P50_MS else 'NOT all below'} "
                 f"{TARGET_P50_MS:.0f} ms)")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Entry point (see the module docstring)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-root", default=os.environ.get("SFBENCH_DATA_ROOT"),
                        help="shared data folder (default: $SFBENCH_DATA_ROOT)")
    parser.add_argument("--calls", type=int, default=200, help="timed calls per tool")
    parser.add_argument("--warmup", type=int, default=20, help="untimed calls per tool")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    args = parser.parse_args(argv)
    if not args.data_root:
        parser.error("pass --data-root or set SFBENCH_DATA_ROOT")
    rows = anyio.run(lambda: measure(Path(args.data_root), calls=args.calls,
                                     warmup=args.warmup))
    env = _environment()
    if args.json:
        print(json.dumps({"environment": env, "results": rows}, indent=2))
    else:
        print(_table(rows, env))
    return 0 if all(r["meets_target"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
