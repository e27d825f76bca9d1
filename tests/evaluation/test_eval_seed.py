"""The evaluation seed is resolved once, at an evaluation's entry (`EvalConfig.for_dataset`), and the engine never
resolves it: settings that reach the engine unresolved are refused before any work, naming the fix."""

from __future__ import annotations

import pytest

from sfbench_jax.config import EvalConfig
from sfbench_jax.data.registry import get_dataset
from sfbench_jax.evaluation.engine import plan_chunks, resolved_eval_seed


def test_the_engine_reads_a_resolved_seed() -> None:
    assert resolved_eval_seed(EvalConfig(seed=7)) == 7
    assert resolved_eval_seed(EvalConfig(seed=0)) == 0


def test_the_engine_refuses_an_unresolved_seed_before_any_work() -> None:
    with pytest.raises(ValueError, match=r"eval\.seed is unresolved: .*EvalConfig\.for_dataset"):
        plan_chunks(None, EvalConfig(), None)  # type: ignore[arg-type]  # refused before the data is read


def test_the_entry_resolves_to_the_canonical_seed_and_keeps_an_explicit_one() -> None:
    spec = get_dataset("etth1")
    resolved = EvalConfig().for_dataset(spec)
    assert resolved.seed == spec.seeds.data_seed != spec.seeds.noise_seed  # the canonical seed is the data seed
    assert EvalConfig(seed=3).for_dataset(spec).seed == 3
