"""Moved to :mod:`redmem.recipes.policy.models`; this path, which the docs gave before each recipe had its
folder, keeps working: it re-exports that module's public names."""

from .policy.models import *  # noqa: F403
from .policy.models import __all__  # noqa: F401
