"""A run's names resolved to specs once, where the run starts: `resolve_cell(cfg)` looks up the dataset, model and
method its config names (the one lookup of those names in a run) and the pipeline passes the `ResolvedCell` down;
the layers below take specs (`training.plan_search(data, model_spec, ...)`, `models.restore.build_for`), so a plug-in's
spec travels as an object from its entry point to the Table 4 row. Names stay what is written (records, tables,
manifests). Nothing else lives here.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from sfbench_jax.config import MethodConfig, RunConfig
from sfbench_jax.data.registry import get_dataset
from sfbench_jax.data.spec import DatasetSpec
from sfbench_jax.methods.registry import METHODS, get_method
from sfbench_jax.methods.spec import MethodSpec
from sfbench_jax.models.registry import get_spec
from sfbench_jax.models.spec import ModelSpec


@dataclass(frozen=True)
class ResolvedCell:
    """A run's configuration and the specs its names select, looked up once where the run starts (`resolve_cell`)
    and passed down from there.

    Attributes:
        cfg: the run's configuration (its names are what the run writes).
        dataset: the spec of `cfg.dataset.name`.
        model: the spec of `cfg.model.name`.
        method: the spec of `cfg.method.name`.
    """

    cfg: RunConfig
    dataset: DatasetSpec
    model: ModelSpec
    method: MethodSpec

    def baseline(self) -> ResolvedCell:
        """The same cell with the baseline method (a method cell selects its baseline first)."""
        return ResolvedCell(cfg=dataclasses.replace(self.cfg, method=MethodConfig()), dataset=self.dataset,
                            model=self.model, method=METHODS[MethodConfig().name])


def resolve_cell(cfg: RunConfig) -> ResolvedCell:
    """The specs of `cfg`'s dataset, model and method: the run's one lookup of its names.

    Raises:
        ValueError / PluginError: an unknown name (listing the valid ones) or a broken plug-in's (its fix).
    """
    return ResolvedCell(cfg=cfg, dataset=get_dataset(cfg.dataset.name), model=get_spec(cfg.model.name),
                        method=get_method(cfg.method.name))
