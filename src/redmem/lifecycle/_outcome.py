"""What a lifecycle write did (:class:`Remembered`), and the small steps both of its paths share."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Literal

from ..fields._embedding import EmbeddingField

__all__ = ["Action", "Remembered", "become", "json_list", "embedding_of"]

Action = Literal["created", "merged", "superseded"]


@dataclass(frozen=True)
class Remembered:
    """What :func:`~redmem.lifecycle.remember` did: ``record`` is the stored record (the existing
    one on a merge), ``older`` the record it superseded (None unless ``action`` is "superseded")."""

    action: Action
    record: Any
    older: Any = None


def become(instance: Any, stored: Any) -> None:
    """Make ``instance`` the stored record it merged into (its key, its values)."""
    for field in type(stored)._meta.stored_fields():
        setattr(instance, field.name, getattr(stored, field.name))
    instance._saved_key = stored._saved_key


def json_list(values: list[str] | None) -> str:
    """A JSON list of ``values`` (the usual none: no encoding)."""
    return json.dumps(values) if values else "[]"


def embedding_of(model: type) -> EmbeddingField | None:
    """The model's first embedding field (the one detection searches), if any."""
    return next(iter(model._meta.fields_of(EmbeddingField)), None)  # type: ignore[attr-defined]
