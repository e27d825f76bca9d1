"""A resumable random-subgrid sweep for one (dataset, architecture, method) cell.

`run_search` samples the candidates (protocol 5.3), looks each one up in the candidate store, trains
only the unfinished ones (grouped by architecture hyperparameters and method recipe structure, so
learning-rate siblings and method variants that differ only in recipe values can share one vectorised
program), saves each as soon as its group finishes, and returns every
candidate's record in trial order. A sweep killed mid-way keeps all finished candidates; running
it again trains only the rest. Selection is `winner.py`'s.
"""

from __future__ import annotations

import functools
import itertools
import json
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from sfbench_jax.config import TrainConfig
from sfbench_jax.data.prepared import PreparedData
from sfbench_jax.methods.registry import METHODS
from sfbench_jax.methods.spec import MethodSpec, read_only
from sfbench_jax.models.hparams import HParams
from sfbench_jax.models.spec import ModelSpec
from sfbench_jax.plugins.code_identity import engine_identity, top_level_digest
from sfbench_jax.plugins.entry_points import code_fingerprint
from sfbench_jax.training.early_stopping import STOP_NON_FINITE, STOP_UNTRAINED
from sfbench_jax.training.fit import (
    GroupMember,
    TrainingRecipe,
    TrainOutcome,
    candidates_per_group,
    train_group,
    training_recipe,
)
from sfbench_jax.training.search import Candidate, expand_space, random_subgrid, search_space
from sfbench_jax.training.store import (
    STATUS_FAILED,
    STATUS_FINISHED,
    STORE_FORMAT_VERSION,
    CandidateResult,
    CandidateStore,
    candidate_hash,
    code_version,
    finite_curve,
    same_training,
)
from sfbench_jax.training.training_seeds import model_seed, tuning_seed


@dataclass(frozen=True)
class SearchPlan:
    """The candidates of one cell and their identities.

    Attributes:
        architecture: the architecture's name (written into every record).
        method: the robustness method's name.
        model_seed: the cell's model seed, shared by all baseline candidates (protocol 1.6); None for a method
            plan, whose variants each have their own (`candidate_seeds`).
        tuning_seed: seeds the subgrid shuffle.
        num_valid: valid combinations in the search space (baseline) or recipe combinations (method).
        candidates: the sampled candidates in trial order.
        identities: resolved configuration of each candidate (hashed into its store key).
        keys: candidate hashes.
        candidate_seeds: each candidate's model seed.
        model: the architecture's spec (None: a model outside the registry, which `run_search` cannot train).
        method_spec: the method's spec (None with `model`).
    """

    architecture: str
    method: str
    model_seed: int | None
    tuning_seed: int
    num_valid: int
    candidates: list[Candidate] = field(hash=False)
    identities: list[dict[str, Any]] = field(hash=False)
    keys: list[str] = field(hash=False)
    candidate_seeds: list[int] = field(hash=False)
    model: ModelSpec | None = field(default=None, compare=False, repr=False)
    method_spec: MethodSpec | None = field(default=None, compare=False, repr=False)


def _identity(data: PreparedData, model: ModelSpec, method: MethodSpec, plan_fields: dict[str, Any],
              options: TrainConfig) -> dict[str, Any]:
    spec = data.spec
    code = code_identity(model, method)
    target = plan_fields["hparams"].get("target")
    if isinstance(target, str) and ":" in target:  # an external model: the code its target names
        code = {**code, "target": top_level_digest(target.split(":", 1)[0])}
    return {"format": STORE_FORMAT_VERSION, "code_version": code_version(), "dataset": spec.key,
            "signature": spec.signature, "data_sha256": data.series.content_sha256, "data_seed": spec.seeds.data_seed,
            **plan_fields, "protocol": options.protocol(), "code": code, "engine": engine_identity()}


def code_identity(model: ModelSpec, method: MethodSpec) -> dict[str, Any]:
    """The fingerprint of the code that defines a candidate: the source digests of its model's and method's
    modules and the plug-in distributions (name==version) they come from (`plugins.entry_points.code_fingerprint`).
    An edited model or method gets new candidate hashes, so it retrains; the old candidates stay in the store as
    they were."""
    return code_fingerprint(model, method)


