"""The compiled-program cache of the evaluation engine (`evaluation/program_cache.py`): a loaded program gives the
fresh program's numbers bit for bit, an entry goes stale when a module it was traced with changes, programs that
cannot be described are not cached, a damaged entry is a miss, and the key tells programs apart. Real ETTh1
windows, SeasonalNaive (each test compiles the kernel one to three times: seconds on an idle 2-core CPU)."""

from __future__ import annotations

import functools
import importlib
import sys
from pathlib import Path

import jax
import numpy as np
import pytest

from sfbench_jax.config import EvalConfig
from sfbench_jax.data import load, prepare
from sfbench_jax.data.windows import window_shape
from sfbench_jax.evaluation import predict_fn, program_cache, score_windows
from sfbench_jax.evaluation.engine import ScoreProgram, fault_context, make_mesh
from sfbench_jax.faults.registry import SCENARIOS
from sfbench_jax.models.seasonal_naive import SeasonalNaive


@pytest.fixture(scope="module")
def etth1():
    data = prepare(load("etth1"))
    model = SeasonalNaive(season_length=24, input_len=96, horizon=96, target_indices=range(7))
    return data, model


@pytest.fixture
def cache(tmp_path: Path):
    # An entry is written from a program that has not run yet (one that ran no longer serialises): start each test
    # without the programs JAX keeps in memory from earlier tests.
    jax.clear_caches()
    program_cache.use_program_cache(tmp_path / "programs")
    yield tmp_path / "programs"
    program_cache.use_program_cache(None)


def _score(data, model, rng_mode: str = "jax", sparse: bool = True, predict=None):
    built, state = predict_fn(model, channel_sparse=sparse)
    options = EvalConfig(seed=3, k=96, progress=False, block_size=16, rng_mode=rng_mode, channel_sparse=sparse)
    return score_windows(predict or built, state, data, options)


