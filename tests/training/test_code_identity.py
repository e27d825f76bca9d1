"""The code identity of a stored candidate (issue 43, item 1): the engine's source digest over real files, the
library versions, and a plug-in distribution's files wherever Python imports them from."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from sfbench_jax.plugins import code_identity
from sfbench_jax.plugins.code_identity import (
    ENGINE_PACKAGES,
    engine_identity,
    engine_source_digest,
    package_roots,
    tree_digest,
)


def _copy_engine(target: Path) -> list[Path]:
    """A copy of the engine's package folders (sources only) under `target`."""
    copies = []
    for root in package_roots(ENGINE_PACKAGES):
        copy = target / root.name
        shutil.copytree(root, copy, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        copies.append(copy)
    return copies


def test_the_engine_digest_is_of_file_contents_and_an_engine_edit_changes_it(tmp_path: Path) -> None:
    copies = _copy_engine(tmp_path)
    assert tree_digest(copies) == engine_source_digest()  # a copy of the same sources: the same engine
    loop = tmp_path / "sfbench_jax" / "training" / "loop.py"
    text = loop.read_text()
    assert "ADAM_EPS = 0.9, 0.999, 1e-8" in text
    loop.write_text(text.replace("ADAM_EPS = 0.9, 0.999, 1e-8", "ADAM_EPS = 0.9, 0.999, 1e-7"))
    assert tree_digest(copies) != engine_source_digest()
    loop.write_text(text)
    (tmp_path / "sfbench_jax" / "training" / "notes.txt").write_text("not a module")  # only module sources count
    assert tree_digest(copies) == engine_source_digest()
    (tmp_path / "sfbench_jax" / "training" / "helper.py").write_text("X = 1\n")  # a new module does
    assert tree_digest(copies) != engine_source_digest()


def test_engine_identity_names_the_source_digest_and_the_library_versions() -> None:
    identity = engine_identity()
    assert identity["source"] == engine_source_digest() and len(identity["source"]) == 64
    assert set(identity["libraries"]) == {"jax", "jaxlib", "flax", "optax"}
    import jax

    assert identity["libraries"]["jax"] == jax.__version__


def test_a_distribution_digest_follows_the_files_python_imports(tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """An editable-style install: the dist-info names only an entry point; the code lives in a source tree on
    sys.path. Editing a helper module there (the version unchanged) changes the digest."""
    source = tmp_path / "src" / "edit_plugin_pkg"
    source.mkdir(parents=True)
    (source / "__init__.py").write_text("")
    (source / "helper.py").write_text("SCALE = 1.0\n")
    (source / "model.py").write_text("from edit_plugin_pkg.helper import SCALE\nSPEC = SCALE\n")
    info = tmp_path / "site" / "edit_plugin_pkg-0.1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: edit-plugin-pkg\nVersion: 0.1.0\n")
    (info / "entry_points.txt").write_text("[sfbench_jax.models]\nedit = edit_plugin_pkg.model:SPEC\n")
    (info / "RECORD").write_text("edit_plugin_pkg-0.1.0.dist-info/METADATA,,\n__editable__.edit_plugin_pkg.pth,,\n")
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    monkeypatch.syspath_prepend(str(tmp_path / "src"))
    code_identity.clear_caches()
    before = code_identity.distribution_digest("edit-plugin-pkg")
    assert before not in ("not installed", "no files")
    (source / "helper.py").write_text("SCALE = 2.0\n")
    assert code_identity.distribution_digest("edit-plugin-pkg") == before  # once per process
    code_identity.clear_caches()
    assert code_identity.distribution_digest("edit-plugin-pkg") != before
    assert code_identity.distribution_digest("no-such-distribution-here") == "not installed"
