"""The structure docs/architecture.md describes, checked on the source: imports point downwards, the
configuration imports no engine code, the engine's functions stay short, plug-ins have no special cases."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "sfbench_jax"

#: Each layer may import only itself and the layers listed (transitively lower ones are listed too).
ALLOWED_IMPORTS = {
    "files": set(),
    "plugins": set(),
    "run_folder": {"files"},
    "presets": set(),
    "predictors": set(),
    "host_calls": set(),
    "data": {"files", "plugins"},
    "faults": {"data", "plugins"},
    "config": {"data", "faults", "plugins"},
    "models": {"data", "host_calls", "plugins", "presets"},
    "methods": {"data", "faults", "models", "plugins", "predictors", "presets"},
    "evaluate": {"config", "data", "faults", "host_calls", "plugins", "predictors"},
    "train": {"config", "data", "files", "methods", "models", "plugins", "predictors", "presets"},
    "selection": {"config", "data", "evaluate", "faults", "methods", "models", "plugins", "predictors",
                  "train"},
}
MAX_FUNCTION_LINES = 60


def _layer(path: Path) -> str:
    relative = path.relative_to(PACKAGE)
    return relative.parts[0].removesuffix(".py")


def _imported_layers(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("sfbench_jax."):
            names.add(node.module.split(".")[1])
        elif isinstance(node, ast.Import):
            names.update(alias.name.split(".")[1] for alias in node.names if alias.name.startswith("sfbench_jax."))
    return names


@pytest.mark.parametrize("layer", sorted(ALLOWED_IMPORTS))
def test_imports_point_downwards(layer: str) -> None:
    files = [PACKAGE / f"{layer}.py"] if (PACKAGE / f"{layer}.py").is_file() else sorted(
        (PACKAGE / layer).rglob("*.py"))
    assert files
    for path in files:
        upward = _imported_layers(path) - ALLOWED_IMPORTS[layer] - {layer}
        assert not upward, f"{path.relative_to(PACKAGE)} imports {sorted(upward)} (layer {layer!r} may import " \
                           f"{sorted(ALLOWED_IMPORTS[layer])})"


def _long_functions(path: Path) -> list[str]:
    tree = ast.parse(path.read_text())
    return [f"{path.name}:{node.lineno} {node.name} ({node.end_lineno - node.lineno + 1} lines)"
            for node in ast.walk(tree) if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
            and node.end_lineno - node.lineno + 1 > MAX_FUNCTION_LINES]


def test_engine_and_pipeline_functions_are_short() -> None:
    files = [*sorted((PACKAGE / "evaluate").glob("*.py")), PACKAGE / "pipeline.py", PACKAGE / "selection.py"]
    long = [entry for path in files for entry in _long_functions(path)]
    assert not long, f"functions over {MAX_FUNCTION_LINES} lines: {long}"


def test_model_registry_has_no_special_cases() -> None:
    source = (PACKAGE / "models" / "registry.py").read_text()
    assert "seasonal_naive\"" not in source.split("MODELS: dict")[1].split("}\n")[1], \
        "registry functions special-case a model by name"
    assert "name ==" not in source
