"""Display facts of the architectures, read from their specs (`models/registry.py`: built-ins in the paper's order,
protocol 3.8 and 7.3, then plug-ins by name), and the display helpers the report's tables share.

Nothing here is a table keyed by model names: `ARCHITECTURE_ORDER`, `ARCHITECTURE_LABELS` and
`ARCHITECTURE_FAMILIES` are views of `MODELS`. Table 4 itself is rendered by `report/paper.py`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from sfbench_jax.data.registry import DATASETS
from sfbench_jax.models.registry import MODELS


class RegisteredNames(Sequence[str]):
    """The names of a registry's specs in registry order (those `keep` accepts), read at each use: a spec
    registered after this module was imported is shown too."""

    def __init__(self, registry: Mapping[str, Any], keep: Callable[[Any], bool] = lambda spec: True) -> None:
        self.registry, self.keep = registry, keep

    def _names(self) -> list[str]:
        return [name for name, spec in self.registry.items() if self.keep(spec)]

    def __getitem__(self, index: Any) -> Any:
        return self._names()[index]

    def __len__(self) -> int:
        return len(self._names())


class SpecFacts(Mapping[str, str]):
    """One display fact (`fact(spec)`: a label, a family) of every spec of a registry that has it, read at each use."""

    def __init__(self, registry: Mapping[str, Any], fact: Callable[[Any], str],
                 keep: Callable[[Any], bool] = lambda spec: True) -> None:
        self.registry, self.fact, self.keep = registry, fact, keep

    def __getitem__(self, name: str) -> str:
        spec = self.registry.get(name)
        value = self.fact(spec) if spec is not None and self.keep(spec) else ""
        if not value:
            raise KeyError(name)
        return value

    def __iter__(self) -> Iterator[str]:
        return (name for name, spec in self.registry.items() if self.keep(spec) and self.fact(spec))

    def __len__(self) -> int:
        return sum(1 for _ in self)


#: Architecture display order (paper Table 4 / Figure 2): the registry's.
ARCHITECTURE_ORDER = RegisteredNames(MODELS)
#: Architecture display labels, from the specs.
ARCHITECTURE_LABELS = SpecFacts(MODELS, lambda spec: spec.display_label)
#: Architecture families (paper Figure 5 colours), from the specs that name one.
ARCHITECTURE_FAMILIES = SpecFacts(MODELS, lambda spec: spec.family)


def ordered(values: list[str], order: Sequence[str]) -> list[str]:
    """`values` in `order`, unknown ones appended alphabetically."""
    known = [value for value in order if value in values]
    return known + sorted(value for value in values if value not in order)


def dataset_label(key: str) -> str:
    """Display label of a dataset key."""
    return DATASETS[key].label if key in DATASETS else key
