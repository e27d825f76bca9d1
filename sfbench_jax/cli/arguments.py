"""The `sfbench` command line checked before Hydra composes anything, and how a run that stops early is reported.

What lives here: `check_overrides` (a renamed setting named with its new name, a `+` on a fixed setting, an unknown
setting or preset name with a "did you mean" suggestion: one line each, exit status 2, before any work) and the
one-line endings of a run stopped by SIGINT/SIGTERM or a full disk (`stopped_line`, `disk_full_line`), which say what
is kept and how to resume. What does not: the config's values (`sfbench_jax.config`, checked when it is built).
"""

from __future__ import annotations

import dataclasses
import difflib
import errno
import typing
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from sfbench_jax.config import RunConfig
from sfbench_jax.run_folder.manifest import (
    RENAMED_SETTINGS as RENAMED,  # the project's one rename table (old -> new)
)

#: Config sections whose keys are free (a `+key=value` adds one).
FREE_MAPPINGS = ("model.grid", "model.hparams", "method.grid", "method.hparams")
#: Preset groups whose option names are checked (the rest of Hydra's groups, e.g. hydra/launcher, are Hydra's).
PRESET_GROUPS = ("dataset", "model", "method", "eval", "train", "profile", "experiment")


class CommandLineError(ValueError):
    """An override that cannot work, named with the fix."""


class Stopped(BaseException):
    """SIGTERM arrived (raised in the main thread by `stop_on_sigterm`'s handler); like KeyboardInterrupt, a
    request to stop rather than an error of the run."""


def stop_on_sigterm() -> None:
    """Make SIGTERM end a run like Ctrl-C does (an exception in the main thread), so it ends with one line."""
    import signal

    def handler(number: int, frame: object) -> None:
        raise Stopped("SIGTERM")

    signal.signal(signal.SIGTERM, handler)


def _suggestion(word: str, choices: Sequence[str]) -> str:
    close = difflib.get_close_matches(word, list(choices), n=3, cutoff=0.6)
    return f"did you mean {' or '.join(close)}? " if close else ""


def _sections() -> dict[str, tuple[str, ...]]:
    """`{section: its setting names}` of RunConfig's dataclass sections."""
    defaults = RunConfig()
    return {item.name: tuple(f.name for f in dataclasses.fields(getattr(defaults, item.name)))
            for item in dataclasses.fields(RunConfig) if dataclasses.is_dataclass(getattr(defaults, item.name))}


def _overrides(argv: Sequence[str]) -> list[tuple[str, str, str]]:
    """`(prefix, key, value)` of each `key=value` argument (flags and Hydra's own settings aside)."""
    found = []
    for argument in argv:
        if argument.startswith("-") or "=" not in argument:
            continue
        key, _, value = argument.partition("=")
        prefix = key[:len(key) - len(key.lstrip("+~"))]
        key = key.lstrip("+~")
        if not key.startswith("hydra"):
            found.append((prefix, key, value))
    return found


def check_settings(argv: Sequence[str]) -> None:
    """Refuse renamed, `+`-added and unknown settings of the config's sections, each with the fix.

    Raises:
        CommandLineError: naming the argument, the new or nearest name and the fix.
    """
    sections = _sections()
    for prefix, key, value in _overrides(argv):
        if key in RENAMED:
            raise CommandLineError(f"{prefix}{key}={value}: the setting {key} was renamed to {RENAMED[key]}; write "
                                   f"{RENAMED[key]}={value}.")
        section, dot, name = key.partition(".")
        if not dot or section not in sections or "." in name or key in FREE_MAPPINGS:
            continue
        if name not in sections[section]:
            hint = _suggestion(name, sections[section])
            raise CommandLineError(f"{prefix}{key}={value}: {section} has no setting {name!r}; {hint}its settings: "
                                   f"{', '.join(sections[section])}.")
        if prefix.startswith("+") and "+" not in prefix[1:]:
            raise CommandLineError(f"{prefix}{key}={value}: {key} is a fixed setting, which `+` cannot add; write "
                                   f"{key}={value} (without `+`). `+` adds keys only to {', '.join(FREE_MAPPINGS)}.")
        expected = _number_type(section, name)
        if expected is not None and not _reads_as(value, expected):
            example = getattr(getattr(RunConfig(), section), name)
            kind = "an integer" if expected is int else "a number"
            raise CommandLineError(f"{prefix}{key}={value}: {key} takes {kind}"
                                   f"{' or null' if _optional(section, name) else ''}, not {value!r}; e.g. "
                                   f"{key}={example if example is not None else 1}.")


