"""Handles: short, deterministic names for server-side objects (loaded splits, models, predictions).

What lives here: the handle grammar, constructors and the parser. What does not: resolving a
handle to data (the tools do that through `DataStore`, recomputing or reading the cache).

A handle is a recipe, not a session token: ``ds:cmapss_fd001:test`` always names the same
object, so results are identical across transports, processes and repeated runs, and concurrent
clients never see each other's state. Whether an agent *obtained* a handle from an earlier call
before using it is checked on the client side (the evaluator's state-dependency flag).

Grammar::

    ds:<dataset>:<split>                           a loaded dataset split
    gt:<dataset>                                   ground truth of a dataset
    model:<dataset>:<model_type>                   an RUL model fitted on <dataset>'s train split
    pred:<dataset>:<model_type>:<dataset>:<split>  that model's predictions on a split
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from sfbench_jax.mcp.errors import UnknownHandleError

__all__ = ["Handle", "dataset_handle", "ground_truth_handle", "model_handle", "parse_handle",
           "prediction_handle"]

_PART = r"[a-z0-9_]{1,64}"
_GRAMMAR = {
    "ds": re.compile(rf"^ds:(?P<dataset>{_PART}):(?P<split>{_PART})$"),
    "gt": re.compile(rf"^gt:(?P<dataset>{_PART})$"),
    "model": re.compile(rf"^model:(?P<dataset>{_PART}):(?P<model_type>{_PART})$"),
    "pred": re.compile(
        rf"^pred:(?P<dataset>{_PART}):(?P<model_type>{_PART}):(?P<target>{_PART}):(?P<split>{_PART})$"
    ),
}
_HINTS = {
    "ds": "call load_dataset to obtain one",
    "gt": "call load_ground_truth to obtain one",
    "model": "call train_rul_model to obtain one",
    "pred": "call predict_rul to obtain one",
}


@dataclass(frozen=True)
class Handle:
    """A parsed handle.

    Attributes:
        kind: ``ds``, ``gt``, ``model`` or ``pred``.
        dataset: The dataset the object belongs to (for ``pred``: the model's training set).
        split: Split name (``ds``, ``pred``), else empty.
        model_type: Model type (``model``, ``pred``), else empty.
        target: Dataset the predictions are for (``pred``), else empty.
    """

    kind: str
    dataset: str
    split: str = ""
    model_type: str = ""
    target: str = ""

    def __str__(self) -> str:
        if self.kind == "ds":
            return dataset_handle(self.dataset, self.split)
        if self.kind == "gt":
            return ground_truth_handle(self.dataset)
        if self.kind == "model":
            return model_handle(self.dataset, self.model_type)
        return prediction_handle(self.dataset, self.model_type, self.target, self.split)


def dataset_handle(dataset: str, split: str) -> str:
    """Handle of a loaded split, e.g. ``ds:cmapss_fd001:test``."""
    return f"ds:{dataset}:{split}"


def ground_truth_handle(dataset: str) -> str:
    """Handle of a dataset's ground truth, e.g. ``gt:cmapss_fd001``."""
    return f"gt:{dataset}"


def model_handle(dataset: str, model_type: str) -> str:
    """Handle of a fitted RUL model, e.g. ``model:cmapss_fd001:linear_health_index``."""
    return f"model:{dataset}:{model_type}"


def prediction_handle(dataset: str, model_type: str, target: str, split: str) -> str:
    """Handle of a model's predictions on a split."""
    return f"pred:{dataset}:{model_type}:{target}:{split}"


def parse_handle(value: object, *, argument: str, kinds: tuple[str, ...]) -> Handle:
    """Parse a handle string and check it is of an accepted kind.

    Args:
        value: What the caller passed.
        argument: Argument name, for messages.
        kinds: Accepted kinds, e.g. ``("ds",)``.

    Returns:
        The parsed handle.

    Raises:
        UnknownHandleError: If the value is not a handle of one of ``kinds``.
    """
    hint = "; ".join(_HINTS[k] for k in kinds)
    if not isinstance(value, str):
        raise UnknownHandleError(f"{argument} must be a handle string ({hint})")
    text = value.strip()
    for kind in kinds:
        match = _GRAMMAR[kind].match(text)
        if match:
            return Handle(kind=kind, **match.groupdict())
    shown = text if len(text) <= 80 else text[:77] + "..."
    raise UnknownHandleError(f"{argument}={shown!r} is not a valid handle here ({hint})")
