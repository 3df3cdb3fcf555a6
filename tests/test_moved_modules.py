"""The module paths the docs gave before each recipe got its folder still import, as the module
that holds their code now (``redmem/recipes/_moved.py``)."""

from __future__ import annotations

import importlib
import importlib.util
import subprocess
import sys

import pytest

from redmem.recipes._moved import MOVED


@pytest.mark.parametrize("old", sorted(MOVED))
def test_a_documented_old_path_imports_the_moved_module(old: str) -> None:
    assert importlib.import_module(old) is importlib.import_module(MOVED[old])


def test_an_old_path_works_as_the_first_import_of_a_fresh_process() -> None:
    code = ("from redmem.recipes.default_memory import DefaultMemory; "
            "from redmem.recipes.policy_cache import PolicyCache; "
            "print(DefaultMemory.__module__, PolicyCache.__module__)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["redmem.recipes.assembler.models", "redmem.recipes.policy.cache"]


def test_every_moved_target_is_a_module_of_a_recipe_folder() -> None:
    for new in MOVED.values():
        assert new.split(".")[2] in {"assembler", "policy"}
        assert importlib.util.find_spec(new) is not None
