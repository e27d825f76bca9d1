"""The contracts of models, faults and methods, checked before any work by abstract evaluation.

Every spec a run uses, built-in or plug-in, is traced with `jax.eval_shape` on the dataset's shapes (nothing is
computed, no data is read): the model's `__call__` must return `(batch, H, len(targets))`, `predict_all_channels`
`(batch, H, m)` (where RevIN may wrap it) and `predict_channels` `(batch, H, k)` for `(batch, n, k)` inputs (where
the spec promises it, `forecasts_channels_cheaply`), all float32; an extra fault's `sample` must return its
parameters with `severity_units` int32 () (and `selected` bool (m,) when channel-scoped) and its `apply` the
window's `(n, m)` float32; a train-kind method's transform keeps the batch `(batch, n, m)` float32 and its loss a
scalar, its model wrapper and a wrap-kind method's predictor keep the forecast's shape. The tracing runs with
64-bit types enabled, so a float64 that would otherwise be truncated in silence shows. A method gets its recipe
read-only (`methods.spec.read_only`: one that pops or sets a key is refused) and must be pure: its transform built
twice from one recipe, and its `training_inputs` and `loss` traced twice on the same inputs, give the same programs
(`check_transform_purity`), and its `variant_id` names a recipe the same way twice.

What a plug-in means is checked too, by computing on a few windows (`check_fault_semantics`, `check_model_batch`):
a fault's `apply` leaves every channel outside its `selected` mask as it was (the channel-sparse path re-runs only the
selected ones), gives one window for one key in two separate traces (no draw from NumPy's or Python's global random
generator), gives the window back at severity 0 and changes it along a severity sweep; a model's forecast of a window
does not depend on which windows share its batch (`model(x)[:1] == model(x[:1])`, on real windows of the dataset).
A check that cannot apply to a spec (a fault without a channel selection, a host model) returns a note saying so, which
the run prints and records. A run computes these for its plug-ins (specs of an entry point, `is_plugin`); the built-ins
are checked by the test suite. A model whose scored forecast does not depend on its input at all is flagged, not refused
(`ignores_its_input`, after the evaluation).

A violation is a `ContractError` (a ValueError), one line naming the spec, where it came from (the plug-in's
package and entry point, or the built-in module: `plugins.entry_points.origin_of`), what was expected and what came. The
results are cached per (spec, shapes, settings), a fault's per (spec, shapes) alone, a model's batch check per (spec,
hyperparameters, shapes, windows): the CLI checks before Hydra creates the run folder, the pipeline again before it
claims one, at no second cost.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import itertools
import json
import random
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx

from sfbench_jax.data.prepared import PreparedData
from sfbench_jax.data.spec import DatasetSpec
from sfbench_jax.evaluation.predict import predict_with
from sfbench_jax.faults.context import FaultContext
from sfbench_jax.faults.registry import get_fault
from sfbench_jax.faults.severity import severity_to_units
from sfbench_jax.faults.spec import FaultSpec
from sfbench_jax.methods.registry import method_grid
from sfbench_jax.methods.spec import MethodSpec, read_only
from sfbench_jax.methods.training import DatasetFacts
from sfbench_jax.models.registry import build_model
from sfbench_jax.models.spec import ModelSpec
from sfbench_jax.pipeline.resolved import ResolvedCell
from sfbench_jax.plugins.entry_points import origin_of
from sfbench_jax.predictors.protocol import VALIDATION_CONTEXT, ModelState, Predictor, RowAwarePredictor, run_predictor
from sfbench_jax.training.search import expand_space, search_space

#: The batch of the abstract inputs (any batch would do: nothing is computed).
BATCH = 2
#: The number of channels `predict_channels` is traced with.
SPARSE_CHANNELS = 2


class ContractError(ValueError):
    """A model, fault or method whose outputs break the contract of its kind (one line)."""


@dataclasses.dataclass(frozen=True)
class Shapes:
    """The dataset facts the contracts are traced with."""

    input_len: int
    horizon: int
    num_channels: int
    target_indices: tuple[int, ...]
    pool: tuple[int, ...]

    @classmethod
    def of(cls, spec: DatasetSpec) -> Shapes:
        return cls(input_len=spec.input_len, horizon=spec.horizon, num_channels=spec.num_channels,
                   target_indices=tuple(spec.target_indices), pool=tuple(spec.continuous_pool))


def _described(value: Any) -> str:
    leaves = jax.tree_util.tree_leaves(value)
    if len(leaves) == 1 and hasattr(leaves[0], "shape"):
        return f"{tuple(leaves[0].shape)} {jnp.dtype(leaves[0].dtype).name}"
    return f"{type(value).__name__} with {len(leaves)} arrays"


def _one_line(error: BaseException) -> str:
    text = " ".join(str(error).split())
    return f"{type(error).__name__}: {text[:300]}{'...' if len(text) > 300 else ''}"


def _violation(kind: str, spec: Any, call: str, expected: str, got: str, section: str) -> ContractError:
    return ContractError(f"{kind} {spec.name!r} ({origin_of(spec).describe()}) breaks its contract: {call} must "
                         f"return {expected}; it returned {got}. See docs/extending.md, {section}.")


def _traced(kind: str, spec: Any, call: str, expected: str, section: str, function: Callable[..., Any],
            *arguments: Any) -> Any:
    """`jax.eval_shape(function, *arguments)` (64-bit types on), a failure reported as the contract's line."""
    try:
        with jax.enable_x64(True):
            return jax.eval_shape(function, *arguments)
    except Exception as error:  # any failure of foreign code while tracing is the contract's
        raise _violation(kind, spec, call, expected, f"nothing: tracing it raised {_one_line(error)}",
                         section) from error


