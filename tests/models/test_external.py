"""External predictors through the fused engine: a DLinear written outside JAX (NumPy always, PyTorch where it
is installed) with a parity fixture's weights gives the JAX DLinear's per-window losses (1e-5) for two chunk
sizes, bit-identically across chunk sizes and devices; the host model runs once per block of (1 + 8) x block
windows; bad predictors (wrong shape, NaN, raising) are reported with the host call, the block and the
expected shape; `model.target` strings are resolved, checked and found in the current folder."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import jax
import numpy as np
import pytest

from sfbench_jax.config import EvalConfig, ModelConfig
from sfbench_jax.data import load, prepare
from sfbench_jax.evaluation import evaluate_predictor, predict_fn, score_windows, validation_mse
from sfbench_jax.models.external import ExternalModel, resolve_target
from sfbench_jax.models.parity import model_from_fixture, parity_error, read_fixture
from sfbench_jax.models.registry import build_model
from sfbench_jax.predictors.host import HostModelError

FIXTURE = "dlinear_m7h96_ma25_ind0_iw0"  # ETTh1's shape: 7 channels, horizon 96, all targets
K, BLOCK = 300, 16  # 19 blocks of 16 windows (the last chunk padded)
TOLERANCE = 1e-5


class NumpyDLinear:
    """DLinear (protocol 3.1) in NumPy from a PyTorch state dict: edge-padded moving average, two linear maps
    over time shared by the channels."""

    def __init__(self, state: dict[str, np.ndarray], *, moving_avg: int, target_indices: list[int]) -> None:
        self.state, self.moving_avg, self.targets = state, moving_avg, target_indices

    def __call__(self, x: np.ndarray) -> np.ndarray:
        pad = (self.moving_avg - 1) // 2
        padded = np.concatenate([np.repeat(x[:, :1], pad, axis=1), x, np.repeat(x[:, -1:], pad, axis=1)], axis=1)
        sums = np.cumsum(np.pad(padded.astype(np.float64), ((0, 0), (1, 0), (0, 0))), axis=1)
        trend = ((sums[:, self.moving_avg:] - sums[:, :-self.moving_avg]) / self.moving_avg).astype(np.float32)
        seasonal = x - trend
        forecast = (np.einsum("ht,btc->bhc", self.state["Linear_Seasonal.weight"], seasonal)
                    + np.einsum("ht,btc->bhc", self.state["Linear_Trend.weight"], trend)
                    + (self.state["Linear_Seasonal.bias"] + self.state["Linear_Trend.bias"])[None, :, None])
        return forecast[..., self.targets]


def _torch_dlinear(fixture):
    torch = pytest.importorskip("torch")

    class TorchDLinear(torch.nn.Module):
        def __init__(self, *, moving_avg: int, input_len: int, horizon: int, target_indices: list[int]) -> None:
            super().__init__()
            self.pad, self.targets = (moving_avg - 1) // 2, target_indices
            self.average = torch.nn.AvgPool1d(kernel_size=moving_avg, stride=1)
            self.Linear_Seasonal = torch.nn.Linear(input_len, horizon)
            self.Linear_Trend = torch.nn.Linear(input_len, horizon)

        def forward(self, x):
            padded = torch.cat([x[:, :1].repeat(1, self.pad, 1), x, x[:, -1:].repeat(1, self.pad, 1)], dim=1)
            trend = self.average(padded.permute(0, 2, 1)).permute(0, 2, 1)
            seasonal = x - trend
            forecast = self.Linear_Seasonal(seasonal.permute(0, 2, 1)) + self.Linear_Trend(trend.permute(0, 2, 1))
            return forecast.permute(0, 2, 1)[..., self.targets]

    meta = fixture.meta["constructor_kwargs"]
    module = TorchDLinear(moving_avg=meta["moving_avg"], input_len=meta["d_seq_in"], horizon=meta["d_seq_out"],
                          target_indices=meta["target_indices"])
    module.load_state_dict({key: torch.from_numpy(value) for key, value in fixture.state.items()}, strict=True)
    return module


@pytest.fixture(scope="module")
def etth1():
    return prepare(load("etth1"))


@pytest.fixture(scope="module")
def fixture(parity_dir: Path):
    return read_fixture(parity_dir / f"{FIXTURE}.npz")


@pytest.fixture(scope="module")
def native(etth1, fixture):
    """The JAX DLinear's per-window losses through the native path, in one chunk (the native path's independence
    of the chunk size is tests/evaluation/test_engine.py's)."""
    predict, state = predict_fn(model_from_fixture(fixture))
    return _evaluate(predict, state, etth1, None)


