"""A Hydra launcher that runs each multirun job as one Ray task (`hydra/launcher=ray`, extra `[ray]`).

Where the jobs run:

* `address` set (`auto`, `HOST:PORT`, `ray://HOST:PORT`) or `RAY_ADDRESS` in the environment: the launcher
  joins that Ray cluster as a driver and disconnects at the end (the cluster keeps running);
* otherwise it starts a private Ray instance on this machine with `local_cpus` CPUs, advertised on the
  loopback address, and shuts it down when the jobs are done.

Each job asks Ray for `remote` (the options of `ray.remote`: `num_cpus`, `num_gpus`, `memory`, `resources`,
`runtime_env`, ...); a request the private instance can never satisfy is an error before any job starts
(a joined cluster may still grow, so there it is a warning). The jobs run exactly as with the other
launchers (Hydra's `run_job` in the job's folder), and the multirun callbacks, the sweep's collection
included, run once in the launching process after every job returned.

Written for sfbench rather than using hydra-ray-launcher 1.2 because that plugin pins `cloudpickle<3`
(installing it downgrades joblib, the default launcher's engine, from 1.6 to 1.5), cannot join a running
cluster with its own defaults (it adds `object_store_memory`, which `ray.init` refuses when connecting),
and waits forever for resources a cluster does not have. Ray is imported only when a sweep launches, since
Hydra imports every plugin module at start-up. (No `from __future__ import annotations`: Hydra's plugin
scanner executes this module before registering it, and the schema dataclass needs real annotations.)
"""

import logging
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hydra.core.config_store import ConfigStore
from hydra.core.hydra_config import HydraConfig
from hydra.core.singleton import Singleton
from hydra.core.utils import JobReturn, configure_log, filter_overrides, run_job, setup_globals
from hydra.plugins.launcher import Launcher
from hydra.types import HydraContext, TaskFunction
from omegaconf import DictConfig, OmegaConf, open_dict

log = logging.getLogger(__name__)

#: Ray resource names of the `ray.remote` options that request resources.
RESOURCE_OPTIONS = {"num_cpus": "CPU", "num_gpus": "GPU", "memory": "memory"}


@dataclass
class RayLauncherConf:
    """Schema of `hydra/launcher=ray` (conf/hydra/launcher/ray.yaml holds sfbench's values).

    Attributes:
        address: Ray cluster to join (`auto`, `HOST:PORT`, `ray://HOST:PORT`); None: `RAY_ADDRESS` if set,
            else a private local instance.
        local_cpus: CPUs of the private local instance (jobs at once = local_cpus / remote.num_cpus).
        remote: `ray.remote` options of every job (resources, runtime_env, max_retries, ...).
        init: further keyword arguments of `ray.init`.
    """

    _target_: str = "hydra_plugins.sfbench_ray_launcher.ray_launcher.RayLauncher"
    address: str | None = None
    local_cpus: int = 2
    remote: dict[str, Any] = field(default_factory=lambda: {"num_cpus": 1, "num_gpus": 0})
    init: dict[str, Any] = field(default_factory=dict)


ConfigStore.instance().store(group="hydra/launcher", name="sfbench_ray", node=RayLauncherConf,
                             provider="sfbench_ray_launcher")


def _run_job_remotely(hydra_context: HydraContext, sweep_config: DictConfig, task_function: TaskFunction,
                      singleton_state: dict[Any, Any]) -> JobReturn:
    """One job inside a Ray worker: restore Hydra's global state, then Hydra's own `run_job`."""
    setup_globals()
    Singleton.set_state(singleton_state)
    HydraConfig.instance().set_config(sweep_config)
    return run_job(hydra_context=hydra_context, task_function=task_function, config=sweep_config,
                   job_dir_key="hydra.sweep.dir", job_subdir_key="hydra.sweep.subdir")


