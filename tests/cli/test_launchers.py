"""Multirun sweeps through the launchers a cluster user takes, run for real on this machine:

* submitit's local executor (`hydra/launcher=submitit_local`: every job a separate process, as SLURM runs it,
  without a scheduler) and the Ray launcher (`hydra/launcher=ray`: a Ray head started by the test with two
  CPUs, joined by the sweep, and the launcher's own private instance) give the merged `summary.csv` and
  Table 4 block of the joblib launcher, number for number, collected once in the launching process;
* a submitit job killed mid-training is resumed by re-running the sweep, which trains only that job's
  unfinished candidates (counted from the jobs' own log lines) and collects the complete sweep;
* the SLURM preset differs from the local executor only in executor and resources.

Every sweep here shares one compilation cache (`cache_dir/xla`), as the jobs of a cluster run do, and each
launcher trains into its own candidate store. Ray runs inside a private network and PID namespace
(`unshare`): it can reach nothing but loopback, and every Ray process ends with the test.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd
import pytest
from hydra import compose, initialize_config_module

import sfbench_jax.cli.main  # noqa: F401 - registers the config schemas that composing the presets needs

#: The analysis fixture's settings (tests/report/fixture_runs.py), so the jobs load the programs it compiled.
SWEEP = ["dataset=etth1,beijing_air_tiantan", "model=dlinear,seasonal_naive", "profile=tiny"]
BIN = Path(sys.executable).parent
TRAINED = re.compile(r"dlinear trial (\d+): (best val|FAILED)")
COLLECTED = "[sfbench-collect] 4 cells merged"
TIMEOUT_S = 600


def _environment(data_root: Path, **extra: str) -> dict[str, str]:
    environment = {key: value for key, value in os.environ.items() if key != "RAY_ADDRESS"}
    return {**environment, "SFBENCH_DATA_ROOT": str(data_root), "RAY_USAGE_STATS_ENABLED": "0", **extra}


def _sfbench(arguments: list[str], data_root: Path) -> subprocess.CompletedProcess:
    return subprocess.run([str(BIN / "sfbench"), *arguments], capture_output=True, text=True, timeout=TIMEOUT_S,
                          env=_environment(data_root), check=False)


def _places(root: Path, name: str, cache: Path) -> list[str]:
    return [f"hydra.sweep.dir={root / name}", f"train.store_dir={root / f'{name}_store'}", f"cache_dir={cache}"]


@pytest.fixture(scope="session")
def shared_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder shared by the pytest-xdist workers of this session (the session's own folder without xdist)."""
    base = tmp_path_factory.getbasetemp()
    root = (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / "launchers"
    root.mkdir(exist_ok=True)
    return root


@pytest.fixture(scope="session")
def compilation_cache(session_cache_dir: Path) -> Path:
    """`cache_dir` of every sweep here: the test session's, one `xla` folder shared by all jobs of all launchers
    (and by the session's other runs, so the sweeps load programs compiled before them)."""
    return session_cache_dir


def _joblib_sweep(shared_root: Path, compilation_cache: Path, data_root: Path) -> Path:
    """The reference: the sweep with the default joblib launcher, run once per session (under a lock, so the
    xdist workers share it; a test asks for it after its own sweep, so two workers never wait for each other
    before working)."""
    sweep = shared_root / "joblib"
    with (shared_root / "joblib.lock").open("w") as lock:
        fcntl.lockf(lock, fcntl.LOCK_EX)
        if not (sweep / "summary.csv").is_file():
            completed = _sfbench(["-m", *SWEEP, *_places(shared_root, "joblib", compilation_cache)], data_root)
            assert completed.returncode == 0, completed.stderr[-3000:]
            assert "Joblib.Parallel" in completed.stdout + completed.stderr
    return sweep


def _assert_same_results(sweep: Path, reference: Path) -> None:
    """The merged summary and the Table 4 block equal the reference's, number for number."""
    assert json.loads((sweep / "collect_report.json").read_text())["status"] == "complete"
    summary, expected = pd.read_csv(sweep / "summary.csv"), pd.read_csv(reference / "summary.csv")
    assert len(summary) == 4
    assert [Path(folder).parent for folder in summary["run_dir"]] == [sweep] * 4  # each row names its own job
    pd.testing.assert_frame_equal(summary.drop(columns="run_dir"), expected.drop(columns="run_dir"), check_exact=True)
    pd.testing.assert_frame_equal(pd.read_csv(sweep / "table4_architectures.csv"),
                                  pd.read_csv(reference / "table4_architectures.csv"), check_exact=True)
    assert (sweep / "table4_architectures.md").read_text() == (reference / "table4_architectures.md").read_text()


def _collected_once(launcher_output: str, job_outputs: list[str]) -> None:
    """The collection ran in the launching process, once, and in no job."""
    assert [line for line in launcher_output.splitlines() if line.startswith(COLLECTED)] != [], launcher_output[-3000:]
    assert sum(line.startswith(COLLECTED) for line in launcher_output.splitlines()) == 1
    assert not any(COLLECTED in output for output in job_outputs)


def _job_logs(sweep: Path) -> dict[str, str]:
    """Job id -> what the job wrote to stderr (submitit keeps one folder per job under `.submitit/`)."""
    return {folder.name: "".join(path.read_text() for path in folder.glob("*_log.err"))
            for folder in (sweep / ".submitit").iterdir() if folder.name.isdigit()}


@pytest.mark.slow  # ~2 min on 2 cores: .ci/run runs it after the default suite
def test_submitit_local_sweep_equals_joblib(shared_root: Path, compilation_cache: Path, data_root: Path) -> None:
    pytest.importorskip("submitit", reason="the slurm extra is not installed: pip install -e '.[slurm]'")
    completed = _sfbench(["-m", "hydra/launcher=submitit_local", *SWEEP,
                          *_places(shared_root, "submitit", compilation_cache)], data_root)
    assert completed.returncode == 0, completed.stderr[-3000:]
    sweep = shared_root / "submitit"
    assert "Submitit 'local' sweep output dir" in completed.stdout + completed.stderr
    logs = _job_logs(sweep)
    assert len(logs) == 4 and len(set(logs)) == 4  # four jobs, four separate processes (job id = pid)
    _collected_once(completed.stdout + completed.stderr, list(logs.values()))
    _assert_same_results(sweep, _joblib_sweep(shared_root, compilation_cache, data_root))


RAY_SCRIPT = r"""
set -euo pipefail
ip link set lo up
test "$(ip -o link show | wc -l)" -eq 1  # only the loopback device exists in this network namespace
"$BIN/ray" start --head --node-ip-address=127.0.0.1 --port=6379 --num-cpus=2 --include-dashboard=false \
    --disable-usage-stats > "$WORK/ray_start.log" 2>&1
set +e
"$BIN/sfbench" -m hydra/launcher=ray hydra.launcher.address=127.0.0.1:6379 $SWEEP $JOINED > "$WORK/joined.log" 2>&1
joined=$?
"$BIN/ray" stop > "$WORK/ray_stop.log" 2>&1  # this PID namespace holds only this test's processes
"$BIN/sfbench" -m hydra/launcher=ray $SWEEP $PRIVATE > "$WORK/private.log" 2>&1
private=$?
"$BIN/sfbench" -m hydra/launcher=ray hydra.launcher.remote.num_gpus=1 dataset=etth1 model=seasonal_naive $PRIVATE \
    hydra.sweep.dir="$WORK/impossible" > "$WORK/impossible.log" 2>&1
impossible=$?
echo "joined=$joined private=$private impossible=$impossible"
"""


def _namespace_command() -> list[str]:
    """`unshare` into a private network, mount and PID namespace whose processes all die with it (as root,
    else as a mapped user); skipped where the kernel or the container does not allow it."""
    common = ["--net", "--pid", "--fork", "--kill-child", "--mount-proc"]
    for extra in ([], ["--user", "--map-root-user"]):
        command = ["unshare", *extra, *common]
        if shutil.which("unshare") and subprocess.run([*command, "true"], capture_output=True,
                                                      check=False).returncode == 0:
            return command
    pytest.skip("cannot create a private network namespace here (unshare); Ray must not listen beyond loopback")


@pytest.mark.slow  # ~4.5 min on 2 cores: .ci/run runs it after the default suite
def test_ray_sweeps_equal_joblib(shared_root: Path, compilation_cache: Path, data_root: Path, tmp_path: Path) -> None:
    pytest.importorskip("ray", reason="the ray extra is not installed: pip install -e '.[ray]'")
    namespace = _namespace_command()
    ray_tmp = Path(tempfile.mkdtemp(prefix="sfbray-", dir="/tmp"))  # Ray's socket paths must stay short
    (tmp_path / "home").mkdir()
    environment = _environment(
        data_root, BIN=str(BIN), WORK=str(tmp_path), SWEEP=" ".join(SWEEP), RAY_TMPDIR=str(ray_tmp),
        HOME=str(tmp_path / "home"),  # Ray keeps its cluster token in ~/.ray
        JOINED=" ".join(_places(shared_root, "ray_joined", compilation_cache)),
        PRIVATE=" ".join(_places(shared_root, "ray_private", compilation_cache)))
    try:
        completed = subprocess.run([*namespace, "bash", "-c", RAY_SCRIPT], capture_output=True, text=True,
                                   env=environment, timeout=TIMEOUT_S, check=False)
    finally:
        shutil.rmtree(ray_tmp, ignore_errors=True)
    outputs = {name: (tmp_path / f"{name}.log").read_text() for name in ("joined", "private", "impossible")}
    assert completed.stdout.strip() == "joined=0 private=0 impossible=1", (
        completed.stdout + completed.stderr + outputs["joined"][-3000:] + outputs["private"][-3000:])
    joined = outputs["joined"]
    assert "joining the Ray cluster at 127.0.0.1:6379" in joined
    workers = set(re.findall(r"\(_run_job_remotely pid=(\d+)\)", joined))
    assert len(workers) >= 2, joined[-3000:]  # the jobs fanned out over the cluster's two CPUs
    assert "starting a private Ray instance with 2 CPUs on 127.0.0.1" in outputs["private"]
    # a job no node could ever run is refused before any job starts, naming the fix
    assert "Each job asks Ray for GPU 1, but the private local Ray instance has GPU 0" in outputs["impossible"]
    assert "hydra.launcher.remote.num_gpus=0" in outputs["impossible"]
    assert not list((tmp_path / "impossible").glob("*/cell.json"))
    reference = _joblib_sweep(shared_root, compilation_cache, data_root)
    for name in ("joined", "private"):
        job_lines = [line for line in outputs[name].splitlines() if "(_run_job_remotely" in line]
        _collected_once(outputs[name], job_lines)
        _assert_same_results(shared_root / f"ray_{name}", reference)


def _finished(store: Path, dataset: str) -> dict[str, tuple[int, bytes]]:
    return {path.parent.name: (path.stat().st_mtime_ns, path.read_bytes())
            for path in store.glob(f"{dataset}/dlinear/*/result.json")}


def _parent_pid(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])


