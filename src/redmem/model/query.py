"""Query: an immutable builder over one model's records (filter, order_by, limit, count, all).

A query runs as one Lua call per partition (all partitions in one pipelined round trip), then
one pipelined round trip to hydrate the page. Filters use indexes only: key fields, sorted
fields (ranges) and tag fields. The searches of the primitives (``keyword_search``,
``top_by_decay``...) are the query methods the model's fields offer (:mod:`.query_methods`).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, replace
from functools import partial
from types import MethodType
from typing import TYPE_CHECKING, Any

from ..store.aio import async_variant, greenlet_spawn
from ..store.connection import server_errors
from ..store.errors import QueryArgumentError, QueryArgumentTypeError, QueryException
from ..store.keys import KeyKind, KeySpace
from ..store.scripts import queue_script
from ..store.validation import non_negative_int
from .dbkey import DbKey
from .indexed import KeyField, SortedField, TagField
from .loading import load_records
from .persistence import ALL_RECORDS
from .query_methods import every_model_query_methods, find_query_method
from .registry import listed_partitions

if TYPE_CHECKING:
    from .base import Model

__all__ = ["Query"]

RANGE_OPS = {"gt", "gte", "lt", "lte", "eq"}
TAG_OPS = {"any", "all", "eq"}


@dataclass(frozen=True)
class Query:
    """Records of ``model`` matching every condition; each chained call returns a new query."""

    model: type[Model]
    conditions: tuple[tuple[str, str, Any], ...] = ()
    ordering: str | None = None
    descending: bool = False
    page_size: int | None = None
    page_start: int = 0
    tracking: bool = True

    # -- building ----------------------------------------------------------------------------
    def filter(self, **conditions: Any) -> Query:
        """Add conditions: ``key=v``, ``sorted__gte=x`` (gt/gte/lt/lte), ``tags__any=[..]`` / ``__all``."""
        parsed = tuple(self._parse(name, value) for name, value in conditions.items())
        return replace(self, conditions=self.conditions + parsed)

    def order_by(self, field: str) -> Query:
        """Order by a sorted field, ``"-field"`` for descending; ties go by record id."""
        if not isinstance(field, str):
            raise QueryArgumentTypeError(f"order_by: field must be a field name (a str), got {field!r}")
        name = field.lstrip("-")
        if not isinstance(self.model._meta.fields.get(name), SortedField):
            raise QueryException(f"{self.model.__name__} can only be ordered by a sorted field, not {name!r}")
        return replace(self, ordering=name, descending=field.startswith("-"))

    def limit(self, count: int, offset: int = 0) -> Query:
        """Return at most ``count`` records, skipping the first ``offset``."""
        count = non_negative_int("limit: count", count, error=QueryArgumentError)
        offset = non_negative_int("limit: offset", offset, error=QueryArgumentError)
        return replace(self, page_size=count, page_start=offset)

    def no_track(self) -> Query:
        """Read without read effects (no access staging): for inspection and maintenance."""
        return replace(self, tracking=False)

    def _parse(self, name: str, value: Any) -> tuple[str, str, Any]:
        field_name, _, op = name.partition("__")
        op = op or "eq"
        field = self.model._meta.fields.get(field_name)
        if field is None:
            raise QueryException(f"{self.model.__name__} has no field {field_name!r}")
        if isinstance(field, SortedField) and op in RANGE_OPS:
            return field_name, op, field.score(field.coerce(value))
        if isinstance(field, TagField) and op in TAG_OPS:
            tags = [value] if op == "eq" else list(value)
            return field_name, "all" if op == "eq" else op, field.coerce(tags)
        if isinstance(field, KeyField) and op == "eq":
            return field_name, op, field.validate(value)
        raise QueryException(
            f"cannot filter {self.model.__name__} on {name!r}: filters work on key fields (=), "
            "sorted fields (=, __gt, __gte, __lt, __lte) and tag fields (=, __any, __all)"
        )

    # -- running -----------------------------------------------------------------------------
    def get(self, /, **keys: Any) -> Any:
        """The record with exactly these key values, or None."""
        meta = self.model._meta
        if set(keys) != set(meta.key_fields):
            raise QueryException(f"get() needs exactly the key fields {list(meta.key_fields)}")
        values = {n: meta.fields[n].validate(v) for n, v in keys.items()}
        partition = tuple(values[n] for n in meta.partition_fields)
        key = DbKey(meta.keyspace(partition), meta.record_id(values))
        found = load_records(self.model, [key], track=self.tracking)
        return found[0] if found else None

    def keys(self) -> list[DbKey]:
        """The matching records' keys, in order, without reading the records."""
        return [key for key, _ in self._run(count=False)[1]]

    def all(self) -> list[Any]:
        """The matching records, in order."""
        return load_records(self.model, self.keys(), track=self.tracking)

    def first(self) -> Any:
        """The first matching record, or None."""
        found = self.limit(1, self.page_start).all()
        return found[0] if found else None

    def count(self) -> int:
        """How many records match (ignoring limit)."""
        return self._run(count=True)[0]

    def __iter__(self) -> Iterator[Any]:
        return iter(self.all())

    # The asyncio API (docs/asyncio.md); a query method ``m`` is awaited as ``query.am(..)`` too.
    aget = async_variant(get)
    akeys = async_variant(keys)
    aall = async_variant(all)
    afirst = async_variant(first)
    acount = async_variant(count)

    def __getattr__(self, name: str) -> Any:
        """A query method of the model (``keyword_search`` with a BM25Field...), bound to this query.

        :class:`~.query_methods.MissingQueryMethod` (an AttributeError and a QueryException)
        names the fields or mixins that offer ``name`` when the model has none of them.
        """
        model = vars(self).get("model")
        if model is None or name.startswith("_"):
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        methods = model._meta.query_methods
        if name not in methods and name.startswith("a") and name[1:] in {*methods, *every_model_query_methods()}:
            return partial(greenlet_spawn, MethodType(find_query_method(model, methods, name[1:]), self))
        return MethodType(find_query_method(model, methods, name), self)

    def __dir__(self) -> list[str]:
        """The attributes of a query, the model's query methods and every model's included (with their
        ``a``-prefixed awaitable forms)."""
        methods = {*self.model._meta.query_methods, *every_model_query_methods()}
        return sorted({*super().__dir__(), *methods, *("a" + name for name in methods)})

    def partition(self) -> KeySpace:
        """The one partition this query names; QueryException when the filter does not name it."""
        meta = self.model._meta
        given = {n: v for n, _, v in self.conditions if n in meta.partition_fields}
        if len(given) != len(meta.partition_fields):
            raise QueryException(
                f"this {self.model.__name__} query needs the partition {list(meta.partition_fields)} "
                "in the filter"
            )
        return meta.keyspace(tuple(given[n] for n in meta.partition_fields))

    def partitions(self) -> list[KeySpace]:
        """The partitions the query covers: the one it names, else every one the partition registry
        lists (a SCAN of the keyspace when the registry is turned off; see :mod:`.registry`)."""
        meta = self.model._meta
        given = {n: v for n, op, v in self.conditions if n in meta.partition_fields}
        if len(given) == len(meta.partition_fields):
            return [meta.keyspace(tuple(given[n] for n in meta.partition_fields))]
        if given:
            raise QueryException(f"give all partition fields {list(meta.partition_fields)} or none")
        fields = meta.fields
        if self.ordering or any(isinstance(fields[n], SortedField) for n, _, _ in self.conditions):
            raise QueryException(
                f"{self.model.__name__} is partitioned by {list(meta.partition_fields)}: "
                "sorted ranges and ordering need the partition in the filter"
            )
        return listed_partitions(meta, meta.client)

    def _plan(self, space: KeySpace, count: bool) -> tuple[list[str], dict[str, Any]]:
        meta = self.model._meta
        keys = [space.key(ALL_RECORDS)]
        plan: dict[str, Any] = {"sets": [], "any": [], "ranges": [], "count": count}

        def slot(key: str) -> int:
            keys.append(key)
            return len(keys)

        ranges: dict[str, list[str]] = {}
        id_values = {n: v for n, op, v in self.conditions if n in meta.id_fields}
        if id_values and len(id_values) == len(meta.id_fields):
            plan["ids"] = [meta.record_id(id_values)]
        for name, op, value in self.conditions:
            if name in meta.partition_fields:
                continue
            if name in id_values and "ids" not in plan:
                plan["sets"].append(slot(space.value_key(KeyKind.KEY_VALUE, name, meta.key_field(name).key_text(value))))
            elif op == "all":
                plan["sets"].extend(slot(space.value_key(KeyKind.TAG, name, tag)) for tag in value)
            elif op == "any":
                plan["any"].append([slot(space.value_key(KeyKind.TAG, name, tag)) for tag in value])
            elif name not in id_values:
                _narrow(ranges.setdefault(name, ["-inf", "+inf"]), op, value)
        order_slot = slot(space.key(KeyKind.SORTED, self.ordering)) if self.ordering else 0
        for name, (low, high) in ranges.items():
            index = order_slot if name == self.ordering else slot(space.key(KeyKind.SORTED, name))
            plan["ranges"].append([index, low, high])
        plan.update(order=order_slot, desc=self.descending)
        return keys, plan

    def _run(self, count: bool) -> tuple[int, list[tuple[DbKey, str]]]:
        spaces = self.partitions()
        if not spaces:
            return 0, []
        client = self.model._meta.client
        single = len(spaces) == 1
        with server_errors(client), client.pipeline(transaction=False) as pipe:
            for space in spaces:
                keys, plan = self._plan(space, count)
                if single:
                    plan.update(offset=self.page_start, limit=_or_all(self.page_size))
                else:  # each partition returns its first offset+limit; merged and cut here
                    plan.update(offset=0, limit=_or_all(self.page_size, self.page_start))
                queue_script(pipe, "query", keys, [json.dumps(plan)])
            replies = pipe.execute()
        total = sum(int(reply[0]) for reply in replies)
        rows = [
            (DbKey(space, reply[i].decode()), reply[i + 1].decode())
            for space, reply in zip(spaces, replies)
            for i in range(1, len(reply), 2)
        ]
        if not single:
            rows = self._merge(rows)
        return total, rows

    def _merge(self, rows: list[tuple[DbKey, str]]) -> list[tuple[DbKey, str]]:
        """Order rows of several partitions by record id, then partition, and cut the page."""
        rows.sort(key=lambda row: (row[0].record_id, row[0].keyspace.tag))
        end = None if self.page_size is None else self.page_start + self.page_size
        return rows[self.page_start : end]


def _or_all(size: int | None, extra: int = 0) -> int:
    return -1 if size is None else size + extra


def _narrow(bounds: list[str], op: str, value: float) -> None:
    """Tighten ``[low, high]`` (ZRANGEBYSCORE syntax) by one comparison."""
    text = repr(value)
    if op in ("gt", "gte", "eq"):
        bounds[0] = _tighter(bounds[0], ("(" if op == "gt" else "") + text, max)
    if op in ("lt", "lte", "eq"):
        bounds[1] = _tighter(bounds[1], ("(" if op == "lt" else "") + text, min)


def _tighter(current: str, candidate: str, pick: Any) -> str:
    def number(bound: str) -> tuple[float, bool]:
        return float(bound.lstrip("(")), bound.startswith("(")

    cur_value, cur_open = number(current)
    new_value, _ = number(candidate)
    if cur_value == new_value:
        return current if cur_open else candidate
    return current if pick(cur_value, new_value) == cur_value else candidate
