"""`DatasetSpec`: a dataset's loader and contract, and `csv_dataset`, a user dataset made of one file plus a spec.

A spec is everything the rest of the code knows about a dataset: how its runtime frame is obtained (the
loader), its channels and their typing, its targets, its window (input length n, horizon H), its batch size,
its reference checksums and the key its seeds are derived from. The split is the protocol's chronological
60/20/20 (`splits.py`) and the canonical seeds follow from `reference_key` and the window (`seeds.py`). Every
loaded frame is validated against the spec (`loaders.validate_frame`: columns, numbers, finite values, discrete
domains, strictly increasing timestamps, enough rows for a window in every split) before any work.

The paper's datasets are specs in `data/registry.py`; a dataset added inside this repository is `SPEC` (usually
`csv_dataset(...)`) in its own module of `sfbench_jax/data/`, which the registry collects; a plug-in package builds
its own and names it in the entry-point group `sfbench_jax.datasets` (see `sfbench_jax/plugins/entry_points.py`).
This module imports only the seeds and errors of the data layer, so a plug-in imports it without a registry.
"""

from __future__ import annotations

import bz2
import gzip
import io
import lzma
from collections.abc import Callable
from dataclasses import dataclass
from importlib.resources.abc import Traversable
from pathlib import Path

import pandas as pd

from sfbench_jax.data.errors import DataContractError
from sfbench_jax.data.seeds import DatasetSeeds, data_config_signature, dataset_seeds

#: The runtime frame's time column (a loader renames its own to this).
TIME_COLUMN = "datetime"


@dataclass(frozen=True)
class RuntimeFrame:
    """A loader's output: the frame (`datetime` + the channels) plus where it came from and its checksum if
    already known."""

    frame: pd.DataFrame
    source_path: str
    known_content_sha256: str | None = None
    #: the time column as the source file names it (renamed to `datetime` in `frame`), for messages
    file_time_column: str = "datetime"


#: `loader(spec, data_root, cache_dir) -> RuntimeFrame`.
Loader = Callable[["DatasetSpec", Path | None, Path | None], RuntimeFrame]