def plan_search(data: PreparedData, model: ModelSpec, *, options: TrainConfig,
                grid: Mapping[str, Sequence[Any]] | None = None, fixed: HParams | None = None,
                method: MethodSpec | None = None) -> SearchPlan:
    """Sample the baseline candidates of a cell (`options.candidate_budget` of them, seeded by
    `options.master_seed`) and compute their identities (`method`: the baseline's spec unless given).

    Raises:
        ValueError: unknown hyperparameter, or no valid combination in the search space.
    """
    spec = data.spec
    method = METHODS["baseline"] if method is None else method
    architecture = model.name
    space = search_space(model, grid, fixed)
    combinations = expand_space(model, space, input_len=spec.input_len)
    if not combinations:
        raise ValueError(f"No valid {architecture} combination in the search space {space} for input_len="
                         f"{spec.input_len}; see the invalid-combination rules of protocol 5.3.")
    seed = model_seed(spec, architecture, master_seed=options.master_seed)
    tuning = tuning_seed(spec, architecture, master_seed=options.master_seed)
    candidates = random_subgrid(combinations, tuning_seed=tuning, budget=options.candidate_budget)
    identities = [_identity(data, model, method, {"architecture": architecture, "method": method.name,
                                                  "hparams": dict(candidate.hparams), "model_seed": seed}, options)
                  for candidate in candidates]
    return SearchPlan(architecture=architecture, method=method.name, model_seed=seed, tuning_seed=tuning,
                      num_valid=len(combinations), candidates=candidates, identities=identities,
                      keys=[candidate_hash(identity) for identity in identities],
                      candidate_seeds=[seed] * len(candidates), model=model, method_spec=method)


def plan_method_search(data: PreparedData, model: ModelSpec, method: MethodSpec, *,
                       recipes: Mapping[str, Sequence[Any]], inherited: HParams, options: TrainConfig,
                       budget: int | None) -> SearchPlan:
    """The variants of a method cell (protocol 4, 5.3): recipe combinations in key order (first key slowest),
    shuffled with the method's tuning seed and cut to `budget` (None: every combination, in grid order, as
    for wrap methods); each variant carries the `inherited` hyperparameters of the baseline winner, its variant id
    (`method.variant_id`) and its own model seed (`pipeline_id` = its variant id)."""
    spec = data.spec
    architecture, variant_id = model.name, method.variant_id
    keys = list(recipes)
    combinations = [dict(zip(keys, values, strict=True)) for values in itertools.product(*recipes.values())]
    tuning = tuning_seed(spec, architecture, method=method.name, master_seed=options.master_seed)
    if budget is None:
        sampled = [Candidate(trial, trial - 1, dict(combo)) for trial, combo in enumerate(combinations, start=1)]
    else:
        sampled = random_subgrid(combinations, tuning_seed=tuning, budget=budget)
    candidates = [Candidate(c.trial_number, c.grid_index, dict(inherited), recipe=dict(c.hparams),
                            variant=variant_id(read_only(c.hparams))) for c in sampled]
    seeds = [model_seed(spec, architecture, pipeline_id=c.variant, method=method.name,
                        master_seed=options.master_seed) for c in candidates]
    identities = [_identity(data, model, method, {"architecture": architecture, "method": method.name,
                                                  "hparams": dict(inherited), "recipe": c.recipe,
                                                  "variant": c.variant, "model_seed": seed}, options)
                  for c, seed in zip(candidates, seeds, strict=True)]
    return SearchPlan(architecture=architecture, method=method.name, model_seed=None, tuning_seed=tuning,
                      num_valid=len(combinations), candidates=candidates, identities=identities,
                      keys=[candidate_hash(identity) for identity in identities], candidate_seeds=seeds,
                      model=model, method_spec=method)


def _groups(plan: SearchPlan, pending: Sequence[int], group_size: Callable[[list[int]], int],
            recipes: Sequence[TrainingRecipe]) -> list[list[int]]:
    """Pending candidate positions grouped by architecture hyperparameters and the structure of their training
    recipe (trial order kept), each group cut to at most `group_size(positions)` of its positions: method variants
    that differ only in recipe values (`TrainingRecipe.structure`) share a group, like learning-rate siblings."""
    by_config: dict[tuple[str, TrainingRecipe], list[int]] = {}
    for position in pending:
        candidate = plan.candidates[position]
        config = (json.dumps(candidate.architecture_hparams, sort_keys=True), recipes[position].structure)
        by_config.setdefault(config, []).append(position)
    groups: list[list[int]] = []
    for positions in by_config.values():
        size = group_size(positions)
        groups.extend(positions[i:i + size] for i in range(0, len(positions), size))
    return sorted(groups, key=lambda group: group[0])


