"""The kinds of key the HCE pipeline writes beside its interactions' records.

``<prefix>:<Model>:{<partition>}:<kind>[:...]``: the core kinds are :class:`~redmem.store._keys.KeyKind`;
these are the HCE pipeline's own, distinct from every other owner's (``tests/unit/store/test_keys.py``).
"""

from __future__ import annotations

from enum import StrEnum, unique

__all__ = ["HCEKeyKind"]


@unique
class HCEKeyKind(StrEnum):
    """The HCE pipeline's kinds of key."""

    #: list: the focus buffer, newest last (JSON entries)
    FOCUS_BUFFER = "fb"
    #: hash: the entity graph's entity -> node type and display name (JSON)
    ENTITY_TYPES = "et"
    #: list: the semantic tree's membership log, ``<interaction id> <topic id>`` in write order
    TREE_MEMBERS = "tm"
    #: list: the semantic tree's group log, ``<topic id> <group id>`` in write order (nested trees)
    TREE_GROUPS = "tg"
    #: hash: topic id -> its summary (JSON: text, members summarised, token count)
    TOPIC_SUMMARIES = "ts"
