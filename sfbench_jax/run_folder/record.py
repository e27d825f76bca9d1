"""A run folder's completion record and its seal (docs/reliability.md): a folder is complete or visibly not.

A run writes its files and then, last and atomically, its completion record `run_record.json`: the size and SHA-256 of
every file of the run and the run's key. `seal_run` is the last step of every writer (the pipeline, the
selector-pressure re-selection): it checks the summary against the run's own per-window losses and the files against
the manifest, then writes the record (`write_record`), so a run is never sealed with numbers its losses do not give
or with files it did not write. `verify_record` is the one check every reader makes (`sfbench-collect`,
`sfbench-report`, the stored-run rebuilds and the MCP tools, all through `run_folder.loading.load_run`): a folder
without a readable record, or whose files differ from it, is refused with a `DamagedRunError` that names the folder,
the file and the fix.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from sfbench_jax.run_folder.damage import DamagedRunError, RunInProgressError
from sfbench_jax.run_folder.keys import key_identity, run_key
from sfbench_jax.run_folder.locks import live_writer
from sfbench_jax.run_folder.manifest import check_files_match_manifest, manifest_files, read_manifest
from sfbench_jax.run_folder.names import JOB_FILE, RECORD_FILE, RECORDED_FILES
from sfbench_jax.run_folder.summary import check_intervals, check_numbers, read_summary_row
from sfbench_jax.storage.atomic import fsync_path, write_atomically

RECORD_FORMAT = "sfbench-run-record/1"


def file_digest(path: Path) -> dict[str, Any]:
    """`{"bytes": size, "sha256": hex digest}` of a file."""
    digest = hashlib.sha256()
    with Path(path).open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return {"bytes": Path(path).stat().st_size, "sha256": digest.hexdigest()}


def _record_checksum(record: Mapping[str, Any]) -> str:
    body = {name: value for name, value in record.items() if name != "record_sha256"}
    return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()


def write_record(directory: Path, *, run_key: Mapping[str, Any], names: Iterable[str] | None = None) -> Path:
    """Write the completion record of a run folder whose files are all written (the last write of a run).

    Args:
        directory: the run folder.
        run_key: the run's key (JSON-able), kept as its identity.
        names: the files the run wrote, all of which the record covers (default: every `RECORDED_FILES` entry
            present, for records of folders written elsewhere).
    """
    directory = Path(directory)
    names = [n for n in RECORDED_FILES if (directory / n).is_file()] if names is None else list(names)
    for name in names:
        fsync_path(directory / name)  # the files reach the disk before the record that vouches for them
    record: dict[str, Any] = {
        "format": RECORD_FORMAT, "run_key": dict(run_key),
        "run_id": hashlib.sha256(json.dumps(dict(run_key), sort_keys=True).encode()).hexdigest()[:16],
        "written_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "files": {name: file_digest(directory / name) for name in names},
    }
    record["record_sha256"] = _record_checksum(record)

    def write(path: Path) -> None:
        path.write_text(json.dumps(record, indent=2, sort_keys=True))
        fsync_path(path)

    target = write_atomically(directory / RECORD_FILE, write)
    fsync_path(directory)
    return target


def holds_completed_run(directory: Path) -> bool:
    """Whether a folder holds a completed run (a completion record, valid or not)."""
    return (Path(directory) / RECORD_FILE).is_file()


def read_record(directory: Path) -> dict[str, Any]:
    """The completion record of a run folder, unverified against the files.

    Raises:
        RunInProgressError: there is no record yet and a running sfbench is writing the folder (named).
        DamagedRunError: the record is missing, unreadable or not one sfbench wrote.
    """
    path = Path(directory) / RECORD_FILE
    if not path.is_file():
        writer = live_writer(directory)
        if writer is not None:
            raise RunInProgressError(directory, writer)
        raise DamagedRunError(directory, RECORD_FILE, "is missing: the run never completed (it was killed or "
                              "failed while writing), or it was written by a version without completion records")
    try:
        record = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise DamagedRunError(directory, RECORD_FILE, f"cannot be read ({error})") from error
    if not (isinstance(record, dict) and record.get("format") == RECORD_FORMAT
            and isinstance(record.get("files"), dict) and record.get("record_sha256") == _record_checksum(record)):
        raise DamagedRunError(directory, RECORD_FILE, "is not a valid completion record (changed or cut)")
    return record


def verify_record(directory: Path) -> dict[str, Any]:
    """Check every file a run folder's record lists (size, then SHA-256) and that no run file lies there unlisted.

    Returns:
        The record.

    Raises:
        DamagedRunError: naming the folder, the first file at fault and the fix.
    """
    directory = Path(directory)
    record = read_record(directory)
    for name, expected in sorted(record["files"].items()):
        path = directory / name
        if not path.is_file():
            raise DamagedRunError(directory, name, "is missing (its completion record lists it)")
        actual = file_digest(path)
        if actual["bytes"] != expected.get("bytes"):
            raise DamagedRunError(directory, name, f"does not match its completion record ({actual['bytes']} bytes, "
                                  f"recorded {expected.get('bytes')}): it was cut or changed after the run finished")
        if actual["sha256"] != expected.get("sha256"):
            raise DamagedRunError(directory, name, "does not match its completion record (same size, different "
                                  "SHA-256): it was changed after the run finished")
    stray = [name for name in RECORDED_FILES if name not in record["files"] and (directory / name).is_file()]
    if stray:
        raise DamagedRunError(directory, stray[0], "is not listed in its completion record (a file of another run?)")
    return record


def describe_record(directory: Path) -> str:
    """`dataset / architecture / method (eval seed S)` of the run a folder's record names ('' if unreadable)."""
    try:
        key = read_record(directory)["run_key"]
    except DamagedRunError:
        return ""
    return f"{key.get('dataset')} / {key.get('architecture')} / {key.get('method')} (eval seed {key.get('eval_seed')})"



def seal_run(directory: Path, names: Iterable[str] | None = None) -> Path:
    """Write the completion record of a run folder whose files are all written: the last write of every writer
    (the pipeline, the selector-pressure re-selection). The summary is checked against the per-window losses
    and the files against the manifest first, so a run is never sealed with numbers its own losses do not give
    or with files it did not write.

    Args:
        directory: the run folder.
        names: the files this run wrote (default: those its manifest lists, the manifest and a job's cell.json).

    Raises:
        DamagedRunError: the summary and the per-window losses disagree, or `names` are not the manifest's files
            (nothing is sealed).
    """
    directory = Path(directory)
    row = read_summary_row(directory)
    check_numbers(directory, row)
    check_intervals(directory, row)
    manifest = read_manifest(directory)
    if names is None:
        names = [*manifest_files(directory, manifest), *([JOB_FILE] if (directory / JOB_FILE).is_file() else [])]
    names = list(dict.fromkeys(names))
    check_files_match_manifest(directory, names, manifest)
    key = json.loads(key_identity(run_key(manifest, row)))
    return write_record(directory, run_key=key, names=names)
