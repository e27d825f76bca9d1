"""Early stopping as the reference's Lightning callbacks behave (protocol 5.2)."""

from __future__ import annotations

import math

import pytest

from sfbench_jax.training.early_stopping import (
    STOP_MAX_EPOCHS,
    STOP_NON_FINITE,
    STOP_PATIENCE,
    StoppingState,
    advance,
)


def _run(losses: list[float], *, patience: int = 3, max_epochs: int = 200) -> StoppingState:
    state, best = StoppingState(), math.inf
    for loss in losses:
        improved = math.isfinite(loss) and loss < best  # strict improvement, min_delta 0
        best = loss if improved else best
        state = advance(state, val_loss=loss, improved=improved, patience=patience, max_epochs=max_epochs)
        if state.stopped:
            break
    return state


def test_patience_counts_epochs_without_strict_improvement() -> None:
    # an equal loss is not an improvement: after epoch 1 (0.5) three non-improving epochs stop it
    state = _run([0.9, 0.5, 0.5, 0.6, 0.55, 0.1], patience=3)
    assert (state.epochs_run, state.best_epoch, state.best_loss, state.stop_reason) == (5, 1, 0.5, STOP_PATIENCE)


def test_improvement_resets_the_wait() -> None:
    state = _run([0.9, 0.95, 0.96, 0.8, 0.85, 0.86, 0.87], patience=3)
    assert (state.best_epoch, state.epochs_run, state.stop_reason) == (3, 7, STOP_PATIENCE)


def test_max_epochs() -> None:
    state = _run([1.0, 0.9, 0.8], patience=10, max_epochs=3)
    assert (state.epochs_run, state.best_epoch, state.stop_reason, state.failed) == (3, 2, STOP_MAX_EPOCHS, False)


def test_non_finite_loss_stops_and_never_finite_is_failed() -> None:
    after_good = _run([0.7, math.nan, 0.1])
    assert (after_good.stop_reason, after_good.best_epoch, after_good.failed) == (STOP_NON_FINITE, 0, False)
    never = _run([math.inf])
    assert (never.stop_reason, never.best_epoch, never.failed) == (STOP_NON_FINITE, -1, True)


def test_advancing_a_stopped_state_is_an_error() -> None:
    with pytest.raises(ValueError, match="stopped candidate"):
        advance(_run([math.nan]), val_loss=0.1, improved=True, patience=3, max_epochs=5)
