"""The module paths the docs gave before each recipe got its folder still import, and give the
very objects of the module that holds their code now (each old module re-exports it)."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

#: Old module path -> the module that holds its code now.
MOVED = {
    "redmem.recipes.adaptive": "redmem.recipes.assembler._adaptive",
    "redmem.recipes.context_assembler": "redmem.recipes.assembler._context_assembler",
    "redmem.recipes.quality": "redmem.recipes.assembler._quality",
    "redmem.recipes.default_memory": "redmem.recipes.assembler._models",
    "redmem.recipes.conversation": "redmem.recipes.assembler._conversation",
    "redmem.recipes.conversation_append": "redmem.recipes.assembler._conversation_append",
    "redmem.recipes.subconscious": "redmem.recipes.assembler._subconscious",
    "redmem.recipes.extractors": "redmem.recipes.assembler._extractors",
    "redmem.recipes.policy_cache": "redmem.recipes.policy._cache",
    "redmem.recipes.policy_models": "redmem.recipes.policy._models",
    "redmem.recipes.policy_stats": "redmem.recipes.policy._stats",
}


@pytest.mark.parametrize("old", sorted(MOVED))
def test_a_documented_old_path_gives_the_moved_modules_public_names(old: str) -> None:
    before, now = importlib.import_module(old), importlib.import_module(MOVED[old])
    assert before.__all__ == now.__all__ and now.__all__
    assert all(getattr(before, name) is getattr(now, name) for name in now.__all__)


def test_an_old_path_works_as_the_first_import_of_a_fresh_process() -> None:
    code = ("from redmem.recipes.default_memory import DefaultMemory; "
            "from redmem.recipes.policy_cache import PolicyCache; "
            "print(DefaultMemory.__module__, PolicyCache.__module__)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["redmem.recipes.assembler", "redmem.recipes.policy"]  # each reports the face that exports it
