"""A run's manifest (`manifest.json`, its resolved config and the files it wrote): reading it with the settings of
older versions under their current names (`RENAMED_SETTINGS`, the one place old names are read), the files it
lists, and the check that a record vouches for exactly those files.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from sfbench_jax.run_folder.damage import DamagedRunError
from sfbench_jax.run_folder.names import JOB_FILE, MANIFEST_FILE, RECORD_FILE

#: Config settings renamed since older runs were stored (old dotted name -> current): the one place old names are
#: read, by `read_manifest`, so an old run's key and its rebuilt RunConfig are those of a new run.
RENAMED_SETTINGS = {"eval.rng": "eval.rng_mode", "train.devices": "train.num_devices"}


def _read_json(directory: Path, name: str) -> dict[str, Any]:
    try:
        payload = json.loads((Path(directory) / name).read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise DamagedRunError(directory, name, f"cannot be read ({error})") from error
    if not isinstance(payload, dict):
        raise DamagedRunError(directory, name, "does not hold a JSON object")
    return payload


def read_manifest(directory: Path) -> dict[str, Any]:
    """A run folder's manifest with the settings of older versions under their current names (`RENAMED_SETTINGS`).

    Raises:
        DamagedRunError: the manifest cannot be read or holds no JSON object.
    """
    manifest = _read_json(directory, MANIFEST_FILE)
    config = manifest.get("config")
    if not isinstance(config, dict):
        return manifest
    config = {section: dict(values) if isinstance(values, dict) else values for section, values in config.items()}
    for old, new in RENAMED_SETTINGS.items():
        (section, name), new_name = old.split("."), new.split(".")[1]
        values = config.get(section)
        if isinstance(values, dict) and name in values and new_name not in values:
            values[new_name] = values.pop(name)
    return {**manifest, "config": config}


def manifest_files(directory: Path, manifest: Mapping[str, Any]) -> list[str]:
    """The run files a manifest says its run wrote (`files`), with the manifest itself.

    Raises:
        DamagedRunError: the manifest lists no files.
    """
    listed = manifest.get("files")
    if not isinstance(listed, dict) or not all(isinstance(name, str) for name in listed.values()):
        raise DamagedRunError(directory, MANIFEST_FILE, "lists no `files` (the files its run wrote)")
    return [*listed.values(), MANIFEST_FILE]


def check_files_match_manifest(directory: Path, recorded: Iterable[str], manifest: Mapping[str, Any]) -> None:
    """The files a record vouches for are exactly those the manifest's run wrote (a job's cell.json aside).

    Raises:
        DamagedRunError: naming the files only one of them lists (files of two runs mixed in one folder).
    """
    listed, recorded = set(manifest_files(directory, manifest)), set(recorded) - {JOB_FILE}
    if listed != recorded:
        extra, absent = sorted(recorded - listed), sorted(listed - recorded)
        raise DamagedRunError(directory, RECORD_FILE, f"does not vouch for the files its manifest lists (recorded "
                              f"but not written by this run: {extra or 'none'}; written but not recorded: "
                              f"{absent or 'none'}): files of two runs are mixed in one folder")
