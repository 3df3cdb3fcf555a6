"""Moved to :mod:`redmem.recipes.assembler.conversation_append`; this path, which the docs gave before each recipe had its
folder, keeps working: it re-exports that module's public names."""

from .assembler.conversation_append import *  # noqa: F403
from .assembler.conversation_append import __all__  # noqa: F401
