"""The candidate store and resumable sweeps: identities, Orbax round trip, failed candidates, selection,
and a sweep killed mid-way that, run again, retrains nothing that had finished."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from sfbench_jax.config import TrainConfig
from sfbench_jax.data import load, prepare
from sfbench_jax.evaluation import predict_fn, validation_mse
from sfbench_jax.models.registry import MODELS
from sfbench_jax.training import (
    CandidateResult,
    CandidateStore,
    plan_search,
    restore_model,
    run_search,
    select_winner,
)
from sfbench_jax.training.store import candidate_hash

OPTIONS = TrainConfig(max_epochs=2, patience=2, steps_per_epoch=16, progress=False)
FIXED = {"moving_avg": 25, "individual": False, "init_weights": False}


@pytest.fixture(scope="module")
def etth1():
    return prepare(load("etth1"))


def test_identity_hash_is_stable_and_sensitive() -> None:
    identity = {"dataset": "etth1", "hparams": {"lr": 0.001, "moving_avg": 25}, "model_seed": 3,
                "protocol": {"max_epochs": 200}}
    reordered = {"protocol": {"max_epochs": 200}, "model_seed": 3,
                 "hparams": {"moving_avg": 25, "lr": 0.001}, "dataset": "etth1"}
    assert candidate_hash(identity) == candidate_hash(reordered)
    assert len(candidate_hash(identity)) == 24
    changed = [dict(identity, dataset="beijing_air_tiantan"), dict(identity, model_seed=4),
               dict(identity, hparams={"lr": 0.0005, "moving_avg": 25}), dict(identity, protocol={"max_epochs": 3})]
    assert len({candidate_hash(identity)} | {candidate_hash(c) for c in changed}) == 5


def test_plan_identities_include_data_and_protocol(etth1) -> None:
    plan = plan_search(etth1, MODELS["dlinear"], options=replace(OPTIONS, candidate_budget=3))
    other = plan_search(etth1, MODELS["dlinear"],
                        options=TrainConfig(max_epochs=3, steps_per_epoch=16, candidate_budget=3))
    assert plan.keys != other.keys and [c.hparams for c in plan.candidates] == [c.hparams for c in other.candidates]
    identity = plan.identities[0]
    assert identity["data_sha256"] == etth1.series.content_sha256
    assert identity["signature"] == etth1.spec.signature and identity["model_seed"] == plan.model_seed


def test_failed_candidate_is_recorded_and_the_sweep_goes_on(etth1, tmp_path: Path) -> None:
    plan = plan_search(etth1, MODELS["dlinear"], options=replace(OPTIONS, candidate_budget=5),
                       grid={"lr": [1e30, 1e-3]},
                       fixed=FIXED)
    store = CandidateStore(tmp_path / "store")
    results = run_search(etth1, plan, store=store, options=OPTIONS)
    failed = [r for r in results if r.hparams["lr"] == 1e30]
    assert len(results) == 2 and len(failed) == 1
    assert (failed[0].status, failed[0].best_val_loss, failed[0].stop_reason) == ("failed", None, "non_finite")
    folder = store.candidate_dir("etth1", "dlinear", failed[0].candidate_hash)
    assert not (folder / "checkpoint").exists() and (folder / "result.json").is_file()
    winner = select_winner(results)
    assert winner.hparams["lr"] == 1e-3 and winner.is_finished
    log: list[str] = []
    assert run_search(etth1, plan, store=store, options=OPTIONS, log=log.append) == results
    assert "2 already in the store, 0 to train" in log[0]


def test_checkpoint_round_trip_reproduces_the_validation_loss(etth1, tmp_path: Path) -> None:
    plan = plan_search(etth1, MODELS["dlinear"], options=replace(OPTIONS, candidate_budget=1),
                       fixed={**FIXED, "lr": 5e-4})
    store = CandidateStore(tmp_path / "store")
    (result,) = run_search(etth1, plan, store=store, options=OPTIONS)
    stored = json.loads((store.candidate_dir("etth1", "dlinear", result.candidate_hash) / "result.json").read_text())
    assert CandidateResult.from_json(stored) == result and len(result.val_curve) == 2
    model = restore_model(etth1, MODELS["dlinear"], FIXED, result.model_seed, store.restore(result))
    predict, state = predict_fn(model)
    assert validation_mse(predict, state, etth1) == pytest.approx(result.best_val_loss, rel=1e-6)
    with pytest.raises(ValueError, match=r"Checkpoint parameters '\w+' has shape \(96,\), the model expects \(7, 96\)"):
        restore_model(etth1, MODELS["dlinear"], {**FIXED, "individual": True}, result.model_seed, store.restore(result))


def test_selection_tie_break() -> None:
    def result(key: str, trial: int, loss: float | None) -> CandidateResult:
        return CandidateResult(candidate_hash=key, identity={}, dataset="etth1", architecture="dlinear",
                               method="baseline", trial_number=trial, grid_index=0, hparams={"lr": 1e-3},
                               model_seed=1, status="failed" if loss is None else "finished", best_val_loss=loss,
                               best_epoch=0, epochs_run=1, stop_reason="patience", val_curve=[loss],
                               train_curve=[loss], train_seconds=1.0, group_size=1, code_version="0")
    pool = [result("b", 3, 0.5), result("a", 4, 0.5), result("c", 1, 0.6), result("d", 2, None)]
    assert select_winner(pool).candidate_hash == "b"  # lowest loss; tie -> smaller trial number
    assert select_winner([result("z", 2, 0.5), result("y", 2, 0.5)]).candidate_hash == "y"  # then variant id
    with pytest.raises(ValueError, match="No candidate finished training"):
        select_winner([result("d", 2, None)])


def test_unwritable_store_fails_before_training(etth1, tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    plan = plan_search(etth1, MODELS["dlinear"], options=replace(OPTIONS, candidate_budget=1))
    with pytest.raises(PermissionError, match="Cannot create the candidate store.*train.store_dir=PATH"):
        run_search(etth1, plan, store=CandidateStore(blocker / "store"), options=OPTIONS)


SWEEP_SCRIPT = """
import sys
from pathlib import Path
from sfbench_jax.data import load, prepare
from sfbench_jax.config import TrainConfig
from sfbench_jax.models.registry import MODELS
from sfbench_jax.training import CandidateStore, plan_search, run_search
data = prepare(load("etth1"))
options = TrainConfig(max_epochs=3, patience=3, steps_per_epoch=60, candidate_budget=6, progress=False)
plan = plan_search(data, MODELS["dlinear"], options=options)
run_search(data, plan, store=CandidateStore(Path(sys.argv[1])), options=options)
"""


def _finished(store_root: Path) -> dict[str, tuple[int, bytes]]:
    return {path.parent.name: (path.stat().st_mtime_ns, path.read_bytes())
            for path in store_root.glob("etth1/dlinear/*/result.json")}


def test_killed_sweep_resumes_without_retraining(etth1, tmp_path: Path) -> None:
    store_root = tmp_path / "store"
    script = tmp_path / "sweep.py"
    script.write_text(textwrap.dedent(SWEEP_SCRIPT))
    errors = tmp_path / "stderr.txt"
    with errors.open("wb") as stderr:
        process = subprocess.Popen([sys.executable, str(script), str(store_root)], stdout=subprocess.DEVNULL,
                                   stderr=stderr, start_new_session=True)
        deadline = time.monotonic() + 300
        try:
            while len(_finished(store_root)) < 2:
                assert process.poll() is None, errors.read_text()[-2000:]
                assert time.monotonic() < deadline, "the sweep did not finish two candidates in time"
                time.sleep(0.05)
        finally:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    before = _finished(store_root)
    assert 2 <= len(before) < 6, "kill the sweep mid-way"
    checkpoints = {key: sorted((p.relative_to(store_root), p.stat().st_mtime_ns)
                               for p in (store_root / "etth1/dlinear" / key / "checkpoint").rglob("*"))
                   for key in before}

    options = TrainConfig(max_epochs=3, patience=3, steps_per_epoch=60, candidate_budget=6, progress=False)
    plan = plan_search(etth1, MODELS["dlinear"], options=options)
    log: list[str] = []
    results = run_search(etth1, plan, store=CandidateStore(store_root), options=options, log=log.append)
    assert f"{len(before)} already in the store, {6 - len(before)} to train" in log[0]
    trained = {line.split("trial ")[1].split(":")[0] for line in log if ": best val" in line}
    expected = {str(plan.candidates[i].trial_number) for i, key in enumerate(plan.keys) if key not in before}
    assert trained == expected
    after = _finished(store_root)
    assert len(after) == 6 and all(after[key] == before[key] for key in before)  # untouched, not rewritten
    for key, files in checkpoints.items():
        assert sorted((p.relative_to(store_root), p.stat().st_mtime_ns)
                      for p in (store_root / "etth1/dlinear" / key / "checkpoint").rglob("*")) == files
    assert all(result.is_finished for result in results)
    assert np.isfinite(select_winner(results).best_val_loss)
