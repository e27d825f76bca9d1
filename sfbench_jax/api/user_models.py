"""The user's own models at the Python front door (`sfb.evaluate`): a predict function `(windows) -> forecasts` or a
Flax NNX module, checked on the dataset's shapes before any work and made a one-candidate selection that the pipeline
evaluates and writes like any other (`pipeline.cell.evaluate_winner`, `pipeline.runner.save_run`).

A predict function is the registry's `external` model (`models/external.py`): by default its summary row names it
`external` with the hyperparameter `target` = `module:qualname`, as `sfbench model=external
model.target=module:qualname` does, so the two give the same numbers and the same run key. An NNX module is named by
`name` (default: its class name in lower case); its hyperparameters record its class and a digest of its weights, so
two modules with other weights are two runs, never one run with two sets of numbers. A registered model's name is
refused as `name` (Table 4 would mix the two).

What does not live here: the registered models (`sfbench_jax.api.scoring`), the results (`sfbench_jax.api.results`).
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx

from sfbench_jax.config import TrainConfig
from sfbench_jax.data.prepared import PreparedData
from sfbench_jax.evaluation import predict_fn, validation_mses
from sfbench_jax.models.external import ExternalModel
from sfbench_jax.models.registry import MODELS
from sfbench_jax.pipeline.cell import Selection
from sfbench_jax.pipeline.contracts import batch_dependence, probe_windows
from sfbench_jax.predictors.protocol import ModelState, PredictFn, Predictor
from sfbench_jax.training import Candidate, SearchPlan, candidate_hash, plan_search, select_winner, untrained_record

#: The registry's host model that a predict function is (its summary name unless `name=` says otherwise).
EXTERNAL = "external"
#: Windows a model is tried on before any work (a predict function: real validation windows; a module: abstractly).
PROBE_COUNT = 2
#: What a user's model may be called in the summary (a column value, a file-name-safe word).
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")
_WHAT = ("a registered model name, a TrainedModel from sfb.train, a Flax NNX module or a predict function "
         "(windows) -> forecasts")


@dataclass(frozen=True)
class UserModel:
    """A user's model ready for the engine.

    Attributes:
        name: its `architecture` in the summary.
        hyperparameters: what the summary and the manifest record of it (`model.hparams`).
        predict, state: the engine's pure predictor and its state (`evaluation.predict_fn`).
        target: the `module:qualname` of a predict function (None for a module).
    """

    name: str
    hyperparameters: dict[str, Any]
    predict: Predictor
    state: ModelState
    target: str | None = None


def model_name(model: object, name: str | None) -> str:
    """The summary's name of a user's model (checked before any work): `name`, else an NNX module's class name in
    lower case, else `external` for a predict function.

    Raises:
        TypeError: `model` is neither an NNX module nor callable (the line names what is accepted).
        ValueError: a `name` that is not a plain word, or a registered model's.
    """
    if _is_module(model):
        return _checked_name(name or type(model).__name__.lower())
    if callable(model):
        return EXTERNAL if name is None else _checked_name(name)
    raise TypeError(f"sfb.evaluate: model must be {_WHAT}; got {type(model).__name__} {model!r:.60}.")


def _is_module(model: object) -> bool:
    return isinstance(model, nnx.Module) and not isinstance(model, ExternalModel)


def user_model(model: object, data: PreparedData, *, name: str) -> UserModel:
    """`model` (an NNX module or a predict function, named by `model_name`) checked on `data`'s window shapes.

    Raises:
        ValueError: a module whose output has the wrong shape or cannot be traced; a predict function that fails or
            returns the wrong shape on two real windows (`HostModelError`).
    """
    if _is_module(model):
        assert isinstance(model, nnx.Module)  # for the type checker: `_is_module` said so
        return module_model(model, data, name=name)
    return function_model(model, data, name=name)


def _checked_name(name: str) -> str:
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise ValueError(f"sfb.evaluate: name={name!r} must be a word of letters, digits, '_', '.' or '-' (it is the "
                         "summary's architecture column), e.g. name='my_model'.")
    if name in MODELS:
        raise ValueError(f"sfb.evaluate: name={name!r} is a registered model's; Table 4 would mix your model with it. "
                         "Give your model another name=..., e.g. name='my_" + name + "'.")
    return name


def target_name(predict: Any) -> str:
    """`module:qualname` of a callable (of its class for an object with `__call__`), as `model.target` names it."""
    named = predict if hasattr(predict, "__qualname__") else type(predict)
    return f"{getattr(named, '__module__', None) or '__main__'}:{named.__qualname__}"


def function_model(predict: Any, data: PreparedData, *, name: str) -> UserModel:
    """A predict function as the `external` model, tried first on two real validation windows (one host call) so a
    failure or a wrong shape is refused in one line before any work (`HostModelError`)."""
    target = target_name(predict)
    ExternalModel.for_dataset(predict, data.spec).forecaster(probe_windows(data, PROBE_COUNT))
    engine_predict, state = predict_fn(ExternalModel.for_dataset(predict, data.spec))  # its host calls count from 1
    return UserModel(name=name, hyperparameters={"target": target}, predict=engine_predict, state=state,
                     target=target)


def module_model(module: nnx.Module, data: PreparedData, *, name: str) -> UserModel:
    """An NNX module, put in eval mode and split once (`evaluation.predict_fn`), its output shape checked by abstract
    evaluation on the dataset's windows."""
    spec = data.spec
    predict, state = predict_fn(module)
    label = f"{type(module).__module__}:{type(module).__qualname__}"
    windows = jax.ShapeDtypeStruct((PROBE_COUNT, spec.input_len, spec.num_channels), np.float32)
    expected = (PROBE_COUNT, spec.horizon, len(spec.target_indices))
    try:
        forecast = jax.eval_shape(predict, state, windows)
    except Exception as error:  # noqa: BLE001 - whatever the user's code raises while traced, named in one line
        first = str(error).strip().splitlines()[0] if str(error).strip() else ""
        raise ValueError(f"sfb.evaluate: {label} cannot be traced by JAX on windows {windows.shape} float32 "
                         f"({type(error).__name__}: {first}); an NNX module must compute in JAX (a NumPy or PyTorch "
                         "model goes in as a predict function).") from None
    got = (tuple(getattr(forecast, "shape", ())), getattr(forecast, "dtype", type(forecast).__name__))
    if got[0] != expected or not np.issubdtype(np.dtype(got[1]), np.floating):
        raise ValueError(f"sfb.evaluate: {label} maps standardised windows {windows.shape} of {spec.key} to "
                         f"{got[0]} {got[1]}; it must return a float forecast (windows, horizon, targets) = "
                         f"{expected}. Fix the module's output (e.g. its last layer: {spec.horizon} steps of the "
                         f"{len(spec.target_indices)} target channels {list(spec.target_indices)}).")
    check_batch_independence(predict, state, probe_windows(data), label=label)
    hyperparameters = {"module": label, "weights_sha256": weights_digest(module)}
    return UserModel(name=name, hyperparameters=hyperparameters, predict=predict, state=state)


