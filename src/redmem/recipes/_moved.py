"""The documented import paths of recipe modules that moved into a recipe's folder.

``from redmem.recipes.default_memory import DefaultMemory`` (the path the docs gave before each
recipe got its folder) still works: a finder on ``sys.meta_path`` answers each old module name
with the module that now holds its code, imported when first asked for. Only paths the docs,
README or ``recipes/`` scripts gave are kept; new code imports the new paths.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys
from collections.abc import Sequence
from importlib.machinery import ModuleSpec
from types import ModuleType

__all__ = ["MOVED", "MovedModules"]

#: Old module name -> the module that holds its code now.
MOVED = {
    "redmem.recipes.adaptive": "redmem.recipes.assembler.adaptive",
    "redmem.recipes.context_assembler": "redmem.recipes.assembler.context_assembler",
    "redmem.recipes.quality": "redmem.recipes.assembler.quality",
    "redmem.recipes.default_memory": "redmem.recipes.assembler.models",
    "redmem.recipes.conversation": "redmem.recipes.assembler.conversation",
    "redmem.recipes.conversation_append": "redmem.recipes.assembler.conversation_append",
    "redmem.recipes.subconscious": "redmem.recipes.assembler.subconscious",
    "redmem.recipes.extractors": "redmem.recipes.assembler.extractors",
    "redmem.recipes.policy_cache": "redmem.recipes.policy.cache",
    "redmem.recipes.policy_models": "redmem.recipes.policy.models",
    "redmem.recipes.policy_stats": "redmem.recipes.policy.stats",
}


class MovedModules(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds an old module name of :data:`MOVED` and loads it as the module it moved to."""

    def find_spec(self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None) -> ModuleSpec | None:
        return importlib.util.spec_from_loader(fullname, self) if fullname in MOVED else None

    def create_module(self, spec: ModuleSpec) -> ModuleType:
        return importlib.import_module(MOVED[spec.name])

    def exec_module(self, module: ModuleType) -> None:
        """Nothing to run: the module it moved to ran when it was imported."""


def install() -> None:
    """Put the finder on ``sys.meta_path`` once."""
    if not any(isinstance(finder, MovedModules) for finder in sys.meta_path):
        sys.meta_path.append(MovedModules())