def _broken(kind: str, spec: Any, broken: str, section: str) -> ContractError:
    return ContractError(f"{kind} {spec.name!r} ({origin_of(spec).describe()}) breaks its contract: {broken}. See "
                         f"docs/extending.md, {section}.")


def _computed(kind: str, spec: Any, section: str, compute: Callable[[], Any]) -> Any:
    try:
        return compute()
    except ContractError:
        raise
    except Exception as error:  # any failure of foreign code while computing is the contract's
        raise _broken(kind, spec, f"computing it on a window raised {_one_line(error)}", section) from error


def _expect_array(kind: str, spec: Any, call: str, got: Any, shape: tuple[int, ...], dtype: Any,
                  section: str) -> None:
    leaves = jax.tree_util.tree_leaves(got)
    fine = (len(leaves) == 1 and hasattr(got, "shape") and tuple(got.shape) == shape
            and jnp.dtype(got.dtype) == jnp.dtype(dtype))
    if not fine:
        wider = (len(leaves) == 1 and hasattr(got, "dtype") and jnp.dtype(got.dtype) == jnp.float64
                 and jnp.dtype(dtype) == jnp.float32)
        hint = (" (float64: an array made without a dtype, e.g. jnp.zeros(shape) or a NumPy float64, promoted it; "
                "create arrays with dtype=x.dtype, or cast the result with .astype(x.dtype))") if wider else ""
        raise _violation(kind, spec, call, f"{shape} {jnp.dtype(dtype).name}", _described(got) + hint, section)


# --- models -----------------------------------------------------------------------------------------------------


def _abstract_model(spec: ModelSpec, hparams: Mapping[str, Any], shapes: Shapes, revin: Any) -> nnx.Module:
    def build() -> nnx.Module:
        return build_model(spec.name, hparams, input_len=shapes.input_len, horizon=shapes.horizon,
                           num_channels=shapes.num_channels, target_indices=shapes.target_indices, seed=0,
                           revin=revin)

    model = nnx.eval_shape(build)
    model.eval()
    return model


def _model_call(graphdef: nnx.GraphDef, method: str) -> Callable[..., Any]:
    def call(state: Any, *arguments: Any) -> Any:
        return getattr(nnx.merge(graphdef, state), method)(*arguments)

    return call


def check_model(spec: ModelSpec, hparams: Mapping[str, Any], shapes: Shapes, *, revin: Any = None,
                kind: str = "Model") -> None:
    """Trace the model's forecasts (see the module docstring); raise `ContractError` on a violation."""
    if getattr(spec.module_cls, "runs_on_host", False):
        return  # a host model declares its output shape to JAX and checks what the host returns itself
    model = _abstract_model(spec, hparams, shapes, revin)
    graphdef, state = nnx.split(model)
    x = jax.ShapeDtypeStruct((BATCH, shapes.input_len, shapes.num_channels), jnp.float32)
    section = "Model (ModelSpec)"
    promised: list[tuple[str, tuple[jax.ShapeDtypeStruct, ...], tuple[int, ...]]] = [
        ("__call__", (x,), (BATCH, shapes.horizon, len(shapes.target_indices)))]
    if spec.supports_revin or hasattr(model, "predict_all_channels"):
        promised.append(("predict_all_channels", (x,), (BATCH, shapes.horizon, shapes.num_channels)))
    if spec.channel_sparse:
        count = min(SPARSE_CHANNELS, shapes.num_channels)
        sparse = jax.ShapeDtypeStruct((BATCH, shapes.input_len, count), jnp.float32)
        ids = jax.ShapeDtypeStruct((BATCH, count), jnp.int32)
        promised.append(("predict_channels", (sparse, ids), (BATCH, shapes.horizon, count)))
    for method, arguments, shape in promised:
        call = f"{method}(x {', '.join(str(tuple(a.shape)) for a in arguments)})"
        if not hasattr(model, method):
            raise _violation(kind, spec, call, f"{shape} float32", "nothing: the module has no such method "
                             "(forecasts_channels_cheaply defaults to True; set it False for a model without "
                             "predict_channels)" if method == "predict_channels" else
                             "nothing: the module has no such method", section)
        got = _traced(kind, spec, call, f"{shape} float32", section, _model_call(graphdef, method), state,
                      *arguments)
        _expect_array(kind, spec, call, got, shape, jnp.float32, section)


