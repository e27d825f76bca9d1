"""Clean-validation selection (protocol 5.4): the winner is the finished candidate with the lowest best
validation loss; ties go to the smaller trial number, then the smaller variant id, then the candidate hash.

The reference breaks ties by (score, -end_time, run_id), bookkeeping artefacts of its tracker; this
order is deterministic and documented instead. Test metrics never enter selection.
"""

from __future__ import annotations

from collections.abc import Sequence

from sfbench_jax.training.store import CandidateResult


def selection_key(result: CandidateResult) -> tuple[float, int, str, str]:
    """`(best_val_loss, trial_number, variant id, candidate hash)` of a finished candidate."""
    if result.best_val_loss is None:
        raise ValueError(f"Candidate {result.candidate_hash} has no finite validation loss.")
    return (float(result.best_val_loss), int(result.trial_number), result.variant, result.candidate_hash)


def select_winner(results: Sequence[CandidateResult]) -> CandidateResult:
    """The selected candidate among `results`.

    Raises:
        ValueError: no candidate finished (every validation loss stayed non-finite), naming them.
    """
    finished = [result for result in results if result.is_finished]
    if not finished:
        names = ", ".join(f"trial {r.trial_number} {r.hparams}" for r in results) or "none"
        raise ValueError(f"No candidate finished training (validation loss never finite); failed: {names}. "
                         "Lower the learning rates in model.grid or check the data.")
    return min(finished, key=selection_key)
