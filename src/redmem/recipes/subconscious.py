"""Moved to :mod:`redmem.recipes.assembler.subconscious`; this path, which the docs gave before each recipe had its
folder, keeps working: it re-exports that module's public names."""

from .assembler.subconscious import *  # noqa: F403
from .assembler.subconscious import __all__  # noqa: F401