def _process_tree(pid: int) -> list[int]:
    """`pid` and all its descendants (a submitit local job is a controller process and its task processes)."""
    children = [int(child) for task in Path(f"/proc/{pid}/task").iterdir()
                for child in (task / "children").read_text().split()]
    return [pid, *(descendant for child in children for descendant in _process_tree(child))]


@pytest.mark.slow  # ~1.5 min on 2 cores: .ci/run runs it after the default suite
def test_killed_submitit_job_retrains_only_its_unfinished_candidates(tmp_path: Path, compilation_cache: Path,
                                                                     data_root: Path) -> None:
    pytest.importorskip("submitit", reason="the slurm extra is not installed: pip install -e '.[slurm]'")
    budget = 4
    store, sweep = tmp_path / "store", tmp_path / "sweep"
    arguments = [str(BIN / "sfbench"), "-m", "hydra/launcher=submitit_local", "dataset=etth1,beijing_air_tiantan",
                 "model=dlinear", "profile=tiny", f"train.candidate_budget={budget}",
                 f"hydra.sweep.dir={sweep}", f"train.store_dir={store}", f"cache_dir={compilation_cache}"]
    with (tmp_path / "first.log").open("w") as output:
        first = subprocess.Popen(arguments, stdout=output, stderr=subprocess.STDOUT, env=_environment(data_root),
                                 start_new_session=True)
        try:
            deadline = time.monotonic() + TIMEOUT_S
            while not _finished(store, "etth1"):
                assert first.poll() is None, (tmp_path / "first.log").read_text()[-3000:]
                assert time.monotonic() < deadline, "the ETTh1 job finished no candidate in time"
                time.sleep(0.02)
            (job,) = [job for job, log in _job_logs(sweep).items() if "[sfbench] ETTh1:" in log]
            assert _parent_pid(int(job)) == first.pid  # a job of this sweep (submitit local: job id = pid)
            job_processes = _process_tree(int(job))
            assert len(job_processes) >= 2  # the job's controller and the task that trains
            for pid in job_processes:  # the whole job dies at once, as when SLURM kills a job
                os.kill(pid, signal.SIGKILL)
            assert first.wait(timeout=TIMEOUT_S) != 0  # the launcher reports the killed job
        finally:
            if first.poll() is None:
                os.killpg(first.pid, signal.SIGKILL)
                first.wait()
    before = _finished(store, "etth1")
    assert 1 <= len(before) < budget, f"kill the job mid-way ({len(before)} of {budget} finished)"
    assert len(_finished(store, "beijing_air_tiantan")) == budget  # the other job was not disturbed
    first_jobs = set(_job_logs(sweep))

    again = _sfbench(arguments[1:], data_root)
    assert again.returncode == 0, again.stderr[-3000:]
    rerun = {job: log for job, log in _job_logs(sweep).items() if job not in first_jobs}
    (etth1_log,) = [log for log in rerun.values() if "[sfbench] ETTh1:" in log]
    # the Beijing job completed in the first sweep: its run folder holds a completed run, so it is kept, not re-run
    (beijing_log,) = [log for log in rerun.values() if "already holds a completed run" in log]
    assert f"{len(before)} already in the store, {budget - len(before)} to train" in etth1_log
    assert not TRAINED.search(beijing_log)
    after = _finished(store, "etth1")
    unfinished = sorted(json.loads(after[key][1])["trial_number"] for key in after if key not in before)
    assert sorted(int(trial) for trial, _ in TRAINED.findall(etth1_log)) == unfinished  # each once, no other
    assert len(after) == budget and all(after[key] == before[key] for key in before)  # untouched
    assert json.loads((sweep / "collect_report.json").read_text())["status"] == "complete"
    assert len(pd.read_csv(sweep / "summary.csv")) == 2
    assert "[sfbench-collect] 2 cells merged" in again.stdout + again.stderr


