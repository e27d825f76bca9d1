"""The rag mode's evidence: data and standards rendered as text chunks, retrieved by BM25.

What lives here: `Chunk`, the renderers that turn a registered dataset into text chunks (the
numbers the domain tools would read from the real files: C-MAPSS cycles and sensors, battery
per-cycle features and EIS records, CWRU recording facts and samples), `scenario_datasets` (the
registered datasets a scenario's query and reference solution touch), `BM25Index` (a thin wrapper
of the maintained ``bm25s`` library) and `EvidenceLibrary`, which builds one index per scenario
corpus (standards notes plus its datasets' chunks) and retrieves the top-k chunks for a query.
What does not: prompting (``agents/llm.py``), the notes' text (``standards_notes.py``).

Corpus design (PHMForge v2 Path A, rebuilt on our data): every chunk starts with a plain-words
header (dataset, asset, split, unit, cycle range, column names) so that lexical retrieval can find
it, followed by the rows. Ground truth is never rendered (no true C-MAPSS RUL, no CWRU labels).
C-MAPSS test splits are rendered in full; training splits as one run-to-failure summary line per
unit (its failure cycle and last sensor readings), since the raw training fleet is what a model
learns from, not evidence about the units asked about. CWRU recordings are rendered as their
facts plus the first `CWRU_SAMPLES` samples: an honest picture of what text retrieval can carry of
a 12-48 kHz vibration signal.
"""

from __future__ import annotations

import importlib.util
import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from sfbench_jax.agent_eval.standards_notes import STANDARDS_NOTES

__all__ = ["CMAPSS_ROWS_PER_CHUNK", "CWRU_SAMPLES", "DEFAULT_TOP_K", "BM25Index", "Chunk",
           "EvidenceLibrary", "dataset_chunks", "notes_chunks", "scenario_datasets"]

CMAPSS_ROWS_PER_CHUNK = 25
BATTERY_ROWS_PER_CHUNK = 10
CWRU_SAMPLES = 2048
CWRU_SAMPLES_PER_CHUNK = 512
DEFAULT_TOP_K = 6
_KELVIN = 273.15
_DATASET_ARGUMENTS = ("dataset_name", "battery_id", "baseline_ids", "dataset")


@dataclass(frozen=True)
class Chunk:
    """One retrievable text chunk.

    Attributes:
        chunk_id: Stable id, ``<source>#<index>``.
        source: Dataset name or ``standards``.
        text: Header line plus content.
    """

    chunk_id: str
    source: str
    text: str


def _number(value: float) -> str:
    return f"{float(value):.6g}"


def _rows_text(columns: Sequence[str], rows: np.ndarray) -> str:
    lines = [" ".join(columns)]
    lines += [" ".join(_number(v) for v in row) for row in np.asarray(rows, dtype=np.float64)]
    return "\n".join(lines)


def notes_chunks() -> list[Chunk]:
    """The standards notes as chunks (source ``standards``)."""
    return [Chunk(chunk_id=f"standards#{i}", source="standards", text=f"{title}. {text}")
            for i, (title, text) in enumerate(STANDARDS_NOTES)]


def _cmapss_chunks(name: str, data: Any) -> list[Chunk]:
    label = name.removeprefix("cmapss_").upper()
    columns = ["cycle", "setting1", "setting2", "setting3", *(f"s{i}" for i in range(1, 22))]
    chunks: list[Chunk] = []
    test = data.test
    table = np.column_stack([test.cycle, test.settings, test.sensors])
    for unit in test.unit_ids.astype(int):
        rows = table[test.unit == unit]
        for start in range(0, rows.shape[0], CMAPSS_ROWS_PER_CHUNK):
            part = rows[start:start + CMAPSS_ROWS_PER_CHUNK]
            header = (f"C-MAPSS {label} turbofan engine test unit {unit} (engine {unit}), cycles "
                      f"{int(part[0, 0])}-{int(part[-1, 0])} of {rows.shape[0]} observed cycles; "
                      "operational settings and sensors s1-s21.")
            chunks.append(Chunk(f"{name}#test-{unit}-{start}", name,
                                f"{header}\n{_rows_text(columns, part)}"))
    train = data.train
    last = np.flatnonzero(np.r_[train.unit[1:] != train.unit[:-1], True])
    summary = np.column_stack([train.unit[last], train.cycle[last], train.sensors[last]])
    for start in range(0, summary.shape[0], CMAPSS_ROWS_PER_CHUNK):
        part = summary[start:start + CMAPSS_ROWS_PER_CHUNK]
        header = (f"C-MAPSS {label} training fleet run-to-failure summary, units "
                  f"{int(part[0, 0])}-{int(part[-1, 0])}: failure cycle and sensor readings at "
                  "failure.")
        chunks.append(Chunk(f"{name}#train-{start}", name, f"{header}\n" + _rows_text(
            ["unit", "failure_cycle", *(f"s{i}" for i in range(1, 22))], part)))
    return chunks


