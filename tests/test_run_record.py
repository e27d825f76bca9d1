"""Run folders are complete or visibly not (issue 21, defect 3; docs/reliability.md): every run folder carries a
completion record written last; a completed run is never overwritten (the `sfbench` command stops before any
work), `overwrite=true` swaps the new run in whole, and kill -9 at any moment of such a re-run leaves the folder
holding the complete old run or the complete new one, as its record shows."""

from __future__ import annotations

import errno
import hashlib
import json
import os
import random
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pandas as pd
import pytest
from sfbench_cli import run_sfbench as _sfbench
from sfbench_cli import sfbench_command as _sfbench_command

from sfbench_jax.run_folder.claim import RunFolderTakenError, claim_run_folder
from sfbench_jax.run_folder.damage import DamagedRunError
from sfbench_jax.run_folder.loading import gather_runs, load_run
from sfbench_jax.run_folder.names import RECORD_FILE
from sfbench_jax.run_folder.record import verify_record, write_record

#: The cheap real run of these tests (SeasonalNaive on ETTh1, 1,000 windows).
COMMON = ["model=seasonal_naive", "eval=quick", "dataset=etth1", "eval.bootstrap_draws=200"]


def _tree_digest(folder: Path) -> dict[str, str]:
    """Every file below `folder` (hidden ones included) -> its SHA-256."""
    return {str(path.relative_to(folder)): hashlib.sha256(path.read_bytes()).hexdigest()
            for path in sorted(folder.rglob("*")) if path.is_file()}


@pytest.fixture(scope="module")
def cache_dir(session_cache_dir: Path) -> Path:
    """The test session's derived-data and compilation cache (its runs load the programs other tests compiled)."""
    return session_cache_dir


@pytest.fixture(scope="module")
def completed_run(tmp_path_factory: pytest.TempPathFactory, cache_dir: Path) -> Path:
    """A real completed run, written by `sfbench` itself."""
    folder = tmp_path_factory.mktemp("completed") / "run"
    completed = _sfbench(*COMMON, f"cache_dir={cache_dir}", f"hydra.run.dir={folder}")
    assert completed.returncode == 0, completed.stderr[-3000:]
    return folder


