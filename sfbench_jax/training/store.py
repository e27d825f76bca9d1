"""The candidate store: finished candidates are never retrained.

Layout: `<root>/<dataset>/<architecture>/<candidate_hash>/` holds `checkpoint/` (Orbax, the
best-epoch parameters and batch statistics) and `result.json` (the training record). The result is
written atomically and last, so a candidate counts as finished exactly when `result.json` exists; a
sweep killed mid-way leaves at most unfinished folders, which the next run overwrites.

A candidate's identity is the SHA-256 of its resolved configuration (dataset key, data-config
signature and content checksum, architecture, method, hyperparameters, model seed, shuffling seed,
the training protocol) plus the code that shaped it (`CODE_FIELDS`): the store format, the package version, the
fingerprint of the code that defines the model and the method (`training.sweep.code_identity`: their modules' source
digests, a plug-in's name, version and files digest) and the engine (`plugins.code_identity.engine_identity`: the
engine's source digest and the JAX / jaxlib / Flax / Optax versions). Candidates trained by other code stay in the
store and are never served (`same_training` finds them, so the sweep can say how many it retrains and why).

Many processes may share one store at the same moment (the jobs of a multirun on one machine or on a
cluster's shared file system). A process trains a candidate only while it holds the candidate's claim, a
POSIX record lock on `<dataset>/<architecture>/<hash>.lock` (released by the kernel when the process dies,
so a killed job never leaves a stale claim). Every write happens under the claim and lands by an atomic
rename (Orbax renames its finished checkpoint folder into place; `result.json` is renamed last), so a
reader sees a candidate either finished and complete or not at all, and a claim holder re-reads the store
before training, so a candidate another process finished meanwhile is never trained twice.

A stored candidate is verified when it is used: `result.json` records the size and SHA-256 of every file of its
checkpoint, and `restore` re-hashes them before Orbax reads a byte, then refuses non-finite weights. A damaged
`result.json` or checkpoint is one `ValueError` naming the candidate folder and the fix (delete the folder; the
next run retrains that candidate), never Orbax's traceback or a NaN score. Records written before checkpoint
checksums existed are restored without the file check (weights are still checked for NaN/inf).
"""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import fcntl
import hashlib
import importlib.metadata
import json
import math
import shutil
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, TextIO

import jax
import numpy as np

from sfbench_jax.data.checksums import file_sha256
from sfbench_jax.storage.atomic import ensure_writable_dir, write_json

#: Bump when training semantics or the stored layout change (old candidates are then retrained).
STORE_FORMAT_VERSION = 1
RESULT_FILE, CHECKPOINT_DIR = "result.json", "checkpoint"
STATUS_FINISHED, STATUS_FAILED = "finished", "failed"


def code_version() -> str:
    """The installed sfbench-jax version (part of every candidate identity)."""
    try:
        return importlib.metadata.version("sfbench-jax")
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


