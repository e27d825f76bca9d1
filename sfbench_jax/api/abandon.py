"""A caller's time budget over an evaluation: inside `abandonable(event)`, an evaluation stops at its next chunk
once the caller sets the event (`EvaluationAbandoned`). Re-exported from `sfbench_jax.evaluation.abandon`."""

from __future__ import annotations

from sfbench_jax.evaluation.abandon import EvaluationAbandoned, abandonable

__all__ = ["EvaluationAbandoned", "abandonable"]