# --- what a model means (computed on real windows) --------------------------------------------------------------

#: How many real windows of the dataset the model checks run on (its first validation windows).
PROBE_WINDOWS = 8
#: `model(x)[:1]` and `model(x[:1])` may differ by at most this times (1 + the forecast's largest magnitude): room for
#: the float32 arithmetic of two batch sizes (TF32 matrix products on a GPU), far below what statistics of the batch
#: change.
BATCH_TOLERANCE = 1e-3
#: Cached batch checks, per (spec, hyperparameters, shapes, digest of the windows).
_BATCH_CHECKS: dict[tuple[Any, ...], tuple[str, ...]] = {}


def probe_windows(data: PreparedData, count: int = PROBE_WINDOWS) -> np.ndarray:
    """The first `count` validation windows of the dataset, standardised, float32 `(count, n, m)`."""
    starts = np.asarray(data.val_starts[:count])
    return np.asarray(data.standardised[starts[:, None] + np.arange(data.spec.input_len)], np.float32)


def _batch_probe(graphdef: nnx.GraphDef[nnx.Module]) -> Callable[..., Any]:
    def probe(state: Any, x: jax.Array) -> tuple[jax.Array, jax.Array]:
        model = nnx.merge(graphdef, state)
        return model(x), model(x[:1])

    return probe


def check_model_batch(spec: ModelSpec, hparams: Mapping[str, Any], shapes: Shapes, windows: np.ndarray) -> tuple[
        str, ...]:
    """The model built with `hparams` (seed 0, eval mode) forecasts the first of `windows` (real windows of the
    dataset) the same alone as in their batch: `model(x)[:1] == model(x[:1])` within `BATCH_TOLERANCE`. A forecast
    that depends on which windows share a chunk changes with the evaluation's block size. Raise `ContractError` on a
    violation; cached per (spec, hyperparameters, shapes, windows).

    Returns:
        a note when the check cannot apply (a host model).
    """
    if getattr(spec.module_cls, "runs_on_host", False):
        return (f"Model {spec.name!r}: the batch-independence check does not apply (a host model: it is not built "
                "in JAX before its run).",)
    key = (spec, json.dumps(dict(hparams), sort_keys=True, default=str), shapes,
           hashlib.sha256(np.ascontiguousarray(windows).tobytes()).hexdigest())
    if key not in _BATCH_CHECKS:
        _check_model_batch(spec, hparams, shapes, windows)
        if len(_BATCH_CHECKS) >= 256:
            _BATCH_CHECKS.clear()
        _BATCH_CHECKS[key] = ()
    return _BATCH_CHECKS[key]


def _check_model_batch(spec: ModelSpec, hparams: Mapping[str, Any], shapes: Shapes, windows: np.ndarray) -> None:
    section = "Model (ModelSpec)"

    def forecasts() -> tuple[np.ndarray, np.ndarray]:
        model = build_model(spec.name, dict(hparams), input_len=shapes.input_len, horizon=shapes.horizon,
                            num_channels=shapes.num_channels, target_indices=shapes.target_indices, seed=0)
        model.eval()
        graphdef, state = nnx.split(model)
        together, alone = jax.jit(_batch_probe(graphdef))(state, jnp.asarray(windows))
        return np.asarray(together), np.asarray(alone)

    together, alone = _computed("Model", spec, section, forecasts)
    gap = batch_dependence(together[:1], alone)
    if gap is not None:
        raise _broken("Model", spec, f"__call__(x)[:1] differs from __call__(x[:1]) on {len(windows)} real windows "
                      f"of the dataset ({gap}): a window's forecast depends on which "
                      "windows share its batch (statistics of the batch, e.g. batch normalisation with the batch's "
                      "mean in eval mode), so the scores change with the evaluation's block size; normalise each "
                      "window by its own statistics", section)