def test_record_covers_every_file_of_the_run(completed_run: Path) -> None:
    record = json.loads((completed_run / RECORD_FILE).read_text())
    assert sorted(record["files"]) == ["candidates.csv", "manifest.json", "per_window.parquet",
                                       "scenario_heatmap.png", "summary.csv"]
    for name, entry in record["files"].items():
        data = (completed_run / name).read_bytes()
        assert entry == {"bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}
    assert record["run_key"]["dataset"] == "etth1" and record["run_key"]["architecture"] == "seasonal_naive"
    assert load_run(completed_run).row["k"] == 1000


def test_a_changed_byte_a_missing_file_or_a_stray_file_is_named(completed_run: Path, tmp_path: Path) -> None:
    for name, damage in [("candidates.csv", "flip"), ("manifest.json", "delete"), ("training_curves.parquet", "add"),
                         (RECORD_FILE, "cut")]:
        folder = tmp_path / name
        shutil.copytree(completed_run, folder)
        path = folder / name
        if damage == "flip":
            data = bytearray(path.read_bytes())
            data[10] ^= 1
            path.write_bytes(bytes(data))
        elif damage == "delete":
            path.unlink()
        elif damage == "add":
            path.write_bytes(b"a file of another run")
        else:
            path.write_text(path.read_text()[:40])
        with pytest.raises(DamagedRunError) as raised:
            load_run(folder)
        assert raised.value.folder == folder and raised.value.file == name
        assert str(folder) in str(raised.value) and "delete the folder" in str(raised.value)


def test_a_run_without_record_is_refused_by_every_reader(completed_run: Path, tmp_path: Path) -> None:
    folder = tmp_path / "runs" / "killed"
    shutil.copytree(completed_run, folder)
    (folder / RECORD_FILE).unlink()  # as a run killed before its last write leaves it
    with pytest.raises(DamagedRunError, match="run_record.json is missing: the run never completed"):
        gather_runs([tmp_path / "runs"])


def test_rerun_into_a_completed_folder_stops_before_any_work(completed_run: Path, tmp_path: Path,
                                                             cache_dir: Path) -> None:
    folder = tmp_path / "run"
    shutil.copytree(completed_run, folder)
    before = _tree_digest(folder)
    completed = _sfbench("eval=quick", "eval.seed=7", f"cache_dir={cache_dir}", f"hydra.run.dir={folder}")
    assert completed.returncode == 2
    [line] = [line for line in completed.stderr.splitlines() if line.startswith("sfbench: error:")]
    assert f"The run folder {folder} already holds a completed run (etth1 / seasonal_naive / baseline" in line
    assert "hydra.run.dir=NEW_FOLDER" in line and "overwrite=true" in line
    assert "Traceback" not in completed.stderr and "[sfbench]" not in completed.stderr  # no work started
    assert _tree_digest(folder) == before  # not even Hydra's .hydra/ or log was touched
    with pytest.raises(RunFolderTakenError):  # the library refuses too (tests, notebooks, multirun jobs)
        claim_run_folder(folder, overwrite=False)


def test_overwrite_swaps_the_new_run_in_and_keeps_the_old_one_aside(completed_run: Path, tmp_path: Path,
                                                                    cache_dir: Path) -> None:
    folder = tmp_path / "run"
    shutil.copytree(completed_run, folder)
    old = _tree_digest(folder)
    completed = _sfbench(*COMMON, "eval.seed=7", "overwrite=true", f"cache_dir={cache_dir}",
                         f"hydra.run.dir={folder}")
    assert completed.returncode == 0, completed.stderr[-3000:]
    assert load_run(folder).row["eval_seed"] == 7
    assert "- overwrite=true" in (folder / ".hydra" / "overrides.yaml").read_text()  # Hydra's files moved with it
    [aside] = tmp_path.glob(".run.replaced-*")
    assert _tree_digest(aside) == old and f"moved to {aside}" in completed.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == [aside.name, "run"]  # no staging folder left
    runs = gather_runs([tmp_path])  # the hidden aside folder is not read as a second run
    assert [run.directory for run in runs.runs] == [folder.resolve()]


def test_commit_without_an_atomic_swap_still_never_mixes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import sfbench_jax.run_folder.claim as run_folder

    target = tmp_path / "run"
    target.mkdir()
    (target / "summary.csv").write_text("old\n")
    write_record(target, run_key={"run": "old"})
    folder = claim_run_folder(target, overwrite=True)
    assert folder.is_staged and not (folder.work / "summary.csv").exists()
    (folder.work / "summary.csv").write_text("new\n")
    write_record(folder.work, run_key={"run": "new"})

    def unsupported(first: Path, second: Path) -> None:
        raise OSError(errno.EINVAL, "file system cannot swap")

    monkeypatch.setattr(run_folder, "exchange_directories", unsupported)
    aside = folder.commit()
    assert verify_record(target)["run_key"] == {"run": "new"}
    assert verify_record(aside)["run_key"] == {"run": "old"}


def _verified_seed(folder: Path) -> int:
    run = load_run(folder)  # record, every file and the summary against its per-window losses
    return int(run.row["eval_seed"])


@pytest.mark.slow
def test_kill_9_at_20_random_moments_of_an_overwriting_run(completed_run: Path, tmp_path: Path,
                                                           cache_dir: Path) -> None:
    folder = tmp_path / "run"
    shutil.copytree(completed_run, folder)
    current = _verified_seed(folder)
    started = time.perf_counter()
    finished = _sfbench(*COMMON, "eval.seed=1000", "overwrite=true", f"cache_dir={cache_dir}",
                        f"hydra.run.dir={folder}")
    assert finished.returncode == 0, finished.stderr[-3000:]
    duration, current = time.perf_counter() - started, _verified_seed(folder)
    assert current == 1000
    rng = random.Random(21)
    moments = []
    for attempt in range(20):
        seed, moment = 1001 + attempt, rng.uniform(0.0, 1.15 * duration)
        process = subprocess.Popen(_sfbench_command(*COMMON, f"eval.seed={seed}", "overwrite=true",
                                                    f"cache_dir={cache_dir}", f"hydra.run.dir={folder}"),
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(moment)
        os.kill(process.pid, signal.SIGKILL)
        process.wait()
        found = _verified_seed(folder)
        moments.append((round(moment, 2), found == seed))
        assert found in (current, seed), f"kill at {moment:.2f} s left seed {found}; moments so far {moments}"
        current = found
    # every non-hidden entry beside the run is the run itself: staging and replaced folders are hidden
    assert [p.name for p in tmp_path.iterdir() if not p.name.startswith(".")] == ["run"]
    print(f"kill moments (seconds, new run in place): {moments}")
    assert not all(replaced for _, replaced in moments), f"no kill landed before the swap: {moments}"


@pytest.mark.slow
def test_a_resumed_multirun_keeps_completed_jobs_and_overwrite_replaces_them(tmp_path: Path, cache_dir: Path) -> None:
    sweep = tmp_path / "sweep"
    common = ["-m", "eval.seed=1", *COMMON, "figures=false", f"cache_dir={cache_dir}", f"hydra.sweep.dir={sweep}"]
    assert _sfbench(*common).returncode == 0
    [job] = [p for p in sweep.iterdir() if p.is_dir()]
    before = _tree_digest(job)
    again = _sfbench(*common)
    assert again.returncode == 0 and f"job {job.name} skipped: {job} already holds a completed run" in again.stderr
    assert {k: v for k, v in _tree_digest(job).items() if not k.startswith(".hydra")} == {
        k: v for k, v in before.items() if not k.startswith(".hydra")}
    replaced = _sfbench(*common, "overwrite=true")
    assert replaced.returncode == 0 and "was moved to" in replaced.stderr
    [aside] = sweep.glob(f".{job.name}.replaced-*")
    assert verify_record(aside)["files"]["cell.json"] and verify_record(job)["files"]["cell.json"]
    assert json.loads((job / "cell.json").read_text())["overrides"][-1] == "overwrite=True"
    assert len(pd.read_csv(sweep / "summary.csv")) == 1  # the collection read the new run only
