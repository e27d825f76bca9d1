"""`sfbench`: compose conf/config.yaml, convert it to RunConfig, run the pipeline in the Hydra run dir."""

from __future__ import annotations

from pathlib import Path

import hydra
from hydra.core.config_store import ConfigStore
from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig, OmegaConf

from sfbench_jax.config import DatasetConfig, EvalConfig, ModelConfig, RunConfig

CONFIG_PATH = "pkg://sfbench_jax.conf"



def _schema(config_type: type) -> DictConfig:
    """A writable structured node of a frozen dataclass (YAML presets merge onto it and are type-checked;
    the frozen dataclass is only instantiated at the end, by `to_run_config`)."""
    node = OmegaConf.structured(config_type)
    _make_writable(node)
    return node


def _make_writable(node: DictConfig) -> None:
    OmegaConf.set_readonly(node, False)
    for key in node:
        child = node._get_node(key)
        if isinstance(child, DictConfig):
            _make_writable(child)


_store = ConfigStore.instance()
_store.store(name="run_schema", node=_schema(RunConfig))
_store.store(group="dataset", name="dataset_schema", node=_schema(DatasetConfig))
_store.store(group="model", name="model_schema", node=_schema(ModelConfig))
_store.store(group="eval", name="eval_schema", node=_schema(EvalConfig))


def to_run_config(cfg: DictConfig) -> RunConfig:
    """Hydra config -> validated RunConfig (raises a ValueError naming the bad field)."""
    run_config = OmegaConf.to_object(cfg)
    if not isinstance(run_config, RunConfig):
        raise TypeError("The composed config is not a RunConfig; conf/config.yaml must list run_schema.")
    return run_config


@hydra.main(version_base="1.3", config_path=CONFIG_PATH, config_name="config")
def main(cfg: DictConfig) -> None:
    """Run one benchmark job."""
    from sfbench_jax.pipeline import run

    run(to_run_config(cfg), Path(HydraConfig.get().runtime.output_dir))


if __name__ == "__main__":
    main()
