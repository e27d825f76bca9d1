"""The structure docs/architecture.md describes, checked on the source: imports point downwards, the
configuration imports no engine code, the engine's functions stay short, plug-ins have no special cases."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "sfbench_jax"

#: Each layer (a package, or a module at the package root) may import only itself and the layers listed: only
#: lower ones, transitively lower ones listed too, so the table is the layer order (docs/architecture.md writes it
#: out) and no layer is partly above another. The agent side is the exception: `mcp/` and `agent_eval/` reach the
#: benchmark only through its door, `api/` (which re-exports what they need).
_ENGINE = {"config", "data", "evaluate", "faults", "methods", "models", "plugins", "predictors", "storage", "train"}
ALLOWED_IMPORTS = {
    "__init__": {"api"},  # the package's root: `import sfbench_jax as sfb` reaches the front door's names lazily
    "plugins": set(),
    "predictors": set(),
    "storage": set(),
    "data": {"plugins", "storage"},
    "faults": {"data", "plugins"},
    "config": {"data", "faults", "plugins"},
    "models": {"data", "plugins", "predictors"},
    "methods": {"data", "faults", "models", "plugins", "predictors"},
    "evaluate": {"config", "data", "faults", "plugins", "predictors"},
    "train": {"config", "data", "methods", "models", "plugins", "predictors", "storage"},
    "run_folder": {"config", "data", "evaluate", "faults", "plugins", "predictors", "storage"},
    "pipeline": _ENGINE | {"run_folder"},
    "report": _ENGINE | {"pipeline", "run_folder"},
    "api": _ENGINE | {"pipeline", "report", "run_folder"},
    "mcp": {"api"},  # the agent side meets the benchmark at one door (and imports phm_kernels)
    "agent_eval": {"api", "mcp"},
    "cli": _ENGINE | {"agent_eval", "api", "mcp", "pipeline", "report", "run_folder"},
}
KERNELS = Path(__file__).resolve().parents[1] / "kernels"
MAX_FUNCTION_LINES = 60


def _layer(path: Path) -> str:
    relative = path.relative_to(PACKAGE)
    return relative.parts[0].removesuffix(".py")


def _imported_layers(path: Path) -> set[str]:
    """The `sfbench_jax` modules a file imports, as `layer` (a top-level module) or `layer.module`."""
    tree = ast.parse(path.read_text())
    modules = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            modules.add(node.module)
        elif isinstance(node, ast.Import):
            modules.update(alias.name for alias in node.names)
    return {".".join(module.split(".")[1:3]) for module in modules if module.startswith("sfbench_jax.")}


def _layer_files(layer: str) -> list[Path]:
    return [PACKAGE / f"{layer}.py"] if (PACKAGE / f"{layer}.py").is_file() else sorted(
        (PACKAGE / layer).rglob("*.py"))


def _layer_order() -> list[str]:
    """The layers bottom-up (each after every layer it may import), or an AssertionError naming a cycle."""
    order: list[str] = []
    remaining = {layer: set(allowed) - {layer} for layer, allowed in ALLOWED_IMPORTS.items()}
    while remaining:
        ready = sorted(layer for layer, allowed in remaining.items() if allowed <= set(order))
        assert ready, f"ALLOWED_IMPORTS has a cycle among {sorted(remaining)}: no layer imports only layers below it"
        order += ready
        for layer in ready:
            del remaining[layer]
    return order


def test_allowed_imports_name_layers_and_form_no_cycle() -> None:
    """Every entry names a whole layer (no `package.module` exception) and the table orders the layers."""
    named = {name for allowed in ALLOWED_IMPORTS.values() for name in allowed}
    assert named <= set(ALLOWED_IMPORTS), f"ALLOWED_IMPORTS names {sorted(named - set(ALLOWED_IMPORTS))}, which " \
                                         "are not layers: a layer imports whole layers below it, never one module"
    _layer_order()


def test_imports_form_no_cycle_between_layers() -> None:
    """The imports the code really has, layer to layer, order the layers too (a cycle is named)."""
    imports = {layer: {name.split(".")[0] for path in _layer_files(layer) for name in _imported_layers(path)}
               - {layer} for layer in ALLOWED_IMPORTS if _layer_files(layer)}
    order: list[str] = []
    while imports:
        ready = sorted(layer for layer, used in imports.items() if used <= set(order))
        assert ready, f"the imports between {sorted(imports)} form a cycle: " + "; ".join(
            f"{layer} imports {sorted(used - set(order))}" for layer, used in sorted(imports.items()))
        order += ready
        for layer in ready:
            del imports[layer]


ARCHITECTURE_DOC = PACKAGE.parent / "docs" / "architecture.md"
#: A row of the doc's layer table: `| 3 | `methods/` | ...` or `| 3 | `config.py` | ...`.
_DOC_ROW = re.compile(r"^\| (\d+) \| `([a-z_]+)(?:/|\.py)` \|(.*)$", re.MULTILINE)


def _layer_numbers() -> dict[str, int]:
    """Each layer's number: the longest chain of allowed imports below it (0: it imports no other layer)."""
    numbers: dict[str, int] = {}
    for layer in _layer_order():
        below = ALLOWED_IMPORTS[layer] - {layer}
        numbers[layer] = 1 + max(numbers[name] for name in below) if below else 0
    return numbers


