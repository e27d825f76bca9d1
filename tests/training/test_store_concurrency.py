"""One candidate store shared by several processes at the same moment, as the jobs of a multirun share it on
a cluster: two real processes running the same DLinear search train every candidate exactly once between
them and leave a complete store; a candidate claimed by another process is left to it and trained last,
once its claim is released; a folder left by a killed writer is replaced; a file system without locks is
named. Trainings are counted from the processes' own log lines, never by patching code."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Sequence
from pathlib import Path

import pytest

from sfbench_jax.config import TrainConfig
from sfbench_jax.data import load, prepare
from sfbench_jax.evaluation import predict_fn, validation_mse
from sfbench_jax.models.registry import MODELS
from sfbench_jax.training import CandidateResult, CandidateStore, plan_search, restore_model, run_search
from sfbench_jax.training.store import Claim

BUDGET = 4
OPTIONS = TrainConfig(max_epochs=2, patience=2, steps_per_epoch=30, candidate_budget=BUDGET, progress=False)
ONE_SHORT_CANDIDATE = TrainConfig(max_epochs=1, patience=1, steps_per_epoch=5, candidate_budget=1, progress=False)
TRAINED = re.compile(r"dlinear trial (\d+): (best val|FAILED)")

# Plans the same search as the test, waits at a barrier (so both processes start training together, after
# their imports), runs it against the shared store and prints its log lines.
SEARCH_SCRIPT = """
import sys, time
from pathlib import Path
from sfbench_jax.config import TrainConfig
from sfbench_jax.data import load, prepare
from sfbench_jax.models.registry import MODELS
from sfbench_jax.training import CandidateStore, plan_search, run_search
store_root, barrier, name = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3]
data = prepare(load("etth1"))
options = TrainConfig(max_epochs=2, patience=2, steps_per_epoch=30, candidate_budget={budget}, progress=False)
plan = plan_search(data, MODELS["dlinear"], options=options)
(barrier / f"ready-{{name}}").touch()
deadline = time.monotonic() + 300
while not (barrier / "go").exists():
    assert time.monotonic() < deadline, "the test never opened the barrier"
    time.sleep(0.01)
run_search(data, plan, store=CandidateStore(store_root), options=options, log=lambda line: print(line, flush=True))
"""

# Holds the claim of one candidate until every other candidate of the search is in the store.
HOLDER_SCRIPT = """
import sys, time
from pathlib import Path
from sfbench_jax.training import CandidateStore
store_root, key, others = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3])
claim = CandidateStore(store_root).claim("etth1", "dlinear", [key], wait=False)
assert claim is not None, "the claim should be free"
print("claimed", flush=True)
deadline = time.monotonic() + 300
while len(list(store_root.glob("etth1/dlinear/*/result.json"))) < others:
    assert time.monotonic() < deadline, "the other candidates never finished"
    time.sleep(0.02)
