"""The packaging configuration (pyproject.toml, the only one) ships every package and every data file.

`[tool.setuptools] packages` is an explicit list (two folders install under other import names, which package
discovery cannot express), so these tests make it impossible to forget a new sub-package or data file: the list
must equal the folders that hold an `__init__.py`, and every non-Python file in them must be matched by a
`package-data` pattern (expanded the way setuptools expands it, `glob` with `**`). The built wheel itself is
exercised by `.ci/wheel_smoke` (install into a fresh environment, run the commands outside the checkout).
"""

from __future__ import annotations

import glob
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
#: Listed without an `__init__.py`: Hydra discovers launcher plugins in the `hydra_plugins` namespace, which other
#: distributions (hydra-joblib-launcher, hydra-submitit-launcher) share.
NAMESPACE_PACKAGES = {"hydra_plugins"}


@pytest.fixture(scope="module")
def setuptools_config() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]


def _package_folder(name: str, package_dir: dict[str, str]) -> Path:
    """The source folder of a dotted package name, honouring `package-dir` renames (longest prefix wins)."""
    for prefix in sorted(package_dir, key=len, reverse=True):
        if name == prefix or name.startswith(prefix + "."):
            return ROOT / package_dir[prefix] / Path(*name[len(prefix):].split(".")[1:])
    return ROOT / Path(*name.split("."))


def _import_packages(folder: Path, name: str) -> set[str]:
    """Dotted names of `folder` and every sub-folder with an `__init__.py`, `folder` imported as `name`."""
    found = set()
    for init in folder.rglob("__init__.py"):
        relative = init.parent.relative_to(folder)
        if "__pycache__" not in relative.parts:
            found.add(".".join([name, *relative.parts]))
    return found


def _is_data_file(path: Path) -> bool:
    return path.is_file() and path.suffix not in {".py", ".pyc"} and "__pycache__" not in path.parts


def test_packages_list_every_importable_folder(setuptools_config: dict) -> None:
    package_dir = setuptools_config["package-dir"]
    expected = (_import_packages(ROOT / "sfbench_jax", "sfbench_jax")
                | _import_packages(ROOT / "kernels" / "phm_kernels", "phm_kernels")
                | _import_packages(ROOT / "conf", "sfbench_jax.conf")
                | _import_packages(ROOT / "hydra_plugins", "hydra_plugins") | NAMESPACE_PACKAGES)
    listed = set(setuptools_config["packages"])
    assert listed == expected, (
        f"pyproject.toml [tool.setuptools] packages is missing {sorted(expected - listed)} and lists "
        f"{sorted(listed - expected)} that do not exist; edit the list there")
    for name in listed - NAMESPACE_PACKAGES:
        assert (_package_folder(name, package_dir) / "__init__.py").is_file(), name


def test_package_data_matches_every_data_file(setuptools_config: dict) -> None:
    assert setuptools_config.get("include-package-data") is False, (
        "data files must come from [tool.setuptools.package-data] alone (include-package-data = false)")
    package_dir = setuptools_config["package-dir"]
    shipped: set[Path] = set()
    for name, patterns in setuptools_config["package-data"].items():
        folder = _package_folder(name, package_dir)
        for pattern in patterns:
            shipped |= {folder / match for match in glob.glob(pattern, root_dir=folder, recursive=True)}
    on_disk = {path for top in ("sfbench_jax", "kernels", "conf") for path in (ROOT / top).rglob("*")
               if _is_data_file(path)}
    missing = sorted(str(path.relative_to(ROOT)) for path in on_disk - shipped)
    assert not missing, f"not matched by [tool.setuptools.package-data] in pyproject.toml: {missing}"
    for required in ("conf/config.yaml", "conf/model/gru.yaml", "sfbench_jax/resources/etth1.csv.xz",
                     "sfbench_jax/resources/phm/cmapss/train_fd001.txt.xz"):
        assert ROOT / required in shipped, required


def test_there_is_one_packaging_configuration() -> None:
    assert not (ROOT / "setup.py").exists() and not (ROOT / "setup.cfg").exists(), (
        "pyproject.toml is the only packaging configuration; move any setup.py/setup.cfg settings there")
