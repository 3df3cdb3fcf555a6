"""The partition's lifecycle index: one hash naming the current record of each text digest and
each subject/slot, a card of each current record (what detection reads of it), and a version.

Entries: ``version`` (bumped by every write of a lifecycle record: what a write WATCHes),
``d:<digest>`` and ``s:<slot>`` (a record id), ``c:<id>`` (the card: the record's ``valid_from``,
text and subject, then the text's :func:`~._detect.analysis`, JSON). A card exists only while its record is current and stored: a save
writes it, a supersede or a delete removes it, so a write decides from the index alone, in the
round trip that reads it (``lifecycle_lookup.lua``), without loading the records it names.
Cards are kept by models whose writes detect (``Lifecycle.active``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from enum import StrEnum, unique
from typing import Any

from ..store._keys import KeySpace
from ._detect import analysis

__all__ = ["LifecycleKeyKind", "VERSION_ENTRY", "Card", "index_key", "card_entry", "card_of", "read_card", "queue_card"]


@unique
class LifecycleKeyKind(StrEnum):
    """The fact lifecycle's kinds of key (the core kinds are :class:`~redmem.store._keys.KeyKind`; every owner's
    values are distinct, ``tests/unit/store/test_keys.py``)."""

    #: hash: a lifecycle model's index of current facts (``version``, ``d:<digest>``, ``s:<slot>`` -> record id,
    #: ``c:<id>`` -> the fact's card)
    LIFECYCLE_INDEX = "lx"


#: The index entry counting lifecycle writes of the partition (what a write's WATCH checks).
VERSION_ENTRY = "version"


@dataclass(frozen=True)
class Card:
    """What detection needs of a current record: its id, ``valid_from``, statement and subject."""

    record_id: str
    valid_from: float
    text: str
    subject: str


def index_key(space: KeySpace) -> str:
    """The lifecycle index hash of a partition."""
    return space.key(LifecycleKeyKind.LIFECYCLE_INDEX)


def card_entry(record_id: str) -> str:
    """The index entry holding the card of ``record_id``."""
    return "c:" + record_id


def card_of(record: Any) -> str:
    """The card of a record, as the index stores it."""
    text = getattr(record, type(record).lifecycle.text_field)
    text, subject = "" if text is None else str(text), record.subject or ""
    return json.dumps([record.valid_from, text, subject, *analysis(text, subject)])


def read_card(record_id: str, raw: bytes | str | None) -> Card | None:
    """The card stored for ``record_id`` (None when the index holds none: not current, or gone)."""
    if raw is None:
        return None
    valid_from, text, subject = json.loads(raw)[:3]  # then the analysis (none in an older card)
    return Card(record_id, float(valid_from), text, subject)


def queue_card(pipe: Any, record: Any) -> None:
    """Queue the card of a record of a detecting model: written while it is current, removed once not."""
    if not type(record).lifecycle.active:
        return
    key = record.db_key
    index, entry = index_key(key.keyspace), card_entry(key.record_id)
    if record.valid_to is None:
        pipe.hset(index, entry, card_of(record))
    else:
        pipe.hdel(index, entry)