def check_batch_independence(predict: PredictFn, state: ModelState, windows: np.ndarray, *, label: str) -> None:
    """Refuse a module whose forecast of a window depends on the windows that share its batch (statistics of the
    batch): its scores would change with the engine's block size. `forecast(x)[:1]` and `forecast(x[:1])` on real
    windows must agree as the pipeline requires of a plug-in model (`contracts.batch_dependence`)."""
    x = jnp.asarray(windows)
    together, alone = (np.asarray(forecast) for forecast in jax.jit(lambda s: (predict(s, x)[:1], predict(s, x[:1])))(
        state))
    gap = batch_dependence(together, alone)
    if gap is not None:
        raise ValueError(f"sfb.evaluate: {label}'s forecast of a window depends on which windows share its batch "
                         f"(forecast(x)[:1] and forecast(x[:1]) on {len(windows)} real windows of the dataset: {gap}), "
                         "so its scores would change with the engine's block size; normalise each window by its own "
                         "statistics (not the batch's), or keep batch statistics fixed in eval mode.")


def weights_digest(module: nnx.Module) -> str:
    """SHA-256 (16 hex digits) of a module's parameters and batch statistics: their paths, shapes, types and bytes."""
    digest = hashlib.sha256()
    for path, value in jax.tree_util.tree_leaves_with_path(nnx.state(module, nnx.Any(nnx.Param, nnx.BatchStat))):
        array = np.asarray(jax.device_get(value))
        digest.update(f"{jax.tree_util.keystr(path)}|{array.shape}|{array.dtype}|".encode())
        digest.update(np.ascontiguousarray(array).tobytes())
    return digest.hexdigest()[:16]


def user_selection(user: UserModel, data: PreparedData, options: TrainConfig) -> Selection:
    """The one-candidate selection of a user's model, scored on clean validation as built (as the pipeline scores a
    model without weights to train): the `external` model's plan is the registry's (`training.plan_search`, the
    candidate `sfbench model=external` plans), any other model's a plan of its own."""
    if user.name == EXTERNAL:
        plan = plan_search(data, MODELS[EXTERNAL], options=options, fixed=user.hyperparameters)
    else:
        plan = own_plan(user, data)
    loss = validation_mses([(user.predict, user.state)], data)[0]
    record = untrained_record(plan, 0, loss, data)
    return Selection(plan=plan, candidates=[record], winner=select_winner([record]), kind="untrained")


def own_plan(user: UserModel, data: PreparedData) -> SearchPlan:
    """The plan of one candidate outside the registry: its identity is the dataset's and the recorded
    hyperparameters (no seeds: nothing is drawn)."""
    spec = data.spec
    identity = {"dataset": spec.key, "signature": spec.signature, "data_sha256": data.series.content_sha256,
                "architecture": user.name, "method": "baseline", "hparams": dict(user.hyperparameters)}
    return SearchPlan(architecture=user.name, method="baseline", model_seed=None, tuning_seed=0, num_valid=1,
                      candidates=[Candidate(1, 0, dict(user.hyperparameters))], identities=[identity],
                      keys=[candidate_hash(identity)], candidate_seeds=[0])
