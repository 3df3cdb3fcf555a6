"""Exported names report their public module, as httpx's do: ``redmem.fields.BM25Field.__module__``
is ``"redmem.fields"``, not ``"redmem.fields._bm25"``, the implementation module a reader should not
import (reprs, tracebacks' class names, pickles and documentation then name the face).

Each package face calls :func:`publish` on its ``__all__`` as its last statement. Only a class or
function defined in a private module (one with a ``_``-prefixed part) of the face's own package is
renamed, and a name keeps the first face that publishes it: an inner face finishes importing before
its parent's (``redmem.recipes.assembler`` before ``redmem.recipes``), so a name reports the innermost
face that exports it.

``typing.get_type_hints(cls)`` evaluates a class's string annotations (``from __future__ import
annotations``) in ``sys.modules[cls.__module__]``; once that is the face, a name the implementation
module imports for an annotation only is not found there. So a class's own annotations are evaluated
in its home module first, while ``__module__`` still names it, and stored evaluated; a class whose
annotations do not resolve at home (a ``TYPE_CHECKING``-only name) keeps its strings. A function
resolves its annotations in ``__globals__``, which ``__module__`` does not change.
"""

from __future__ import annotations

import inspect
import sys
import typing
from collections.abc import Iterable

__all__ = ["publish", "is_private"]


def is_private(module: str) -> bool:
    """Whether a dotted module path has a ``_``-prefixed part (a dunder name such as ``__main__`` is none)."""
    return any(part.startswith("_") and not part.startswith("__") for part in module.split("."))


def _resolve_annotations(cls: type) -> None:
    """Store ``cls``'s own annotations evaluated in its home module (left as they are when one does not resolve)."""
    own = inspect.get_annotations(cls)
    if not own:
        return
    try:
        hints = typing.get_type_hints(cls, include_extras=True)
    except (NameError, TypeError, AttributeError):
        return
    cls.__annotations__ = {name: hints.get(name, value) for name, value in own.items()}


def publish(face: str, names: Iterable[str]) -> None:
    """Make each class and function of ``names`` (attributes of module ``face``) defined in a private
    module of the package ``face`` report ``face`` as its ``__module__``."""
    namespace = vars(sys.modules[face])
    for name in names:
        obj = namespace.get(name)
        if not (inspect.isclass(obj) or inspect.isfunction(obj)):
            continue
        home = obj.__module__
        if not (home.startswith(f"{face}.") and is_private(home)):
            continue
        if inspect.isclass(obj):
            _resolve_annotations(obj)
        obj.__module__ = face
