"""Package discovery only (metadata lives in pyproject.toml).

The PHM kernel library sits in the top-level folder `kernels/` but is installed under the import
name `phm_kernels`, so it can never collide with the unrelated PyPI distribution `kernels`.
"""

from setuptools import find_packages, setup

_KERNEL_PACKAGES = ["phm_kernels"] + [f"phm_kernels.{name}" for name in find_packages("kernels")]

setup(
    packages=find_packages(include=["sfbench_jax", "sfbench_jax.*"]) + _KERNEL_PACKAGES,
    package_dir={"phm_kernels": "kernels"},
)