def _group_size(data: PreparedData, plan: SearchPlan, options: TrainConfig, recipes: Sequence[TrainingRecipe],
                positions: list[int]) -> int:
    """Candidates of one configuration (`positions`) trained together: `train.group_size`, or auto (on accelerators:
    as many as fit the device's memory)."""
    return candidates_per_group(data, _specs(plan)[0], plan.candidates[positions[0]].architecture_hparams, options,
                                recipes[positions[0]], most=len(positions), variants=plan.method != "baseline")


def _specs(plan: SearchPlan) -> tuple[ModelSpec, MethodSpec]:
    """The model and method specs of a plan to train (`plan_search`'s or `plan_method_search`'s)."""
    if plan.model is None or plan.method_spec is None:
        raise ValueError(f"The plan of {plan.architecture!r} names no registered model and method (a model outside "
                         "the registry): it can be scored as built, not trained.")
    return plan.model, plan.method_spec


def _record(plan: SearchPlan, position: int, outcome: TrainOutcome, data: PreparedData) -> CandidateResult:
    candidate, stopping = plan.candidates[position], outcome.stopping
    return CandidateResult(
        candidate_hash=plan.keys[position], identity=plan.identities[position], dataset=data.spec.key,
        architecture=plan.architecture, method=plan.method, trial_number=candidate.trial_number,
        grid_index=candidate.grid_index, hparams=dict(candidate.hparams), model_seed=plan.candidate_seeds[position],
        status=STATUS_FAILED if stopping.failed else STATUS_FINISHED,
        best_val_loss=None if stopping.failed else stopping.best_loss, best_epoch=stopping.best_epoch,
        epochs_run=stopping.epochs_run, stop_reason=stopping.stop_reason or STOP_NON_FINITE,
        val_curve=finite_curve(outcome.val_curve), train_curve=finite_curve(outcome.train_curve),
        train_seconds=outcome.train_seconds, group_size=outcome.group_size, code_version=code_version(),
        recipe=dict(candidate.recipe), variant=candidate.variant)


def untrained_record(plan: SearchPlan, position: int, val_loss: float, data: PreparedData) -> CandidateResult:
    """The record of a candidate without trainable weights (SeasonalNaive, a wrapper of stored predictors):
    its clean validation loss as built."""
    candidate = plan.candidates[position]
    finite = finite_curve([val_loss])
    return CandidateResult(
        candidate_hash=plan.keys[position], identity=plan.identities[position], dataset=data.spec.key,
        architecture=plan.architecture, method=plan.method, trial_number=candidate.trial_number,
        grid_index=candidate.grid_index, hparams=dict(candidate.hparams), model_seed=plan.candidate_seeds[position],
        status=STATUS_FINISHED if finite[0] is not None else STATUS_FAILED, best_val_loss=finite[0],
        best_epoch=0, epochs_run=0, stop_reason=STOP_UNTRAINED, val_curve=finite, train_curve=[],
        train_seconds=0.0, group_size=1, code_version=code_version(), recipe=dict(candidate.recipe),
        variant=candidate.variant)


def run_search(data: PreparedData, plan: SearchPlan, *, store: CandidateStore, options: TrainConfig,
               log: Callable[[str], None] | None = None) -> list[CandidateResult]:
    """Train every candidate of `plan` that the store does not hold yet; return all records.

    A candidate whose validation loss never becomes finite is recorded as failed and the sweep goes
    on. Raises PermissionError (before any training) if the store cannot be written.
    """
    store.ensure_writable()
    model, method = _specs(plan)
    spec = data.spec
    results: dict[int, CandidateResult] = {}
    for position, key in enumerate(plan.keys):
        stored = store.load(spec.key, plan.architecture, key)
        if stored is not None:
            results[position] = stored
    pending = [position for position in range(len(plan.keys)) if position not in results]
    if log is not None:
        log(f"{plan.architecture}: {len(plan.candidates)} of {plan.num_valid} valid candidates "
            f"(tuning seed {plan.tuning_seed}, model seed {plan.model_seed}); {len(results)} already in "
            f"the store, {len(pending)} to train")
        superseded = superseded_line(store, spec.key, plan, pending)
        if superseded:
            log(superseded)
    recipes = [training_recipe(data, method, candidate.recipe) for candidate in plan.candidates]
    groups = _groups(plan, pending, functools.partial(_group_size, data, plan, options, recipes), recipes)
    unclaimed = list(enumerate(groups, start=1))
    while unclaimed:  # the first group no other process is training; processes sharing the store split the work
        index, claim = store.claim_first_free(spec.key, plan.architecture,
                                              [[plan.keys[p] for p in group] for _, group in unclaimed])
        number, group = unclaimed.pop(index)
        with claim:
            # another process may have finished some of them before we got the claim
            done = {p: r for p in group if (r := store.load(spec.key, plan.architecture, plan.keys[p]))}
            results.update(done)
            todo = [position for position in group if position not in done]
            if not todo:
                continue
            first = plan.candidates[todo[0]]
            hparams = first.architecture_hparams
            members = [GroupMember(learning_rate=plan.candidates[p].learning_rate, seed=plan.candidate_seeds[p],
                                   transform=recipes[p].transform) for p in todo]
            trials = ", ".join(str(plan.candidates[p].trial_number) for p in todo)
            if log is not None:
                names = ", ".join(plan.candidates[p].variant for p in todo)
                variants = "" if plan.method == "baseline" else f" {names}"
                log(f"{plan.architecture}{variants} group {number}/{len(groups)}: trials [{trials}] {hparams}, "
                    f"lr {[m.learning_rate for m in members]}")
            started = time.perf_counter()
            outcomes = train_group(data, model, hparams, members, options, vectorize=len(members) > 1,
                                   log=log if options.progress else None, recipe=recipes[todo[0]])
            for position, outcome in zip(todo, outcomes, strict=True):
                result = _record(plan, position, outcome, data)
                store.save(result, outcome.checkpoint)
                results[position] = result
                if log is not None:
                    status = (f"best val {result.best_val_loss:.5f} at epoch {result.best_epoch + 1}"
                              if result.is_finished else "FAILED (validation loss never finite)")
                    log(f"{plan.architecture} trial {result.trial_number}: {status}, {result.epochs_run} epochs "
                        f"({result.stop_reason}); group took {time.perf_counter() - started:.1f} s")
    return [results[position] for position in range(len(plan.keys))]


