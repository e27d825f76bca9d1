"""Chronos-2 (protocol 3.7): the zero-shot foundation model, frozen, scored through the fused engine on the host.

Chronos-2 cannot be re-implemented in JAX; it runs through the `chronos-forecasting` package (PyTorch), the
optional extra `pip install 'sfbench-jax[chronos]'`. Like every host model it is called once per block of
windows from inside the compiled program (`sfbench_jax.predictors.host`), so the faults stay on the device. Per
window, the standardised `(m, n)` context is one multivariate task; `predict_quantiles(context,
prediction_length=H, quantile_levels=[0.5], context_length=n, limit_prediction_length=False,
cross_learning=False)`; its mean forecast `(m, H)` is transposed and the targets are selected. No training:
the single candidate is scored on clean validation as built (`model=chronos2`).

Weights: `model.weights=PATH` (a folder with the checkpoint's `config.json`, e.g. from `save_pretrained` or a
download of `amazon/chronos-2`), or, when unset, `amazon/chronos-2` at the spec's revision in the Hugging Face
cache (the package's usual location; never downloaded here). Missing weights or a missing package stop the
run before any work with one line saying how to get them.

What lives here: `Chronos2Config`, `resolve_weights`, `load_pipeline` (cached per folder), `Chronos2Forecast`
(the host function) and the `Chronos2` NNX module.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib.util
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import jax.numpy as jnp
import numpy as np
from flax import nnx

from sfbench_jax.data.windows import Forecast, Inputs
from sfbench_jax.models.hparams import HParams, require_int
from sfbench_jax.models.layers import validate_dataset_shape
from sfbench_jax.models.spec import ModelSpec
from sfbench_jax.predictors.host import HostForecaster, host_forecast

#: The checkpoint and package the paper used (protocol 3.7).
CHRONOS2_REPO = "amazon/chronos-2"
CHRONOS2_REVISION = "0f8a440441931157957e2be1a9bce66627d99c76"
CHRONOS_PACKAGE = "chronos-forecasting==2.2.2"

#: Series per forward pass of the pipeline (its default; tasks never share information, `cross_learning=False`).
DEFAULT_BATCH_SIZE = 256

INSTALL_HINT = f"model=chronos2 needs the optional extra: pip install 'sfbench-jax[chronos]' ({CHRONOS_PACKAGE})."
WEIGHTS_HINT = (f"on a machine with internet run `hf download {CHRONOS2_REPO} --revision {CHRONOS2_REVISION} "
                "--local-dir chronos-2` (huggingface_hub), copy the folder here and pass model.weights=chronos-2")


class Chronos2WeightsError(FileNotFoundError):
    """No Chronos-2 checkpoint where the run looks for one (its message says how to get it)."""


@dataclasses.dataclass(frozen=True)
class Chronos2Config:
    """Chronos-2 settings (no grid: one frozen model).

    Attributes:
        weights: folder of a Chronos-2 checkpoint (`config.json` + weights); None: `amazon/chronos-2` at the
            spec's revision in the Hugging Face cache. Checked when the config is built, before any work.
        batch_size: series per forward pass of the pipeline (tasks are independent; it changes memory and
            speed, not the forecast beyond float rounding).
        device: PyTorch device the model runs on ("cpu", "cuda", "cuda:1", ...); the windows reach it from the
            JAX device through the host either way.
    """

    weights: str | None = None
    batch_size: int = DEFAULT_BATCH_SIZE
    device: str = "cpu"

    def __post_init__(self) -> None:
        object.__setattr__(self, "batch_size", require_int("batch_size", self.batch_size))
        if self.batch_size < 1:
            raise ValueError(f"Chronos-2 batch_size must be >= 1, got {self.batch_size}.")
        resolve_weights(self.weights)


def is_valid(hparams: HParams, *, input_len: int = 96) -> bool:
    """Chronos-2 has no grid of its own: its single candidate is always valid."""
    del hparams, input_len
    return True


def _require_chronos() -> None:
    """Check that `chronos-forecasting` is installed without importing it (PyTorch and transformers take seconds
    to import; a config check should not)."""
    if importlib.util.find_spec("chronos") is None:
        raise ValueError(INSTALL_HINT)


def _chronos() -> Any:  # the chronos module (untyped, and an optional extra)
    _require_chronos()
    import chronos

    return chronos


def resolve_weights(weights: str | None) -> Path:
    """The checkpoint folder: `weights`, or the Hugging Face cache's `amazon/chronos-2` at the spec's revision.

    Raises:
        ValueError: `chronos-forecasting` is not installed (the message names the extra).
        Chronos2WeightsError: no checkpoint there (one line saying how to get it).
    """
    _require_chronos()
    if weights:
        folder = Path(weights).expanduser()
        if not (folder / "config.json").is_file():
            raise Chronos2WeightsError(f"No Chronos-2 checkpoint in model.weights={weights} (no config.json "
                                       f"there): {WEIGHTS_HINT}.")
        return folder
    from huggingface_hub import snapshot_download
    from huggingface_hub.errors import LocalEntryNotFoundError

    try:
        return Path(snapshot_download(CHRONOS2_REPO, revision=CHRONOS2_REVISION, local_files_only=True))
    except LocalEntryNotFoundError as error:
        raise Chronos2WeightsError(f"Chronos-2 weights not found ({CHRONOS2_REPO} is not in the Hugging Face cache "
                                   f"and model.weights is unset): {WEIGHTS_HINT}.") from error


@functools.lru_cache(maxsize=1)
def load_pipeline(folder: Path, device: str = "cpu") -> Any:  # chronos's pipeline (untyped)
    """The `Chronos2Pipeline` of a checkpoint folder on a PyTorch device, in eval mode (kept for the next build:
    selection and evaluation build the model twice)."""
    pipeline = _chronos().Chronos2Pipeline.from_pretrained(str(folder), device_map=device)
    pipeline.model.eval()
    return pipeline


class Chronos2Forecast:
    """The host function: standardised windows `(B, n, m)` -> Chronos-2's mean forecast of the targets `(B, H, t)`.

    Args:
        pipeline: a `Chronos2Pipeline`.
        horizon: forecast length `H` (`prediction_length`).
        context_length: window length `n`.
        target_indices: channels to return, in order.
        batch_size: series per forward pass.
    """

    def __init__(self, pipeline: Any, *, horizon: int, context_length: int, target_indices: Sequence[int],
                 batch_size: int) -> None:  # pipeline: chronos's (untyped)
        self.pipeline, self.horizon, self.context_length = pipeline, horizon, context_length
        self.target_indices, self.batch_size = list(target_indices), batch_size

    def __call__(self, x: np.ndarray) -> np.ndarray:
        import torch

        context = torch.from_numpy(np.ascontiguousarray(np.swapaxes(x, 1, 2)))  # (B, m, n): one task per window
        _, mean = self.pipeline.predict_quantiles(context, prediction_length=self.horizon, quantile_levels=[0.5],
                                                  context_length=self.context_length, limit_prediction_length=False,
                                                  cross_learning=False, batch_size=self.batch_size)
        forecast: np.ndarray = torch.stack(mean).to(torch.float32).numpy()  # (B, m, H); torch reads as Any
        return np.swapaxes(forecast, 1, 2)[..., self.target_indices]


class Chronos2(nnx.Module):
    """Chronos-2 as a model of the registry: frozen, no JAX parameters, one host call per block of windows.

    Args:
        weights: checkpoint folder (None: the Hugging Face cache, see `resolve_weights`).
        batch_size: series per forward pass of the pipeline.
        device: PyTorch device of the model.
        input_len: window length `n` (the context length).
        horizon: forecast length `H`.
        target_indices: channels to return, in order.
        num_channels: input channels `m` (None: not checked).
        rngs: unused (nothing to initialise).
    """

    #: A host model: its output shape is declared to JAX and checked on the host (contracts.py skips it).
    runs_on_host = True

    def __init__(self, *, weights: str | None, batch_size: int = DEFAULT_BATCH_SIZE, device: str = "cpu",
                 input_len: int, horizon: int, target_indices: Sequence[int], num_channels: int | None = None,
                 rngs: nnx.Rngs | None = None) -> None:
        del rngs
        if num_channels is not None:
            validate_dataset_shape(input_len=input_len, horizon=horizon, num_channels=num_channels,
                                   target_indices=target_indices)
        folder = resolve_weights(weights)
        self.target_indices = tuple(int(i) for i in target_indices)
        forecast = Chronos2Forecast(load_pipeline(folder, device), horizon=horizon, context_length=input_len,
                                    target_indices=self.target_indices, batch_size=batch_size)
        self.forecaster = HostForecaster(forecast, name=f"Chronos-2 ({folder})", horizon=horizon,
                                         num_targets=len(self.target_indices))

    def __call__(self, x: Inputs) -> Forecast:
        """Map `(batch, n, channels)` to `(batch, H, targets)` on the host (one call for the whole batch)."""
        return host_forecast(self.forecaster, jnp.asarray(x))


#: The architecture's spec (the registry collects it): a host model, no JAX weights; called once per block of
#: windows and scored on clean validation as built.
SPEC = ModelSpec(name="chronos2", config_cls=Chronos2Config, is_valid=is_valid, module_cls=Chronos2,
                 is_trainable=False, is_channel_independent=False, supports_revin=False,
                 label="Chronos-2", family="Foundation", display_rank=6)
