"""Package discovery only (metadata lives in pyproject.toml).

Two top-level folders are installed under other import names:

* `kernels/` is the PHM kernel library, imported as `phm_kernels` so it never collides with the
  unrelated PyPI distribution `kernels`;
* `conf/` holds the Hydra presets, installed as `sfbench_jax.conf` so the `sfbench` command finds them
  in any installation, not only in a source checkout.
"""

from setuptools import find_packages, setup

_KERNEL_PACKAGES = ["phm_kernels"] + [f"phm_kernels.{name}" for name in find_packages("kernels")]

setup(
    packages=find_packages(include=["sfbench_jax", "sfbench_jax.*"]) + _KERNEL_PACKAGES
    + ["sfbench_jax.conf"],
    package_dir={"phm_kernels": "kernels", "sfbench_jax.conf": "conf"},
    package_data={"sfbench_jax.conf": ["*.yaml", "*/*.yaml", "*/*/*.yaml"]},
)
