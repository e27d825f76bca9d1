"""Early stopping (protocol 5.2) as a pure host-side state machine.

The compiled epoch program decides whether an epoch improved the best validation loss (strictly,
by more than `min_delta`) and keeps the best parameters on the device; this module only counts
epochs without improvement and says when a candidate stops: after `patience` such epochs, at a
non-finite validation loss (Lightning's `check_finite`), or after `max_epochs`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

#: Why a candidate stopped.
STOP_PATIENCE, STOP_NON_FINITE, STOP_MAX_EPOCHS = "patience", "non_finite", "max_epochs"
#: Stop reason of a model without trainable weights (scored on clean validation as built, never trained).
STOP_UNTRAINED = "untrained"


@dataclass(frozen=True)
class StoppingState:
    """Progress of one candidate.

    Attributes:
        epochs_run: epochs trained so far.
        best_loss: lowest validation loss so far (inf until one is finite).
        best_epoch: 0-based epoch of `best_loss` (first occurrence), -1 if none.
        wait: epochs since the last improvement.
        stop_reason: None while training, else one of the STOP_* constants.
    """

    epochs_run: int = 0
    best_loss: float = math.inf
    best_epoch: int = -1
    wait: int = 0
    stop_reason: str | None = None

    @property
    def stopped(self) -> bool:
        """Whether the candidate has stopped."""
        return self.stop_reason is not None

    @property
    def failed(self) -> bool:
        """A stopped candidate whose validation loss never became finite."""
        return self.stopped and self.best_epoch < 0


def advance(state: StoppingState, *, val_loss: float, improved: bool, patience: int,
            max_epochs: int) -> StoppingState:
    """The state after one more epoch.

    Args:
        state: the state before the epoch.
        val_loss: the epoch's validation loss.
        improved: whether the epoch set a new best (decided on the device, where the best
            parameters are kept, so both sides agree bit for bit).
        patience: epochs without improvement that stop the candidate.
        max_epochs: epoch limit.
    """
    if state.stopped:
        raise ValueError("advance() called on a stopped candidate.")
    epoch = state.epochs_run
    if improved:
        state = replace(state, best_loss=float(val_loss), best_epoch=epoch, wait=0)
    else:
        state = replace(state, wait=state.wait + 1)
    state = replace(state, epochs_run=epoch + 1)
    if not math.isfinite(val_loss):
        return replace(state, stop_reason=STOP_NON_FINITE)
    if state.wait >= patience:
        return replace(state, stop_reason=STOP_PATIENCE)
    if state.epochs_run >= max_epochs:
        return replace(state, stop_reason=STOP_MAX_EPOCHS)
    return state
