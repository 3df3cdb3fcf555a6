"""The layering docs/architecture.md describes: imports between redmem's packages only point down.

Read from the source with :mod:`ast`, so a new module that imports upward (or defers an import
of redmem inside a function to hide a cycle) fails here, not in review.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "src" / "redmem"

#: Each top-level package or module of redmem and its layer; a module may import from layers
#: below its own, and from its own package. Packages on one layer do not import each other.
LAYERS = {
    "store": 0, "tiktoken_ranks": 0,
    "model": 1, "text": 1, "embeddings": 1,
    "fields": 2,
    "observation": 3,
    "context": 4,
    "recipes": 5,
    "integrations": 6, "testing": 6, "lifecycle": 6,
    "cli_commands": 7,
    "demo": 8, "ui": 8,
    "cli": 9,
    "__init__": 10,
}
#: Data, not code: any layer may read it.
DATA = {"samples", "lua"}


def _modules() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*.py") if "__pycache__" not in p.parts)


def _owner(path: Path) -> str:
    """The top-level package (or module) of redmem that ``path`` belongs to."""
    parts = path.relative_to(PACKAGE).parts
    return parts[0] if len(parts) > 1 else path.stem


def _targets(path: Path, node: ast.ImportFrom) -> list[str]:
    """The top-level redmem packages a relative ``from`` import names."""
    parts = path.relative_to(PACKAGE).parts
    base = list(parts[:-1])[: len(parts) - node.level]  # the package the dots climb to
    module = [*base, *(node.module.split(".") if node.module else [])]
    if module:
        return [module[0]]
    return [alias.name for alias in node.names]  # `from . import x` at the top: x is a package


def _imports(path: Path) -> list[tuple[str, int]]:
    """(top-level redmem package, line) of every redmem import of ``path``."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.level:
            found += [(target, node.lineno) for target in _targets(path, node)]
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "redmem":
            parts = node.module.split(".")
            found.append((parts[1] if len(parts) > 1 else "__init__", node.lineno))
    return found


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
    module = PACKAGE / "fields" / "bm25.py"
    node = ast.parse("from ..recipes.context_assembler import ContextAssembler").body[0]
    assert isinstance(node, ast.ImportFrom)
    assert _targets(module, node) == ["recipes"]
    assert LAYERS["recipes"] > LAYERS[_owner(module)]


def test_the_asyncio_bridge_is_one_store_module_that_only_the_store_layer_owns() -> None:
    """The asyncio API adds one module, in the store layer, importing nothing of redmem above it;
    every layer reaches it, none copies it (no second ``greenlet`` user)."""
    module = PACKAGE / "store" / "aio.py"
    assert _owner(module) == "store"
    assert {target for target, _ in _imports(module)} <= {"store"}
    users = [p for p in _modules()
             if any((isinstance(n, ast.Import) and any(a.name == "greenlet" for a in n.names))
                    or (isinstance(n, ast.ImportFrom) and n.module == "greenlet") for n in ast.walk(ast.parse(p.read_text())))]
    assert users == [module]