def _battery_chunks(name: str, cell: Any) -> list[Chunk]:
    columns = ["cycle", "capacity_ah", "max_temperature_c", "avg_temperature_c",
               "min_voltage_v", "duration_s"]
    table = np.column_stack([cell.cycle, cell.capacity_ah, cell.max_temperature_k - _KELVIN,
                             cell.avg_temperature_k - _KELVIN, cell.min_voltage_v,
                             cell.duration_s])
    chunks: list[Chunk] = []
    total = table.shape[0]
    for start in range(0, total, BATTERY_ROWS_PER_CHUNK):
        part = table[start:start + BATTERY_ROWS_PER_CHUNK]
        header = (f"NASA PCoE Li-ion battery cell {cell.cell} (battery {int(cell.cell[1:])}) "
                  f"discharge telemetry, cycles {int(part[0, 0])}-{int(part[-1, 0])} of {total}: "
                  "capacity, temperatures, minimum voltage, discharge duration.")
        chunks.append(Chunk(f"{name}#discharge-{start}", name,
                            f"{header}\n{_rows_text(columns, part)}"))
    eis = np.column_stack([np.arange(1, cell.re_ohm.shape[0] + 1), cell.re_ohm, cell.rct_ohm])
    for start in range(0, eis.shape[0], BATTERY_ROWS_PER_CHUNK):
        part = eis[start:start + BATTERY_ROWS_PER_CHUNK]
        header = (f"NASA PCoE Li-ion battery cell {cell.cell} electrochemical impedance (EIS) "
                  f"records {int(part[0, 0])}-{int(part[-1, 0])} of {eis.shape[0]}: electrolyte "
                  "resistance Re and charge-transfer resistance Rct in ohm.")
        chunks.append(Chunk(f"{name}#impedance-{start}", name,
                            f"{header}\n{_rows_text(['record', 're_ohm', 'rct_ohm'], part)}"))
    return chunks


def _cwru_chunks(name: str, record: Any, info: Mapping[str, Any]) -> list[Chunk]:
    facts = (f"CWRU bearing test rig recording {name}: "
             f"drive-end accelerometer in g, sampling rate {_number(record.fs_hz)} Hz, shaft speed "
             f"{_number(record.rpm)} rpm, {record.drive_end.shape[0]} samples, bearing "
             f"{info.get('bearing', 'SKF 6205-2RS JEM')}, motor load 0 hp. "
             f"{info.get('note', '')}".strip())
    chunks = [Chunk(f"{name}#facts", name, facts)]
    samples = np.asarray(record.drive_end[:CWRU_SAMPLES], dtype=np.float64)
    for start in range(0, samples.shape[0], CWRU_SAMPLES_PER_CHUNK):
        part = samples[start:start + CWRU_SAMPLES_PER_CHUNK]
        header = (f"CWRU recording {name} drive-end acceleration samples {start}-"
                  f"{start + part.shape[0] - 1} (g) at {_number(record.fs_hz)} Hz.")
        chunks.append(Chunk(f"{name}#samples-{start}", name,
                            header + "\n" + " ".join(_number(v) for v in part)))
    return chunks


def dataset_chunks(store: Any, name: str) -> list[Chunk]:
    """Render one registered dataset as text chunks.

    Args:
        store: A ``sfbench_jax.mcp.datasets.DataStore`` on the data root.
        name: Registered dataset name (aliases accepted).

    Returns:
        The chunks, in a stable order.
    """
    from sfbench_jax.mcp.datasets import resolve_dataset

    dataset = resolve_dataset(name)
    if dataset.family == "cmapss":
        return _cmapss_chunks(dataset.name, store.cmapss(dataset.name))
    if dataset.family == "nasa_battery":
        return _battery_chunks(dataset.name, store.battery(dataset.name))
    return _cwru_chunks(dataset.name, store.cwru(dataset.name), dataset.info)


def _argument_values(value: Any) -> Iterable[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, list):
        for item in value:
            yield from _argument_values(item)


