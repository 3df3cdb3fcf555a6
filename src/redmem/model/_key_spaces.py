"""One model, one key space: a model class claims ``<prefix>:<name>`` by its class name when it is created.

Two model classes with the same class name and the same ``Meta.key_prefix`` (or none: both use
the configured prefix) would write and read the same keys, each seeing the other's records
through its own fields. So a class whose key space a live class of another module or qualified
name holds raises ModelException naming both and the ``Meta`` options that separate them.

Sharing on purpose stays possible: redefining a class (the same module and qualified name: a
reloaded module, a notebook cell run again) takes its key space over, and a class whose
``Meta.name`` names the model (a new version of a model over its stored records) claims nothing.
"""

from __future__ import annotations

import gc
import threading
from weakref import WeakValueDictionary

from ..store._errors import ModelException

__all__ = ["claim_key_space"]

_lock = threading.Lock()
#: The live model class named after its class of each key space, by (Meta.key_prefix or None, name).
_claims: WeakValueDictionary[tuple[str | None, str], type] = WeakValueDictionary()


def claim_key_space(model: type, key_prefix: str | None) -> None:
    """Record ``model`` as the class of the key space its class name gives it; ModelException when
    another live class holds it (a class that is only garbage, e.g. one a finished function
    defined, is collected first)."""
    space = (key_prefix, model.__name__)
    with _lock:
        if _held_by_another(space, model):
            gc.collect()
            if _held_by_another(space, model):
                raise ModelException(_message(_claims[space], model, space))
        _claims[space] = model


def _held_by_another(space: tuple[str | None, str], model: type) -> bool:
    holder = _claims.get(space)
    return holder is not None and _qualified(holder) != _qualified(model)


def _qualified(model: type) -> str:
    return f"{model.__module__}.{model.__qualname__}"


def _message(holder: type, model: type, space: tuple[str | None, str]) -> str:
    prefix, name = space
    where = f"{prefix}:{name}" if prefix is not None else f"<configured prefix>:{name}"
    return (
        f"{_qualified(model)} and {_qualified(holder)} would share the key space {where}: each would "
        f"read the other's records as its own. Rename one of them, or give it a key space of its own "
        f"in its class Meta: name = \"...\" (the model name in keys) or key_prefix = \"...\""
    )
