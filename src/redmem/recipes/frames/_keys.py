"""The kinds of key the frames recipe writes beside its blocks' records.

``<prefix>:<Model>:{<partition>}:<kind>[:...]``: the core kinds are :class:`~redmem.store._keys.KeyKind`;
these are the frames recipe's own, distinct from every other owner's (``tests/unit/store/test_keys.py``).
"""

from __future__ import annotations

from enum import StrEnum, unique

__all__ = ["FrameKeyKind"]


@unique
class FrameKeyKind(StrEnum):
    """The frames recipe's kinds of key."""

    #: sorted set (lex): a PrefixIndexField's ``"<value> <record id>"`` entries (``px:<field>``)
    PREFIX_INDEX = "px"
    #: sorted set (lex): contradiction pairs ``"<a> <b>"``, both directions
    CONTRADICTIONS = "fx"
    #: hash: an agent's active-hours clock
    FRAME_CLOCK = "fk"
    #: string: the counter of changes to ``self/...`` blocks (cache validity)
    FRAME_VERSION = "fv"
    #: string: one cached frame result (``fc:<frame>:<digest>``), with a TTL
    FRAME_CACHE = "fc"
    #: hash: custom frame definitions by name (JSON)
    FRAME_DEFINITIONS = "fd"
