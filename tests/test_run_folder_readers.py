"""Run folders where two things meet (issue 30, part B, defects 7-10 and 13): two writers into one folder, the
two readers (`sfbench-collect`, `sfbench-report`) on one sweep folder, a sweep job re-made on its own with
`overwrite=true`, and the cheap cross-checks every reader makes (the record's files against the manifest's, each
point estimate against its own stored interval).

Every run here is real (SeasonalNaive on ETTh1, `eval=quick`, written by the `sfbench` command or its job run in
the test's process); the sweep is one real two-job multirun, copied before each test damages it. The readers are
called in-process through their command-line entry points, the writers of the two-writer cases as real processes.
"""

from __future__ import annotations

import itertools
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from sfbench_cli import run_in_process
from sfbench_cli import run_sfbench as _sfbench
from sfbench_cli import sfbench_command as _sfbench_command

from sfbench_jax.cli.sfbench_collect import main as collect_main
from sfbench_jax.cli.sfbench_report import main as report_main
from sfbench_jax.evaluation.scores import robustness_scores
from sfbench_jax.run_folder.damage import DamagedRunError
from sfbench_jax.run_folder.loading import load_run
from sfbench_jax.run_folder.names import RECORD_FILE
from sfbench_jax.run_folder.record import write_record

#: The cheap real run of these tests (SeasonalNaive on ETTh1, 1,000 windows).
COMMON = ["model=seasonal_naive", "eval=quick", "dataset=etth1", "eval.bootstrap_draws=200", "figures=false"]


@pytest.fixture(scope="module")
def cache_dir(session_cache_dir: Path) -> Path:
    """The test session's derived-data and compilation cache (its runs load the programs other tests compiled)."""
    return session_cache_dir


@pytest.fixture(scope="module")
def sweep(tmp_path_factory: pytest.TempPathFactory, cache_dir: Path) -> Path:
    """A real two-job multirun (eval.seed=1,2), collected. Hydra's basic launcher runs both jobs in the launching
    process (the folder is the same as joblib's, which the analysis fixture's multirun uses; two worker processes
    fewer)."""
    folder = tmp_path_factory.mktemp("sweep") / "sweep"
    completed = _sfbench("-m", "eval.seed=1,2", *COMMON, f"cache_dir={cache_dir}", f"hydra.sweep.dir={folder}",
                         "hydra/launcher=basic")
    assert completed.returncode == 0, completed.stderr[-3000:]
    return folder


@pytest.fixture(scope="module")
def other_run(tmp_path_factory: pytest.TempPathFactory, cache_dir: Path) -> Path:
    """A completed run of other settings (eval.seed=3), made on its own (the job in this process)."""
    folder = tmp_path_factory.mktemp("other") / "run"
    run_in_process([*COMMON, "eval.seed=3", f"cache_dir={cache_dir}"], folder)
    (folder / "run.log").unlink()  # the helper's copy of the log: not a file of a run folder
    return folder


def _jobs(sweep_dir: Path) -> list[Path]:
    return sorted(path for path in sweep_dir.iterdir() if (path / "cell.json").is_file())


def _copy(sweep_dir: Path, target: Path) -> Path:
    """The sweep's jobs and expected jobs, without its merged outputs."""
    target.mkdir(parents=True)
    shutil.copy(sweep_dir / "expected_cells.json", target)
    for job in _jobs(sweep_dir):
        shutil.copytree(job, target / job.name)
    return target


