"""The layering docs/architecture.md describes: imports between redmem's packages only point down,
and no modules import each other in a circle.

Read from the source with :mod:`ast`, so a new module that imports upward (or defers an import
of redmem inside a function to hide a cycle) fails here, not in review. Every import counts:
those under ``if TYPE_CHECKING:`` (a circle closed only for the type checker is still a
circle) and ``importlib.import_module`` of a module named by a string constant (the lazy public
face in ``redmem/__init__.py``, the CLI's subcommands). ``benchmarks/architecture.py`` counts
the circles with :func:`import_graph` and :func:`circles` of this module.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "src" / "redmem"

#: Each top-level package or module of redmem and its layer; a module may import from layers
#: below its own, and from its own package. Packages on one layer do not import each other.
LAYERS = {
    "public": -1,
    "store": 0, "tiktoken_ranks": 0,
    "model": 1, "text": 1, "embeddings": 1,
    "fields": 2,
    "observation": 3,
    "context": 4,
    "recipes": 5,
    "lifecycle": 4,
    "integrations": 6, "testing": 6,
    "cli_commands": 7,
    "demo": 8, "ui": 8,
    "cli": 9,
    "__init__": 10,
}
#: Data, not code: any layer may read it.
DATA = {"samples", "lua"}


def _modules() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*.py") if "__pycache__" not in p.parts)


def _layer_name(part: str) -> str:
    """A top-level name without the ``_`` that makes a module private (``_demo`` is the ``demo`` layer)."""
    return part if part.startswith("__") else part.removeprefix("_")


def _owner(path: Path) -> str:
    """The top-level package (or module) of redmem that ``path`` belongs to."""
    parts = path.relative_to(PACKAGE).parts
    return _layer_name(parts[0] if len(parts) > 1 else path.stem)


def _targets(path: Path, node: ast.ImportFrom) -> list[str]:
    """The top-level redmem packages a relative ``from`` import names."""
    parts = path.relative_to(PACKAGE).parts
    base = list(parts[:-1])[: len(parts) - node.level]  # the package the dots climb to
    module = [*base, *(node.module.split(".") if node.module else [])]
    if module:
        return [_layer_name(module[0])]
    return [_layer_name(alias.name) for alias in node.names]  # `from . import x` at the top: x is a package or module


def _imports(path: Path) -> list[tuple[str, int]]:
    """(top-level redmem package, line) of every redmem import of ``path``, ``importlib`` ones included."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.level:
            found += [(target, node.lineno) for target in _targets(path, node)]
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "redmem":
            parts = node.module.split(".")
            found.append((_layer_name(parts[1]) if len(parts) > 1 else "__init__", node.lineno))
    package = PACKAGE.parent
    found += [(_layer_name(edge.target.split(".")[1]) if "." in edge.target else "__init__", edge.line)
              for edge in _edges(_module_name(path, package), path, _module_names(package)) if edge.kind == "importlib"]
    return found


@dataclass(frozen=True)
class Edge:
    """One import of a redmem module: ``kind`` is ``runtime``, ``annotation`` (under
    ``if TYPE_CHECKING:``) or ``importlib`` (a module named by a string constant of a module that
    calls ``importlib.import_module``)."""

    target: str
    kind: str
    line: int


def _module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _module_names(root: Path) -> dict[str, Path]:
    """Every module of the package under ``root`` (its parent folder), by dotted name."""
    return {_module_name(p, root): p for p in sorted((root / "redmem").rglob("*.py")) if "__pycache__" not in p.parts}


def _guarded(tree: ast.Module) -> set[int]:
    """The ids of the nodes under an ``if TYPE_CHECKING:``."""
    return {id(inner) for node in ast.walk(tree) if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)
            for statement in node.body for inner in ast.walk(statement)}


def _from_targets(package: str, node: ast.ImportFrom, modules: dict[str, Path]) -> Iterator[str]:
    """The modules a ``from`` import names: the module, unless every name is one of its submodules."""
    base = node.module or ""
    if node.level:
        parts = package.split(".")
        base = ".".join([*parts[: len(parts) - node.level + 1], *([node.module] if node.module else [])])
    submodules = [f"{base}.{alias.name}" for alias in node.names if f"{base}.{alias.name}" in modules]
    if base in modules and len(submodules) < len(node.names):
        yield base
    yield from submodules


