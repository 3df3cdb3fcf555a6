"""The validity window of a fact, as plain values: what a read at a time sees (no I/O).

A record is valid from ``valid_from`` (inclusive) to ``valid_to`` (exclusive); an open
``valid_to`` (None) means "still true". Indexes store an open end as :data:`OPEN_END`, a finite
score (the last second of year 9999) so range filters compare plain numbers in Lua and Python.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from ..model._filters import Condition
from ..store._errors import QueryArgumentError
from ..store._validation import epoch_of

__all__ = [
    "OPEN_END",
    "ALL_TIMES",
    "visible_at",
    "is_current",
    "validity_conditions",
    "superseded_conditions",
    "as_epoch",
]

#: Index score of an open ``valid_to`` (9999-12-31T23:59:59Z): later than any valid time.
OPEN_END = 253402300799.0
#: ``as_of=ALL_TIMES`` reads every record, superseded or not.
ALL_TIMES = "all"


def as_epoch(value: float | int | datetime) -> float:
    """A time as epoch seconds (a datetime, or a number already)."""
    if isinstance(value, datetime):
        return epoch_of(value)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise QueryArgumentError(f"as_of expects epoch seconds, a datetime or {ALL_TIMES!r}, got {value!r}")
    return float(value)


def is_current(valid_to: float | None) -> bool:
    """Not superseded: the window is still open."""
    return valid_to is None


def visible_at(valid_from: float, valid_to: float | None, as_of: float) -> bool:
    """``valid_from <= as_of < valid_to``: the fact was true at ``as_of``."""
    return valid_from <= as_of and (valid_to is None or as_of < valid_to)


def validity_conditions(as_of: Any) -> tuple[Condition, ...]:
    """The filter conditions of a read: current records (``as_of`` None), the records valid at
    ``as_of``, or none at all for :data:`ALL_TIMES`."""
    if as_of is None:
        return (("valid_to", "gte", OPEN_END),)
    if as_of == ALL_TIMES:
        return ()
    at = as_epoch(as_of)
    return (("valid_from", "lte", at), ("valid_to", "gt", at))


def superseded_conditions(as_of: Any) -> tuple[Condition, ...]:
    """The filter conditions of the records a read leaves out as superseded: those whose window
    closed (``valid_to < OPEN_END``) for a current read (``as_of`` None), those whose window
    closed at or before ``as_of`` (``valid_to <= as_of``) for a read at a time, none for
    :data:`ALL_TIMES` (it leaves nothing out). A record not valid yet at ``as_of`` is not superseded."""
    if as_of is None:
        return (("valid_to", "lt", OPEN_END),)
    if as_of == ALL_TIMES:
        return ()
    return (("valid_to", "lte", as_epoch(as_of)),)