class RayLauncher(Launcher):
    """Runs every job of a sweep as one Ray task and returns their results in job order."""

    def __init__(self, address: str | None = None, local_cpus: int = 2, remote: Any = None,
                 init: Any = None) -> None:
        if local_cpus < 1:
            raise ValueError(f"hydra.launcher.local_cpus must be >= 1, got {local_cpus}.")
        self.address = address
        self.local_cpus = int(local_cpus)
        self.remote = _plain(remote)
        self.init = _plain(init)
        self.config: DictConfig | None = None
        self.hydra_context: HydraContext | None = None
        self.task_function: TaskFunction | None = None

    def setup(self, *, hydra_context: HydraContext, task_function: TaskFunction, config: DictConfig) -> None:
        self.config, self.hydra_context, self.task_function = config, hydra_context, task_function

    def launch(self, job_overrides: Sequence[Sequence[str]], initial_job_idx: int) -> Sequence[JobReturn]:
        try:
            import ray
        except ImportError as error:
            raise ImportError("hydra/launcher=ray needs Ray, an optional extra: pip install -e '.[ray]' (or "
                              "pip install 'ray>=2.40,<3').") from error
        assert self.config is not None and self.hydra_context is not None and self.task_function is not None
        setup_globals()
        configure_log(self.config.hydra.hydra_logging, self.config.hydra.verbose)
        sweep_dir = Path(str(self.config.hydra.sweep.dir))
        sweep_dir.mkdir(parents=True, exist_ok=True)
        is_private = self._connect(ray)
        try:
            self._check_resources(ray, is_private=is_private)
            job = ray.remote(**self.remote)(_run_job_remotely) if self.remote else ray.remote(_run_job_remotely)
            log.info(f"Ray launcher: {len(job_overrides)} jobs, sweep output dir: {sweep_dir}")
            pending = []
            for index, overrides in enumerate(job_overrides, start=initial_job_idx):
                log.info(f"\t#{index} : {' '.join(filter_overrides(overrides))}")
                sweep_config = self.hydra_context.config_loader.load_sweep_config(self.config, list(overrides))
                with open_dict(sweep_config):
                    sweep_config.hydra.job.id = f"ray_{index}"
                    sweep_config.hydra.job.num = index
                pending.append(job.remote(self.hydra_context, sweep_config, self.task_function,
                                          Singleton.get_state()))
            return ray.get(pending)
        finally:
            ray.shutdown()  # stops a private instance; only disconnects from a joined cluster

    def _connect(self, ray: Any) -> bool:
        """Join the configured cluster or start a private local instance; True for a private one."""
        address = self.address or os.environ.get("RAY_ADDRESS")
        if ray.is_initialized():
            raise RuntimeError("Ray is already initialised in the launching process; the Ray launcher starts or "
                               "joins Ray itself. Set hydra.launcher.address to join a running cluster instead.")
        if address:
            log.info(f"Ray launcher: joining the Ray cluster at {address}")
            ray.init(address=address, **self.init)
            return False
        log.info(f"Ray launcher: starting a private Ray instance with {self.local_cpus} CPUs on 127.0.0.1")
        ray.init(address="local", num_cpus=self.local_cpus, include_dashboard=False,
                 _node_ip_address="127.0.0.1", **self.init)
        return True

    def _check_resources(self, ray: Any, *, is_private: bool) -> None:
        """Raise (private instance) or warn (joined cluster) if a job asks for more than the cluster has."""
        available = ray.cluster_resources()
        wanted = {RESOURCE_OPTIONS[key]: float(value) for key, value in self.remote.items()
                  if key in RESOURCE_OPTIONS and value}
        wanted.update({name: float(value) for name, value in (self.remote.get("resources") or {}).items()})
        short = {name: amount for name, amount in wanted.items() if available.get(name, 0.0) < amount}
        if not short:
            return
        have = ", ".join(f"{name} {available.get(name, 0.0):g}" for name in short)
        asks = ", ".join(f"{name} {amount:g}" for name, amount in short.items())
        if is_private:
            raise ValueError(f"Each job asks Ray for {asks}, but the private local Ray instance has {have}, so no "
                             "job could ever start. Lower hydra.launcher.remote (e.g. hydra.launcher.remote."
                             "num_gpus=0), raise hydra.launcher.local_cpus, or join a cluster with "
                             "hydra.launcher.address=HOST:PORT.")
        log.warning(f"Ray launcher: each job asks for {asks} but the cluster has {have} now; the jobs wait until "
                    "nodes with these resources join.")


def _plain(options: Any) -> dict[str, Any]:
    """A DictConfig / mapping / None as a plain dict (what `ray.remote` / `ray.init` take)."""
    if options is None:
        return {}
    if OmegaConf.is_config(options):
        return dict(OmegaConf.to_container(options, resolve=True))
    return dict(options)
