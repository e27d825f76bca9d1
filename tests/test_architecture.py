"""The structure docs/architecture.md describes, checked on the source: imports point downwards, the
configuration imports no engine code, the engine's functions stay short, plug-ins have no special cases."""

from __future__ import annotations

import ast
import functools
import re
import shutil
from collections.abc import Collection, Iterable, Mapping
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "sfbench_jax"

#: Each layer (a package, or a module at the package root) may import only itself and the layers listed: only
#: lower ones, transitively lower ones listed too, so the table is the layer order (docs/architecture.md writes it
#: out) and no layer is partly above another. The agent side is the exception: `mcp/` and `agent_eval/` reach the
#: benchmark only through its door, `api/` (which re-exports what they need).
_ENGINE = {"config", "data", "evaluation", "faults", "methods", "models", "plugins", "predictors", "storage",
           "training"}
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
    "evaluation": {"config", "data", "faults", "plugins", "predictors"},
    "training": {"config", "data", "methods", "models", "plugins", "predictors", "storage"},
    "run_folder": {"config", "data", "evaluation", "faults", "plugins", "predictors", "storage"},
    "pipeline": _ENGINE | {"run_folder"},
    "report": _ENGINE | {"pipeline", "run_folder"},
    "api": _ENGINE | {"pipeline", "report", "run_folder"},
    "mcp": {"api"},  # the agent side meets the benchmark at one door (and imports phm_kernels)
    "agent_eval": {"api", "mcp"},
    "cli": _ENGINE | {"agent_eval", "api", "mcp", "pipeline", "report", "run_folder"},
}
KERNELS = Path(__file__).resolve().parents[1] / "kernels"
BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"
MAX_FUNCTION_LINES = 60


def _layer(path: Path, root: Path = PACKAGE) -> str:
    relative = path.relative_to(root)
    return relative.parts[0].removesuffix(".py")


