"""External predictors: score any forecaster (NumPy, PyTorch, JAX-free code) with the fused engine.

A user's function `predict(x) -> y` maps a float32 NumPy array of standardised windows `(windows, input_len,
channels)` to a forecast `(windows, horizon, targets)`. `ExternalModel` makes it an ordinary model of the
registry (`model=external`, like SeasonalNaive: no weights to train, scored on clean validation as built): its
forward pass is one host call per block of windows (`sfbench_jax.predictors.host`), so the faults stay on the device
and every key, window, chunk invariance and output of a JAX model applies unchanged.

What lives here: `ExternalConfig` (the `target` string `package.module:attribute`, resolved and checked before
any work), `resolve_target`, `dataset_keywords` (shape keywords a function may declare), `TorchPredictor` (a
PyTorch `nn.Module` as a predict function; PyTorch is the optional `torch` extra) and the `ExternalModel` NNX
module. The engine, training and selection live elsewhere.

Example:
    >>> model = ExternalModel.for_dataset(lambda x: np.repeat(x[:, -1:], 96, axis=1), data.spec)
    >>> result = evaluate_predictor(*predict_fn(model), data, EvalConfig())
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import os
import sys
from collections.abc import Callable, Sequence
from types import ModuleType
from typing import Any

import jax.numpy as jnp
import numpy as np
from flax import nnx

from sfbench_jax.data.registry import DatasetSpec
from sfbench_jax.data.windows import Forecast, Inputs
from sfbench_jax.models.hparams import HParams
from sfbench_jax.models.layers import validate_dataset_shape
from sfbench_jax.models.spec import ModelSpec
from sfbench_jax.predictors.host import HostForecaster, host_forecast

#: Keyword arguments a predict function receives when its signature names them (the dataset's shape).
DATASET_KEYWORDS = ("input_len", "horizon", "num_channels", "target_indices")

TARGET_FORMAT = "package.module:function"
_TARGET_HELP = ("a callable predict(x) -> y mapping float32 windows (windows, input_len, channels) to a forecast "
                "(windows, horizon, targets), e.g. model.target=my_pkg.my_module:predict")


@dataclasses.dataclass(frozen=True)
class ExternalConfig:
    """The external predictor to score.

    Attributes:
        target: `package.module:attribute` naming a callable (a function, an object with `__call__`, or a
            PyTorch `nn.Module`), importable from the installed packages or the current folder. Checked
            (imported, callable) when the config is built, i.e. before any work.
    """

    target: str | None = None

    def __post_init__(self) -> None:
        resolve_target(self.target)


def is_valid(hparams: HParams, *, input_len: int = 96) -> bool:
    """An external predictor has no grid of its own: its single candidate is always valid."""
    del hparams, input_len
    return True


#: A user's predict function, `predict(x (B, n, m) float32 NumPy, **dataset keywords) -> (B, H, targets)`. Any
#: callable is accepted and its output is checked on the host (`HostForecaster`), so the type stays this loose.
PredictTarget = Callable[..., Any]


def resolve_target(target: str | None) -> PredictTarget:
    """Import `package.module:attribute` and return the callable (a PyTorch module wrapped in `TorchPredictor`).

    The current folder is searched after the installed packages, so `sfbench model=external
    model.target=my_module:predict` finds `./my_module.py`.

    Raises:
        ValueError: no target, a malformed one, a module that cannot be imported, a missing attribute, or an
            attribute that is not callable (each naming the fix).
    """
    if not target or not isinstance(target, str):
        raise ValueError(f"model=external needs model.target={TARGET_FORMAT}: {_TARGET_HELP}; got {target!r}.")
    module_name, separator, attribute = target.partition(":")
    if not separator or not module_name or not attribute:
        raise ValueError(f"model.target={target!r} must look like {TARGET_FORMAT!r}: {_TARGET_HELP}.")
    value: object = _import_module(module_name, target)
    for part in attribute.split("."):
        if not hasattr(value, part):
            raise ValueError(f"model.target={target!r}: {module_name!r} has no attribute {attribute!r}; name a "
                             f"callable defined there ({TARGET_FORMAT}).")
        value = getattr(value, part)
    if _is_torch_module(value):
        return TorchPredictor(value)
    if not callable(value):
        raise ValueError(f"model.target={target!r} is a {type(value).__name__}, not a callable: {_TARGET_HELP}.")
    return value


def _import_module(module_name: str, target: str) -> ModuleType:
    """Import the target's module from the installed packages, else from the current folder (like `python -m`)."""
    try:
        return importlib.import_module(module_name)
    except ModuleNotFoundError as error:
        if not _is_missing(error, module_name) or os.getcwd() in sys.path:
            raise _import_failure(target, module_name, error) from error
    except Exception as error:
        raise _import_failure(target, module_name, error) from error
    sys.path.append(os.getcwd())
    try:
        return importlib.import_module(module_name)
    except Exception as error:
        raise _import_failure(target, module_name, error) from error


def _is_missing(error: ModuleNotFoundError, module_name: str) -> bool:
    """Whether the module not found is the target's module (or its package), not one it imports."""
    return error.name is not None and (module_name == error.name or module_name.startswith(error.name + "."))


def _import_failure(target: str, module_name: str, error: Exception) -> ValueError:
    if isinstance(error, ModuleNotFoundError) and _is_missing(error, module_name):
        return ValueError(f"model.target={target!r}: no module {module_name!r} among the installed packages or in "
                          f"the current folder {os.getcwd()}; install it, run sfbench from its folder or add that "
                          "folder to PYTHONPATH.")
    return ValueError(f"model.target={target!r}: importing {module_name!r} raised {type(error).__name__}: {error}")


def _is_torch_module(value: object) -> bool:
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(value, torch.nn.Module)


