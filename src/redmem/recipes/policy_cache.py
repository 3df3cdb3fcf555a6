"""Moved to :mod:`redmem.recipes.policy._cache`; this path, which the docs gave before each recipe had its
folder, keeps working: it re-exports that module's public names."""

from .policy._cache import *  # noqa: F403
from .policy._cache import __all__  # noqa: F401
