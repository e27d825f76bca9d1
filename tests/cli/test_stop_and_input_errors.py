"""Errors that end a `sfbench` command in one line, each with its fix (issue 30, defect 12): a renamed setting names
its new name, `+` on a fixed setting and an unknown setting or preset get the fix and a "did you mean" (exit 2,
before Hydra composes anything); SIGINT and SIGTERM end a run with one line saying what is kept and how to resume
(exit 130 / 143); a full disk while writing a run is one line saying what is kept (exit 2). Before: a 12-line
FrozenInstanceError, Hydra's 13-line listing (exit 1), 76-164-line tracebacks, no word at all on SIGTERM, and a
38-line pyarrow traceback on a full disk."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from sfbench_jax.cli.main import main

COMMON = ["model=seasonal_naive", "eval=quick", "dataset=etth1", "eval.bootstrap_draws=200", "figures=false"]


def _sfbench_command(*overrides: str) -> list[str]:
    return [str(Path(sys.executable).parent / "sfbench"), *overrides]


@pytest.mark.parametrize(("arguments", "message"), [
    (["eval.rng=jax"], "eval.rng=jax: the setting eval.rng was renamed to eval.rng_mode; write eval.rng_mode=jax."),
    (["+eval.rng=jax"], "+eval.rng=jax: the setting eval.rng was renamed to eval.rng_mode; write eval.rng_mode=jax."),
    (["train.devices=2"], "train.devices=2: the setting train.devices was renamed to train.num_devices; write "
                          "train.num_devices=2."),
    (["+eval.seed=3"], "+eval.seed=3: eval.seed is a fixed setting, which `+` cannot add; write eval.seed=3"),
    (["eval.sed=3"], "eval.sed=3: eval has no setting 'sed'; did you mean seed? its settings: rng_mode, seed,"),
    (["dataset=ettth1"], "dataset=ettth1: there is no dataset preset 'ettth1'; did you mean etth1? the dataset "
                         "presets: beijing_air_tiantan, etth1,"),
    (["profile=tinny", "model=dlinear"], "profile=tinny: there is no profile preset 'tinny'; did you mean tiny? the "
                                         "profile presets: paper, quick, tiny."),
    (["-m", "dataset=etth1,ettth1"], "there is no dataset preset 'ettth1'; did you mean etth1?"),
])
def test_input_errors_are_one_line_with_the_fix(arguments: list[str], message: str, tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(sys, "argv", ["sfbench", *arguments, f"hydra.run.dir={tmp_path / 'run'}"])
    with pytest.raises(SystemExit) as ended:
        main()
    assert ended.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("sfbench: error: ") and message in err, err
    assert not (tmp_path / "run").exists()  # nothing was started


@pytest.mark.parametrize(("sent", "status"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_signal_ends_the_run_with_one_line_saying_what_is_kept(sent: signal.Signals, status: int,
                                                                  tmp_path: Path) -> None:
    folder = tmp_path / "run"
    # A suite started in the background (`nohup ... &`) hands its children SIGINT ignored, and Python then keeps
    # it ignored, so the run would finish instead of stopping. The child restores Python's own SIGINT handler
    # before the usual entry point (a `preexec_fn` would fork a JAX process, which JAX warns against).
    start = ("import signal, sys; signal.signal(signal.SIGINT, signal.default_int_handler); "
             "from sfbench_jax.cli.main import main; sys.argv[0] = 'sfbench'; sys.exit(main())")
    overrides = (*COMMON, "eval.seed=11", f"cache_dir={tmp_path / 'cache'}", f"hydra.run.dir={folder}")
    with subprocess.Popen([sys.executable, "-c", start, *overrides], stderr=subprocess.PIPE, text=True,
                          env={k: v for k, v in os.environ.items() if k != "SFBENCH_STORE_DIR"}) as process:
        try:
            for line in process.stderr:  # the run has started its work (the data is loaded)
                if "rows x" in line:
                    break
            process.send_signal(sent)
            rest = process.stderr.read()
            process.wait(timeout=300)
        finally:
            if process.poll() is None:
                process.kill()
    assert process.returncode == status, rest
    [last] = rest.splitlines()
    assert last == (f"sfbench: stopped by {sent.name}: the run in {folder} did not complete (it has no completion "
                    "record, so no reader uses it, and the next run into that folder removes its files); finished "
                    f"candidates are kept in the candidate store {Path.home() / '.cache/sfbench-jax/candidates'}. "
                    "Run the same command again to resume: finished candidates are reused, not retrained."), rest
    assert not (folder / "run_record.json").exists() and not (tmp_path / ".run.lock").exists()


def _can_mount_tmpfs(tmp_path: Path) -> bool:
    if shutil.which("unshare") is None:
        return False
    probe = subprocess.run(["unshare", "-rm", "sh", "-c", f"mount -t tmpfs -o size=64k tmpfs {tmp_path}"],
                           capture_output=True, check=False)
    return probe.returncode == 0


@pytest.mark.slow  # a whole run that compiles afresh (30-50 s on 2 shared cores)
def test_a_full_disk_is_one_line_saying_what_is_kept(tmp_path: Path) -> None:
    small = tmp_path / "small"
    small.mkdir()
    if not _can_mount_tmpfs(small):
        pytest.skip("needs `unshare -rm` (a private mount namespace) to mount a 64 KiB tmpfs")
    command = " ".join(_sfbench_command(*COMMON, f"cache_dir={tmp_path / 'cache'}", f"hydra.run.dir={small / 'run'}"))
    completed = subprocess.run(["unshare", "-rm", "sh", "-c", f"mount -t tmpfs -o size=64k tmpfs {small} && exec "
                                f"{command}"], capture_output=True, text=True, timeout=600, check=False)
    assert completed.returncode == 2, completed.stderr[-3000:]
    [line] = [line for line in completed.stderr.splitlines() if not line.startswith("[sfbench]")]
    assert line.startswith("sfbench: error: the disk is full (") and "No space left on device" in line, line
    assert (f"the run in {small / 'run'} did not complete (it has no completion record" in line
            and "finished candidates are kept in the candidate store" in line
            and "Free space (or choose another hydra.run.dir / train.store_dir / cache_dir) and run the same command "
                "again" in line), line


def test_a_process_measured_by_coverage_saves_its_measurement_before_it_ends_at_once(tmp_path: Path) -> None:
    # `sfbench` ends a finished run (and a stopped one) with os._exit, which skips coverage.py's exit hook; without
    # the save, the suite's measurement of every such subprocess was lost (docs/testing.md, "Time and coverage")
    data_file = tmp_path / "measured"
    program = ("import coverage\n"
               f"measured = coverage.Coverage(data_file={str(data_file)!r}, config_file=False)\n"
               "measured.start()\n"
               "from sfbench_jax.cli import main\n"
               "main.end_process(3)\n")
    completed = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=300,
                               check=False)
    assert completed.returncode == 3, completed.stderr[-2000:]
    from coverage import CoverageData

    saved = CoverageData(basename=str(data_file))
    saved.read()
    main_file = next(name for name in saved.measured_files() if name.endswith("cli/main.py"))
    assert saved.lines(main_file)  # the module's own lines, up to the save
