"""The write-size limit: no shown text of a record over ``max_text_bytes`` UTF-8 bytes (default 64 KiB).

Shown texts are the ``str`` values of fields with ``Field.shown`` (what a prompt can show); texts
kept for search only (``shown = False``, as ConversationMemory's ``context``, built from the
neighbouring turns) are derived from shown ones and not checked.

A memory far bigger than any prompt's budget cannot be shown whole, costs every read and every
search that loads it, and is usually a mistake (a file or a whole transcript stored as one
memory). So a save refuses it with :class:`~redmem.store._errors.MemoryTooLarge` before anything
is written, naming the field, its size, the limit and how to change it: ``redmem.configure(
max_text_bytes=...)`` for every model, ``class Meta: max_text_bytes = ...`` for one (0: no limit).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..store._errors import MemoryTooLarge

__all__ = ["check_text_sizes"]

#: UTF-8 takes at most this many bytes per character.
_MAX_UTF8 = 4


def check_text_sizes(model: Any, values: Mapping[str, Any]) -> None:
    """MemoryTooLarge for the first shown str value of ``values`` over the model's ``max_text_bytes``."""
    limit = model._meta.setting("max_text_bytes")
    if not limit:
        return
    fields = model._meta.fields
    for name, value in values.items():
        if not isinstance(value, str) or len(value) * _MAX_UTF8 <= limit or not fields[name].shown:
            continue
        size = len(value) if len(value) > limit else len(value.encode("utf-8", "surrogatepass"))
        if size > limit:
            raise MemoryTooLarge(
                f"{model.__name__}.{name} holds {size} bytes of text, over the write-size limit of {limit} "
                f"(max_text_bytes); nothing was written. Store a summary or split it into several memories, or "
                f"raise the limit: redmem.configure(max_text_bytes=N), or class Meta: max_text_bytes = N in "
                f"{model.__name__} (0: no limit)",
                field=name, size=size, limit=limit,
            )