def _edges(name: str, path: Path, modules: dict[str, Path]) -> list[Edge]:
    """Every import of a redmem module by module ``name`` (at ``path``)."""
    tree = ast.parse(path.read_text())
    guarded = _guarded(tree)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    dynamic = any(isinstance(n, ast.Attribute) and n.attr == "import_module" for n in ast.walk(tree))
    edges = []
    for node in ast.walk(tree):
        kind = "annotation" if id(node) in guarded else "runtime"
        if isinstance(node, ast.ImportFrom):
            edges += [Edge(t, kind, node.lineno) for t in _from_targets(package, node, modules)]
        elif isinstance(node, ast.Import):
            edges += [Edge(a.name, kind, node.lineno) for a in node.names if a.name in modules]
        elif dynamic and isinstance(node, ast.Constant) and isinstance(node.value, str):
            text = node.value
            target = package + text if text.startswith(".") and not text.startswith("..") else text
            if target.startswith("redmem.") and target in modules and target != name:
                edges.append(Edge(target, "importlib", node.lineno))
    return edges


def import_graph(root: Path) -> dict[str, list[Edge]]:
    """Each module of the ``redmem`` package under ``root`` and the redmem modules it imports."""
    modules = _module_names(root)
    return {name: [e for e in _edges(name, path, modules) if e.target != name] for name, path in modules.items()}


