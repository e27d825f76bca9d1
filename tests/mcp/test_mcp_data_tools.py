"""Data-backed tools (battery cells, C-MAPSS RUL model) against independent NumPy/pandas
computations on the raw files."""

from __future__ import annotations

import gzip
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from mcp import Client
from mcp.server import MCPServer

pytestmark = pytest.mark.anyio


async def call(server: MCPServer, name: str, **arguments: Any) -> dict[str, Any]:
    async with Client(server) as client:
        result = await client.call_tool(name, arguments)
    assert not result.is_error, result.content
    return dict(result.structured_content)


async def error(server: MCPServer, name: str, **arguments: Any) -> str:
    async with Client(server) as client:
        result = await client.call_tool(name, arguments)
    assert result.is_error
    return result.content[0].text


def capacities(data_root: Path, cell: str) -> np.ndarray:
    path = data_root / "phm" / "nasa_battery" / f"{cell.lower()}_discharge.parquet"
    frame = pd.read_parquet(path, columns=["cycle_num", "Capacity"])
    return frame.groupby("cycle_num", sort=True)["Capacity"].first().to_numpy()


async def test_soh_and_stage_match_the_raw_capacities(server: MCPServer, data_root: Path) -> None:
    cap = capacities(data_root, "B0005")
    soh = await call(server, "capacity_soh_calculator", battery_id="B0005", cycle=100)
    assert soh["capacity_ah"] == pytest.approx(cap[99])
    assert soh["soh_first_cycle"] == pytest.approx(cap[99] / cap[0], rel=1e-6)
    assert soh["soh_rated"] == pytest.approx(cap[99] / 2.0, rel=1e-6)
    assert soh["eol_cycle"] == int(np.argmax(cap < 1.4)) + 1
    stage = await call(server, "degradation_stage_classifier", battery_id="b0005", cycle=100)
    rated = cap[99] / 2.0
    expected = ("HEALTHY" if rated > 0.9 else "EARLY_DEGRADATION" if rated > 0.8
                else "ACCELERATED_DEGRADATION" if rated > 0.7 else "EOL")
    assert stage["stage"] == expected
    censored = await call(server, "capacity_soh_calculator", battery_id="B0007", cycle=168)
    assert censored["eol_cycle"] is None and censored["eol_reached"] is False


async def test_linear_fade_rul_matches_least_squares(server: MCPServer, data_root: Path) -> None:
    cap = capacities(data_root, "B0006")
    slope, intercept = np.polyfit(np.arange(1.0, 61.0), cap[:60], 1)
    eol = (1.4 - intercept) / slope
    prediction = await call(server, "rul_predictor_linear", battery_id="B0006", observed_cycles=60)
    assert prediction["predicted_eol_cycle"] == pytest.approx(eol, rel=1e-4)
    assert prediction["predicted_rul"] == pytest.approx(eol - 60, rel=1e-3)
    assert prediction["fit"]["slope_ah_per_cycle"] == pytest.approx(slope, rel=1e-4)
    exp = await call(server, "rul_predictor_empirical", battery_id="B0006", observed_cycles=60)
    rate, log_c0 = np.polyfit(np.arange(1.0, 61.0), np.log(cap[:60]), 1)
    assert exp["predicted_eol_cycle"] == pytest.approx(np.log(np.exp(log_c0) / 1.4) / -rate,
                                                       rel=1e-3)


async def test_cycle_summary_and_health_report(server: MCPServer, data_root: Path) -> None:
    cap = capacities(data_root, "B0018")
    summary = await call(server, "fetch_cycle_summary", battery_id="B0018", start_cycle=10,
                         end_cycle=12)
    assert [r["cycle"] for r in summary["rows"]] == [10, 11, 12]
    assert [r["capacity_ah"] for r in summary["rows"]] == pytest.approx(cap[9:12].tolist())
    assert summary["n_cycles_total"] == cap.shape[0] == 132
    report = await call(server, "generate_health_report", battery_id="B0018", cycle=60)
    linear = await call(server, "rul_predictor_linear", battery_id="B0018", observed_cycles=60)
    assert report["predicted_rul"] == pytest.approx(linear["predicted_rul"])
    assert report["triage_level"] in {"routine", "elevated", "urgent", "emergency"}
    anomalies = await call(server, "anomaly_detector", battery_id="B0018")
    firsts = [f["first_flagged_cycle"] for f in anomalies["features"].values()
              if f["first_flagged_cycle"] is not None]
    assert anomalies["first_anomalous_cycle"] == (min(firsts) if firsts else None)


async def test_battery_errors(server: MCPServer) -> None:
    assert "outside 1..168" in await error(server, "capacity_soh_calculator",
                                           battery_id="B0005", cycle=500)
    assert "[unknown_dataset]" in await error(server, "fetch_impedance_data",
                                              battery_id="B0099")
    assert "must not contain the target" in await error(
        server, "compare_to_baseline", battery_id="B0005", baseline_ids=["B0005", "B0006"])
    assert "observed_cycles=200" in await error(server, "rul_predictor_linear",
                                                battery_id="B0018", observed_cycles=200)


async def test_cmapss_rul_model_handles(server: MCPServer, data_root: Path) -> None:
    model = await call(server, "train_rul_model", dataset_name="cmapss_fd001")
    assert model["handle"] == "model:cmapss_fd001:linear_health_index"
    assert model["n_training_units"] == 100
    data = await call(server, "load_dataset", dataset_name="cmapss_fd001", split="test")
    pred = await call(server, "predict_rul", model_handle=model["handle"],
                      dataset_handle=data["handle"], top_n=5)
    values = np.asarray(pred["predicted_rul"])
    assert pred["n_units"] == 100 and pred["unit_ids"] == list(range(1, 101))
    assert np.all((values >= 0) & (values <= 125))
    assert pred["lowest_rul_units"] == (np.argsort(values, kind="stable")[:5] + 1).tolist()
    with gzip.open(data_root / "phm/cmapss/rul_fd001.txt.gz", "rt") as handle:
        truth = np.array([float(line) for line in handle if line.strip()])
    mae = await call(server, "calculate_mae", ground_truth="gt:cmapss_fd001",
                     predictions=pred["handle"])
    rmse = await call(server, "calculate_rmse", ground_truth="gt:cmapss_fd001",
                      predictions=pred["handle"])
    assert mae["value"] == pytest.approx(np.mean(np.abs(values - truth)), abs=1e-3)
    assert rmse["value"] == pytest.approx(np.sqrt(np.mean((values - truth) ** 2)), abs=1e-3)


async def test_rul_handle_errors(server: MCPServer) -> None:
    assert "[unknown_handle]" in await error(
        server, "predict_rul", model_handle="model:cmapss_fd001:oracle",
        dataset_handle="ds:cmapss_fd001:test")
    assert "[unknown_handle]" in await error(
        server, "predict_rul", model_handle="cmapss_fd001", dataset_handle="ds:cmapss_fd001:test")
    assert "[unknown_dataset]" in await error(
        server, "predict_rul", model_handle="model:cmapss_fd001:linear_health_index",
        dataset_handle="ds:nasa_battery_b0005:discharge")
    assert "[domain_error]" in await error(server, "calculate_mae",
                                           ground_truth="gt:cmapss_fd002",
                                           predictions=[1.0] * 100)