def _both_readers(sweep_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> dict[str, tuple]:
    """`sfbench-collect` and `sfbench-report longform` on one sweep: `{reader: (exit status, stderr, table)}`."""
    answers = {}
    for name, call in (("collect", lambda out: collect_main([str(sweep_dir), "--no-figures", "--output", str(out)])),
                       ("report", lambda out: report_main(["longform", "--runs", str(sweep_dir), "--output",
                                                           str(out)]))):
        output = tmp_path / f"{name}_output"
        output.mkdir()
        status = call(output)
        table = output / "full_results.csv"
        answers[name] = (status, capsys.readouterr().err, pd.read_csv(table) if table.is_file() else None)
    return answers


# --- defect 7: one writer per run folder -----------------------------------------------------------------------

def _lock_holder(lock: Path) -> int | None:
    try:
        return int(json.loads(lock.read_text())["pid"])
    except (OSError, ValueError, KeyError):
        return None


@pytest.mark.slow  # two real runs (about 45 s on 2 cores)
def test_a_second_writer_is_refused_and_the_first_run_stays_intact(tmp_path: Path, cache_dir: Path) -> None:
    # Issue 30, defect 7: DLinear and SeasonalNaive started into one hydra.run.dir both exited 0; the sealed
    # survivor carried the other run's files. Here the first run is paused right after it took the folder.
    folder = tmp_path / "run"
    first = subprocess.Popen(_sfbench_command(*COMMON, f"cache_dir={cache_dir}", f"hydra.run.dir={folder}"),
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 300
        while _lock_holder(tmp_path / ".run.lock") != first.pid:
            assert first.poll() is None and time.monotonic() < deadline, "the first run never took its folder"
            time.sleep(0.02)
        os.kill(first.pid, signal.SIGSTOP)
        try:
            second = _sfbench("model=dlinear", "profile=tiny", "eval=quick", f"cache_dir={cache_dir}",
                              f"hydra.run.dir={folder}")
        finally:
            os.kill(first.pid, signal.SIGCONT)
        _, first_err = first.communicate(timeout=900)
    finally:
        if first.poll() is None:
            first.kill()
    assert first.returncode == 0, first_err[-3000:]
    assert second.returncode == 2, second.stderr[-3000:]
    [line] = [line for line in second.stderr.splitlines() if line.startswith("sfbench: error:")]
    assert (f"The run folder {folder} is being written by another run (pid {first.pid} on {socket.gethostname()}, "
            "started 20") in line and "hydra.run.dir=PATH" in line, line
    assert "Traceback" not in second.stderr and "[sfbench]" not in second.stderr  # refused before any work
    run = load_run(folder)  # verified: record, files, numbers
    assert run.row["architecture"] == "seasonal_naive"
    record = json.loads((folder / RECORD_FILE).read_text())
    assert sorted(record["files"]) == ["candidates.csv", "manifest.json", "per_window.parquet", "summary.csv"]
    assert not (folder / "training_curves.parquet").exists()
    assert not (tmp_path / ".run.lock").exists()  # released and removed at the end of the run


def test_a_record_vouching_for_another_runs_file_is_refused(sweep: Path, tmp_path: Path) -> None:
    # Issue 30, defect 7: the record sealed whichever known files were present (a DLinear training_curves.parquet
    # in a SeasonalNaive run), and the verifier did not compare the record's files with the manifest's.
    folder = tmp_path / "run"
    shutil.copytree(_jobs(sweep)[0], folder)
    pd.DataFrame({"trial_number": [0], "epoch": [0], "val_loss": [0.5]}).to_parquet(
        folder / "training_curves.parquet")
    write_record(folder, run_key=json.loads((folder / RECORD_FILE).read_text())["run_key"])  # a fresh, valid record
    with pytest.raises(DamagedRunError, match=r"run_record.json does not vouch for the files its manifest lists "
                       r"\(recorded but not written by this run: \['training_curves.parquet'\]; written but not "
                       r"recorded: none\): files of two runs are mixed in one folder"):
        load_run(folder)


# --- defects 8 and 9: one way to find runs ----------------------------------------------------------------------

def test_both_readers_give_the_same_table_for_a_sweep(sweep: Path, tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    answers = _both_readers(_copy(sweep, tmp_path / "sweep"), tmp_path, capsys)
    (collect_status, _, collected), (report_status, _, reported) = answers["collect"], answers["report"]
    assert collect_status == 0 and report_status == 0
    assert len(collected) == 2 and collected.equals(reported)


def test_a_run_copied_into_a_job_folder_is_refused_by_both_readers(sweep: Path, other_run: Path, tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    # Issue 30, defect 8: a run copied into a sub-folder of a job became a third row of the sweep's tables, exit 0.
    copied = _copy(sweep, tmp_path / "sweep")
    nested = _jobs(copied)[0] / "copied" / "run"
    shutil.copytree(other_run, nested)
    answers = _both_readers(copied, tmp_path, capsys)
    for name, (status, stderr, table) in answers.items():
        assert status == 2 and table is None, (name, stderr)
        assert f"{nested} lies inside the run folder {_jobs(copied)[0]} (a copied run?)" in stderr, (name, stderr)
        assert "Traceback" not in stderr


def test_a_stray_run_in_the_sweep_root_is_refused_by_both_readers(sweep: Path, other_run: Path, tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    # Issue 30, defect 9: a stray run in the sweep root was ignored by collect and included by report.
    copied = _copy(sweep, tmp_path / "sweep")
    shutil.copytree(other_run, copied / "stray")
    for name, (status, stderr, table) in _both_readers(copied, tmp_path, capsys).items():
        assert status == 2 and table is None, (name, stderr)
        assert f"{copied / 'stray'} is not a job of the sweep {copied}" in stderr, (name, stderr)


def test_a_symlinked_job_is_read_by_both_readers(sweep: Path, tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    # Issue 30, defect 9: sfbench-report dropped a job folder moved away and linked back (its rows were missing,
    # exit 0), while sfbench-collect included it.
    copied = _copy(sweep, tmp_path / "sweep")
    job = _jobs(copied)[1]
    moved = tmp_path / "elsewhere" / job.name
    moved.parent.mkdir()
    job.rename(moved)
    job.symlink_to(moved, target_is_directory=True)
    answers = _both_readers(copied, tmp_path, capsys)
    (collect_status, _, collected), (report_status, stderr, reported) = answers["collect"], answers["report"]
    assert collect_status == 0 and report_status == 0, stderr
    assert sorted(collected["eval_data_seed"]) == [1, 2] and collected.equals(reported)


def test_a_symlink_cycle_is_refused_by_name(sweep: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    copied = _copy(sweep, tmp_path / "sweep")
    loop = _jobs(copied)[0] / "loop"
    loop.symlink_to(copied, target_is_directory=True)
    for name, (status, stderr, _) in _both_readers(copied, tmp_path, capsys).items():
        assert status == 2 and f"{loop} is a symbolic link back to {copied.resolve()}" in stderr, (name, stderr)


# --- defect 10: a sweep job re-made with overwrite=true stays a job ---------------------------------------------

@pytest.mark.slow  # two real runs into the job folder (about 25-40 s on 2 cores)
def test_overwriting_one_sweep_job_keeps_it_a_job(sweep: Path, tmp_path: Path, cache_dir: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    # Issue 30, defect 10: the fix a damaged job's message gives (re-run it with overwrite=true) wrote no
    # cell.json; collect then said the job "never started or its folder was deleted", for ever.
    copied = _copy(sweep, tmp_path / "sweep")
    job = _jobs(copied)[0]
    cell = json.loads((job / "cell.json").read_text())
    completed = _sfbench(*COMMON, "eval.seed=1", "overwrite=true", f"cache_dir={cache_dir}", f"hydra.run.dir={job}")
    assert completed.returncode == 0, completed.stderr[-3000:]
    assert json.loads((job / "cell.json").read_text()) == cell
    assert "cell.json" in json.loads((job / RECORD_FILE).read_text())["files"]
    assert collect_main([str(copied), "--no-figures"]) == 0, capsys.readouterr().err
    assert sorted(pd.read_csv(copied / "summary.csv")["eval_seed"]) == [1, 2]
    wrong = _sfbench("model=dlinear", "profile=tiny", "eval=quick", "overwrite=true", f"cache_dir={cache_dir}",
                     f"hydra.run.dir={job}")
    assert wrong.returncode == 2 and "is the sweep job of {'dataset': 'etth1', 'architecture': 'seasonal_naive'" \
        in wrong.stderr, wrong.stderr[-2000:]


# --- defect 13: each point estimate inside its own stored interval ----------------------------------------------

def test_a_point_estimate_outside_its_own_interval_is_refused(sweep: Path, tmp_path: Path) -> None:
    # Issue 30, defect 13: a consistently edited and re-sealed run whose D_w lay outside its own stored 95%
    # interval was accepted. Here the worst scenario's losses are scaled down, the summary recomputed from them.
    folder = tmp_path / "run"
    shutil.copytree(_jobs(sweep)[0], folder)
    per_window = pd.read_parquet(folder / "per_window.parquet")
    summary = pd.read_csv(folder / "summary.csv")
    worst = summary.loc[0, "worst_scenario"]
    per_window[f"mse_{worst}"] = (per_window[f"mse_{worst}"] * 0.8).astype(per_window[f"mse_{worst}"].dtype)
    per_window.to_parquet(folder / "per_window.parquet", index=False)
    keys = [c.removeprefix("mse_") for c in per_window.columns if c.startswith("mse_") and c != "mse_clean"]
    scores = robustness_scores(per_window["mse_clean"].to_numpy(),
                               np.stack([per_window[f"mse_{key}"].to_numpy() for key in keys]))
    summary.loc[0, ["mse_c", "d_w", "mse_w", "d_mean", "mpc"]] = [scores.mse_c, scores.d_w, scores.mse_w,
                                                                   scores.d_mean, scores.mpc]
    for index, key in enumerate(keys):
        summary.loc[0, [f"mse_{key}", f"d_{key}"]] = [scores.mse_p[index], scores.d_p[index]]
    summary.loc[0, "worst_scenario"] = keys[scores.worst_index]
    summary.to_csv(folder / "summary.csv", index=False)
    write_record(folder, run_key=json.loads((folder / RECORD_FILE).read_text())["run_key"])
    with pytest.raises(DamagedRunError, match=rf"{folder} is damaged: summary.csv says \w+ = [0-9.e-]+, outside "
                       r"its own stored 95% interval \[[0-9.e-]+, [0-9.e-]+\]"):
        load_run(folder)


def test_every_real_run_lies_inside_its_intervals(sweep: Path, other_run: Path) -> None:
    for folder in [*_jobs(sweep), other_run]:
        load_run(folder)  # the check passes on what the engine wrote


# --- issue 43, items 8-12 and 17: aliases, file systems without flock, side files, stale sweeps, link chains ---

def _files(folder: Path) -> dict[str, tuple[int, int, str]]:
    """Every file under `folder` (hidden ones included): `{relative path: (bytes, mtime_ns, sha256 head)}`."""
    import hashlib

    return {str(path.relative_to(folder)): (path.stat().st_size, path.stat().st_mtime_ns,
                                            hashlib.sha256(path.read_bytes()).hexdigest()[:16])
            for path in sorted(folder.rglob("*")) if path.is_file()}


def test_a_writer_through_a_symlink_is_refused_while_the_real_folder_is_written(tmp_path: Path,
                                                                               cache_dir: Path) -> None:
    # Issue 43, item 8: writers to `real/run` and to `alias -> real/run` took two different locks (the lock's path
    # came from the link's parent folder): both exited 0 and the first completed run was destroyed. Here this
    # process is the writer of real/run (it takes the folder as the runner does, then runs its job), and a real
    # `sfbench` into the alias starts while it holds the folder.
    from sfbench_jax.run_folder.locks import lock_run_folder, unlock_run_folder

    real = tmp_path / "real" / "run"
    real.mkdir(parents=True)
    alias = tmp_path / "alias"
    alias.symlink_to(real, target_is_directory=True)
    lock_run_folder(real)
    try:
        second = _sfbench(*COMMON, f"cache_dir={cache_dir}", f"hydra.run.dir={alias}")
        run_in_process([*COMMON, "eval.seed=3", f"cache_dir={cache_dir}"], real)
    finally:
        unlock_run_folder(real)
    assert second.returncode == 2, second.stderr[-3000:]
    [line] = [line for line in second.stderr.splitlines() if line.startswith("sfbench: error:")]
    assert f"is being written by another run (pid {os.getpid()} on {socket.gethostname()}" in line, line
    assert "Traceback" not in second.stderr and "[sfbench]" not in second.stderr
    run = load_run(real)  # verified: the record, its files, the numbers
    assert run.row["eval_seed"] == 3 and alias.is_symlink() and alias.resolve() == real.resolve()
    assert sorted(path.name for path in tmp_path.iterdir()) == ["alias", "real"]  # no lock, staging or replaced


#: `sfbench` in a process whose file systems implement no `flock` (NFS without lockd, Lustre without -o flock):
#: the OS call fails as it does there, with ENOLCK.
_WITHOUT_FLOCK = ("import errno, fcntl, sys\n"
                  "def no_flock(*args): raise OSError(errno.ENOLCK, 'No locks available')\n"
                  "fcntl.flock = no_flock\n"
                  "from sfbench_jax.cli.main import main\n"
                  "sys.argv = ['sfbench', *sys.argv[1:]]\n"
                  "main()\n")


def test_a_file_system_without_flock_is_refused_in_one_line_and_the_run_is_untouched(sweep: Path,
                                                                                      tmp_path: Path) -> None:
    # Issue 43, item 9: without flock every run died with a 20-line traceback, and with overwrite=true Hydra first
    # replaced the completed run's .hydra/ files (the callback's error became a warning; the run went on).
    folder = tmp_path / "run"
    shutil.copytree(_jobs(sweep)[0], folder)
    assert (folder / ".hydra" / "config.yaml").is_file()
    before = _files(folder)
    completed = subprocess.run([sys.executable, "-c", _WITHOUT_FLOCK, *COMMON, "eval.seed=1", "overwrite=true",
                                f"hydra.run.dir={folder}"], capture_output=True, text=True, timeout=600,
                               check=False)
    assert completed.returncode == 2, completed.stderr[-3000:]
    assert "Traceback" not in completed.stderr, completed.stderr[-3000:]
    [line] = completed.stderr.strip().splitlines()
    assert line.startswith(f"sfbench: error: Cannot lock the folder {folder}: its file system does not support "
                           "flock (No locks available; e.g. NFS without lockd, Lustre without -o flock)"), line
    assert "Nothing was written" in line and "docs/cluster.md" in line, line
    assert _files(folder) == before
    assert sorted(path.name for path in tmp_path.iterdir()) == ["run"]
    load_run(folder)


def test_a_sweep_of_other_settings_into_a_completed_sweep_folder_is_refused_before_any_job(
        sweep: Path, tmp_path: Path, cache_dir: Path) -> None:
    # Issue 43, item 11: re-run with other settings into the same sweep folder, every job was skipped (its folder
    # held a completed run), the collection failed, the old summary.csv, Table 4 and report.html stayed, and the
    # message said to re-run the sweep (which skipped again).
    folder = tmp_path / "sweep"
    shutil.copytree(sweep, folder)
    assert (folder / "summary.csv").is_file() and (folder / "report.html").is_file()
    before = _files(folder)
    completed = _sfbench("-m", "eval.seed=3,4", *COMMON, f"cache_dir={cache_dir}", f"hydra.sweep.dir={folder}",
                         "hydra/launcher=basic")
    assert completed.returncode == 2, completed.stderr[-3000:]
    [line] = [line for line in completed.stderr.splitlines() if line.startswith("sfbench: error:")]
    assert (f"The sweep folder {folder} holds 2 job(s) of other settings than this sweep (job "
            f"{_jobs(folder)[0].name} ran eval.seed=1; job {_jobs(folder)[1].name} ran eval.seed=2; this sweep: "
            "eval.seed=3 eval.seed=4)") in line, line
    assert "hydra.sweep.dir=PATH" in line and "Traceback" not in completed.stderr, completed.stderr[-3000:]
    assert _files(folder) == before  # nothing written, the earlier sweep's tables and page as they were


def test_collect_never_writes_into_a_run_folder_and_readers_still_read_one_it_wrote_into(
        sweep: Path, other_run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # Issue 43, item 10: `sfbench-collect RUN --expect ...` wrote collect_report.json into the run folder, after
    # which every reader skipped that run without naming it (the page said 1 verified run instead of 2).
    runs = tmp_path / "runs"
    shutil.copytree(_jobs(sweep)[0], runs / "a")
    shutil.copytree(other_run, runs / "b")
    before = _files(runs)
    status = collect_main([str(runs / "a"), "--expect", "dataset=etth1", "model=seasonal_naive", "--no-figures"])
    stderr = capsys.readouterr().err
    assert status == 2 and f"{runs / 'a'} is a run folder, not a sweep folder" in stderr, stderr
    assert collect_main([str(sweep), "--no-figures", "--output", str(runs / "b")]) == 2
    assert f"{runs / 'b'} is a run folder: nothing is ever written into one" in capsys.readouterr().err
    assert _files(runs) == before
    (runs / "a" / "collect_report.json").write_text("{}")  # what the command left there before
    output = tmp_path / "report"
    assert report_main(["longform", "--runs", str(runs), "--output", str(output)]) == 0, capsys.readouterr().err
    assert sorted(pd.read_csv(output / "full_results.csv")["eval_data_seed"]) == [1, 3]


def test_a_chain_of_doubly_linked_folders_is_walked_once_per_folder(sweep: Path, tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    # Issue 43, item 12: folders each holding two links to the next (no cycle) were walked once per path: 2^depth
    # listings (128 s at depth 16, never ending at depth 30) in every reader. Each resolved folder is entered once.
    from sfbench_jax.run_folder import finding

    depth = 12
    levels = [tmp_path / f"level{i}" for i in range(depth + 1)]
    for level in levels:
        level.mkdir()
    for level, deeper in itertools.pairwise(levels):
        for name in ("a", "b"):
            (level / name).symlink_to(deeper, target_is_directory=True)
    shutil.copytree(_jobs(sweep)[0], levels[-1] / "run")
    listed: list[Path] = []
    real_subfolders = finding._subfolders

    def listing(folder: Path) -> list[Path]:  # the real listing, counted
        listed.append(folder.resolve())
        return real_subfolders(folder)

    monkeypatch.setattr(finding, "_subfolders", listing)
    found = finding.find_runs([levels[0]])
    assert found.folders == ((levels[-1] / "run").resolve(),) and not found.refused
    assert len(listed) == len(set(listed)) == depth + 2  # every level once, and the run folder


def test_a_run_being_written_is_named_with_its_writer_by_every_reader(sweep: Path, tmp_path: Path,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    # Issue 43, item 17: a reader called a run being written "damaged ... delete the folder", and the readers gave
    # different exit codes for it. Here this process is the writer: it holds the folder's lock, no record yet.
    from sfbench_jax.run_folder.locks import lock_run_folder, unlock_run_folder

    copied = _copy(sweep, tmp_path / "sweep")
    job = _jobs(copied)[0]
    (job / RECORD_FILE).unlink()
    single = tmp_path / "runs" / "run"
    shutil.copytree(job, single)
    writer = f"pid {os.getpid()} on {socket.gethostname()}, started 20"
    lock_run_folder(job)
    lock_run_folder(single)
    try:
        statuses = {
            "collect": collect_main([str(copied), "--no-figures", "--output", str(tmp_path / "collected")]),
            "report": report_main(["longform", "--runs", str(single.parent), "--output", str(tmp_path / "out")]),
            "html": report_main(["html", "--runs", str(single.parent), "--output", str(tmp_path / "page.html")]),
        }
        stderr = capsys.readouterr().err
    finally:
        unlock_run_folder(job)
        unlock_run_folder(single)
    assert statuses == {"collect": 1, "report": 1, "html": 1}, stderr
    assert f"the job is being written now by a running sfbench ({writer}" in stderr, stderr
    assert f"Run folder {single} is being written now by a running sfbench ({writer}" in stderr, stderr
    assert f"being written {single}: " in stderr and "damaged" not in stderr and "delete" not in stderr, stderr


def test_nan_forecasts_are_named_as_such(sweep: Path, tmp_path: Path) -> None:
    # Issue 43, item 17: NaN forecasts were reported as "the numbers were changed after the run".
    folder = tmp_path / "run"
    shutil.copytree(_jobs(sweep)[0], folder)
    per_window = pd.read_parquet(folder / "per_window.parquet")
    per_window.loc[[3, 5, 8], "mse_noise"] = np.nan  # what a model that forecasts NaN on three windows leaves
    per_window.to_parquet(folder / "per_window.parquet", index=False)
    write_record(folder, run_key=json.loads((folder / RECORD_FILE).read_text())["run_key"])
    with pytest.raises(DamagedRunError) as raised:
        load_run(folder)
    assert str(raised.value).startswith(f"The run in {folder} has NaN forecasts: 3 of 1000 windows give a NaN loss "
                                        "(most in mse_noise of its per_window.parquet)"), raised.value
    assert "changed after the run" not in str(raised.value).replace("not changed after the run", "")