def _import_probe(folder: Path, name: str, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Import a one-line module `name` from `folder` (loaded while later programs are traced); its file."""
    source = folder / f"{name}.py"
    folder.mkdir()
    source.write_text("VALUE = 1\n")
    monkeypatch.syspath_prepend(str(folder))
    importlib.import_module(name)
    return source


def _assert_same(first, second) -> None:
    for name in ("clean", "faulted", "severity_units", "sample_starts"):
        assert getattr(first, name).tobytes() == getattr(second, name).tobytes(), name


@pytest.mark.parametrize(("rng_mode", "sparse"), [("jax", True), ("reference", False)])
def test_a_loaded_program_gives_the_fresh_numbers_bit_for_bit(etth1, cache: Path, rng_mode: str,
                                                               sparse: bool) -> None:
    data, model = etth1
    stored, stats = _score(data, model, rng_mode, sparse)
    assert stats.program_cache == "stored" and len(list(cache.glob("*.bin"))) == 1
    loaded, stats = _score(data, model, rng_mode, sparse)
    assert stats.program_cache == "loaded"
    program_cache.use_program_cache(None)
    uncached, stats = _score(data, model, rng_mode, sparse)
    assert stats.program_cache is None
    _assert_same(stored, uncached)
    _assert_same(loaded, uncached)  # (a separate process without the cache: tests/cli/test_sfbench_cli.py)


def test_an_entry_is_stale_once_a_module_it_was_traced_with_changes_and_a_damaged_one_is_a_miss(
        etth1, cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    source = _import_probe(tmp_path / "src", "program_cache_probe", monkeypatch)  # recorded with the entry
    try:
        data, model = etth1
        assert _score(data, model, sparse=False)[1].program_cache == "stored"
        assert _score(data, model, sparse=False)[1].program_cache == "loaded"
        source.write_text("VALUE = 22\n")  # the module's file changed: the entry must not be used
        jax.clear_caches()  # (so that the program compiled again has not run and can be stored)
        expected, stats = _score(data, model, sparse=False)
        assert stats.program_cache == "stored"
        (entry,) = cache.glob("*.bin")  # a damaged entry is a miss, and is replaced
        entry.write_bytes(entry.read_bytes()[: entry.stat().st_size // 2])
        jax.clear_caches()
        again, stats = _score(data, model, sparse=False)
        assert stats.program_cache == "stored"
        _assert_same(again, expected)
        assert _score(data, model, sparse=False)[1].program_cache == "loaded"
    finally:
        sys.modules.pop("program_cache_probe", None)


def test_a_predictor_without_a_description_is_not_cached(etth1, cache: Path) -> None:
    data, model = etth1
    built, _ = predict_fn(model)

    @functools.wraps(built)  # e.g. a method's wrapper (wraps copies attributes, not the description)
    def wrapped(state, x):
        return 2.0 * built(state, x)

    assert _score(data, model, sparse=False, predict=wrapped)[1].program_cache == "compiled"
    assert not list(cache.glob("*.bin"))


def test_the_key_covers_rng_mode_block_size_and_arguments(etth1) -> None:
    data, model = etth1
    predict, _ = predict_fn(model, channel_sparse=True)
    program = ScoreProgram(predict=predict, scenarios=tuple(SCENARIOS), ctx=fault_context(data),
                           shape=window_shape(data.spec))
    mesh = make_mesh(1)
    arguments = (np.zeros((16,), np.int32),)
    key = program_cache.program_key(program, "jax", 16, mesh, arguments)
    assert key is not None and key == program_cache.program_key(program, "jax", 16, mesh, arguments)
    assert key != program_cache.program_key(program, "reference", 16, mesh, arguments)
    assert key != program_cache.program_key(program, "jax", 32, mesh, arguments)
    assert key != program_cache.program_key(program, "jax", 16, mesh, (np.zeros((32,), np.int32),))
    dense = ScoreProgram(predict=predict, scenarios=tuple(SCENARIOS), ctx=fault_context(data),
                         shape=window_shape(data.spec), channel_sparse=False)
    assert key != program_cache.program_key(dense, "jax", 16, mesh, arguments)
    weekly, _ = predict_fn(SeasonalNaive(season_length=168, input_len=96, horizon=96, target_indices=range(7)),
                           channel_sparse=True)
    other_model = ScoreProgram(predict=weekly, scenarios=tuple(SCENARIOS), ctx=fault_context(data),
                               shape=window_shape(data.spec))
    assert key != program_cache.program_key(other_model, "jax", 16, mesh, arguments)


def test_the_key_names_where_the_model_comes_from_and_not_what_else_is_loaded(
        etth1, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A module the process loaded besides (a launcher's, a test runner's) leaves the key as it was, so processes
    that differ only in those share their entries; the model's module loaded from another file is another key."""
    data, model = etth1
    mesh, arguments = make_mesh(1), (np.zeros((16,), np.int32),)

    def key(of_model) -> str | None:
        predict, _ = predict_fn(of_model, channel_sparse=False)
        return program_cache.program_key(ScoreProgram(predict=predict, scenarios=tuple(SCENARIOS),
                                                      ctx=fault_context(data), shape=window_shape(data.spec),
                                                      channel_sparse=False), "jax", 16, mesh, arguments)

    def model_from(folder: Path):
        folder.mkdir()
        (folder / "program_cache_model_probe.py").write_text(
            "from sfbench_jax.models.seasonal_naive import SeasonalNaive\n\n\nclass Daily(SeasonalNaive):\n"
            "    pass\n")
        sys.modules.pop("program_cache_model_probe", None)
        monkeypatch.syspath_prepend(str(folder))
        daily = importlib.import_module("program_cache_model_probe").Daily
        return daily(season_length=24, input_len=96, horizon=96, target_indices=range(7))

    try:
        built_in = key(model)
        _import_probe(tmp_path / "unrelated", "program_cache_unrelated_probe", monkeypatch)
        assert built_in is not None and key(model) == built_in
        first = key(model_from(tmp_path / "one"))
        assert first is not None and first != built_in
        assert key(model_from(tmp_path / "two")) != first  # the same source, another file
    finally:
        sys.modules.pop("program_cache_model_probe", None)
        sys.modules.pop("program_cache_unrelated_probe", None)


def test_a_program_that_cannot_be_stored_is_recorded_and_then_compiled_as_usual(etth1, cache: Path) -> None:
    data, model = etth1
    program_cache.use_program_cache(None)
    expected, _ = _score(data, model)  # it ran: its CPU sort kernels no longer serialise
    program_cache.use_program_cache(cache)
    first, stats = _score(data, model)
    assert stats.program_cache == "compiled" and len(list(cache.glob("*.bin"))) == 1
    assert program_cache.load(next(iter(cache.glob("*.bin"))).stem, make_mesh(1)) is program_cache.UNSTORABLE
    again, stats = _score(data, model)
    assert stats.program_cache == "compiled"
    _assert_same(first, expected)
    _assert_same(again, expected)


def test_an_entry_others_can_write_is_never_unpickled(etth1, cache: Path) -> None:
    data, model = etth1
    assert _score(data, model, sparse=False)[1].program_cache == "stored"
    (entry,) = cache.glob("*.bin")
    assert program_cache.trusted_entry(entry)
    entry.chmod(entry.stat().st_mode | 0o002)  # world-writable: anyone could have planted it
    assert not program_cache.trusted_entry(entry)
    jax.clear_caches()
    assert _score(data, model, sparse=False)[1].program_cache == "stored"  # a miss: compiled again and replaced
    (entry,) = cache.glob("*.bin")
    assert program_cache.trusted_entry(entry)
    cache.chmod(cache.stat().st_mode | 0o002)  # the folder too
    try:
        assert not program_cache.trusted_entry(entry)
    finally:
        cache.chmod(cache.stat().st_mode & ~0o002)


def test_a_module_whose_file_was_deleted_before_the_trace_does_not_make_every_entry_stale(
        etth1, cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    source = _import_probe(tmp_path / "gone", "program_cache_gone_probe", monkeypatch)
    source.unlink()  # e.g. an earlier test's temporary module, still in sys.modules
    try:
        data, model = etth1
        assert _score(data, model, sparse=False)[1].program_cache == "stored"
        assert _score(data, model, sparse=False)[1].program_cache == "loaded"
        source.write_text("VALUE = 2\n")  # the file is back (changed): the entry is stale
        jax.clear_caches()
        assert _score(data, model, sparse=False)[1].program_cache == "stored"
    finally:
        sys.modules.pop("program_cache_gone_probe", None)


def test_a_miss_compiles_with_jax_s_cache_off_and_turns_it_back_on(tmp_path: Path) -> None:
    # an executable that JAX loaded from its own cache cannot be serialised again intact, so an entry is written
    # only from a compilation made with JAX's cache off; the folder is set again afterwards, also after an error
    from jax.experimental.compilation_cache import compilation_cache

    before = jax.config.jax_compilation_cache_dir
    folder = str(tmp_path / "xla")
    compilation_cache.set_cache_dir(folder)
    try:
        with program_cache.fresh_compilation():
            assert jax.config.jax_compilation_cache_dir is None
        assert jax.config.jax_compilation_cache_dir == folder
        with pytest.raises(RuntimeError, match="stopped"), program_cache.fresh_compilation():
            raise RuntimeError("stopped")
        assert jax.config.jax_compilation_cache_dir == folder
    finally:
        compilation_cache.set_cache_dir(before)
        compilation_cache.reset_cache()


def test_a_damaged_entry_is_a_miss(tmp_path: Path) -> None:
    # (the whole path, a damaged entry replaced by a fresh compilation, is the staleness test above; CI's slow step)
    folder = tmp_path / "programs"
    folder.mkdir(mode=0o700)
    entry = folder / "key.bin"
    entry.write_bytes(b"half an entry")
    entry.chmod(0o600)
    program_cache.use_program_cache(folder)
    try:
        assert program_cache.trusted_entry(entry)
        assert program_cache.load("key", make_mesh(1)) is None
    finally:
        program_cache.use_program_cache(None)


def test_a_module_file_absent_at_the_trace_keeps_an_entry_until_the_file_appears(tmp_path: Path) -> None:
    # (the whole path through a stored program: the deleted-module test above, in CI's slow step)
    gone = tmp_path / "gone_probe.py"
    code = (("gone_probe", str(gone), None),)  # as `loaded_code` records a module whose file was deleted
    assert program_cache.code_unchanged(code)
    gone.write_text("VALUE = 2\n")
    assert not program_cache.code_unchanged(code)


def test_an_entry_is_used_only_while_its_code_is_unchanged(tmp_path: Path) -> None:
    # (the whole path through a stored program: the deleted-module test above, in CI's slow step)
    import pickle

    folder = tmp_path / "programs"
    folder.mkdir(mode=0o700)
    gone = tmp_path / "gone_probe.py"
    entry = folder / "key.bin"
    entry.write_bytes(pickle.dumps({"format": program_cache.FORMAT, "code": (("gone_probe", str(gone), None),),
                                    "executable": None}))  # a program recorded as one that cannot be stored
    entry.chmod(0o600)
    program_cache.use_program_cache(folder)
    try:
        assert program_cache.load("key", make_mesh(1)) is program_cache.UNSTORABLE
        gone.write_text("VALUE = 2\n")  # a module its trace saw absent is there now: the entry is stale
        assert program_cache.load("key", make_mesh(1)) is None
    finally:
        program_cache.use_program_cache(None)
