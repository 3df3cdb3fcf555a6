"""Moved to :mod:`redmem.recipes.assembler._conversation`; this path, which the docs gave before each recipe had its
folder, keeps working: it re-exports that module's public names."""

from .assembler._conversation import *  # noqa: F403
from .assembler._conversation import __all__  # noqa: F401