def test_architecture_doc_lists_every_layer_at_its_number_with_its_modules() -> None:
    """docs/architecture.md's layer table is this table: each layer at its number, each module of it named."""
    rows = {name: (int(number), text) for number, name, text in _DOC_ROW.findall(ARCHITECTURE_DOC.read_text())}
    expected = {layer: number for layer, number in _layer_numbers().items() if layer != "__init__"}
    assert {name: number for name, (number, _) in rows.items()} == expected, (
        "docs/architecture.md's layer table differs from ALLOWED_IMPORTS (layer: number): write the table from it")
    for layer in expected:
        if (PACKAGE / f"{layer}.py").is_file():
            continue
        modules = sorted(path.relative_to(PACKAGE / layer).as_posix() for path in (PACKAGE / layer).rglob("*.py")
                         if path.name != "__init__.py")
        missing = [module for module in modules if f"`{module}`" not in rows[layer][1]]
        assert not missing, f"docs/architecture.md's row of {layer}/ does not name {missing}"


def test_every_layer_has_its_allowed_imports() -> None:
    layers = {_layer(path) for path in PACKAGE.rglob("*.py")}
    assert layers == set(ALLOWED_IMPORTS), (
        f"tests/test_architecture.py ALLOWED_IMPORTS lacks {sorted(layers - set(ALLOWED_IMPORTS))} and names "
        f"{sorted(set(ALLOWED_IMPORTS) - layers)} that do not exist; give a new package its row (and "
        "docs/architecture.md its line)")


@pytest.mark.parametrize("layer", sorted(ALLOWED_IMPORTS))
def test_imports_point_downwards(layer: str) -> None:
    files = _layer_files(layer)
    assert files
    allowed = ALLOWED_IMPORTS[layer] | {layer}
    for path in files:
        upward = {name for name in _imported_layers(path) if name.split(".")[0] not in allowed}
        assert not upward, f"{path.relative_to(PACKAGE)} imports {sorted(upward)} (layer {layer!r} may import " \
                           f"{sorted(ALLOWED_IMPORTS[layer])})"


def test_kernels_import_nothing_from_the_package() -> None:
    for path in sorted(KERNELS.rglob("*.py")):
        imported = _imported_layers(path)
        assert not imported, f"{path.relative_to(KERNELS.parent)} imports sfbench_jax.{sorted(imported)[0]}: " \
                             "phm_kernels stands alone (the MCP tools call it, never the other way round)"


def _long_functions(path: Path) -> list[str]:
    tree = ast.parse(path.read_text())
    return [f"{path.relative_to(PACKAGE.parent)}:{node.lineno} {node.name} ({node.end_lineno - node.lineno + 1} "
            "lines)" for node in ast.walk(tree) if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
            and node.end_lineno - node.lineno + 1 > MAX_FUNCTION_LINES]


def test_every_function_is_short() -> None:
    """The whole package and the PHM kernels: no function (nested ones counted within theirs) over 60 lines."""
    files = [*sorted(PACKAGE.rglob("*.py")), *sorted(KERNELS.rglob("*.py"))]
    long = [entry for path in files for entry in _long_functions(path)]
    assert not long, f"functions over {MAX_FUNCTION_LINES} lines (split them): {long}"