def _canonical(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {str(key): _canonical(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_canonical(item) for item in value]
    if isinstance(value, (np.integer,)):
        return int(value)
    if isinstance(value, (np.floating,)):
        return float(value)
    if isinstance(value, np.bool_):
        return bool(value)
    return value


#: The identity fields that name the code which trained a candidate; the others name what it was trained on.
CODE_FIELDS = ("format", "code_version", "code", "engine")


def same_training(first: Mapping[str, Any], second: Mapping[str, Any]) -> bool:
    """Whether two candidate identities describe the same training (data, hyperparameters, seeds, protocol) apart
    from the code that ran it (`CODE_FIELDS`)."""
    def training(identity: Mapping[str, Any]) -> str:
        return json.dumps(_canonical({key: value for key, value in identity.items() if key not in CODE_FIELDS}),
                          sort_keys=True, separators=(",", ":"))

    return training(first) == training(second)


def candidate_hash(identity: Mapping[str, Any]) -> str:
    """24 hex digits of the SHA-256 of the identity's compact, key-sorted JSON."""
    text = json.dumps(_canonical(identity), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:24]


def _finite_or_none(value: float) -> float | None:
    return float(value) if math.isfinite(value) else None


@dataclass(frozen=True)
class CandidateResult:
    """The training record of one candidate (what `result.json` holds).

    Attributes:
        candidate_hash: store key (also the selection's variant id).
        identity: the resolved configuration that was hashed.
        dataset, architecture, method: the cell the candidate belongs to.
        trial_number: 1-based position in the random subgrid.
        grid_index: position in the expanded valid grid.
        hparams: hyperparameters, `lr` included.
        model_seed: parameter-initialisation / dropout seed.
        status: "finished" or "failed" (validation loss never finite).
        best_val_loss: lowest validation loss (None if failed).
        best_epoch: 0-based epoch of the best checkpoint (-1 if failed).
        epochs_run: epochs trained.
        stop_reason: "patience", "non_finite", "max_epochs", or "untrained" (a model without trainable
            weights, scored on clean validation as built).
        val_curve: validation loss per epoch (None where not finite).
        train_curve: mean training loss per epoch (None where not finite).
        train_seconds: wall time of the candidate's training (shared by a vectorised group).
        group_size: candidates trained together in its compiled program.
        code_version: package version that trained it.
        recipe: the method recipe (empty for the baseline).
        variant: the spec's variant id ("baseline" for the baseline).
        checkpoint_files: `{relative path: [bytes, sha256]}` of every checkpoint file, recorded by `save` and
            verified by `restore` (empty for failed and untrained candidates and for older records).
    """

    candidate_hash: str
    identity: dict[str, Any] = field(hash=False)
    dataset: str
    architecture: str
    method: str
    trial_number: int
    grid_index: int
    hparams: dict[str, Any] = field(hash=False)
    model_seed: int
    status: str
    best_val_loss: float | None
    best_epoch: int
    epochs_run: int
    stop_reason: str
    val_curve: list[float | None] = field(hash=False)
    train_curve: list[float | None] = field(hash=False)
    train_seconds: float
    group_size: int
    code_version: str
    recipe: dict[str, Any] = field(default_factory=dict, hash=False)
    variant: str = "baseline"
    checkpoint_files: dict[str, list[int | str]] = field(default_factory=dict, hash=False, compare=False)

    @property
    def is_finished(self) -> bool:
        """Whether the candidate produced a usable checkpoint."""
        return self.status == STATUS_FINISHED

    def to_json(self) -> dict[str, Any]:
        """JSON-ready dict."""
        return _canonical(asdict(self))

    @classmethod
    def from_json(cls, payload: Mapping[str, Any]) -> CandidateResult:
        """Inverse of `to_json`."""
        return cls(**payload)


class CandidateStore:
    """Finished candidates on disk, keyed by dataset, architecture and candidate hash."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)

    def ensure_writable(self) -> None:
        """Create the store folder; raise before any training if it cannot be written.

        Raises:
            PermissionError: naming the folder and the fix.
        """
        ensure_writable_dir(self.root, what="candidate store", fix="Choose another folder with train.store_dir=PATH.")

    def candidate_dir(self, dataset: str, architecture: str, key: str) -> Path:
        """Folder of one candidate."""
        return self.root / dataset / architecture / key

    def load(self, dataset: str, architecture: str, key: str) -> CandidateResult | None:
        """The stored result, or None if the candidate has not finished.

        Raises:
            ValueError: `result.json` is damaged (not JSON, fields missing, another candidate's), naming the
                candidate folder and the fix.
        """
        folder = self.candidate_dir(dataset, architecture, key)
        path = folder / RESULT_FILE
        if not path.is_file():
            return None
        try:
            result = CandidateResult.from_json(json.loads(path.read_text()))
        except (UnicodeDecodeError, json.JSONDecodeError, TypeError) as error:
            raise ValueError(f"{path} is not a valid candidate record ({type(error).__name__}: {error}); it was "
                             f"damaged after it was written. {_delete_fix(folder)}") from error
        if result.candidate_hash != key:
            raise ValueError(f"{path} records candidate {result.candidate_hash}, expected {key}; the store is "
                             f"corrupted. {_delete_fix(folder)}")
        return result

    def stored_identities(self, dataset: str, architecture: str) -> list[dict[str, Any]]:
        """The identities of every finished record under `<dataset>/<architecture>/` (any code's), oldest first;
        damaged records are left out (they are refused where they would be used)."""
        found: list[tuple[float, dict[str, Any]]] = []
        for path in (self.root / dataset / architecture).glob(f"*/{RESULT_FILE}"):
            try:
                identity = json.loads(path.read_text()).get("identity")
                modified = path.stat().st_mtime
            except (OSError, UnicodeDecodeError, json.JSONDecodeError, AttributeError):
                continue
            if isinstance(identity, dict):
                found.append((modified, identity))
        return [identity for _, identity in sorted(found, key=lambda item: item[0])]

    def save(self, result: CandidateResult, checkpoint: Mapping[str, Mapping[str, np.ndarray]] | None) -> Path:
        """Write the checkpoint (if any), then the result JSON atomically (last).

        Call it while holding the candidate's claim (`claim`): it first removes what an interrupted
        writer left in the folder (a checkpoint without `result.json`, Orbax's temporary folders).
        """
        folder = self.candidate_dir(result.dataset, result.architecture, result.candidate_hash)
        folder.mkdir(parents=True, exist_ok=True)
        target = folder / CHECKPOINT_DIR
        for leftover in folder.glob(f"{CHECKPOINT_DIR}*"):  # never finished (no result.json): safe to replace
            shutil.rmtree(leftover)
        if checkpoint is not None:
            import orbax.checkpoint as ocp  # here, not at import: a run that trains nothing never loads Orbax

            with ocp.StandardCheckpointer() as checkpointer:
                checkpointer.save(target, {group: dict(values) for group, values in checkpoint.items()})
                checkpointer.wait_until_finished()
            result = dataclasses.replace(result, checkpoint_files=checkpoint_files(target))
        return write_json(result.to_json(), folder / RESULT_FILE)

    def restore(self, result: CandidateResult) -> dict[str, dict[str, np.ndarray]]:
        """The stored checkpoint of a finished candidate as `{"params": {...}, "batch_stats": {...}}`, verified
        against the checksums its `result.json` records (re-read from the store) before it is read.

        Raises:
            FileNotFoundError: the checkpoint folder is missing.
            ValueError: the checkpoint does not match its record, cannot be read, or holds NaN/inf weights
                (naming the candidate folder and the fix).
        """
        folder = self.candidate_dir(result.dataset, result.architecture, result.candidate_hash)
        target = folder / CHECKPOINT_DIR
        if not target.is_dir():
            raise FileNotFoundError(f"Checkpoint of candidate {result.candidate_hash} missing at {target}; "
                                    f"{_delete_fix(folder)}")
        stored = self.load(result.dataset, result.architecture, result.candidate_hash) or result
        _verify_checkpoint(target, stored.checkpoint_files, folder)
        import orbax.checkpoint as ocp  # here, not at import (see `save`)

        try:
            with ocp.StandardCheckpointer() as checkpointer:
                restored = checkpointer.restore(target)
        except Exception as error:  # Orbax and TensorStore raise many types for a damaged checkpoint
            raise ValueError(f"Cannot read the checkpoint {target} ({type(error).__name__}: "
                             f"{str(error).splitlines()[0] if str(error) else ''}). {_delete_fix(folder)}") from error
        weights = {group: {name: np.asarray(jax.device_get(value)) for name, value in values.items()}
                   for group, values in restored.items()}
        bad = sorted(f"{group}.{name}" for group, values in weights.items() for name, value in values.items()
                     if np.issubdtype(value.dtype, np.floating) and not np.isfinite(value).all())
        if bad:
            raise ValueError(f"The checkpoint {target} holds NaN/inf weights ({', '.join(bad[:5])}); a finished "
                             f"candidate never stores them. {_delete_fix(folder)}")
        return weights

    def claim(self, dataset: str, architecture: str, keys: Sequence[str], *, wait: bool = True) -> Claim | None:
        """Lock the candidates `keys` for this process (in sorted order, so processes never deadlock).

        Args:
            wait: block until every lock is free; with False, return None at once if another process
                holds any of them (nothing is kept locked then).

        Returns:
            The held `Claim` (a context manager that releases it), or None (only with `wait=False`).

        Raises:
            OSError: the store's file system does not support POSIX locks (naming the fix).
        """
        folder = self.root / dataset / architecture
        folder.mkdir(parents=True, exist_ok=True)
        claim = Claim()
        for key in sorted(set(keys)):
            if not claim.add(folder / f"{key}.lock", wait=wait):
                claim.release()
                return None
        return claim

    def claim_first_free(self, dataset: str, architecture: str,
                         groups: Sequence[Sequence[str]]) -> tuple[int, Claim]:
        """Claim the first group of candidates that no other process holds; if every group is held,
        wait for the first one. Returns the group's index and its claim.

        Two processes working through the same list thus train different groups at the same time; the one
        that waits gets the group only after its holder released it, i.e. finished it or died.
        """
        if not groups:
            raise ValueError("claim_first_free needs at least one group of candidate keys.")
        for index, keys in enumerate(groups):
            claim = self.claim(dataset, architecture, keys, wait=False)
            if claim is not None:
                return index, claim
        claim = self.claim(dataset, architecture, groups[0], wait=True)
        assert claim is not None  # a waiting claim always returns one
        return 0, claim

    @contextlib.contextmanager
    def locked(self, dataset: str, architecture: str, keys: Sequence[str]) -> Iterator[None]:
        """Hold the claim of `keys` for the block (waiting until no other process holds any of them)."""
        claim = self.claim(dataset, architecture, keys, wait=True)
        assert claim is not None  # a waiting claim always returns one
        with claim:
            yield


class Claim:
    """POSIX record locks on candidate lock files, held by this process until `release` (or its death).

    Record locks (`fcntl.lockf`) rather than `flock`, because shared cluster file systems (NFS, Lustre with
    `-o flock`, GPFS) implement them across nodes.
    """

    def __init__(self) -> None:
        self._handles: list[TextIO] = []

    def add(self, path: Path, *, wait: bool) -> bool:
        """Lock `path` too; False if another process holds it and `wait` is False."""
        handle = open(path, "a+")  # noqa: SIM115 - held until release()
        try:
            fcntl.lockf(handle.fileno(), fcntl.LOCK_EX if wait else fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as error:
            handle.close()
            if error.errno in (errno.EACCES, errno.EAGAIN):
                return False
            raise OSError(error.errno, f"Cannot lock {path} ({error.strerror}): the candidate store needs a file "
                          "system with POSIX record locks shared by all jobs (local disk, NFS, GPFS, Lustre mounted "
                          "with -o flock). Choose such a folder with train.store_dir=PATH.") from error
        self._handles.append(handle)
        return True

    def release(self) -> None:
        """Unlock and close every lock file (in reverse order)."""
        while self._handles:
            handle = self._handles.pop()
            fcntl.lockf(handle.fileno(), fcntl.LOCK_UN)
            handle.close()

    def __enter__(self) -> Claim:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.release()


def _delete_fix(folder: Path) -> str:
    return (f"Delete the candidate folder {folder} (the next run retrains that candidate), or choose another "
            "train.store_dir.")


def checkpoint_files(target: Path) -> dict[str, list[int | str]]:
    """`{relative path: [bytes, sha256]}` of every file under a checkpoint folder, in path order."""
    return {path.relative_to(target).as_posix(): [path.stat().st_size, file_sha256(path)]
            for path in sorted(target.rglob("*")) if path.is_file()}


def _verify_checkpoint(target: Path, recorded: Mapping[str, Sequence[object]], folder: Path) -> None:
    """Raise a ValueError when the checkpoint's files differ from the record, or there is no record to check them
    against (an emptied `checkpoint_files` would switch the check off: it is refused, never trusted)."""
    if not recorded:
        raise ValueError(f"The result.json of {folder} records no checkpoint checksums (`checkpoint_files` is empty "
                         f"or missing), so its checkpoint {target} cannot be verified and is not used. "
                         f"{_delete_fix(folder)}")
    found = checkpoint_files(target)
    missing, extra = sorted(set(recorded) - set(found)), sorted(set(found) - set(recorded))
    changed = sorted(name for name in set(recorded) & set(found) if list(recorded[name]) != found[name])
    if missing or extra or changed:
        details = "; ".join(f"{label} {names[:3]}" for label, names in
                            (("missing", missing), ("unrecorded", extra), ("changed", changed)) if names)
        raise ValueError(f"The checkpoint {target} does not match the checksums in its result.json ({details}): it "
                         f"was changed or damaged after training. {_delete_fix(folder)}")


def finite_curve(values: Sequence[float]) -> list[float | None]:
    """A loss curve with non-finite entries as None (JSON has no NaN)."""
    return [_finite_or_none(float(value)) for value in values]
