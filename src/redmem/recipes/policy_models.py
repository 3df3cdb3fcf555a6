"""Moved to :mod:`redmem.recipes.policy._models`; this path, which the docs gave before each recipe had its
folder, keeps working: it re-exports that module's public names."""

from .policy._models import *  # noqa: F403
from .policy._models import __all__  # noqa: F401
