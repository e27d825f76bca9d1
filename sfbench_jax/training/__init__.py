"""Training and selection (protocol 5): the compiled epoch (`loop`), early stopping, candidate training
(`fit`; restoring a stored candidate is `sfbench_jax.models.restore`'s, re-exported here), random-subgrid
search (`search`), the resumable candidate store (`store`),
resumable sweeps (`sweep`) and clean-validation selection (`select`). No evaluation here.
"""

from sfbench_jax.models.restore import restore_model  # the rebuild of a stored candidate (models-level)
from sfbench_jax.training.early_stopping import StoppingState, advance
from sfbench_jax.training.fit import (
    GroupMember,
    TrainOutcome,
    group_size,
    train_group,
)
from sfbench_jax.training.search import (
    Candidate,
    check_search_space,
    expand_space,
    random_subgrid,
    search_space,
)
from sfbench_jax.training.store import CandidateResult, CandidateStore, candidate_hash
from sfbench_jax.training.sweep import SearchPlan, plan_search, run_search, untrained_record
from sfbench_jax.training.training_seeds import model_seed, tuning_seed
from sfbench_jax.training.winner import select_winner, selection_key

__all__ = [
    "Candidate", "CandidateResult", "CandidateStore", "GroupMember", "SearchPlan", "StoppingState",
    "TrainOutcome", "advance", "candidate_hash", "check_search_space", "expand_space", "group_size",
    "model_seed", "plan_search", "random_subgrid", "restore_model", "run_search", "search_space",
    "select_winner", "selection_key", "train_group", "tuning_seed", "untrained_record",
]