def circles(graph: dict[str, list[Edge]]) -> list[list[str]]:
    """The import circles of ``graph``: its strongly connected components of more than one
    module, each sorted (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        for edge in graph.get(module, ()):
            if edge.target not in index:
                visit(edge.target)
                low[module] = min(low[module], low[edge.target])
            elif edge.target in stack:
                low[module] = min(low[module], index[edge.target])
        if low[module] == index[module]:
            component = stack[stack.index(module):]
            del stack[stack.index(module):]
            if len(component) > 1:
                found.append(sorted(component))

    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 10 * len(graph)))
    try:
        for module in graph:
            if module not in index:
                visit(module)
    finally:
        sys.setrecursionlimit(limit)
    return sorted(found)


def test_every_package_has_a_layer() -> None:
    owners = {_owner(p) for p in _modules()} - DATA
    assert owners <= set(LAYERS), f"give {sorted(owners - set(LAYERS))} a layer here and in docs/architecture.md"


@pytest.mark.parametrize("path", _modules(), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_imports_point_down(path: Path) -> None:
    owner = _owner(path)
    if owner in DATA:
        return
    upward = [
        f"line {line}: {owner} (layer {LAYERS[owner]}) imports {target} (layer {LAYERS[target]})"
        for target, line in _imports(path)
        if target not in DATA and target != owner and target in LAYERS and LAYERS[target] >= LAYERS[owner]
    ]
    assert not upward, "\n".join(upward)


@pytest.mark.parametrize("path", _modules(), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_no_deferred_import_of_redmem(path: Path) -> None:
    """An import of redmem inside a function hides a cycle; only optional third-party packages
    (openai, onnxruntime, ...) are imported where they are used."""
    deferred = [
        f"line {inner.lineno} in {node.name}()"
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
        for inner in ast.walk(node)
        if isinstance(inner, ast.ImportFrom) and (inner.level or (inner.module or "").startswith("redmem"))
    ]
    assert not deferred, ", ".join(deferred)


def test_the_layer_check_sees_an_upward_import(tmp_path: Path) -> None:
    """The check itself: a fields module importing a recipe is reported."""
    module = PACKAGE / "fields" / "_bm25.py"
    node = ast.parse("from ..recipes.context_assembler import ContextAssembler").body[0]
    assert isinstance(node, ast.ImportFrom)
    assert _targets(module, node) == ["recipes"]
    assert LAYERS["recipes"] > LAYERS[_owner(module)]


def test_the_asyncio_bridge_is_one_store_module_that_only_the_store_layer_owns() -> None:
    """The asyncio API adds one module, in the store layer, importing nothing of redmem above it;
    every layer reaches it, none copies it (no second ``greenlet`` user)."""
    module = PACKAGE / "store" / "_aio.py"
    assert _owner(module) == "store"
    assert {target for target, _ in _imports(module)} <= {"store"}
    users = [p for p in _modules()
             if any((isinstance(n, ast.Import) and any(a.name == "greenlet" for a in n.names))
                    or (isinstance(n, ast.ImportFrom) and n.module == "greenlet") for n in ast.walk(ast.parse(p.read_text())))]
    assert users == [module]


def test_no_import_circles_not_even_for_the_type_checker() -> None:
    """No modules import each other in a circle, counting ``TYPE_CHECKING`` and ``importlib``
    imports: a circle closed only for the type checker means the layering is wrong (a protocol,
    like ``model.model_class.ModelClass``, cuts it)."""
    graph = import_graph(PACKAGE.parent)
    found = circles(graph)
    assert not found, "\n".join(
        " -> ".join(f"{m} ({', '.join(sorted({e.kind for e in graph[m] if e.target in c}))})" for m in c) for c in found)


def test_the_circle_check_sees_annotation_and_importlib_imports(tmp_path: Path) -> None:
    """The check itself: a circle closed by a ``TYPE_CHECKING`` import, and one closed by
    ``importlib.import_module`` of a string, are both reported."""
    package = tmp_path / "redmem"
    (package / "sub").mkdir(parents=True)
    (package / "__init__.py").write_text("import importlib\nHOMES = {'A': '.sub.a'}\n"
                                         "def load(n):\n    return importlib.import_module(HOMES[n], __name__)\n")
    (package / "sub" / "__init__.py").write_text("")
    (package / "sub" / "a.py").write_text("from .b import B\n")
    (package / "sub" / "b.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .a import A\nB = 1\n")
    (package / "sub" / "c.py").write_text("import redmem\n")
    graph = import_graph(tmp_path)
    assert {e.kind for e in graph["redmem.sub.b"]} == {"annotation"}
    assert Edge("redmem.sub.a", "importlib", 2) in graph["redmem"]
    assert circles(graph) == [["redmem.sub.a", "redmem.sub.b"]]
    (package / "sub" / "a.py").write_text("import redmem\n")
    assert circles(import_graph(tmp_path)) == [["redmem", "redmem.sub.a"]]


def test_every_error_class_is_defined_in_the_errors_module_and_drawn_in_its_tree() -> None:
    """One exception tree: a class deriving from one of ``store/_errors.py``'s errors is defined
    there (other modules import it), and the tree at the top of that module names every class."""
    from redmem.store import _errors as errors

    names = set(errors.__all__)
    elsewhere = [
        f"{path.relative_to(PACKAGE)}:{node.lineno} {node.name}"
        for path in _modules() if path != PACKAGE / "store" / "_errors.py"
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.ClassDef) and any(isinstance(b, ast.Name) and b.id in names for b in node.bases)
    ]
    assert not elsewhere, elsewhere
    tree = (errors.__doc__ or "").split("::")[1]
    assert {name for name in names if f" {name}" not in tree} == set()


#: The modules that are neither a package face (``__init__``) nor private (a ``_``-prefixed name),
#: and why a reader imports each by its path. Every other module is implementation: renamed
#: ``_name.py`` (``/work/privatize.py`` of issue 33 did it and redoes it after a merge), its names
#: reached through its package's face. The old-path modules of ``redmem.recipes`` (one ``from X
#: import *`` and ``__all__`` each, :func:`_is_old_path`) stay public too: the docs gave those paths.
PUBLIC_MODULES = {
    "redmem.cli": "the `redmem` command pyproject.toml names",
    "redmem.fields.search_protocol": "extension contract: the search protocol a new searchable field implements",
    "redmem.model.query_methods": "extension contract: the query methods a field's search registers",
    "redmem.testing": "the pytest plugin pyproject.toml names (docs/testing.md)",
    "redmem.integrations.openai_agents": "needs the `agents` extra, so its face does not import it",
    "redmem.integrations.langgraph_store": "needs the `langgraph` extra, so its face does not import it",
    "redmem.cli_commands.mcp_server": "needs the `mcp` extra; docs/mcp.md embeds the server with build_server",
}


def _is_old_path(path: Path) -> bool:
    """A module that only re-exports the one that replaced it: a docstring, ``from X import *`` and
    ``from X import __all__``."""
    body = ast.parse(path.read_text()).body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]
    names = sorted([alias.name for alias in node.names] for node in body if isinstance(node, ast.ImportFrom))
    return len(body) == 2 and names == [["*"], ["__all__"]]


def public_modules(root: Path) -> list[str]:
    """The modules of the ``redmem`` package under ``root`` that are neither a face nor private."""
    return sorted(name for name, path in _module_names(root).items() if path.name != "__init__.py"
                  and not any(_layer_name(part) != part for part in name.split(".")))


def test_every_module_but_the_faces_the_old_paths_and_the_listed_ones_is_private() -> None:
    public = [name for name in public_modules(PACKAGE.parent)
              if name not in PUBLIC_MODULES and not _is_old_path(_module_names(PACKAGE.parent)[name])]
    assert public == [], f"rename each to _name.py (run /work/privatize.py) or list it in PUBLIC_MODULES: {public}"
    assert set(PUBLIC_MODULES) <= set(public_modules(PACKAGE.parent))


def test_a_private_module_keeps_its_layer() -> None:
    """``_demo.py`` is the ``demo`` layer, and an import of ``redmem._tiktoken_ranks`` one of ``tiktoken_ranks``."""
    assert _owner(PACKAGE / "_demo.py") == "demo" and _owner(PACKAGE / "fields" / "_bm25.py") == "fields"
    node = ast.parse("from .._tiktoken_ranks import seed_quietly").body[0]
    assert isinstance(node, ast.ImportFrom)
    assert _targets(PACKAGE / "context" / "_tokens.py", node) == ["tiktoken_ranks"]