def _launcher(name: str):
    # a fixed sweep folder: the default one names the current second, so two compositions could differ by a tick
    overrides = [f"hydra/launcher={name}", "hydra.sweep.dir=multirun/launcher-test"]
    with initialize_config_module(version_base="1.3", config_module="sfbench_jax.conf"):
        config = compose(config_name="config", overrides=overrides, return_hydra_config=True)
    return config.hydra.launcher


def test_slurm_preset_differs_from_the_local_executor_only_in_executor_and_resources() -> None:
    pytest.importorskip("submitit", reason="the slurm extra is not installed: pip install -e '.[slurm]'")
    slurm, local = _launcher("slurm"), _launcher("submitit_local")
    assert slurm._target_.endswith("SlurmLauncher") and local._target_.endswith("LocalLauncher")
    resources = {"timeout_min", "cpus_per_task", "gpus_per_node", "mem_gb", "tasks_per_node", "nodes"}
    shared = set(local) - resources - {"_target_"}
    assert {key: slurm[key] for key in shared} == {key: local[key] for key in shared}
    assert (slurm.gpus_per_node, slurm.cpus_per_task, slurm.mem_gb) == (1, 8, 64)


def test_ray_preset_runs_anywhere() -> None:
    ray = _launcher("ray")
    assert ray._target_ == "hydra_plugins.sfbench_ray_launcher.ray_launcher.RayLauncher"
    assert ray.address is None and ray.local_cpus == 2 and dict(ray.remote) == {"num_cpus": 1, "num_gpus": 0}