def scenario_datasets(scenario: Any) -> list[str]:
    """Registered datasets a scenario is about: its dataset plus those its solution opens.

    Args:
        scenario: The scenario.

    Returns:
        Canonical registered names, sorted (empty for formula-only scenarios).
    """
    from sfbench_jax.mcp.datasets import PHM_DATASETS, resolve_dataset

    candidates = [str(scenario.dataset.get("name", ""))]
    for step in scenario.reference_solution:
        for key in _DATASET_ARGUMENTS:
            candidates.extend(_argument_values(step["args"].get(key)))
    names = set()
    for candidate in candidates:
        key = candidate.strip().lower()
        if key in PHM_DATASETS or key.startswith(("fd00", "b00")):
            names.add(resolve_dataset(key).name)
    return sorted(names)


class BM25Index:
    """Okapi BM25 over chunks (``bm25s``: English stop words removed, no stemming)."""

    def __init__(self, chunks: Sequence[Chunk]) -> None:
        """Index the chunks.

        Args:
            chunks: The corpus (at least one chunk).

        Raises:
            ValueError: For an empty corpus.
        """
        import bm25s

        # bm25s reports every index build at DEBUG; keep it out of run logs.
        logging.getLogger("bm25s").setLevel(logging.WARNING)
        if not chunks:
            raise ValueError("a BM25 index needs at least one chunk")
        self.chunks = list(chunks)
        self._tokenize = bm25s.tokenize
        self._retriever = bm25s.BM25()
        self._retriever.index(self._tokenize([c.text for c in self.chunks], stopwords="en",
                                             show_progress=False, return_ids=False),
                              show_progress=False)

    def search(self, query: str, k: int) -> list[tuple[Chunk, float]]:
        """The best ``k`` chunks with a positive score, best first (ties by corpus order).

        Args:
            query: Free text.
            k: How many chunks at most.

        Returns:
            ``(chunk, score)`` pairs.
        """
        tokens = self._tokenize([query], stopwords="en", show_progress=False, return_ids=False)
        count = min(max(1, k), len(self.chunks))
        indices, scores = self._retriever.retrieve(tokens, k=count, show_progress=False)
        hits = [(int(i), float(s)) for i, s in zip(indices[0], scores[0], strict=True) if s > 0]
        hits.sort(key=lambda hit: (-round(hit[1], 6), hit[0]))
        return [(self.chunks[i], round(score, 6)) for i, score in hits]


class EvidenceLibrary:
    """Per-scenario BM25 corpora over the real data, built lazily and cached."""

    def __init__(self, data_root: Path, *, top_k: int = DEFAULT_TOP_K) -> None:
        """Open the data root.

        Args:
            data_root: The shared data folder.
            top_k: Chunks retrieved per query.

        Raises:
            ValueError: If ``top_k < 1``.
            ModuleNotFoundError: If ``bm25s`` is not installed (checked before any work).
        """
        from sfbench_jax.mcp.datasets import DataStore

        if top_k < 1:
            raise ValueError(f"top_k must be >= 1, got {top_k}")
        if importlib.util.find_spec("bm25s") is None:
            raise ModuleNotFoundError("mode rag retrieves with the bm25s package, which is not "
                                      "installed; install it with: pip install 'bm25s>=0.3,<0.4'")
        self.top_k = top_k
        self._store = DataStore(data_root)
        self._chunks: dict[str, list[Chunk]] = {"standards": notes_chunks()}
        self._indices: dict[tuple[str, ...], BM25Index] = {}

    def corpus(self, datasets: Sequence[str]) -> list[Chunk]:
        """Standards notes plus the chunks of the given datasets."""
        for name in datasets:
            if name not in self._chunks:
                self._chunks[name] = dataset_chunks(self._store, name)
        return [chunk for source in ("standards", *datasets) for chunk in self._chunks[source]]

    def retrieve(self, scenario: Any, query: str) -> list[tuple[Chunk, float]]:
        """The top-k chunks of the scenario's corpus for a query.

        Args:
            scenario: The scenario (selects the datasets of the corpus).
            query: The text to search with (the question plus its dataset context).

        Returns:
            ``(chunk, score)`` pairs, best first.
        """
        datasets = tuple(scenario_datasets(scenario))
        if datasets not in self._indices:
            self._indices[datasets] = BM25Index(self.corpus(datasets))
        return self._indices[datasets].search(query, self.top_k)