def batch_dependence(first: np.ndarray, alone: np.ndarray) -> str | None:
    """How a window's forecast in its batch (`first`, `model(x)[:1]`) differs from its forecast alone (`alone`,
    `model(x[:1])`) beyond `BATCH_TOLERANCE` ("largest difference 0.25", or NaN / inf in different places); None
    when they agree (NaN and inf in the same places, finite values within the tolerance)."""
    finite = np.isfinite(first) & np.isfinite(alone)
    same_gaps = np.array_equal(np.isnan(first), np.isnan(alone)) and np.array_equal(first[np.isinf(first)],
                                                                                     alone[np.isinf(first)])
    with np.errstate(invalid="ignore"):  # inf - inf where both forecast inf: masked out by `finite`
        gaps = np.abs(first - alone)
    difference = float(np.max(gaps, where=finite, initial=0.0)) if same_gaps else float("nan")
    scale = 1.0 + float(np.max(np.abs(first), where=finite, initial=0.0))
    if difference <= BATCH_TOLERANCE * scale:
        return None
    return f"largest difference {difference:.3g}" if same_gaps else "NaN or inf forecasts in different places"


def ignores_its_input(predict: Predictor, state: ModelState, windows: np.ndarray) -> bool:
    """Whether the predictor gives one forecast for every one of `windows` (distinct real windows): a forecast whose
    variance over its inputs is zero (its D is 1 under every fault, whatever it forecasts)."""
    ids = jnp.arange(len(windows), dtype=jnp.int32)
    contexts = jnp.full((len(windows),), VALIDATION_CONTEXT, jnp.int32)
    forecast = np.asarray(jax.jit(lambda s, x: run_predictor(predict, s, x, contexts, ids))(state,
                                                                                            jnp.asarray(windows)))
    return bool(np.all(forecast == forecast[:1]))


# --- faults -----------------------------------------------------------------------------------------------------


def check_fault(fault: FaultSpec, shapes: Shapes) -> None:
    """Trace the fault's `sample`, `prepare` and `apply` on one window; raise `ContractError` on a violation."""
    ctx = FaultContext(input_len=shapes.input_len, num_channels=shapes.num_channels, pool=shapes.pool)
    section = "Fault scenario (FaultSpec)"
    words = jax.ShapeDtypeStruct((2,), jnp.uint32)
    window = (shapes.input_len, shapes.num_channels)
    fields = "a NamedTuple with severity_units int32 ()" + (
        f" and selected bool ({shapes.num_channels},)" if fault.is_channel_scoped else "")
    params = _traced("Fault", fault, "sample(words, ctx, None)", fields, section,
                     lambda w: fault.sample(w, ctx, None), words)
    expected: dict[str, tuple[tuple[int, ...], Any]] = {"severity_units": ((), jnp.int32)}
    if fault.is_channel_scoped:
        expected["selected"] = ((shapes.num_channels,), jnp.bool_)
    for name, (shape, dtype) in expected.items():
        got = getattr(params, name, None)
        if got is None or tuple(got.shape) != shape or jnp.dtype(got.dtype) != jnp.dtype(dtype):
            came = "no such field" if got is None else _described(got)
            raise _violation("Fault", fault, "sample(words, ctx, None)", fields, f"{name}: {came}", section)
    x = jax.ShapeDtypeStruct(window, jnp.float32)
    got = _traced("Fault", fault, f"apply(x {window} float32, params, ctx)", f"{window} float32", section,
                  lambda w, x: fault.apply(x, fault.prepare(fault.sample(w, ctx, None), ctx), ctx), words, x)
    _expect_array("Fault", fault, f"apply(x {window} float32, params, ctx)", got, window, jnp.float32, section)


# --- what a fault means (computed on one window) ----------------------------------------------------------------

#: The severities a fault's effect is checked along: 0 (the window must come back unchanged), then a sweep that must
#: change the faulted window.
SEVERITY_SWEEP = (0.0, 0.25, 0.5, 1.0)
#: The stream words of the checks' (scenario, window) key: any fixed pair.
PROBE_WORDS = (0x2545F491, 0x9E3779B9)
#: Two windows are "the same" when they differ by at most this times (1 + the window's largest magnitude).
SAME_WINDOW_TOLERANCE = 1e-6


def probe_window(shapes: Shapes) -> np.ndarray:
    """A fixed float32 `(n, m)` window the fault checks act on: standard normal noise on a slow sine per channel."""
    noise = np.random.default_rng(20240601).standard_normal((shapes.input_len, shapes.num_channels))
    trend = np.sin(np.arange(shapes.input_len)[:, None] / 7.0 + np.arange(shapes.num_channels)[None, :])
    return (noise + trend).astype(np.float32)


