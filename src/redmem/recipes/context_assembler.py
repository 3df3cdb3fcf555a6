"""Moved to :mod:`redmem.recipes.assembler._context_assembler`; this path, which the docs gave before each recipe had its
folder, keeps working: it re-exports that module's public names."""

from .assembler._context_assembler import *  # noqa: F403
from .assembler._context_assembler import __all__  # noqa: F401
