"""The two layouts of the chunk program (`eval.layout`; docs/speed.md, "Layouts") give the same per-window numbers,
run without implicit transfers, and the accelerator layout's program has the structure it promises, checked on the
StableHLO that `benchmarks/gpu_check.py --lower-only cuda` writes (lowered here, on the CPU, for CUDA).

Equality is bit for bit at the same block size: the CPU layout with blocks of B windows and the accelerator layout
with chunks of B windows per device compute every block with the same operations on the same shapes (the gather,
the branches and the sub-batch loop differ only in how they are walked). SeasonalNaive, DLinear and PatchTST give
the same bits at any block size on a CPU; TSMixer's matrix products are tiled by batch size, so across block sizes
it agrees to a few float32 ulps (docs/speed.md, "Layouts").
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import jax
import numpy as np
import pytest

from sfbench_jax.config import EvalConfig
from sfbench_jax.data import load, prepare
from sfbench_jax.evaluation import predict_fn, score_windows
from sfbench_jax.evaluation.engine import resolved_layout
from sfbench_jax.faults.registry import FAULTS, SCENARIOS
from sfbench_jax.models.registry import MODELS
from sfbench_jax.models.restore import build_for
from sfbench_jax.models.seasonal_naive import SeasonalNaive
from sfbench_jax.plugins.entry_points import register_specs

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))
import gpu_check  # noqa: E402 (benchmarks/ is not a package)

BLOCK = 32
K = 80  # three chunks, the last one padded

SMALL = {"dlinear": {}, "patchtst": {"d_model": 8, "n_heads": 2, "d_ff": 8}}


@pytest.fixture(scope="module")
def etth1():
    return prepare(load("etth1"))


@pytest.fixture(scope="module")
def plugin_fault() -> Iterator[object]:
    """The demo plug-in's quantisation fault (tests/fixtures/plugin_pkg), registered as an installed plug-in's."""
    sys.path.insert(0, str(ROOT / "tests" / "fixtures" / "plugin_pkg" / "src"))
    from sfbench_demo_plugin.fault import SPEC

    register_specs(FAULTS, [SPEC], kind="faults")
    try:
        yield FAULTS[SPEC.name]
    finally:
        del FAULTS[SPEC.name]


def _model(data, name: str):
    if name == "seasonal_naive":
        return SeasonalNaive(season_length=24, input_len=96, horizon=96, target_indices=range(7))
    model = build_for(data, MODELS[name], SMALL[name], seed=0)
    model.eval()
    return model


def _both_layouts(data, name: str, rng_mode: str, scenarios=SCENARIOS, channel_sparse: bool = True):
    predict, state = predict_fn(_model(data, name))
    common = {"seed": 7, "k": K, "chunk_size": BLOCK, "progress": False, "rng_mode": rng_mode,
              "channel_sparse": channel_sparse}
    cpu, cpu_stats = score_windows(predict, state, data, EvalConfig(layout="cpu", block_size=BLOCK, **common),
                                   scenarios=scenarios)
    accelerator, stats = score_windows(predict, state, data, EvalConfig(layout="accelerator", **common),
                                       scenarios=scenarios)
    assert (cpu_stats.layout, stats.layout, stats.block_size, stats.num_chunks) == ("cpu", "accelerator", BLOCK, 3)
    return cpu, accelerator


def _assert_same_bits(cpu, accelerator) -> None:
    np.testing.assert_array_equal(accelerator.clean, cpu.clean)
    np.testing.assert_array_equal(accelerator.faulted, cpu.faulted)
    np.testing.assert_array_equal(accelerator.severity_units, cpu.severity_units)


@pytest.mark.parametrize(("name", "rng_mode"), [("seasonal_naive", "jax"), ("dlinear", "reference"),
                                               ("patchtst", "jax"), ("patchtst", "reference")])
def test_both_layouts_give_the_same_bits(etth1, name: str, rng_mode: str) -> None:
    _assert_same_bits(*_both_layouts(etth1, name, rng_mode))


def test_both_layouts_give_the_same_bits_on_the_full_path(etth1) -> None:
    # channel_sparse=false: every branch of every window through the model (no sparse sub-batch loop)
    _assert_same_bits(*_both_layouts(etth1, "seasonal_naive", "reference", channel_sparse=False))


def test_both_layouts_give_the_same_bits_for_a_plugin_fault(etth1, plugin_fault) -> None:
    cpu, accelerator = _both_layouts(etth1, "seasonal_naive", "jax", scenarios=(*SCENARIOS, plugin_fault))
    _assert_same_bits(cpu, accelerator)
    assert accelerator.faulted.shape == (9, K) and np.all(accelerator.faulted[8] >= 0)


def test_the_accelerator_layout_makes_no_implicit_transfers(etth1) -> None:
    predict, state = predict_fn(_model(etth1, "patchtst"))
    options = EvalConfig(seed=7, k=K, chunk_size=BLOCK, progress=False, layout="accelerator")
    with jax.transfer_guard("disallow"):
        losses, stats = score_windows(predict, state, etth1, options)
    assert stats.num_chunks == 3 and np.isfinite(losses.faulted).all()


def test_auto_takes_the_cpu_layout_on_a_cpu_and_the_accelerator_layout_elsewhere() -> None:
    assert [resolved_layout("auto", platform) for platform in ("cpu", "gpu", "cuda", "tpu")] == \
        ["cpu", "accelerator", "accelerator", "accelerator"]
    assert resolved_layout("accelerator", "cpu") == "accelerator" and resolved_layout("cpu", "gpu") == "cpu"
    with pytest.raises(ValueError, match="Unknown eval.layout 'gpu'; use one of"):
        EvalConfig(layout="gpu")


@pytest.fixture(scope="module")
def lowered(etth1) -> dict[int, dict[str, dict]]:
    """The evaluation programs lowered for CUDA at two chunk sizes, as `gpu_check.py --lower-only cuda` writes them."""
    return {chunk: {name: gpu_check.program_structure(gpu_check.evaluation_program_text(etth1, name, chunk, "cuda"))
                    for name in gpu_check.EVALUATE_MODELS} for chunk in (256, 1024)}


def test_the_lowered_accelerator_programs_have_no_case_and_no_loop_over_windows_or_scenarios(lowered) -> None:
    small, large = lowered[256], lowered[1024]
    for name in gpu_check.EVALUATE_MODELS:
        assert small[name]["case_ops"] == large[name]["case_ops"] == 0, name
        # a loop whose trip count grew with the windows would differ between the chunk sizes
        assert small[name]["while_trip_counts"] == large[name]["while_trip_counts"], name
        assert None not in large[name]["while_trip_counts"], name
        assert not {8, 9} & set(large[name]["while_trip_counts"]), f"{name} loops over the scenarios"


def test_the_lowering_tool_writes_the_programs(tmp_path: Path) -> None:
    # the tool's own entry, on the cheapest model; the structure test above covers the others
    text = gpu_check.evaluation_program_text(prepare(load("etth1")), "seasonal_naive", 64, "cuda")
    assert "stablehlo" in text and "tensor<576x96x7xf32>" in text  # the 9 branches of 64 windows, one batch
    page = tmp_path / "speed.md"
    page.write_text(f"# Speed\n{gpu_check.DOCS_BEGIN}\nold\n{gpu_check.DOCS_END}\ntail\n")
    gpu_check.replace_docs_section(page, "new table\n")
    assert page.read_text() == f"# Speed\n{gpu_check.DOCS_BEGIN}\n\nnew table\n\n{gpu_check.DOCS_END}\ntail\n"