def _fault_probe(fault: FaultSpec, ctx: FaultContext) -> Callable[..., Any]:
    """`(words, x, units (S,)) -> (x' at the drawn severity, x' (S, n, m) at each severity, selected (S, m))`."""

    def probe(words: jax.Array, x: jax.Array, units: jax.Array) -> Any:
        drawn = fault.apply(x, fault.prepare(fault.sample(words, ctx, None), ctx), ctx)

        def at(severity_units: jax.Array) -> Any:
            params = fault.sample(words, ctx, severity_units)
            selected = params.selected if fault.is_channel_scoped else jnp.ones((ctx.num_channels,), jnp.bool_)
            return fault.apply(x, fault.prepare(params, ctx), ctx), selected

        swept, selected = jax.lax.map(at, units)
        return drawn, swept, selected

    return probe


def _same_program(first: Any, second: Any) -> bool:
    """Whether two traces of one function are the same program (text and constants)."""
    one, two = first.jaxpr, second.jaxpr
    return str(one) == str(two) and len(one.consts) == len(two.consts) and all(
        np.array_equal(np.asarray(a), np.asarray(b)) for a, b in zip(one.consts, two.consts, strict=True))


def _same_window(a: np.ndarray, b: np.ndarray) -> bool:
    scale = 1.0 + float(np.max(np.abs(b), initial=0.0))
    return a.shape == b.shape and bool(np.all(np.abs(a - b) <= SAME_WINDOW_TOLERANCE * scale))


def _fault_outputs(fault: FaultSpec, ctx: FaultContext, arguments: tuple[Any, ...]) -> tuple[Any, bool]:
    """The probe's outputs, and whether two fresh traces agree on them (the program cache would hide a second
    trace: a global random draw made while tracing is frozen into the first program)."""
    numpy_state, python_state = np.random.get_state(), random.getstate()
    try:  # the checks leave the global generators as they found them
        first = jax.jit(_fault_probe(fault, ctx)).trace(*arguments)
        second = jax.jit(_fault_probe(fault, ctx)).trace(*arguments)
        outputs = jax.device_get(first.lower().compile()(*arguments))
        if _same_program(first, second):
            return outputs, True
        again = jax.device_get(second.lower().compile()(*arguments))
        return outputs, all(np.array_equal(a, b) for a, b in zip(outputs[:2], again[:2], strict=True))
    finally:
        np.random.set_state(numpy_state)
        random.setstate(python_state)


def check_fault_semantics(fault: FaultSpec, shapes: Shapes) -> tuple[str, ...]:
    """Apply the fault to `probe_window` with fixed stream words: the same key twice in two separate traces gives one
    window, severity 0 gives the window back, a severity sweep changes it, and a channel-scoped fault leaves every
    channel outside `params.selected` unchanged. Raise `ContractError` on a violation.

    Returns:
        notes on checks that cannot apply to this fault (one line each).
    """
    ctx = FaultContext(input_len=shapes.input_len, num_channels=shapes.num_channels, pool=shapes.pool)
    section = "Fault scenario (FaultSpec)"
    x = probe_window(shapes)
    units = np.asarray(severity_to_units(np.asarray(SEVERITY_SWEEP)), np.int32)
    arguments = (jnp.asarray(PROBE_WORDS, jnp.uint32), jnp.asarray(x), jnp.asarray(units))
    (_, swept, selected), repeatable = _computed("Fault", fault, section,
                                                 lambda: _fault_outputs(fault, ctx, arguments))
    if not repeatable:
        raise _broken("Fault", fault, "apply(x, sample(words, ctx, None), ctx) gave two different windows for the "
                      "same stream words in two separate traces: it draws from a random source other than its "
                      "words (NumPy's or Python's global generator?); draw with faults.streams.stream_bits(words, "
                      "...) so that a (scenario, window) key gives one fault on every run and machine", section)
    if not _same_window(swept[0], x):
        change = float(np.max(np.abs(swept[0] - x)))
        raise _broken("Fault", fault, f"at severity 0 (units=0) it changed the window (largest change {change:.3g}); "
                      "severity 0 must give the window back unchanged", section)
    if all(_same_window(swept[i], swept[1]) for i in range(2, len(SEVERITY_SWEEP))):
        levels = ", ".join(f"{s:g}" for s in SEVERITY_SWEEP[1:])
        raise _broken("Fault", fault, f"it gave the same window at severities {levels}: its effect ignores the "
                      "drawn severity (params.severity_units; units of 2**-24)", section)
    if not fault.is_channel_scoped:
        return (f"Fault {fault.name!r}: the unselected-channel check does not apply (is_channel_scoped=False: it "
                "acts on every channel).",)
    unselected = ~np.asarray(selected, bool)
    if not unselected.any():
        return (f"Fault {fault.name!r}: the unselected-channel check does not apply ({shapes.num_channels} "
                "channel(s), every one selected at each severity checked).",)
    for level, severity in enumerate(SEVERITY_SWEEP):
        changed = np.flatnonzero(unselected[level] & np.any(swept[level] != x, axis=0))
        if changed.size:
            raise _broken("Fault", fault, f"at severity {severity:g} it changed channel(s) {changed.tolist()} outside "
                          "its selected mask (params.selected); the channel-sparse evaluation re-runs only the "
                          "selected channels and would drop that change, the dense one keep it: set selected for every "
                          "channel the fault changes", section)
    return ()


