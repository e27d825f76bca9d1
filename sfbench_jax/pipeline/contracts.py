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

A violation is a `ContractError` (a ValueError), one line naming the spec, where it came from (the plug-in's
package and entry point, or the built-in module: `plugins.entry_points.origin_of`), what was expected and what came. The
results are cached per (spec, shapes, settings), a fault's per (spec, shapes) alone: the CLI checks before Hydra creates
the run folder, the pipeline again before it claims one, at no second cost.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx

from sfbench_jax.config import RunConfig
from sfbench_jax.data.spec import DatasetSpec
from sfbench_jax.evaluate.predict import predict_with
from sfbench_jax.faults.context import FaultContext
from sfbench_jax.faults.registry import get_fault
from sfbench_jax.faults.spec import FaultSpec
from sfbench_jax.methods.registry import get_method, method_grid
from sfbench_jax.methods.spec import MethodSpec, read_only
from sfbench_jax.methods.training import DatasetFacts
from sfbench_jax.models.registry import build_model, get_spec
from sfbench_jax.models.spec import ModelSpec
from sfbench_jax.plugins.entry_points import origin_of
from sfbench_jax.predictors.protocol import RowAwarePredictor
from sfbench_jax.train.search import expand_space, search_space

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


@functools.lru_cache(maxsize=256)
def _check_cached(model: str, hparams_json: str, method: str, recipe_json: str, dataset: str, shapes: Shapes,
                  scenarios: tuple[str, ...], num_candidates: int) -> None:
    model_spec, method_spec = get_spec(model), get_method(method)
    hparams, recipe = json.loads(hparams_json), json.loads(recipe_json)
    check_model(model_spec, hparams, shapes)
    if method_spec.kind != "baseline":
        check_variant_id(method_spec, recipe)
    if method_spec.kind == "train":
        check_transform(method_spec, recipe, model_spec, hparams, shapes)
    elif method_spec.kind == "wrap":
        check_wrapper(method_spec, recipe, model_spec, hparams, shapes, num_candidates=num_candidates)
    for name in scenarios:
        _check_fault_cached(get_fault(name), shapes)


@functools.lru_cache(maxsize=256)
def _check_fault_cached(fault: FaultSpec, shapes: Shapes) -> None:
    """`check_fault`, once per fault spec (the object, so a spec registered again under its name is checked again)
    and shapes: every run of a dataset traces the same scenarios, whatever its model and method."""
    check_fault(fault, shapes)


def check_run_contracts(cfg: RunConfig) -> None:
    """Check the contracts of everything `cfg` runs: its model (on the first valid combination of its search space),
    its method (on the first recipe of its grid) and its extra fault scenarios, on the dataset's shapes.

    Raises:
        ContractError: a violation, in one line naming the spec's package and entry point (or built-in module).
    """
    spec = cfg.dataset.spec
    space = search_space(cfg.model.name, cfg.model.grid or None, cfg.model.hparams)
    combinations = expand_space(cfg.model.name, space, input_len=spec.input_len)
    if not combinations:
        return  # the search-space check names this
    method = get_method(cfg.method.name)
    recipe = _first_recipe(method_grid(cfg.method.name, cfg.method.grid)) if method.kind != "baseline" else {}
    _check_cached(cfg.model.name, json.dumps(combinations[0], sort_keys=True, default=str), cfg.method.name,
                  json.dumps(recipe, sort_keys=True, default=str), spec.key, Shapes.of(spec),
                  tuple(cfg.eval.scenarios), min(cfg.train.candidate_budget, len(combinations)))