@dataclass(frozen=True)
class DatasetSpec:
    """Contract of one dataset.

    Attributes:
        key: registry / CLI key (e.g. "etth1"); `dataset.name=<key>` selects it.
        reference_key: the key the reference implementation uses (a user dataset: its own key); it enters the
            data-config signature and therefore every derived seed.
        label: display label for tables and figures.
        loader: `(spec, data_root, cache_dir) -> RuntimeFrame`.
        channels: input channel names; their order defines channel indices.
        horizon: forecast length H.
        batch_size: training batch size.
        discrete_channels: channels excluded from the continuous pool (never touched by channel-scoped faults).
        target_channels: forecast targets, or None when every channel is a target.
        expected_rows: row count of the reference runtime frame (None: no reference).
        content_sha256: accepted reference content checksums (empty: no reference, no comparability warning).
        input_len: window length n.
        discrete_domains: (channel, allowed integer codes) pairs for the discrete channels.
        synthetic: a generated stand-in (its checksum is of the values; always "matches").
    """

    key: str
    reference_key: str
    label: str
    loader: Loader
    channels: tuple[str, ...]
    horizon: int
    batch_size: int
    discrete_channels: tuple[str, ...] = ()
    target_channels: tuple[str, ...] | None = None
    expected_rows: int | None = None
    content_sha256: tuple[str, ...] = ()
    input_len: int = 96
    discrete_domains: tuple[tuple[str, tuple[int, ...]], ...] = ()
    synthetic: bool = False

    def __post_init__(self) -> None:
        where = f"DatasetSpec {self.key!r}"
        if not self.key or not self.key.replace("_", "a").isalnum() or self.key != self.key.lower():
            raise ValueError(f"{where}: the key must be lower-case letters, digits and '_' (it names run folders).")
        if not callable(self.loader):
            raise ValueError(f"{where}: loader must be a function (spec, data_root, cache_dir) -> RuntimeFrame.")
        if not self.channels or len(set(self.channels)) != len(self.channels):
            raise ValueError(f"{where}: channels must be a non-empty tuple of distinct names.")
        unknown = [name for name in (*self.discrete_channels, *(self.target_channels or ()))
                   if name not in self.channels]
        if unknown:
            raise ValueError(f"{where}: {unknown} are not among its channels; targets and discrete channels must be "
                             "channel names.")
        if self.target_channels is not None and not self.target_channels:
            raise ValueError(f"{where}: target_channels is empty; name at least one, or None for every channel.")
        for name, value in (("input_len", self.input_len), ("horizon", self.horizon),
                            ("batch_size", self.batch_size)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{where}: {name} must be an integer >= 1, got {value!r}.")

    @property
    def name(self) -> str:
        """The key (the word plug-in registries use)."""
        return self.key

    @property
    def num_channels(self) -> int:
        """Number of input channels m."""
        return len(self.channels)

    @property
    def target_indices(self) -> tuple[int, ...]:
        """Target channel positions in input order."""
        if self.target_channels is None:
            return tuple(range(self.num_channels))
        return tuple(self.channels.index(name) for name in self.target_channels)

    @property
    def continuous_pool(self) -> tuple[int, ...]:
        """Positions of the continuous channels (the fault channel pool P)."""
        return tuple(i for i, name in enumerate(self.channels) if name not in self.discrete_channels)

    @property
    def signature(self) -> str:
        """The data-config signature (protocol 1.6)."""
        return data_config_signature(
            reference_key=self.reference_key, input_channels=self.channels,
            target_channels=self.target_channels, input_len=self.input_len, horizon=self.horizon)

    @property
    def seeds(self) -> DatasetSeeds:
        """Data and evaluation seeds derived from the signature."""
        return dataset_seeds(self.reference_key, self.signature)

    @property
    def is_synthetic(self) -> bool:
        """True for the shape-matched synthetic stand-ins."""
        return self.synthetic


_COMPRESSION = {".gz": "gzip", ".xz": "xz", ".bz2": "bz2", ".zip": "zip", ".zst": "zstd"}


@dataclass(frozen=True)
class FileLoader:
    """Loads one CSV or Parquet file (by its suffix; CSV may be compressed: .gz, .xz, .bz2, .zip, .zst).

    Attributes:
        path: an absolute path; a relative path (looked up under `data_root`, then the working directory); or a
            package resource (`importlib.resources.files("my_pkg").joinpath("data.csv")`).
        time_column: the file's timestamp column (renamed to `datetime`).
    """

    path: str | Path | Traversable
    time_column: str = TIME_COLUMN

    def __call__(self, spec: DatasetSpec, data_root: Path | None, cache_dir: Path | None) -> RuntimeFrame:
        del cache_dir
        source, origin = self._resolve(spec, data_root)
        name = Path(str(self.path)).name.lower()
        try:
            if name.endswith(".parquet"):
                frame = pd.read_parquet(source)
            else:
                raw = source.read_bytes()
                compression = _COMPRESSION.get(Path(name).suffix)
                frame = pd.read_csv(io.BytesIO(raw), compression=compression)
                header = pd.read_csv(io.BytesIO(raw), compression=compression, header=None, nrows=1, dtype=str)
                _refuse_repeated_columns([str(v) for v in header.iloc[0]] if len(header) else [], spec,
                                         self.time_column, origin)
        except UnicodeDecodeError as error:
            raise DataContractError(f"{origin}: {_undecodable(raw, name, error)} is not UTF-8 text; save the file "
                                    "as UTF-8 (e.g. `iconv -f latin1 -t utf-8 FILE`), or fix that line.") from None
        except (OSError, ValueError, ImportError, pd.errors.ParserError) as error:
            raise DataContractError(f"{origin}: cannot read the file of dataset {spec.key!r}: {error}. Supply a CSV "
                                    "(or Parquet) file with a header row.") from error
        if self.time_column not in frame.columns:
            raise DataContractError(f"{origin}: no time column {self.time_column!r} (columns: "
                                    f"{list(frame.columns[:8])}). Name the file's timestamp column in the spec "
                                    "(csv_dataset(..., time_column=...)).")
        frame = frame.rename(columns={self.time_column: TIME_COLUMN})
        try:
            frame[TIME_COLUMN] = pd.to_datetime(frame[TIME_COLUMN])
        except (ValueError, TypeError) as error:
            raise DataContractError(f"{origin}: column {self.time_column!r} does not hold timestamps: {error}. "
                                    "Write them as ISO dates (e.g. 2024-01-31 13:00:00).") from error
        return RuntimeFrame(frame, origin, file_time_column=self.time_column)

    def _resolve(self, spec: DatasetSpec, data_root: Path | None) -> tuple[Path | Traversable, str]:
        """The file to read and how to name it in messages."""
        if isinstance(self.path, Traversable) and not isinstance(self.path, Path):
            if not self.path.is_file():
                raise DataContractError(f"The packaged file {self.path} of dataset {spec.key!r} does not exist; "
                                        "reinstall the package that provides it.")
            return self.path, f"package:{self.path}"
        path = Path(self.path).expanduser()
        candidates = [path] if path.is_absolute() else \
            [*([Path(data_root).expanduser() / path] if data_root is not None else []), Path.cwd() / path]
        found = next((candidate for candidate in candidates if candidate.is_file()), None)
        if found is None:
            raise DataContractError(f"The file of dataset {spec.key!r} was not found; looked for "
                                    f"{[str(c) for c in candidates]}. Put it there, set data_root=PATH (a relative "
                                    "path is looked up under it), or give the spec an absolute path.")
        return found, str(found)


def _undecodable(raw: bytes, name: str, error: UnicodeDecodeError) -> str:
    """`CSV line L (byte 0xNN)`: where the first byte that is not UTF-8 lies in a CSV file (its text, decompressed);
    the decoder's own words where the line cannot be found (a .zip or .zst file)."""
    opener: dict[str, Callable[[bytes], bytes]] = {".gz": gzip.decompress, ".xz": lzma.decompress,
                                                   ".bz2": bz2.decompress}
    try:
        text = opener[Path(name).suffix](raw) if Path(name).suffix in opener else raw
        text.decode("utf-8")
    except UnicodeDecodeError as found:
        line = text.count(b"\n", 0, found.start) + 1
        return f"CSV line {line} (byte {text[found.start]:#04x})"
    except (OSError, ValueError, EOFError):
        pass
    return f"the file ({error.reason} at byte {error.start})"


def _refuse_repeated_columns(header: list[str], spec: DatasetSpec, time_column: str, origin: str) -> None:
    """Refuse a header that names a column the dataset reads (its time column or a channel) twice: the reader would
    silently take one of them.

    Raises:
        DataContractError: naming the column, its positions and the fix.
    """
    for name in (time_column, *spec.channels):
        positions = [index + 1 for index, value in enumerate(header) if value == name]
        if len(positions) > 1:
            raise DataContractError(f"{origin}: the header names column {name!r} {len(positions)} times (columns "
                                    f"{', '.join(map(str, positions))}); the dataset reads it once, so which "
                                    "would be used is a guess. Keep one column of that name (rename or drop the "
                                    "others).")


def csv_dataset(key: str, path: str | Path | Traversable, *, channels: tuple[str, ...] | list[str],
                horizon: int, targets: tuple[str, ...] | list[str] | None = None, input_len: int = 96,
                time_column: str = TIME_COLUMN, label: str | None = None, batch_size: int = 32,
                discrete_domains: dict[str, tuple[int, ...]] | None = None, reference_key: str | None = None,
                content_sha256: tuple[str, ...] = ()) -> DatasetSpec:
    """A user dataset: one CSV (or Parquet) file plus its contract.

    Args:
        key: the dataset's key (`dataset.name=<key>`).
        path: the file (see `FileLoader.path`).
        channels: the input columns, in channel order.
        horizon: forecast length H.
        targets: forecast target columns (None: every channel).
        input_len: window length n (the protocol's 96 by default).
        time_column: the file's timestamp column.
        label: display label (default: the key).
        batch_size: training batch size.
        discrete_domains: integer-coded columns and their allowed codes (kept out of the fault channel pool).
        reference_key: the key the seeds are derived from (default: the key).
        content_sha256: the accepted content checksums (empty: none, no comparability warning).
    """
    domains = tuple((name, tuple(codes)) for name, codes in (discrete_domains or {}).items())
    return DatasetSpec(key=key, reference_key=reference_key or key, label=label or key,
                       loader=FileLoader(path, time_column), channels=tuple(channels), horizon=horizon,
                       batch_size=batch_size, discrete_channels=tuple(name for name, _ in domains),
                       target_channels=None if targets is None else tuple(targets), content_sha256=content_sha256,
                       input_len=input_len, discrete_domains=domains)
