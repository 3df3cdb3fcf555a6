"""Moved to :mod:`redmem.recipes.policy._stats`; this path, which the docs gave before each recipe had its
folder, keeps working: it re-exports that module's public names."""

from .policy._stats import *  # noqa: F403
from .policy._stats import __all__  # noqa: F401