# --- methods ----------------------------------------------------------------------------------------------------


def _facts(shapes: Shapes) -> DatasetFacts:
    return DatasetFacts(offsets=(0.0,) * shapes.num_channels,
                        continuous=tuple(i in shapes.pool for i in range(shapes.num_channels)),
                        input_len=shapes.input_len, num_channels=shapes.num_channels, pool=shapes.pool)


def check_transform(method: MethodSpec, recipe: Mapping[str, Any], model: ModelSpec, hparams: Mapping[str, Any],
                    shapes: Shapes) -> None:
    """A train-kind method: its transform keeps the batch's shape and float32, its loss is a float32 scalar."""
    section = "Method (MethodSpec)"
    revin = method.model_wrapping(recipe)
    if revin is not None:
        check_model(model, hparams, shapes, revin=revin, kind=f"Model {model.name!r} wrapped by method")
    if method.transform is None:
        return
    transform = _built_transform(method, recipe, shapes)
    programs = []
    for call, expected, function, arguments in _transform_calls(transform, shapes):
        got, program = _traced_program("Method", method, call, f"{expected} float32", section, function, *arguments)
        _expect_array("Method", method, call, got, expected, jnp.float32, section)
        programs.append(program)
    _check_purity(method, recipe, shapes, transform, programs)


# --- methods: read-only recipes and pure transforms -----------------------------------------------------------

PURITY_SECTION = "Method purity"


def _impure(method: MethodSpec, what: str) -> ContractError:
    return ContractError(f"Method {method.name!r} ({origin_of(method).describe()}) is not pure: {what}, so one "
                         "candidate hash would name different trained models depending on what ran before (a global "
                         "counter, Python's or NumPy's global RNG, state kept between calls). Keep every setting in "
                         f"the recipe and draw randomness from the key. See docs/extending.md, {PURITY_SECTION}.")


def _built_transform(method: MethodSpec, recipe: Mapping[str, Any], shapes: Shapes) -> Any:
    """`method.transform(read-only recipe, facts)`; its failure (a recipe it pops or sets included) as one line."""
    assert method.transform is not None, "called for a method with a transform"
    try:
        return method.transform(read_only(recipe), _facts(shapes))
    except Exception as error:  # any failure of foreign code is the contract's
        hint = (" (recipes are read-only: copy one with dict(recipe) before changing it)"
                if "mappingproxy" in str(error) else "")
        raise _violation("Method", method, "transform(recipe, facts)", "a step transform",
                         f"nothing: it raised {_one_line(error)}{hint}", "Method (MethodSpec)") from error


Program = tuple[str, list[Any]]


def _traced_program(kind: str, spec: Any, call: str, expected: str, section: str, function: Callable[..., Any],
                    *arguments: Any) -> tuple[Any, Program]:
    """`_traced`, also returning the program one trace made: its jaxpr as text and its baked-in constants."""
    try:
        with jax.enable_x64(True):
            closed, shape = jax.make_jaxpr(function, return_shape=True)(*arguments)
    except Exception as error:  # any failure of foreign code while tracing is the contract's
        raise _violation(kind, spec, call, expected, f"nothing: tracing it raised {_one_line(error)}",
                         section) from error
    return shape, (str(closed.jaxpr), list(closed.consts))


def _transform_calls(transform: Any, shapes: Shapes) -> list[tuple[str, tuple[int, ...], Callable[..., Any],
                                                                     tuple[Any, ...]]]:
    """The calls of a step transform the contract traces: (description, expected shape, function, arguments)."""
    x = jax.ShapeDtypeStruct((BATCH, shapes.input_len, shapes.num_channels), jnp.float32)
    prediction = jax.ShapeDtypeStruct((BATCH, shapes.horizon, len(shapes.target_indices)), jnp.float32)
    latents = transform.initial_latents(shapes.horizon, len(shapes.target_indices))

    def loss_at(batch: jax.Array) -> jax.Array:
        return jnp.mean(batch * batch)  # a loss at the batch with a gradient (an attack follows it)

    return [(f"transform.training_inputs(key, x {x.shape}, loss_at)", x.shape,
             lambda key, x: transform.training_inputs(key, x, loss_at), (jax.random.key(0), x)),
            ("transform.loss(prediction, target, latents)", (),
             lambda p, t: transform.loss(p, t, latents), (prediction, prediction))]