def dataset_keywords(predict: PredictTarget, *, input_len: int, horizon: int, num_channels: int | None,
                     target_indices: Sequence[int]) -> dict[str, int | tuple[int, ...]]:
    """The dataset-shape keywords (`DATASET_KEYWORDS`) that `predict`'s signature names, with their values,
    so one function can serve every dataset (e.g. `def predict(x, *, horizon): ...`)."""
    try:
        parameters = inspect.signature(predict).parameters
    except (TypeError, ValueError):  # builtins and some C callables have no signature: pass nothing
        return {}
    values: dict[str, int | tuple[int, ...] | None] = {
        "input_len": input_len, "horizon": horizon, "num_channels": num_channels,
        "target_indices": tuple(int(i) for i in target_indices)}
    keyword_kinds = (inspect.Parameter.KEYWORD_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    named = [name for name, parameter in parameters.items()
             if name in DATASET_KEYWORDS and parameter.kind in keyword_kinds]
    return {name: value for name in named if (value := values[name]) is not None}


class TorchPredictor:
    """A PyTorch `nn.Module` as a predict function: eval mode, no autograd, float32 in and out.

    `TorchPredictor(module)(x)` runs `module(torch.as_tensor(x))` on the module's device (that of its first
    parameter or buffer, else the CPU) and returns a NumPy array. PyTorch is the optional extra
    `pip install 'sfbench-jax[torch]'`.

    Args:
        module: a module mapping `(windows, input_len, channels)` to `(windows, horizon, targets)`.
    """

    def __init__(self, module: Any) -> None:  # a torch.nn.Module (torch is untyped here)
        torch = _import_torch()
        self.module = module.eval()
        tensors = [*module.parameters(), *module.buffers()]
        self.device = tensors[0].device if tensors else torch.device("cpu")

    def __call__(self, x: np.ndarray) -> np.ndarray:
        torch = _import_torch()
        with torch.inference_mode():
            forecast = self.module(torch.as_tensor(x, dtype=torch.float32, device=self.device))
        result: np.ndarray = forecast.detach().to("cpu", torch.float32).numpy()  # torch reads as Any
        return result


def _import_torch() -> Any:  # the torch module (read as Any: an optional extra)
    try:
        import torch
    except ImportError as error:
        raise ImportError("TorchPredictor needs PyTorch: pip install 'sfbench-jax[torch]'.") from error
    return torch


class ExternalModel(nnx.Module):
    """A host predict function as a model of the registry: no parameters, one host call per block of windows.

    Args:
        target: the predict function, or `package.module:attribute` naming it (`resolve_target`). A function
            whose signature names `input_len`, `horizon`, `num_channels` or `target_indices` receives them as
            keywords.
        input_len: window length `n`.
        horizon: forecast length `H`.
        target_indices: channels the forecast covers, in order.
        num_channels: input channels `m` (None: not checked, not passed).
        rngs: unused (no parameters to initialise).

    Raises:
        ValueError: a target that cannot be resolved, or a dataset shape that is not valid.
    """

    #: A host model: its output shape is declared to JAX and checked on the host (contracts.py skips it).
    runs_on_host = True

    def __init__(self, *, target: str | PredictTarget | None, input_len: int, horizon: int,
                 target_indices: Sequence[int], num_channels: int | None = None,
                 rngs: nnx.Rngs | None = None) -> None:
        del rngs
        if num_channels is not None:
            validate_dataset_shape(input_len=input_len, horizon=horizon, num_channels=num_channels,
                                   target_indices=target_indices)
        predict = _as_predict(target)
        keywords = dataset_keywords(predict, input_len=input_len, horizon=horizon, num_channels=num_channels,
                                    target_indices=target_indices)
        self.target_indices = tuple(int(i) for i in target_indices)
        self.forecaster = HostForecaster(_with_keywords(predict, keywords), name=_display_name(target),
                                         horizon=horizon, num_targets=len(self.target_indices))

    @classmethod
    def for_dataset(cls, target: str | PredictTarget, spec: DatasetSpec) -> ExternalModel:
        """The external model for a dataset's window shape (`data.spec` of a prepared dataset)."""
        return cls(target=target, input_len=spec.input_len, horizon=spec.horizon,
                   num_channels=spec.num_channels, target_indices=spec.target_indices)

    def __call__(self, x: Inputs) -> Forecast:
        """Map `(batch, n, channels)` to `(batch, H, targets)` on the host (one call for the whole batch)."""
        return host_forecast(self.forecaster, jnp.asarray(x))


def _as_predict(target: str | PredictTarget | None) -> PredictTarget:
    if isinstance(target, str) or target is None:
        return resolve_target(target)
    if _is_torch_module(target):
        return TorchPredictor(target)
    if not callable(target):
        raise ValueError(f"ExternalModel target must be callable or {TARGET_FORMAT!r}, got "
                         f"{type(target).__name__}.")
    return target


def _with_keywords(predict: PredictTarget, keywords: dict[str, int | tuple[int, ...]]) -> PredictTarget:
    if not keywords:
        return predict
    return lambda x: predict(x, **keywords)


def _display_name(target: str | PredictTarget | None) -> str:
    if isinstance(target, str):
        return target
    name = getattr(target, "__qualname__", None) or type(target).__qualname__
    return f"{getattr(target, '__module__', None) or type(target).__module__}:{name}"


#: The spec of the evaluation-only host model (the registry collects it): called once per block of windows, scored
#: on clean validation as built.
SPEC = ModelSpec(name="external", config_cls=ExternalConfig, is_valid=is_valid, module_cls=ExternalModel,
                 is_trainable=False, is_channel_independent=False, supports_revin=False, display_rank=7)
