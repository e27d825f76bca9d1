"""PHM data bundled with the package: NASA C-MAPSS FD001, so the RUL tools work without a data root.

What lives here: `BUNDLED_FILES` (each bundled dataset's files, laid out like the data root under
``sfbench_jax/resources/``, with the SHA-256 of their decompressed text) and `bundled_root`, which
checks those checksums (once per process, with `verified_folder`) and returns the folder to read
from. Provenance and terms: ``sfbench_jax/resources/CMAPSS_FD001_NOTICE.md``. What does not:
parsing (`phm_kernels.loaders`) and the choice between a data root and the bundle (`DataStore`).
"""

from __future__ import annotations

import functools
import hashlib
import lzma
from importlib import resources
from pathlib import Path

from sfbench_jax.mcp.errors import UnavailableToolError

__all__ = ["BUNDLED_FILES", "bundled_root", "is_bundled", "verified_folder"]

#: Registered dataset name -> role -> (path under the resources folder, SHA-256 of the
#: decompressed file). The paths mirror the data root, so the same loader reads either.
BUNDLED_FILES: dict[str, dict[str, tuple[str, str]]] = {
    "cmapss_fd001": {
        "train": ("phm/cmapss/train_fd001.txt.xz",
                  "963b5e22825b34d8b21c69e1aeb4af3e647050eb672ee8834ba4b5d91d2de0f8"),
        "test": ("phm/cmapss/test_fd001.txt.xz",
                 "3cda7109ce17bafb5443f2ac926cfcf88154b941b8c4cf95eb55d1ddd6f52851"),
        "rul": ("phm/cmapss/rul_fd001.txt.xz",
                "a19c8ec94931949d0485bdc35118206e9c81c4547b422efb9cf86f4ceddbceca"),
    },
}


def is_bundled(dataset: str) -> bool:
    """Whether a registered dataset ships with the package."""
    return dataset in BUNDLED_FILES


def _resources_folder() -> Path:
    phm = resources.files("sfbench_jax.resources").joinpath("phm")
    if not isinstance(phm, Path):  # e.g. a zipped install: the loader needs real files
        raise UnavailableToolError(
            "the bundled data is not on a file system in this installation; install "
            "sfbench-jax as a regular package or pass --data-root")
    return phm.parent


def verified_folder(folder: Path, files: dict[str, tuple[str, str]], *, dataset: str) -> Path:
    """``folder`` after checking that each file decompresses (xz) to the expected SHA-256.

    Args:
        folder: Where the files lie (laid out like a data root).
        files: Role -> (path under ``folder``, SHA-256 of the decompressed file).
        dataset: Dataset name, for messages.

    Returns:
        ``folder``.

    Raises:
        UnavailableToolError: If a file is missing, not xz, or its checksum does not match.
    """
    for role, (relative, expected) in files.items():
        path = folder / relative
        try:
            digest = hashlib.sha256(lzma.decompress(path.read_bytes())).hexdigest()
        except (OSError, lzma.LZMAError) as exc:
            raise UnavailableToolError(
                f"the bundled {dataset} {role} file {path} cannot be read ({exc}); reinstall "
                "sfbench-jax or pass --data-root") from exc
        if digest != expected:
            raise UnavailableToolError(
                f"the bundled {dataset} {role} file {path} is corrupted (SHA-256 {digest}, "
                f"expected {expected}); reinstall sfbench-jax or pass --data-root")
    return folder


@functools.cache
def bundled_root(dataset: str) -> Path:
    """The folder holding a bundled dataset's files, checked once per process.

    Args:
        dataset: A registered name with `is_bundled` true.

    Returns:
        The package's resources folder (laid out like a data root).

    Raises:
        KeyError: If the dataset is not bundled.
        UnavailableToolError: If a bundled file is missing or corrupted.
    """
    return verified_folder(_resources_folder(), BUNDLED_FILES[dataset], dataset=dataset)