def superseded_line(store: CandidateStore, dataset: str, plan: SearchPlan, pending: Sequence[int]) -> str | None:
    """One line saying how many of the `pending` candidates the store holds trained by other code (the same
    training otherwise: data, hyperparameters, seeds, protocol) and why they are retrained, or None if none is.
    Those stored candidates are kept as they are; they are never served to this code."""
    if not pending:
        return None
    stored = store.stored_identities(dataset, plan.architecture)
    reasons: dict[str, None] = {}
    count = 0
    for position in pending:
        identity = plan.identities[position]
        matches = [old for old in stored if same_training(old, identity)]
        if matches:
            count += 1
            reasons.update(dict.fromkeys(code_changes(matches[-1], identity)))
    if not count:
        return None
    were = "candidate was" if count == 1 else "candidates were"
    return (f"{plan.architecture}: {count} stored {were} trained by other code ({'; '.join(reasons)}); "
            f"retraining {'it' if count == 1 else 'them'} (the stored ones are kept, not used)")


def code_changes(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[str]:
    """What differs between the code identities of two candidate identities, in words (old -> new)."""
    reasons = []
    if old.get("format") != new.get("format"):
        reasons.append(f"store format {old.get('format')} -> {new.get('format')}")
    old_engine, new_engine = old.get("engine") or {}, new.get("engine") or {}
    if not old_engine:
        reasons.append("engine source and JAX versions not recorded: stored by an older sfbench-jax")
    else:
        if old_engine.get("source") != new_engine.get("source"):
            reasons.append("engine source changed")
        old_libraries, new_libraries = old_engine.get("libraries") or {}, new_engine.get("libraries") or {}
        changed = [f"{name} {old_libraries.get(name, 'unknown')} -> {version}"
                   for name, version in sorted(new_libraries.items()) if old_libraries.get(name) != version]
        if changed:
            reasons.append("library versions changed: " + ", ".join(changed))
    old_code, new_code = old.get("code") or {}, new.get("code") or {}
    if old_code.get("modules") != new_code.get("modules"):
        edited = sorted(name for name, digest in (new_code.get("modules") or {}).items()
                        if (old_code.get("modules") or {}).get(name) != digest)
        reasons.append(f"model/method source changed: {', '.join(edited) or 'modules'}")
    if old_code.get("packages") != new_code.get("packages") and isinstance(old_code.get("packages"), Mapping):
        reasons.append("plug-in package files changed: " + ", ".join(sorted(
            name for name, digest in (new_code.get("packages") or {}).items()
            if (old_code.get("packages") or {}).get(name) != digest) or ["removed"]))
    if old_code.get("target") != new_code.get("target"):
        reasons.append("the external model's target code changed")
    if old.get("code_version") != new.get("code_version"):
        reasons.append(f"sfbench-jax {old.get('code_version')} -> {new.get('code_version')}")
    return reasons or ["code identity changed"]
