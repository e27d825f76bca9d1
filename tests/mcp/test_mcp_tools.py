"""Every light tool through the official MCP client, in-process, against hand-computed values.

Expected numbers are the worked examples of shared/spec/phm_kernels.md (computed there with
NumPy/SciPy in float64) or facts of the datasets' readmes; tolerances allow for float32 kernels.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from mcp import Client
from mcp.server import MCPServer

pytestmark = pytest.mark.anyio


async def call(server: MCPServer, name: str, **arguments: Any) -> dict[str, Any]:
    async with Client(server) as client:
        result = await client.call_tool(name, arguments)
    assert not result.is_error, result.content
    structured = result.structured_content
    assert structured is not None
    assert structured["tool_version"] and structured["kernel"] and "units" in structured
    # The text content is the same object as JSON (what a text-only client reads).
    assert json.loads(result.content[0].text) == structured
    return structured


async def test_catalogue_has_typed_schemas(server: MCPServer) -> None:
    async with Client(server) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
    for name in ("load_dataset", "calculate_mae", "assess_safety_risk", "check_compliance",
                 "assess_vibration_severity", "diagnose_bearing_fault", "web_search"):
        assert name in tools
    risk = tools["assess_safety_risk"].input_schema
    assert risk["properties"]["severity"]["minimum"] == 1
    assert risk["properties"]["severity"]["maximum"] == 10
    assert risk["properties"]["severity"]["type"] == "integer"
    assert set(risk["required"]) == {"failure_mode", "severity", "probability", "detectability"}
    zone = tools["assess_vibration_severity"].input_schema["properties"]
    assert zone["machine_class"]["enum"] == ["I", "II", "III", "IV"]
    assert tools["assess_safety_risk"].output_schema["properties"]["risk_level"]["enum"] == [
        "low", "medium", "high", "critical"]
    for tool in tools.values():
        assert tool.description, f"{tool.name} has no description"
        assert (tool.meta or {}).get("server") in {"prognostics-server", "maintenance-server",
                                                   "battery-prognostics-server",
                                                   "forecasting-benchmark"}


async def test_maintenance_economics(server: MCPServer) -> None:
    cost = await call(server, "calculate_maintenance_cost", preventive_cost=5000,
                      frequency_per_year=4, downtime_hours=8, hourly_rate=1000)
    assert cost["annual_cost"] == pytest.approx(52_000.0)
    failure = await call(server, "calculate_failure_cost", failure_probability=0.3,
                         repair_cost=50_000, downtime_hours=48, hourly_rate=1000,
                         consequential_cost=20_000)
    assert failure["expected_annual_cost"] == pytest.approx(35_400.0)
    assert failure["cost_per_failure"] == pytest.approx(118_000.0)
    roi = await call(server, "calculate_maintenance_roi", reactive_annual_cost=118_000,
                     preventive_annual_cost=52_000, residual_failure_annual_cost=5_900,
                     program_cost=40_000)
    assert roi["annual_savings"] == pytest.approx(60_100.0)
    assert roi["roi"] == pytest.approx(0.5025, rel=1e-5)
    assert roi["payback_months"] == pytest.approx(7.99, abs=0.01)
    never = await call(server, "calculate_maintenance_roi", reactive_annual_cost=10_000,
                       preventive_annual_cost=52_000, residual_failure_annual_cost=0,
                       program_cost=40_000)
    assert never["payback_years"] is None and never["roi"] < 0


async def test_schedules(server: MCPServer) -> None:
    schedule = await call(server, "optimize_maintenance_schedule", rul_estimate=100,
                          rul_std=20, preventive_cost=1, failure_cost=10)
    assert schedule["mode"] == "cost_optimal"
    assert schedule["maintain_in"] == pytest.approx(58.0, abs=0.5)
    assert schedule["rul_threshold"] == pytest.approx(42.0, abs=0.5)
    assert schedule["p_fail_before"] == pytest.approx(0.018, abs=0.002)
    margin = await call(server, "optimize_maintenance_schedule", rul_estimate=100, rul_std=20,
                        preventive_cost=1, failure_cost=10, safety_margin=0.3)
    assert margin["mode"] == "safety_margin" and margin["maintain_in"] == pytest.approx(70.0)
    age = await call(server, "optimize_replacement_age", weibull_shape=2, weibull_scale=1000,
                     preventive_cost=1, failure_cost=10)
    assert age["status"] == "optimal"
    assert age["optimal_age"] == pytest.approx(336.4, abs=0.5)
    assert age["cost_rate"] == pytest.approx(0.0060561, rel=1e-4)
    wear_out_free = await call(server, "optimize_replacement_age", weibull_shape=1.0,
                               weibull_scale=1000, preventive_cost=1, failure_cost=10)
    assert wear_out_free["status"] == "run_to_failure"
    assert wear_out_free["optimal_age"] is None


@pytest.mark.parametrize(("ratings", "rpn", "level", "override"), [
    ((8, 5, 4), 160, "high", False),
    ((9, 2, 2), 36, "high", True),
    ((10, 5, 5), 250, "critical", False),
    ((3, 3, 3), 27, "low", False),
])
async def test_fmea_risk(server: MCPServer, ratings: tuple[int, int, int], rpn: int, level: str,
                         override: bool) -> None:
    severity, occurrence, detection = ratings
    risk = await call(server, "assess_safety_risk", failure_mode="bearing seizure",
                      severity=severity, probability=occurrence, detectability=detection)
    assert (risk["rpn"], risk["risk_level"], risk["severity_override_applied"]) == (
        rpn, level, override)


async def test_fmea_ranking_accepts_json_strings(server: MCPServer) -> None:
    as_lists = await call(server, "rank_failure_modes", failure_modes=["seal leak", "overheat"],
                          severity=[3, 8], occurrence=[3, 5], detection=[3, 4])
    as_strings = await call(server, "rank_failure_modes",
                            failure_modes='["seal leak", "overheat"]', severity="[3, 8]",
                            occurrence="[3, 5]", detection="[3, 4]")
    assert as_lists == as_strings
    assert as_lists["top_priority"] == "overheat"
    assert [m["rank"] for m in as_lists["ranking"]] == [1, 2]


async def test_safety_standards(server: MCPServer) -> None:
    sil2 = await call(server, "check_compliance", standard="IEC61508", target_level="SIL 2",
                      failure_measure=8.76e-3)
    assert sil2["compliant"] is True and sil2["achieved_level"] == "SIL 2"
    sil3 = await call(server, "check_compliance", standard="IEC61508", target_level="3",
                      failure_measure=8.76e-3)
    assert sil3["compliant"] is False
    pl_c = await call(server, "check_compliance", standard="ISO13849", target_level="PL c",
                      failure_measure=2e-6)
    pl_d = await call(server, "check_compliance", standard="ISO13849", target_level="d",
                      failure_measure=2e-6)
    assert (pl_c["compliant"], pl_c["achieved_level"], pl_d["compliant"]) == (True, "PL c", False)
    one = await call(server, "calculate_pfd", architecture="1oo1", lambda_du_per_hour=2e-6,
                     proof_test_interval_hours=8760)
    assert one["pfd_avg"] == pytest.approx(8.76e-3, rel=1e-5) and one["achieved_sil"] == 2
    two = await call(server, "calculate_pfd", architecture="1oo2", lambda_du_per_hour=2e-6,
                     proof_test_interval_hours=8760, common_cause_beta=0.1)
    assert two["pfd_avg"] == pytest.approx(9.589e-4, rel=1e-3) and two["achieved_sil"] == 3
    noise = await call(server, "assess_noise_exposure", levels_dba=[95.0], hours=[6.0])
    assert noise["dose_pct"] == pytest.approx(150.0, rel=1e-5)
    assert noise["twa_dba"] == pytest.approx(92.92, abs=0.01) and noise["over_pel"] is True
    unbalance = await call(server, "check_voltage_unbalance", line_voltages=[462, 463, 455])
    assert unbalance["unbalance_pct"] == pytest.approx(1.087, abs=1e-3)
    assert unbalance["derating_required"] is True
    exposure = await call(server, "assess_vibration_exposure", acceleration_m_s2=[4.0],
                          hours=[2.0])
    assert exposure["a8_m_s2"] == pytest.approx(2.0) and exposure["over_action_value"] is False
    faa = await call(server, "check_inspection_status", hours_since_100h=105,
                     months_since_annual=3, for_hire=True)
    assert faa["within_10h_ferry_allowance"] is True and faa["annual_due"] is False


async def test_vibration_and_bearings(server: MCPServer) -> None:
    zones = [(await call(server, "assess_vibration_severity", velocity_rms_mm_s=v,
                         machine_class="II"))["zone"] for v in (0.5, 1.12, 2.79, 2.8, 7.1, 10.0)]
    assert zones == ["A", "B", "B", "C", "D", "D"]
    rigid = await call(server, "assess_vibration_severity", velocity_rms_mm_s=3.0,
                       standard="ISO10816-3", group=2, foundation="rigid")
    flexible = await call(server, "assess_vibration_severity", velocity_rms_mm_s=3.0,
                          standard="ISO10816-3", group=1, foundation="flexible")
    assert (rigid["zone"], flexible["zone"]) == ("C", "A")
    assert "20816" in rigid["standard_edition"]
    peak = await call(server, "convert_vibration_units", value=0.15, from_unit="in/s pk",
                      to_unit="mm/s rms")
    assert peak["value"] == pytest.approx(2.694077, rel=1e-5)
    accel = await call(server, "convert_vibration_units", value=1.0, from_unit="g rms",
                       to_unit="mm/s rms", frequency_hz=100)
    assert accel["value"] == pytest.approx(15.608, rel=1e-4)
    freqs = await call(server, "calculate_bearing_frequencies", rpm=1797)
    assert (freqs["ftf_hz"], freqs["bpfo_hz"], freqs["bpfi_hz"], freqs["bsf_hz"]) == (
        pytest.approx(11.929, abs=1e-3), pytest.approx(107.364, abs=1e-3),
        pytest.approx(162.186, abs=1e-3), pytest.approx(70.584, abs=1e-3))


async def test_metrics_and_trends(server: MCPServer) -> None:
    truth, pred = [112, 98, 69, 82], [100, 105, 69, 90]
    mae = await call(server, "calculate_mae", ground_truth=truth, predictions=pred)
    rmse = await call(server, "calculate_rmse", ground_truth=json.dumps(truth),
                      predictions=json.dumps(pred))
    assert mae["value"] == pytest.approx(6.75) and rmse["value"] == pytest.approx(8.015610)
    verified = await call(server, "verify_ground_truth", ground_truth=truth, predictions=pred,
                          mae_range=[5, 10], rmse_range=[0, 8])
    assert verified["phm08_score"] == pytest.approx(3.756317, rel=1e-5)
    assert (verified["mae_ok"], verified["rmse_ok"]) == (True, False)
    assert verified["ground_truth_status"] == "outside_range"
    accuracy = await call(server, "calculate_accuracy", ground_truth=list("aabbcc"),
                          predictions=list("abbbca"))
    assert accuracy["accuracy"] == pytest.approx(0.666667, abs=1e-6)
    assert accuracy["macro_f1"] == pytest.approx(0.655556, abs=1e-6)
    trend = await call(server, "detect_degradation_trend",
                       cycle_data=[1.0, 1.2, 1.1, 1.5, 1.7, 1.6, 2.0, 2.2])
    assert trend["trend"] == "INCREASING" and trend["n"] == 8
    assert trend["p_value"] == pytest.approx(0.004434, abs=2e-6)
    assert trend["sen_slope"] == pytest.approx(0.166667, abs=1e-5)
    line = [2.0 - 0.01 * t for t in range(1, 11)]
    crossing = await call(server, "detect_degradation_trend", cycle_data=line, threshold=1.4)
    assert crossing["time_to_threshold"] == pytest.approx(50.0, abs=1e-3)
    assert crossing["trend"] == "DECREASING"


async def test_cmapss_handles(server: MCPServer, data_root: Path) -> None:
    test = await call(server, "load_dataset", dataset_name="cmapss_fd001", split="test")
    assert test["handle"] == "ds:cmapss_fd001:test"
    assert (test["summary"]["n_units"], test["summary"]["n_rows"]) == (100, 13096)
    train = await call(server, "load_dataset", dataset_name="FD004", split="train")
    with gzip.open(data_root / "phm/cmapss/train_fd004.txt.gz", "rt") as handle:  # whole file: 249 units, 61,249 rows
        units = [line.split()[0] for line in handle if line.strip()]
    assert (train["summary"]["n_units"], train["summary"]["n_rows"]) == (len(set(units)), len(units))
    truth = await call(server, "load_ground_truth", dataset_name="cmapss_fd001")
    assert truth["handle"] == "gt:cmapss_fd001" and truth["n_items"] == 100
    assert "values" not in truth  # the truth itself never leaves the server
    with gzip.open(data_root / "phm/cmapss/rul_fd001.txt.gz", "rt") as handle:
        true_rul = np.array([float(line) for line in handle if line.strip()])
    zero = await call(server, "calculate_mae", ground_truth=truth["handle"],
                      predictions=[0.0] * 100)
    assert zero["value"] == pytest.approx(float(np.mean(true_rul)), rel=1e-6)


async def test_cmapss_sensor_trend(server: MCPServer, data_root: Path) -> None:
    # s11 (Ps30) rises as the HPC degrades; unit 1 of FD001 train runs 192 cycles to failure.
    trend = await call(server, "detect_degradation_trend", dataset_handle="ds:cmapss_fd001:train",
                       unit_id=1, sensor="s11")
    assert trend["trend"] == "INCREASING" and trend["n"] == 192


@pytest.mark.parametrize(("record", "label"), [
    ("cwru_bearing_nie", "inner_race"), ("cwru_bearing_ose", "outer_race"), ("cwru_bearing_vaw", "normal")])
async def test_bearing_diagnosis_on_cwru(server: MCPServer, record: str, label: str) -> None:
    loaded = await call(server, "load_dataset", dataset_name=record, split="signal")
    diagnosis = await call(server, "diagnose_bearing_fault", dataset_handle=loaded["handle"])
    assert diagnosis["fault_label"] == label


async def test_offline_distractors(server: MCPServer) -> None:
    search = await call(server, "web_search", query="C-MAPSS RUL benchmark")
    weather = await call(server, "weather_data_loader", location="plant 3")
    assert search["results"] == [] and weather["results"] == []
    assert "offline" in search["note"]


def test_server_config_validation_and_warmup(data_root: Path) -> None:
    from sfbench_jax.mcp.server import ServerConfig, build_server, tool_groups_of

    with pytest.raises(ValueError, match="unknown or empty tool groups"):
        ServerConfig(data_root=data_root, groups=("prognostics", "weather"))
    with pytest.raises(ValueError, match="repeat"):
        ServerConfig(data_root=data_root, groups=("battery", "battery"))
    config = ServerConfig(data_root=data_root, groups=("maintenance",), warmup=True)
    assert build_server(config).name == "sfbench-mcp"
    groups = tool_groups_of(ServerConfig(data_root=data_root))
    assert groups["predict_rul"] == "prognostics" and groups["web_search"] == "maintenance"
    assert groups["capacity_soh_calculator"] == "battery"
    assert groups["seasonal_naive_robustness"] == "benchmark"