def test_model_registry_has_no_special_cases() -> None:
    source = (PACKAGE / "models" / "registry.py").read_text()
    assert "seasonal_naive\"" not in source.split("MODELS: dict")[1].split("}\n")[1], \
        "registry functions special-case a model by name"
    assert "name ==" not in source


#: Where a plug-in's name may be compared against: the modules that define the built-in specs.
PLUGIN_OWN_MODULES = {"models": ("models/registry.py",), "methods": ("methods/",)}
#: Names that are the protocol's, not plug-ins': "baseline" is the reference method every delta is taken against.
PROTOCOL_NAMES = {"baseline"}
def _name_branches(path: Path, names: set[str]) -> list[tuple[int, str]]:
    """`(line, name)` of each comparison of a value against a plug-in name (`== "ensemble"`, `in ("dlinear", ...)`)."""
    branches = []
    for node in ast.walk(ast.parse(path.read_text())):
        if not isinstance(node, ast.Compare):
            continue
        constants = []
        for part in (node.left, *node.comparators):
            elements = part.elts if isinstance(part, ast.Tuple | ast.List | ast.Set) else [part]
            constants += [e.value for e in elements if isinstance(e, ast.Constant) and isinstance(e.value, str)]
        branches += [(node.lineno, name) for name in sorted(set(constants) & names)]
    return branches


def test_no_plugin_name_is_a_branch_outside_its_own_module() -> None:
    from sfbench_jax.methods import METHODS
    from sfbench_jax.models.registry import MODELS

    kinds = {"models": set(MODELS) - PROTOCOL_NAMES, "methods": set(METHODS) - PROTOCOL_NAMES}
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        relative = path.relative_to(PACKAGE).as_posix()
        for kind, names in kinds.items():
            own = [*PLUGIN_OWN_MODULES[kind], *(f"{kind}/{name}.py" for name in names)]
            if any(relative == module or (module.endswith("/") and relative.startswith(module)) for module in own):
                continue
            found += [f"{relative}:{line} compares against {kind[:-1]} {name!r}" for line, name
                      in _name_branches(path, names)]
    assert not found, ("a plug-in's name used as a branch outside its own module (put the fact in its spec: "
                       "models/spec.py, methods/spec.py; the protocol's anchor model is config.ANCHOR_MODEL): "
                       f"{found}")


def _type_checking_imports(path: Path) -> dict[str, str]:
    """`name -> submodule` of the `from sfbench_jax.api.<submodule> import name` lines under `if TYPE_CHECKING:`."""
    names = {}
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            for item in node.body:
                if isinstance(item, ast.ImportFrom) and item.module and item.module.startswith("sfbench_jax.api."):
                    names.update({alias.name: item.module.rsplit(".", 1)[1] for alias in item.names})
    return names


def test_the_door_names_each_export_once_and_the_type_checker_sees_it() -> None:
    """`sfbench_jax.api`'s table, its `__all__` and its `TYPE_CHECKING` imports list the same names from the same
    submodules, and each name resolves to the object its submodule holds."""
    import importlib

    import sfbench_jax.api as api

    table = api._EXPORTS
    assert sorted(api.__all__) == sorted(table), "sfbench_jax.api: __all__ and _EXPORTS differ"
    assert _type_checking_imports(PACKAGE / "api" / "__init__.py") == table, (
        "sfbench_jax.api: the TYPE_CHECKING imports and _EXPORTS differ (mypy reads the former, Python the latter)")
    for name, submodule in table.items():
        assert getattr(api, name) is getattr(importlib.import_module(f"sfbench_jax.api.{submodule}"), name)


def test_the_door_and_the_mcp_server_start_light() -> None:
    """Importing the door (and its light submodule) imports neither JAX nor the pipeline; starting the MCP server
    imports no pipeline either (JAX it gets from phm_kernels)."""
    import subprocess
    import sys

    probe = ("import sys, sfbench_jax.api, sfbench_jax.api.files; heavy = [m for m in ('jax', 'sfbench_jax.pipeline') "
             "if m in sys.modules]; import sfbench_jax.mcp.server; "
             "heavy += [m for m in ('sfbench_jax.pipeline', 'sfbench_jax.api.views') if m in sys.modules]; "
             "print(heavy)")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]", f"the door or the server's start imports {out.strip()}"
