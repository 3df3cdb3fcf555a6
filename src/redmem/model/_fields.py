"""Plain value fields: each is a :class:`Field` with a fixed Python type."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from ._field import Field

__all__ = [
    "StringField",
    "IntField",
    "FloatField",
    "BooleanField",
    "ListField",
    "DictField",
    "BytesField",
    "DatetimeField",
]


class StringField(Field[str]):
    """Text, stored as UTF-8."""

    python_type = str


class IntField(Field[int]):
    """An integer, stored as decimal text."""

    python_type = int


class FloatField(Field[float]):
    """A finite float (ints are accepted), stored as its shortest round-tripping text."""

    python_type = float


class BooleanField(Field[bool]):
    """True or False, stored as ``true`` / ``false``."""

    python_type = bool


class ListField(Field[list[Any]]):
    """A JSON-serialisable list (tuples become lists), stored as JSON."""

    python_type = list


class DictField(Field[dict[str, Any]]):
    """A JSON-serialisable dict, stored as JSON."""

    python_type = dict


class BytesField(Field[bytes]):
    """Raw bytes, stored as they are."""

    python_type = bytes


class DatetimeField(Field[datetime]):
    """A datetime stored as ISO 8601; ``auto_now`` stamps every save, ``auto_now_add`` the first."""

    python_type = datetime

    def __init__(self, *, auto_now: bool = False, auto_now_add: bool = False, **options: Any) -> None:
        super().__init__(**options)
        self.auto_now = auto_now
        self.auto_now_add = auto_now_add

    def before_save(self, instance: Any, creating: bool) -> None:
        if self.auto_now or (self.auto_now_add and creating and getattr(instance, self.name) is None):
            setattr(instance, self.name, datetime.now(UTC))
