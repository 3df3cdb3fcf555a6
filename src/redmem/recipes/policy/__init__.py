"""The policy cache recipe: learned action selection per state (``PolicyCache``), its models, the
statistics it folds events with, and its own keys (``storage.py``)."""

from ..._public import publish
from ._cache import PolicyCache
from ._models import PolicyEntry, PolicyEvent, PolicyRules

__all__ = ["PolicyCache", "PolicyEntry", "PolicyEvent", "PolicyRules"]

publish(__name__, __all__)