def _hints(section: str) -> dict[str, Any]:
    return typing.get_type_hints(type(getattr(RunConfig(), section)))


def _number_type(section: str, name: str) -> type | None:
    """`int` or `float` when the setting `section.name` is one (optionally None), else None."""
    kinds = {kind for kind in typing.get_args(_hints(section).get(name)) or (_hints(section).get(name),)
             if kind is not type(None)}
    return next(iter(kinds)) if len(kinds) == 1 and kinds <= {int, float} else None


def _optional(section: str, name: str) -> bool:
    return type(None) in typing.get_args(_hints(section).get(name))


def _reads_as(value: str, kind: type) -> bool:
    """Whether an override's text converts to `kind` (a sweep, an interpolation or null is left to Hydra)."""
    text = value.strip().strip("'\"")
    if text == "null" or any(mark in text for mark in ",()[]{}$*"):
        return True
    try:
        float(text) if kind is float else int(float(text)) if "e" in text.lower() else int(text.replace("_", ""))
    except ValueError:
        return False
    return True


def _group_options(groups: Sequence[str]) -> dict[str, list[str]]:
    """The option names of preset groups as Hydra sees them (sfbench's presets and every plug-in's)."""
    from hydra import initialize_config_module
    from hydra.core.global_hydra import GlobalHydra

    with initialize_config_module(version_base="1.3", config_module="sfbench_jax.conf"):
        loader = GlobalHydra.instance().config_loader()
        present = set(loader.list_groups(""))
        return {group: sorted(loader.get_group_options(group)) for group in groups if group in present}


def check_presets(argv: Sequence[str]) -> None:
    """Refuse a preset name no group has (`dataset=ettth1`, `profile=tinny`), with the nearest names.

    Raises:
        CommandLineError: naming the argument, the suggestion and the valid names.
    """
    wanted = [(prefix, key, value) for prefix, key, value in _overrides(argv) if key in PRESET_GROUPS
              and not any(mark in value for mark in "()[]{}$")]
    if not wanted:
        return
    try:
        options = _group_options(sorted({key for _, key, _ in wanted}))
    except Exception:  # noqa: BLE001 - e.g. a broken plug-in: Hydra and the plug-in registry report it themselves
        return
    for prefix, key, value in wanted:
        if key not in options:
            continue
        for name in (v.strip() for v in value.split(",")):
            if name and name != "null" and name not in options[key]:
                raise CommandLineError(f"{prefix}{key}={value}: there is no {key} preset {name!r}; "
                                       f"{_suggestion(name, options[key])}the {key} presets: "
                                       f"{', '.join(options[key])}.")


def check_overrides(argv: Sequence[str]) -> None:
    """`check_settings` and `check_presets` on the command line (before Hydra runs).

    Raises:
        CommandLineError: the first argument that cannot work.
    """
    check_settings(argv)
    check_presets(argv)


def is_disk_full(error: BaseException) -> bool:
    """Whether an error (or what caused it) is a full disk or quota (ENOSPC, EDQUOT)."""
    while error is not None:
        if isinstance(error, OSError) and (error.errno in (errno.ENOSPC, errno.EDQUOT)
                                           or "No space left on device" in str(error)):
            return True
        cause = error.__cause__ or error.__context__
        if cause is None:
            return False
        error = cause
    return False


def _kept(output_dir: Path, store: str | None) -> str:
    where = f"the candidate store {store}" if store else f"the candidate store {output_dir / 'candidates'}"
    return (f"the run in {output_dir} did not complete (it has no completion record, so no reader uses it, and the "
            f"next run into that folder removes its files); finished candidates are kept in {where}")


def stopped_line(signal_name: str, output_dir: Path, store: str | None) -> str:
    """The one line a run stopped by a signal ends with: what is kept, and how to resume."""
    return (f"stopped by {signal_name}: {_kept(output_dir, store)}. Run the same command again to resume: finished "
            "candidates are reused, not retrained.")


def disk_full_line(error: BaseException, output_dir: Path, store: str | None) -> str:
    """The one line a run that filled its disk ends with: what is kept, and the fix."""
    return (f"the disk is full ({error.strerror if isinstance(error, OSError) and error.strerror else error}): "
            f"{_kept(output_dir, store)}. Free space (or choose another hydra.run.dir / train.store_dir / "
            "cache_dir) and run the same command again: finished candidates are reused.")
