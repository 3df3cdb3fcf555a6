"""Moved to :mod:`redmem.recipes.assembler._quality`; this path, which the docs gave before each recipe had its
folder, keeps working: it re-exports that module's public names."""

from .assembler._quality import *  # noqa: F403
from .assembler._quality import __all__  # noqa: F401