def _evaluate(predict, state, data, chunk):
    options = EvalConfig(seed=7, k=K, block_size=BLOCK, chunk_size=chunk, bootstrap_draws=40, progress=False)
    return evaluate_predictor(predict, state, data, options).losses


def _numpy_dlinear(fixture) -> NumpyDLinear:
    meta = fixture.meta["constructor_kwargs"]
    return NumpyDLinear(fixture.state, moving_avg=meta["moving_avg"], target_indices=meta["target_indices"])


def test_numpy_dlinear_reproduces_the_fixture(fixture) -> None:
    assert parity_error(_numpy_dlinear(fixture)(fixture.input), fixture.output) <= TOLERANCE


@pytest.mark.parametrize("language", ["numpy", "torch"])
def test_external_dlinear_matches_the_jax_model_for_two_chunk_sizes(etth1, fixture, native, language: str) -> None:
    host_model = _numpy_dlinear(fixture) if language == "numpy" else _torch_dlinear(fixture)
    model = ExternalModel.for_dataset(host_model, etth1.spec)
    predict, state = predict_fn(model)
    results = {}
    for chunk, blocks in ((None, 19), (64, 20)):  # 300 windows in 1 chunk of 19 blocks / 5 chunks of 4 blocks
        calls_before = model.forecaster.calls
        results[chunk] = _evaluate(predict, state, etth1, chunk)
        # one host call per block of (clean + 8 scenarios) x 16 windows, never one per window
        assert model.forecaster.calls - calls_before == blocks
    np.testing.assert_allclose(results[None].clean, native.clean, rtol=TOLERANCE)
    np.testing.assert_allclose(results[None].faulted, native.faulted, rtol=TOLERANCE)
    np.testing.assert_array_equal(results[None].severity_units, native.severity_units)
    for field in ("clean", "faulted", "severity_units"):  # chunk invariance, bit for bit: both match the native path
        np.testing.assert_array_equal(getattr(results[None], field), getattr(results[64], field))


def test_the_host_model_sees_each_block_once_with_its_faulted_copies(etth1) -> None:
    seen: list[np.ndarray] = []

    def last_value(x: np.ndarray, *, horizon: int) -> np.ndarray:
        seen.append(x.copy())
        return np.repeat(x[:, -1:], horizon, axis=1)

    predict, state = predict_fn(ExternalModel.for_dataset(last_value, etth1.spec))
    losses, _ = score_windows(predict, state, etth1, EvalConfig(seed=7, k=40, block_size=BLOCK, progress=False))
    assert [block.shape for block in seen] == [(9 * BLOCK, 96, 7)] * 3  # 40 windows -> 3 blocks (last padded)
    clean = seen[0][:BLOCK]  # rows: the clean block, then each scenario's faulted copy of it
    starts = losses.sample_starts[:BLOCK]
    np.testing.assert_array_equal(clean, np.stack([etth1.standardised[s:s + 96] for s in starts]))
    assert all(not np.array_equal(seen[0][(1 + p) * BLOCK:(2 + p) * BLOCK], clean) for p in range(8))


_DEVICE_SCRIPT = textwrap.dedent("""
    import json, sys
    import numpy as np
    from sfbench_jax.config import EvalConfig
    from sfbench_jax.data import load, prepare
    from sfbench_jax.evaluation import predict_fn, score_windows
    from sfbench_jax.models.external import ExternalModel

    sizes = []
    def last_value(x, *, horizon):
        sizes.append(x.shape[0])
        return np.repeat(x[:, -1:], horizon, axis=1)

    data = prepare(load("etth1"))
    predict, state = predict_fn(ExternalModel.for_dataset(last_value, data.spec))
    losses, stats = score_windows(predict, state, data, EvalConfig(seed=7, k=300, num_devices=2, chunk_size=64,
                                                                    block_size=16, progress=False))
    json.dump({"clean": losses.clean.tolist(), "faulted": losses.faulted.tolist(), "devices": stats.num_devices,
               "sizes": sizes}, sys.stdout)
""")


