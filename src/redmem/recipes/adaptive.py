"""Moved to :mod:`redmem.recipes.assembler.adaptive`; this path, which the docs gave before each recipe had its
folder, keeps working: it re-exports that module's public names."""

from .assembler.adaptive import *  # noqa: F403
from .assembler.adaptive import __all__  # noqa: F401