time.sleep(0.5)  # the search is now waiting for this claim
claim.release()
print("released", flush=True)
"""


@pytest.fixture(scope="module")
def etth1():
    return prepare(load("etth1"))


def _trained_trials(output: str) -> list[int]:
    return [int(match.group(1)) for match in TRAINED.finditer(output)]


def _start(script: str, *arguments: str, stdout) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", textwrap.dedent(script), *arguments], stdout=stdout,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True)


def _wait_for(condition, what: str, processes: list[subprocess.Popen], timeout: float = 300) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        for process in processes:
            assert process.poll() is None, f"a process ended while waiting for {what} (exit {process.returncode})"
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.02)


def test_two_processes_train_each_candidate_once(etth1, tmp_path: Path) -> None:
    store_root, barrier = tmp_path / "store", tmp_path / "barrier"
    barrier.mkdir()
    logs = [tmp_path / "a.log", tmp_path / "b.log"]
    script = SEARCH_SCRIPT.format(budget=BUDGET)
    with logs[0].open("w") as out_a, logs[1].open("w") as out_b:
        processes = [_start(script, str(store_root), str(barrier), name, stdout=out)
                     for name, out in (("a", out_a), ("b", out_b))]
        try:
            _wait_for(lambda: len(list(barrier.glob("ready-*"))) == 2, "both processes to plan", processes)
            (barrier / "go").touch()
            for process in processes:
                assert process.wait(timeout=600) == 0
        finally:
            for process in processes:
                if process.poll() is None:
                    process.kill()
                    process.wait()
    outputs = [log.read_text() for log in logs]
    trained = [_trained_trials(output) for output in outputs]
    print(f"process a trained trials {trained[0]}, process b trained {trained[1]}")
    # exactly once between them: every trial, and no trial in both processes
    assert sorted(trained[0] + trained[1]) == list(range(1, BUDGET + 1)), outputs

    folder = store_root / "etth1" / "dlinear"
    records = [CandidateResult.from_json(json.loads(path.read_text())) for path in folder.glob("*/result.json")]
    assert len(records) == BUDGET and all(record.is_finished for record in records)
    assert not list(folder.rglob("*.tmp")) and not list(folder.glob("*/*orbax-checkpoint-tmp*"))
    store = CandidateStore(store_root)
    for record in records:  # every checkpoint is complete and is the recorded best epoch
        hparams = {key: value for key, value in record.hparams.items() if key != "lr"}
        model = restore_model(etth1, MODELS["dlinear"], hparams, record.model_seed, store.restore(record))
        assert validation_mse(*predict_fn(model), etth1) == pytest.approx(record.best_val_loss, rel=1e-5)

    log: list[str] = []  # a third run finds everything
    plan = plan_search(etth1, MODELS["dlinear"], options=OPTIONS)
    assert sorted(r.candidate_hash for r in run_search(etth1, plan, store=store, options=OPTIONS, log=log.append)) \
        == sorted(r.candidate_hash for r in records)
    assert f"{BUDGET} already in the store, 0 to train" in log[0]


def test_a_claimed_candidate_is_left_to_its_holder_and_trained_last(etth1, tmp_path: Path) -> None:
    store_root = tmp_path / "store"
    plan = plan_search(etth1, MODELS["dlinear"], options=OPTIONS)
    held = plan.keys[0]
    holder_log = tmp_path / "holder.log"
    with holder_log.open("w") as out:
        holder = _start(HOLDER_SCRIPT, str(store_root), held, str(BUDGET - 1), stdout=out)
        try:
            _wait_for(lambda: "claimed" in holder_log.read_text(), "the holder's claim", [holder])
            log: list[str] = []
            results = run_search(etth1, plan, store=CandidateStore(store_root), options=OPTIONS, log=log.append)
            assert holder.wait(timeout=60) == 0
        finally:
            if holder.poll() is None:
                holder.kill()
                holder.wait()
    assert "released" in holder_log.read_text()
    order = _trained_trials("\n".join(log))
    assert order == [c.trial_number for c in plan.candidates[1:]] + [plan.candidates[0].trial_number], log
    assert [r.candidate_hash for r in results] == plan.keys and all(r.is_finished for r in results)


def test_leftovers_of_a_killed_writer_are_replaced(etth1, tmp_path: Path) -> None:
    plan = plan_search(etth1, MODELS["dlinear"], options=ONE_SHORT_CANDIDATE)
    store = CandidateStore(tmp_path / "store")
    folder = store.candidate_dir("etth1", "dlinear", plan.keys[0])
    for leftover in ("checkpoint", "checkpoint.orbax-checkpoint-tmp-1700000000"):  # a writer killed mid-save
        (folder / leftover).mkdir(parents=True)
        (folder / leftover / "partial").write_text("half-written")
    (result,) = run_search(etth1, plan, store=store, options=ONE_SHORT_CANDIDATE)
    assert sorted(path.name for path in folder.iterdir()) == ["checkpoint", "result.json"]
    assert not (folder / "checkpoint" / "partial").exists() and result.is_finished
    store.restore(result)


class FinishedWhileWaiting(CandidateStore):
    """A real store into which another process's finished candidate lands while this search waits for its claim:
    the folder `finished` (a candidate trained into another store) is copied in just before the claim is granted."""

    def __init__(self, root: Path, finished: Path) -> None:
        super().__init__(root)
        self.finished = finished

    def claim_first_free(self, dataset: str, architecture: str, groups: Sequence[Sequence[str]]) -> tuple[int, Claim]:
        shutil.copytree(self.finished, self.candidate_dir(dataset, architecture, self.finished.name))
        return super().claim_first_free(dataset, architecture, groups)


def test_a_group_finished_while_waiting_for_its_claim_is_not_trained_again(etth1, tmp_path: Path) -> None:
    """The case the two-process test above meets by chance (CI's slow step runs that one): when the claim is
    granted, the search looks in the store again and takes what another process finished meanwhile."""
    plan = plan_search(etth1, MODELS["dlinear"], options=ONE_SHORT_CANDIDATE)
    elsewhere = CandidateStore(tmp_path / "elsewhere")
    (trained,) = run_search(etth1, plan, store=elsewhere, options=ONE_SHORT_CANDIDATE)
    store = FinishedWhileWaiting(tmp_path / "store", elsewhere.candidate_dir("etth1", "dlinear", plan.keys[0]))
    log: list[str] = []
    (result,) = run_search(etth1, plan, store=store, options=ONE_SHORT_CANDIDATE, log=log.append)
    assert "0 already in the store, 1 to train" in log[0] and _trained_trials("\n".join(log)) == [], log
    assert result == trained


def test_claims_are_per_process_and_released_by_death(tmp_path: Path) -> None:
    store = CandidateStore(tmp_path / "store")
    holder = _start("""
        import sys, time
        from pathlib import Path
        from sfbench_jax.training import CandidateStore
        claim = CandidateStore(Path(sys.argv[1])).claim("etth1", "dlinear", ["a", "b"], wait=False)
        print("claimed", flush=True)
        time.sleep(300)
    """, str(tmp_path / "store"), stdout=subprocess.PIPE)
    try:
        assert holder.stdout.readline().strip() == "claimed"
        assert store.claim("etth1", "dlinear", ["b"], wait=False) is None  # held by the other process
        index, claim = store.claim_first_free("etth1", "dlinear", [["a"], ["a", "c"], ["c"]])
        assert index == 2  # the first group nobody holds
        claim.release()
        killer = threading.Timer(0.5, holder.kill)  # a job killed while training: the kernel drops its locks
        killer.start()
        index, claim = store.claim_first_free("etth1", "dlinear", [["a"], ["b"]])  # every group held: wait
        assert index == 0 and holder.wait(timeout=60) is not None
        claim.release()
        killer.join()
    finally:
        holder.kill()  # already dead unless the test failed before the timer fired
        holder.wait()
        holder.stdout.close()
    with store.claim("etth1", "dlinear", ["a", "b"], wait=False) as claim:
        assert claim is not None