def _same_leaves(first: Any, second: Any) -> bool:
    (first_leaves, first_tree), (second_leaves, second_tree) = (jax.tree_util.tree_flatten(first),
                                                                jax.tree_util.tree_flatten(second))
    if str(first_tree) != str(second_tree) or len(first_leaves) != len(second_leaves):
        return False
    for a, b in zip(first_leaves, second_leaves, strict=True):
        if jax.dtypes.issubdtype(getattr(a, "dtype", None), jax.dtypes.prng_key):
            a, b = jax.random.key_data(a), jax.random.key_data(b)
        try:
            if not np.array_equal(np.asarray(a), np.asarray(b), equal_nan=True):
                return False
        except (TypeError, ValueError):
            if repr(a) != repr(b):
                return False
    return True


def _check_purity(method: MethodSpec, recipe: Mapping[str, Any], shapes: Shapes, first: Any,
                  programs: Sequence[Program]) -> None:
    """A train-kind method's transform is pure: built again from the same (read-only) recipe it is the same
    transform with the same recipe values and initial latents, and its `training_inputs` and `loss`, traced on the
    same inputs, give the same programs as `first`'s (`programs`: their text and baked-in constants). Tracing only,
    nothing is computed."""
    second = _built_transform(method, recipe, shapes)
    if type(first).__eq__ is not object.__eq__ and first != second:
        raise _impure(method, f"transform(recipe, facts) built {first!r}, then {second!r} from the same recipe")
    if not _same_leaves(first.recipe_values(), second.recipe_values()):
        raise _impure(method, "transform(recipe, facts).recipe_values() differ between two builds from one recipe")
    latents = [t.initial_latents(shapes.horizon, len(shapes.target_indices)) for t in (first, second)]
    if not _same_leaves(*latents):
        raise _impure(method, "transform.initial_latents(horizon, targets) differ between two calls")
    for (call, expected, function, arguments), program in zip(_transform_calls(second, shapes), programs, strict=True):
        _, again = _traced_program("Method", method, call, f"{expected} float32", "Method (MethodSpec)", function,
                                   *arguments)
        if again[0] != program[0] or not _same_leaves(again[1], program[1]):
            raise _impure(method, f"{call}, traced twice on the same inputs, gave two different programs")


def check_variant_id(method: MethodSpec, recipe: Mapping[str, Any]) -> None:
    """A method's `variant_id` takes the read-only recipe and names it the same way twice (it seeds the variant)."""
    try:
        names = [method.variant_id(read_only(recipe)) for _ in range(2)]
    except Exception as error:  # any failure of foreign code is the contract's
        hint = (" (recipes are read-only: copy one with dict(recipe) before changing it)"
                if "mappingproxy" in str(error) else "")
        raise _violation("Method", method, "variant_id(recipe)", "a str", f"nothing: it raised {_one_line(error)}"
                         f"{hint}", "Method (MethodSpec)") from error
    if names[0] != names[1]:
        raise _impure(method, f"variant_id(recipe) named one recipe {names[0]!r}, then {names[1]!r}")


def check_wrapper(method: MethodSpec, recipe: Mapping[str, Any], model: ModelSpec, hparams: Mapping[str, Any],
                  shapes: Shapes, *, num_candidates: int) -> None:
    """A wrap-kind method: its predictor over abstract members returns the model's forecast shape, float32."""
    section = "Method (MethodSpec)"
    if getattr(model.module_cls, "runs_on_host", False):
        return
    abstract = _abstract_model(model, hparams, shapes, None)
    graphdef, state = nnx.split(abstract)
    ranked = [(predict_with(graphdef), state) for _ in range(max(1, num_candidates))]
    wrapper = method.wrapper
    assert wrapper is not None, "check_wrapper is called for wrap-kind methods, which have a wrapper"
    members = wrapper.members(read_only(recipe), ranked)
    predict, wrapped_state = wrapper.predictor(read_only(recipe), list(members), seed=0)
    x = jax.ShapeDtypeStruct((BATCH, shapes.input_len, shapes.num_channels), jnp.float32)
    expected = (BATCH, shapes.horizon, len(shapes.target_indices))
    if isinstance(predict, RowAwarePredictor):
        rows = jax.ShapeDtypeStruct((BATCH, 2), jnp.int32)
        got = _traced("Method", method, f"predict.apply(state, x {x.shape}, rows)", f"{expected} float32", section,
                      predict.apply, wrapped_state, x, rows)
    else:
        got = _traced("Method", method, f"predict(state, x {x.shape})", f"{expected} float32", section, predict,
                      wrapped_state, x)
    _expect_array("Method", method, f"its predictor(state, x {x.shape})", got, expected, jnp.float32, section)


