"""Moved to :mod:`redmem.recipes.policy.stats`; this path, which the docs gave before each recipe had its
folder, keeps working: it re-exports that module's public names."""

from .policy.stats import *  # noqa: F403
from .policy.stats import __all__  # noqa: F401