def test_two_devices_give_identical_results(etth1) -> None:
    environment = dict(os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=2", JAX_PLATFORMS="cpu")
    completed = subprocess.run([sys.executable, "-c", _DEVICE_SCRIPT], env=environment, capture_output=True,
                               text=True, timeout=600, check=False)
    assert completed.returncode == 0, completed.stderr[-3000:]
    result = json.loads(completed.stdout)

    def last_value(x, *, horizon):
        return np.repeat(x[:, -1:], horizon, axis=1)

    predict, state = predict_fn(ExternalModel.for_dataset(last_value, etth1.spec))
    single, _ = score_windows(predict, state, etth1, EvalConfig(seed=7, k=K, block_size=BLOCK, progress=False))
    assert result["devices"] == 2
    # each device calls the host model on its own blocks: 5 chunks x 2 devices x 2 blocks of 9 x 16 rows
    assert result["sizes"] == [9 * BLOCK] * 20
    np.testing.assert_array_equal(np.asarray(result["clean"], np.float32), single.clean)
    np.testing.assert_array_equal(np.asarray(result["faulted"], np.float32), single.faulted)


class Misbehaving:
    """One predictor that goes wrong in the way `mode` names (one model, so one compiled program)."""

    mode = "wrong shape"

    def __call__(self, x: np.ndarray) -> np.ndarray:
        forecast = np.repeat(x[:, -1:], 96, axis=1)
        if self.mode == "wrong shape":
            return forecast[:, :5]
        if self.mode == "NaN":
            forecast[np.abs(x).max(axis=(1, 2)) > 6] = np.nan
            forecast[0, 0, 0] = np.nan
            return forecast
        if self.mode == "strings":
            return np.full(forecast.shape, "a")
        raise RuntimeError("the model exploded")


def test_a_bad_predictor_is_reported_with_the_block_and_the_expected_shape(etth1) -> None:
    misbehaving = Misbehaving()
    predict, state = predict_fn(ExternalModel.for_dataset(misbehaving, etth1.spec))
    for mode, what in [("wrong shape", "it returned shape (144, 5, 7)"),
                       ("NaN", "non-finite value(s) (NaN or inf) of 96768"),
                       ("strings", "it returned dtype <U1, not real numbers"),
                       ("raise", "it raised RuntimeError: the model exploded")]:
        misbehaving.mode = mode
        with pytest.raises(HostModelError) as caught:
            evaluate_predictor(predict, state, etth1, EvalConfig(seed=7, k=40, block_size=BLOCK, progress=False))
        message = str(caught.value)
        assert "failed on host call" in message and "(a block of 144 windows, input (144, 96, 7) float32)" in message
        assert what in message and "(windows, horizon, targets) = (144, 96, 7)" in message, message
        assert "\n" not in message
    with pytest.raises(HostModelError, match=r"it raised RuntimeError: the model exploded; the engine expects"):
        validation_mse(predict, state, etth1)  # the clean validation pass reports it the same way


def test_target_strings_are_resolved_and_checked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert resolve_target("numpy:mean") is np.mean
    for target, message in [
        (None, "model=external needs model.target=package.module:function"),
        ("numpy.mean", "must look like 'package.module:function'"),
        ("numpy:no_such_function", "'numpy' has no attribute 'no_such_function'"),
        ("numpy:pi", "is a float, not a callable"),
        ("surely_not_a_module_here:predict", "no module 'surely_not_a_module_here'"),
    ]:
        with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
            resolve_target(target)
    (tmp_path / "user_forecaster.py").write_text("def predict(x, *, horizon):\n    return x[:, -horizon:]\n")
    (tmp_path / "broken_forecaster.py").write_text("import numpy as np\nraise RuntimeError('bad module')\n")
    monkeypatch.setattr(sys, "path", [entry for entry in sys.path if entry not in ("", str(tmp_path))])
    monkeypatch.chdir(tmp_path)  # like `sfbench` run from the folder holding the user's module
    assert resolve_target("user_forecaster:predict").__name__ == "predict"
    with pytest.raises(ValueError, match="importing 'broken_forecaster' raised RuntimeError: bad module"):
        resolve_target("broken_forecaster:predict")


def test_registry_builds_an_external_model_with_the_dataset_keywords(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "shape_aware.py").write_text(textwrap.dedent("""
        import numpy as np
        def predict(x, *, horizon, target_indices, num_channels):
            assert x.shape[2] == num_channels
            return np.repeat(x[:, -1:, list(target_indices)], horizon, axis=1)
    """))
    monkeypatch.syspath_prepend(str(tmp_path))
    config = ModelConfig(name="external", target="shape_aware:predict", hparams={"target": None})
    assert config.hparams == {"target": "shape_aware:predict"}
    model = build_model("external", config.hparams, input_len=96, horizon=6, num_channels=12, target_indices=[3],
                        seed=0)
    x = np.random.default_rng(0).standard_normal((4, 96, 12)).astype(np.float32)
    forecast = jax.jit(lambda x: model(x))(x)
    np.testing.assert_array_equal(np.asarray(forecast), np.repeat(x[:, -1:, [3]], 6, axis=1))
    with pytest.raises(ValueError, match="model.target='a:b' and model.hparams.target='c:d' disagree"):
        ModelConfig(name="external", target="a:b", hparams={"target": "c:d"})