# --- a run ------------------------------------------------------------------------------------------------------


def _first_recipe(recipes: Mapping[str, Sequence[Any]]) -> dict[str, Any]:
    keys = list(recipes)
    return dict(zip(keys, next(itertools.product(*recipes.values()), ()), strict=False))


@dataclasses.dataclass(frozen=True, eq=False)
class _Same:
    """A spec as a cache key, equal only to the same object (specs hold dicts, so they do not hash; a spec
    registered again under its name is a new key and is checked again)."""

    spec: Any

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Same) and other.spec is self.spec

    def __hash__(self) -> int:
        return id(self.spec)


@functools.lru_cache(maxsize=256)
def _check_cached(model: _Same, hparams_json: str, method: _Same, recipe_json: str, dataset: str, shapes: Shapes,
                  scenarios: tuple[str, ...], num_candidates: int) -> tuple[str, ...]:
    model_spec, method_spec = model.spec, method.spec
    hparams, recipe = json.loads(hparams_json), json.loads(recipe_json)
    check_model(model_spec, hparams, shapes)
    if method_spec.kind != "baseline":
        check_variant_id(method_spec, recipe)
    if method_spec.kind == "train":
        check_transform(method_spec, recipe, model_spec, hparams, shapes)
    elif method_spec.kind == "wrap":
        check_wrapper(method_spec, recipe, model_spec, hparams, shapes, num_candidates=num_candidates)
    faults = [get_fault(name) for name in scenarios]
    for fault in faults:  # every shape first: a fault of the wrong shape is named as such
        _check_fault_cached(fault, shapes)
    return tuple(note for fault in faults if is_plugin(fault) for note in _check_fault_semantics_cached(fault, shapes))


def is_plugin(spec: Any) -> bool:
    """Whether a spec came from an installed package's entry point. What the built-ins (and this repository's own
    extra specs) mean is checked by the test suite (tests/test_plugin_semantics.py), not again in every run."""
    return bool(origin_of(spec).entry_point)


@functools.lru_cache(maxsize=256)
def _check_fault_cached(fault: FaultSpec, shapes: Shapes) -> None:
    """`check_fault`, once per fault spec (the object, so a spec registered again under its name is checked again)
    and shapes: every run of a dataset traces the same scenarios, whatever its model and method."""
    check_fault(fault, shapes)


@functools.lru_cache(maxsize=256)
def _check_fault_semantics_cached(fault: FaultSpec, shapes: Shapes) -> tuple[str, ...]:
    """`check_fault_semantics`, once per fault spec (the object) and shapes."""
    return check_fault_semantics(fault, shapes)


def _combinations(cell: ResolvedCell) -> list[dict[str, Any]]:
    """The valid combinations of the model's search space."""
    space = search_space(cell.model, cell.cfg.model.grid or None, cell.cfg.model.hparams)
    return expand_space(cell.model, space, input_len=cell.dataset.input_len)


def check_run_contracts(cell: ResolvedCell) -> tuple[str, ...]:
    """Check the contracts of everything `cfg` runs: its model (on the first valid combination of its search space),
    its method (on the first recipe of its grid) and its fault scenarios (their shapes; what a plug-in's mean too:
    `check_fault_semantics`), on the dataset's shapes.

    Returns:
        notes on checks that cannot apply to a spec (one line each; the run prints and records them).

    Raises:
        ContractError: a violation, in one line naming the spec's package and entry point (or built-in module).
    """
    cfg, spec, method = cell.cfg, cell.dataset, cell.method
    combinations = _combinations(cell)
    if not combinations:
        return ()  # the search-space check names this
    recipe = _first_recipe(method_grid(method, cfg.method.grid)) if method.kind != "baseline" else {}
    return _check_cached(_Same(cell.model), json.dumps(combinations[0], sort_keys=True, default=str), _Same(method),
                         json.dumps(recipe, sort_keys=True, default=str), spec.key, Shapes.of(spec),
                         tuple(cfg.eval.scenarios), min(cfg.train.candidate_budget, len(combinations)))


def check_run_data_contracts(cell: ResolvedCell, data: PreparedData) -> tuple[str, ...]:
    """The checks that need the dataset's windows: a plug-in model's forecast of a window does not depend on its batch
    (`check_model_batch`, on the first valid combination of its search space, with real windows of `data`).

    Returns:
        notes on checks that cannot apply (a host model).

    Raises:
        ContractError: a violation, in one line naming the spec's package and entry point (or built-in module).
    """
    spec = cell.model
    combinations = _combinations(cell)
    if not combinations or not is_plugin(spec):
        return ()
    return check_model_batch(spec, combinations[0], Shapes.of(data.spec), probe_windows(data))
