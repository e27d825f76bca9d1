"""The `sfbench` command as the tests run it (one copy; the test modules import it, like `bundled_data`).

* `run_sfbench(...)`: the installed console script in its own process, for what only a process shows: its exit
  status after a real run, signals, a fresh JAX, the compilation cache across processes.
* `run_in_process(...)`: a real run in the test's own process, composed by Hydra as the command composes it, for a
  test that reads what a run writes and logs (no new Python, JAX or Hydra start; programs it compiled stay).
* `sfbench_refusal(...)`: a command that must be refused before any work. One that the command-line check refuses
  (`cli.arguments.check_overrides`: a renamed or unknown setting, a preset typo) is run through the same entry
  point (`sfbench_jax.cli.main.main`) in the test's process, which a new process would only make ~2.5 s of CPU
  slower (starting Python, importing JAX and Hydra); any other goes to `run_sfbench` (Hydra, once started, takes
  over the process's standard streams and logging, which a test process cannot share).
"""

from __future__ import annotations

import contextlib
import io
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

SFBENCH = Path(sys.executable).parent / "sfbench"


def sfbench_command(*overrides: str) -> list[str]:
    """The command line of the installed `sfbench` script with these arguments."""
    return [str(SFBENCH), *overrides]


def run_sfbench(*overrides: str, data_root: Path | None = None, cwd: Path | None = None,
                environment: dict[str, str] | None = None, timeout: float = 900) -> subprocess.CompletedProcess:
    """Run `sfbench` in its own process (this environment, plus `environment`; SFBENCH_DATA_ROOT=`data_root` if
    given) and return the completed process (text output captured)."""
    env = {**os.environ, **(environment or {})}
    if data_root is not None:
        env["SFBENCH_DATA_ROOT"] = str(data_root)
    return subprocess.run(sfbench_command(*overrides), capture_output=True, text=True, cwd=cwd, env=env,
                          timeout=timeout, check=False)


def run_in_process(overrides: list[str], run_dir: Path) -> str:
    """Run the job of `sfbench <overrides>` in this process into `run_dir` (compilation cache on, as the command
    does) and return what it logged; the log is kept in `run_dir/run.log` too."""
    from hydra import compose, initialize_config_module

    from sfbench_jax.cli.compilation_cache import use_compilation_cache
    from sfbench_jax.cli.main import to_run_config
    from sfbench_jax.pipeline.runner import run

    with initialize_config_module(config_module="sfbench_jax.conf", version_base="1.3"):
        config = to_run_config(compose(config_name="config", overrides=overrides))
    use_compilation_cache(config)
    log = io.StringIO()
    with contextlib.redirect_stderr(log):
        run(config, run_dir)
    (run_dir / "run.log").write_text(log.getvalue())
    return log.getvalue()


def sfbench_refusal(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], *overrides: str,
                    data_root: Path | None = None, environment: dict[str, str] | None = None) -> tuple[int, str]:
    """The exit status and standard error of `sfbench` with these arguments, a command that must end before any
    work (see the module docstring for where it runs). A command that goes ahead with a run fails the test."""
    from sfbench_jax.cli import main as entry
    from sfbench_jax.cli.arguments import CommandLineError, check_overrides

    try:
        check_overrides(list(overrides))
    except CommandLineError:
        pass
    else:
        completed = run_sfbench(*overrides, data_root=data_root, environment=environment)
        return completed.returncode, completed.stderr

    def went_ahead() -> None:  # instead of ending this process (`exit_now`) after a run that should not have run
        pytest.fail(f"sfbench {' '.join(overrides)} ran instead of refusing its input")

    monkeypatch.setattr(entry, "exit_now", went_ahead)
    monkeypatch.setattr(sys, "argv", ["sfbench", *overrides])
    for name, value in {**(environment or {}),
                        **({} if data_root is None else {"SFBENCH_DATA_ROOT": str(data_root)})}.items():
        monkeypatch.setenv(name, value)
    capsys.readouterr()
    handler = signal.getsignal(signal.SIGTERM)
    try:
        with pytest.raises(SystemExit) as ended:
            entry.main()
    finally:
        signal.signal(signal.SIGTERM, handler)
    code = ended.value.code  # None is 0; a message is printed and is 1, as the interpreter does
    return (0 if code is None else code if isinstance(code, int) else 1), capsys.readouterr().err