@functools.cache
def package_modules(root: Path = PACKAGE) -> dict[str, Path]:
    """Every module of the package under `root` (its folder) by dotted name; a package by its own name."""
    modules = {}
    for path in sorted(root.rglob("*.py")):
        parts = list(path.relative_to(root.parent).with_suffix("").parts)
        modules[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return modules


@functools.cache
def _tree(path: Path) -> ast.Module:
    """The file's syntax tree (each file is parsed once per test session)."""
    return ast.parse(path.read_text())


def _import_call(node: ast.AST) -> ast.Call | None:
    """`node` when it is a call that imports a module by name (`importlib.import_module(...)`, `import_module(...)`,
    `__import__(...)`, `importlib.__import__(...)`), else None."""
    if not isinstance(node, ast.Call):
        return None
    function = node.func
    name = function.attr if isinstance(function, ast.Attribute) else function.id if isinstance(
        function, ast.Name) else None
    return node if name in {"import_module", "__import__"} else None


def _constant_name(call: ast.Call) -> str | None:
    """The module an import call names with a constant absolute name, else None (a name known only at run time)."""
    first = call.args[0] if call.args else None
    return first.value if isinstance(first, ast.Constant) and isinstance(first.value, str) and not \
        first.value.startswith(".") else None


def _absolute(node: ast.ImportFrom, module: str, is_package: bool) -> str | None:
    """The module a `from ... import` names, a relative one resolved against the importing `module`."""
    if not node.level:
        return node.module
    base = module.split(".")[:len(module.split(".")) - node.level + is_package]
    return ".".join([*base, node.module] if node.module else base) or None


def imported_modules(path: Path, root: Path = PACKAGE, modules: Collection[str] | None = None,
                     nodes: Iterable[ast.AST] | None = None) -> set[str]:
    """The package's modules a file imports, at any depth (function-level and `TYPE_CHECKING` imports count):
    `import a.b`, `from a.b import c` (`a.b.c` when `c` is one of `modules`, else `a.b`), relative imports resolved,
    and import calls with a constant name (`importlib.import_module("a.b")`, `__import__("a.b")`). With `nodes`,
    the imports among those nodes only."""
    package, modules = root.name, package_modules(root) if modules is None else modules
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    is_package = parts[-1] == "__init__"
    module = ".".join(parts[:-1] if is_package else parts)
    names = set()
    for node in ast.walk(_tree(path)) if nodes is None else nodes:
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and (base := _absolute(node, module, is_package)):
            names.update(f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base for alias in node.names)
        elif (call := _import_call(node)) and (name := _constant_name(call)):
            names.add(name)
    return {name for name in names if name == package or name.startswith(f"{package}.")}


def dynamic_imports(path: Path) -> list[int]:
    """The lines of a file's import calls whose module is known only at run time (invisible to this checker)."""
    return [node.lineno for node in ast.walk(_tree(path))
            if (call := _import_call(node)) and _constant_name(call) is None]


def _layer_of(name: str) -> str:
    parts = name.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def _imported_layers(path: Path, root: Path = PACKAGE) -> set[str]:
    """The layers a file imports (its own included)."""
    return {_layer_of(name) for name in imported_modules(path, root)}


def _layer_files(layer: str, root: Path = PACKAGE) -> list[Path]:
    return [root / f"{layer}.py"] if (root / f"{layer}.py").is_file() else sorted((root / layer).rglob("*.py"))


def upward_imports(root: Path = PACKAGE, allowed: Mapping[str, set[str]] = ALLOWED_IMPORTS,
                   only: str | None = None) -> list[str]:
    """Each file under `root` (of the layer `only`, if given) that imports a layer its own may not import
    (`allowed`), with what it imports."""
    found = []
    modules = package_modules(root)
    for path in modules.values():
        layer = _layer(path, root)
        if only is not None and layer != only:
            continue
        may = allowed.get(layer, set()) | {layer}
        upward = sorted(name.removeprefix(f"{root.name}.") for name in imported_modules(path, root, modules)
                        if _layer_of(name) not in may)
        if upward:
            found.append(f"{path.relative_to(root)} imports {upward} (layer {layer!r} may import "
                         f"{sorted(allowed.get(layer, set()))})")
    return found


def import_graph(root: Path = PACKAGE) -> dict[str, set[str]]:
    """Module -> the package's modules it imports (each import at its longest existing module; a package's
    `__init__` counts only where it is imported by name, not for every submodule imported through it)."""
    modules = package_modules(root)

    def existing(name: str) -> str:
        while name not in modules and "." in name:
            name = name.rsplit(".", 1)[0]
        return name

    return {module: {existing(name) for name in imported_modules(path, root, modules)} - {module}
            for module, path in modules.items()}


def import_cycles(root: Path = PACKAGE) -> list[list[str]]:
    """The strongly connected groups of more than one module in `import_graph(root)` (Tarjan), each sorted."""
    graph = import_graph(root)
    index: dict[str, int] = {}
    lowest: dict[str, int] = {}
    stack: list[str] = []
    cycles: list[list[str]] = []

    def visit(module: str) -> None:
        index[module] = lowest[module] = len(index)
        stack.append(module)
        for other in graph.get(module, ()):
            if other not in index:
                visit(other)
                lowest[module] = min(lowest[module], lowest[other])
            elif other in stack:
                lowest[module] = min(lowest[module], index[other])
        if lowest[module] == index[module]:
            group = stack[stack.index(module):]
            del stack[stack.index(module):]
            if len(group) > 1:
                cycles.append(sorted(group))

    for module in sorted(graph):
        if module not in index:
            visit(module)
    return sorted(cycles)


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
    imports = {layer: {name for path in _layer_files(layer) for name in _imported_layers(path)}
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
    """Every import of the layer's files, function-level and `importlib` lookups by constant name included."""
    assert _layer_files(layer)
    upward = upward_imports(only=layer)
    assert not upward, upward


def test_no_import_cycle_between_modules() -> None:
    """The modules' own import graph (function-level imports counted) has no cycle, inside a layer or across."""
    cycles = import_cycles()
    assert not cycles, ("these modules import each other (directly or round a loop; move what both need into a "
                        f"module both import): {cycles}")


#: The modules that import a module named only at run time, and why (this checker cannot see what they import).
DYNAMIC_IMPORTERS = {
    "api/__init__.py": "the door's names on first use, from its `_EXPORTS` table (checked by the door's tests)",
    "models/external.py": "a host model's module, named by the run's config",
    "plugins/entry_points.py": "the built-in specs: every module of a registry's package that binds `SPEC`",
}


def test_modules_are_imported_by_names_the_checker_reads() -> None:
    """An `importlib.import_module(name)` / `__import__(name)` of a name known only at run time hides an import
    from every check here: only the modules listed in DYNAMIC_IMPORTERS may have one."""
    found = [f"{path.relative_to(PACKAGE)}:{line}" for path in package_modules().values()
             for line in dynamic_imports(path) if path.relative_to(PACKAGE).as_posix() not in DYNAMIC_IMPORTERS]
    assert not found, f"imports of a module named at run time (import it by name instead): {found}"
    listed = [name for name in DYNAMIC_IMPORTERS if not dynamic_imports(PACKAGE / name)]
    assert not listed, f"DYNAMIC_IMPORTERS lists modules without such an import (remove them): {listed}"


def test_kernels_import_nothing_from_the_package() -> None:
    for path in sorted(KERNELS.rglob("*.py")):
        imported = sorted(name for name in _imported_names(path) if name.split(".")[0] == PACKAGE.name)
        assert not imported, f"{path.relative_to(KERNELS.parent)} imports {imported[0]}: " \
                             "phm_kernels stands alone (the MCP tools call it, never the other way round)"


def _imported_names(path: Path) -> set[str]:
    """Every module name a file outside the package imports (statements and constant import calls)."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
        elif (call := _import_call(node)) and (name := _constant_name(call)):
            names.add(name)
    return names


def _planted_tree(tmp_path: Path, files: dict[str, str]) -> Path:
    """A copy of some of the package's files under `tmp_path/sfbench_jax` (with their packages' `__init__.py`), each
    with `files[name]` appended: the checker runs on it, never on the real package."""
    root = tmp_path / PACKAGE.name
    for name, planted in files.items():
        target = root / name
        for folder in [*reversed(target.relative_to(root).parents)]:
            (root / folder).mkdir(parents=True, exist_ok=True)
            if not (root / folder / "__init__.py").exists():
                shutil.copyfile(PACKAGE / folder / "__init__.py", root / folder / "__init__.py")
        shutil.copyfile(PACKAGE / name, target)
        target.write_text(target.read_text() + planted)
    return root


_LOOKUPS = {
    "import_module": 'import importlib\n\n\ndef _engine():\n    return importlib.import_module("{}")\n',
    "from_importlib": 'from importlib import import_module\n\nENGINE = import_module("{}")\n',
    "__import__": '\n\ndef _engine():\n    return __import__("{}")\n',
}


@pytest.mark.parametrize("lookup", sorted(_LOOKUPS))
def test_the_checker_sees_a_planted_importlib_lookup_through_the_door(tmp_path: Path, lookup: str) -> None:
    """A copy of mcp/guard.py passes the door; with a planted lookup of the pipeline by constant name it fails."""
    clean = _planted_tree(tmp_path / "clean", {"mcp/guard.py": "", "pipeline/runner.py": ""})
    assert upward_imports(clean) == []
    planted = _planted_tree(tmp_path / "planted", {"mcp/guard.py": _LOOKUPS[lookup].format(
        "sfbench_jax.pipeline.runner"), "pipeline/runner.py": ""})
    assert upward_imports(planted) == [
        "mcp/guard.py imports ['pipeline.runner'] (layer 'mcp' may import ['api'])"]


def test_the_checker_sees_a_lookup_by_a_name_known_at_run_time(tmp_path: Path) -> None:
    root = _planted_tree(tmp_path, {"mcp/guard.py": '\n\ndef _engine(name: str):\n    import importlib\n\n'
                                                    '    return importlib.import_module(f"sfbench_jax.{name}")\n'})
    lines = dynamic_imports(root / "mcp" / "guard.py")
    assert len(lines) == 1 and lines[0] > len((PACKAGE / "mcp" / "guard.py").read_text().splitlines())


def test_the_checker_finds_a_planted_cycle_inside_a_layer(tmp_path: Path) -> None:
    """cli/pages.py imports cli/report_options.py; a function-level import back closes a cycle inside `cli/`."""
    files = {"cli/pages.py": "", "cli/report_options.py": "", "cli/sfbench_report.py": ""}
    assert import_cycles(_planted_tree(tmp_path / "clean", files)) == []
    planted = _planted_tree(tmp_path / "planted", {**files, "cli/report_options.py": (
        "\n\ndef _page_file():\n    from sfbench_jax.cli.pages import html_target\n\n    return html_target(None)\n")})
    assert import_cycles(planted) == [["sfbench_jax.cli.pages", "sfbench_jax.cli.report_options"]]


def _long_functions(path: Path) -> list[str]:
    tree = ast.parse(path.read_text())
    return [f"{path.relative_to(PACKAGE.parent)}:{node.lineno} {node.name} ({node.end_lineno - node.lineno + 1} "
            "lines)" for node in ast.walk(tree) if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
            and node.end_lineno - node.lineno + 1 > MAX_FUNCTION_LINES]


def test_every_function_is_short() -> None:
    """The whole package, the PHM kernels and the benchmarks: no function (nested ones counted within theirs) over
    60 lines."""
    files = [*sorted(PACKAGE.rglob("*.py")), *sorted(KERNELS.rglob("*.py")), *sorted(BENCHMARKS.glob("*.py"))]
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


def _run_at_import(body: list[ast.stmt]) -> list[ast.stmt]:
    """The statements of a module body that run when it is imported: not function bodies, not `if TYPE_CHECKING:`."""
    statements: list[ast.stmt] = []
    for node in body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        statements.append(node)
        if isinstance(node, ast.If) and not (isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING"):
            statements += _run_at_import(node.body) + _run_at_import(node.orelse)
        elif isinstance(node, ast.Try):
            statements += _run_at_import([*node.body, *node.orelse, *node.finalbody,
                                          *(item for handler in node.handlers for item in handler.body)])
        elif isinstance(node, ast.With | ast.ClassDef):
            statements += _run_at_import(node.body)
    return statements


def imported_on_import(start: str, root: Path = PACKAGE) -> set[str]:
    """The package's modules that importing `start` runs: its import statements outside functions and outside
    `if TYPE_CHECKING:`, and theirs, with every package `__init__` on the way."""
    modules = package_modules(root)
    seen: set[str] = set()
    todo = [start]
    while todo:
        module = todo.pop()
        parts = module.split(".")
        for name in (".".join(parts[:end]) for end in range(1, len(parts) + 1)):
            if name in modules and name not in seen:
                seen.add(name)
                todo += imported_modules(modules[name], root, modules, nodes=_run_at_import(_tree(modules[name]).body))
    return seen


def test_the_mcp_server_starts_without_the_pipeline() -> None:
    """Importing the MCP server (and the door) runs no module of the pipeline and not the door's heavy `views`."""
    for start in ("sfbench_jax.mcp.server", "sfbench_jax.api"):
        heavy = sorted(name for name in imported_on_import(start)
                       if name.startswith(("sfbench_jax.pipeline", "sfbench_jax.api.views", "sfbench_jax.training")))
        assert not heavy, f"importing {start} imports {heavy}: import them inside the functions that need them"


def test_the_door_starts_without_jax() -> None:
    """`import sfbench_jax.api` and its light submodule `html_page` import neither JAX nor the pipeline."""
    import subprocess
    import sys

    probe = ("import sys, sfbench_jax.api, sfbench_jax.api.html_page; "
             "print([m for m in ('jax', 'sfbench_jax.pipeline') if m in sys.modules])")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]", f"importing the door imports {out.strip()}"
