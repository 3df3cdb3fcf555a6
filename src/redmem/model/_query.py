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
from typing import Any

from ..store._aio import async_variant, greenlet_spawn
from ..store._connection import server_errors
from ..store._errors import QueryArgumentError, QueryArgumentTypeError, QueryException
from ..store._keys import KeyKind, KeySpace
from ..store._scripts import queue_script
from ..store._validation import non_negative_int
from ._dbkey import DbKey
from ._filters import index_plan, parse_condition, range_slot
from ._indexed import SortedField
from ._loading import load_records
from ._model_class import ModelClass
from ._persistence import ALL_RECORDS
from ._registry import listed_partitions
from .query_methods import every_model_query_methods, find_query_method

__all__ = ["Query"]



@dataclass(frozen=True)
class Query:
    """Records of ``model`` matching every condition; each chained call returns a new query."""

    model: ModelClass
    conditions: tuple[tuple[str, str, Any], ...] = ()
    ordering: str | None = None
    descending: bool = False
    page_size: int | None = None
    page_start: int = 0
    tracking: bool = True

    # -- building ----------------------------------------------------------------------------
    def filter(self, **conditions: Any) -> Query:
        """Add conditions: ``key=v``, ``key__in=[..]``, ``sorted__gte=x`` (gt/gte/lt/lte),
        ``tags=t``, ``tags__any=[..]`` / ``__all``; the same language as ``where=``
        (:mod:`~redmem.model._filters`). QueryException naming the field for an unknown field, one
        with no index, an operator it does not take or a value of the wrong type."""
        parsed = tuple(parse_condition(self.model, name, value) for name, value in conditions.items())
        query = replace(self, conditions=self.conditions + parsed)
        query._given_partition()
        return query

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

    # -- running -----------------------------------------------------------------------------
    def get(self, /, **keys: Any) -> Any:
        """The record with exactly these key values, or None."""
        meta = self.model._meta
        if set(keys) != set(meta.key_fields):
            raise QueryException(f"get() needs exactly the key fields {list(meta.key_fields)}")
        values = {n: meta.fields[n].validate(v) for n, v in keys.items()}
        self.filter(**{n: values[n] for n in meta.partition_fields})  # a scoped query keeps its partition
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
        given = self._given_partition()
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
        given = self._given_partition()
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

    def _given_partition(self) -> dict[str, Any]:
        """The partition values the conditions name. Conditions must all hold, so two different
        values for one partition field raise QueryException: a query scoped to one tenant never
        switches to another (a chained ``filter`` cannot widen or move it)."""
        given: dict[str, Any] = {}
        for name, _, value in self.conditions:
            if name in self.model._meta.partition_fields and given.setdefault(name, value) != value:
                raise QueryException(
                    f"{self.model.__name__} query names two values of the partition field {name!r} "
                    f"({given[name]!r} and {value!r}): a query stays in one partition"
                )
        return given

    def _plan(self, space: KeySpace, count: bool) -> tuple[list[str], dict[str, Any]]:
        keys = [space.key(ALL_RECORDS)]
        plan = index_plan(self.model._meta, space, self.conditions, keys)
        order_slot = 0
        if self.ordering:
            order_key = space.key(KeyKind.SORTED, self.ordering)
            order_slot = range_slot(plan, keys, order_key) or _appended(keys, order_key)
        plan.update(order=order_slot, desc=self.descending, count=count)
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



def _appended(keys: list[str], key: str) -> int:
    keys.append(key)
    return len(keys)
