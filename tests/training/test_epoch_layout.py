"""The training epoch laid out for an accelerator (issue 42): one program per epoch that moves nothing between host
and device, candidates vmapped (no loop over them), the steps one scan; lowered for CUDA on this CPU, and the
accelerator layout giving the CPU layout's numbers."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import jax
import numpy as np
import pytest

from sfbench_jax.config import TrainConfig
from sfbench_jax.data import load, prepare
from sfbench_jax.models.registry import MODELS
from sfbench_jax.training.fit import (
    EpochProgram,
    GroupMember,
    candidates_per_group,
    device_memory_budget,
    epoch_function,
    epoch_memory_bytes,
    fitting_group_size,
)

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import gpu_check

STEPS = 6
#: What a program that talks to the host would contain: host callbacks, infeed / outfeed, send / recv.
HOST_TRAFFIC = re.compile(r"callback|infeed|outfeed|stablehlo\.send|stablehlo\.recv", re.IGNORECASE)


@pytest.fixture(scope="module")
def etth1():
    return prepare(load("etth1"))


def while_trip_counts(stablehlo: str) -> list[int | None]:
    """The trip count of every `stablehlo.while` in a module's text, as `benchmarks/gpu_check.py` reads it."""
    counts: list[int | None] = gpu_check.program_structure(stablehlo)["while_trip_counts"]
    return counts


#: Smaller than the defaults where that makes the trace cheaper (the structure is the same).
HPARAMS = {"dlinear": {}, "patchtst": {"n_layers_enc": 1}}


def _cuda_text(data, architecture: str, group_size: int) -> str:
    fn, args = epoch_function(data, MODELS[architecture], group_size, hparams=HPARAMS[architecture], platform="cuda")
    return fn.trace(*args).lower(lowering_platforms=("cuda",)).as_text()


@pytest.mark.parametrize("architecture", ["dlinear", "patchtst"])
def test_the_epoch_lowers_for_cuda_with_its_candidates_vectorised(etth1, architecture: str) -> None:
    eight, two = _cuda_text(etth1, architecture, 8), _cuda_text(etth1, architecture, 2)
    steps = len(etth1.train_starts) // etth1.spec.batch_size  # a full epoch: 625 steps on ETTh1
    counts = while_trip_counts(eight)
    # the candidates are vmapped: the loops are the same for 2 and 8 of them, and none walks the candidates
    assert counts == while_trip_counts(two) and None not in counts and 8 not in counts
    assert counts.count(steps) == 1 and counts[0] == steps  # the steps: one scan, the outermost loop
    assert "stablehlo.case" not in eight and not HOST_TRAFFIC.search(eight)
    assert "tensor<8x" in eight  # the candidate axis is there


def test_a_whole_epoch_moves_nothing_and_both_layouts_give_the_same_numbers(etth1) -> None:
    options = TrainConfig(steps_per_epoch=STEPS, num_devices=1)
    members = [GroupMember(1e-3, 3), GroupMember(5e-4, 4)]
    runs = {}
    for platform in ("cpu", "cuda"):  # "cuda": the accelerator layout, compiled and run on this CPU
        program = EpochProgram(etth1, MODELS["dlinear"], {}, members, options, vectorize=True, platform=platform)
        assert program.geometry.layout == ("cpu" if platform == "cpu" else "accelerator")
        # the trainer's own program is the one epoch_function gives
        assert program.fn is epoch_function(etth1, MODELS["dlinear"], 2, options=options, platform=platform)[0]
        arguments = program.arguments(0, [True, True])  # placed on the device first
        assert all(isinstance(leaf, jax.Array) for leaf in jax.tree.leaves(arguments))
        with jax.transfer_guard("disallow"):
            state, metrics = program.compiled(*arguments)
            jax.block_until_ready((state, metrics))
            program.candidates[0] = program.candidates[0]._replace(state=state)  # on the device; nothing moved
            # the host loop between epochs: the epoch number and the flags in, three (G,) vectors out (explicit)
            second = program.run_epoch(1, [True, False])
        assert not HOST_TRAFFIC.search(program.compiled.as_text())
        assert np.isfinite(second[1][0]) and not second[2][1]  # the stopped member is frozen
        runs[platform] = (jax.device_get(metrics), second, program.best_checkpoints())
    (metrics, second, best), (cpu_metrics, cpu_second, cpu_best) = runs["cuda"], runs["cpu"]
    np.testing.assert_allclose(metrics.val_loss, cpu_metrics.val_loss, rtol=1e-6)
    np.testing.assert_allclose(metrics.train_loss, cpu_metrics.train_loss, rtol=1e-6)
    for ours, theirs in zip(second, cpu_second, strict=True):
        np.testing.assert_allclose(ours, theirs, rtol=1e-6)
    for ours, theirs in zip(best, cpu_best, strict=True):
        for name, value in ours["params"].items():
            np.testing.assert_allclose(value, theirs["params"][name], rtol=1e-5, atol=1e-7)


def test_auto_group_size_is_what_the_memory_budget_holds(etth1) -> None:
    options = TrainConfig(steps_per_epoch=STEPS, num_devices=1)  # the 2-candidate program is the test above's
    # the accelerator layout's programs (compiled for this CPU): what auto sizes on a GPU
    need = {group: epoch_memory_bytes(etth1, MODELS["dlinear"], {}, options, group, platform="cuda")
            for group in (1, 2, 4)}
    assert need[1] < need[2] < need[4]  # the compiled epoch's memory analysis grows with the group

    def fitting(budget: int) -> int:
        return fitting_group_size(etth1, MODELS["dlinear"], {}, options, most=4, budget=budget, platform="cuda")

    assert fitting(need[4]) == 4 and fitting(need[2]) == 2 and fitting(need[1] - 1) == 1  # the programs reused
    # a CPU reports no memory; there auto keeps its choice: one baseline candidate, all of a method's variants
    assert device_memory_budget() is None
    assert candidates_per_group(etth1, MODELS["dlinear"], {}, TrainConfig(), most=6) == 1
    assert candidates_per_group(etth1, MODELS["dlinear"], {}, TrainConfig(group_size=None), most=6, variants=True) == 40
    assert candidates_per_group(etth1, MODELS["dlinear"], {}, TrainConfig(group_size=4), most=6) == 4
