"""Filters on declared, indexed fields: one language for ``Query.filter`` and ``where=``.

A condition is ``name=value`` or ``name__op=value``, parsed here (:func:`parse_condition`) for
:meth:`Query.filter <redmem.model._query.Query.filter>` and for ``where=`` alike:

- a key field: ``=`` and ``__in=[..]`` (its value index set; the record id itself for the only id field);
- a sorted field: ``=``, ``__gt``, ``__gte``, ``__lt``, ``__lte`` (a score range in its sorted set);
- a tag field: ``=tag`` (has it), ``__all=[..]``, ``__any=[..]`` (its per-tag sets).

:func:`compile_where` turns a ``where`` mapping into a :class:`Where`, checked before any Redis
call: an unknown field, a field with no index, an operator its type does not take or a value of
the wrong type raise :class:`~redmem.store._errors.QueryException` naming the field. A ``where``
never names the partition (the tenant is given apart), so its keys are all keys of the partition
searched: one hash tag, one cluster slot, no other tenant's keys.

:func:`index_plan` is the check every script runs (``redmem/model/lua/include/filter_check.lua``):
``{ids?, sets, any, ranges}``, each entry an index of the script's KEYS. ``query.lua`` walks it
to list records; the search scripts (BM25, composite, the cyclic scan, graph propagation) test
each candidate against it where they first meet it, so a top-k is the top-k of the records that
match, not a top-k cut short by filtering afterwards.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sized
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..store._errors import QueryArgumentError, QueryArgumentTypeError, QueryException, ValidationError
from ..store._keys import KeyKind, KeySpace
from ..store._scripts import ScriptCall
from ._indexed import KeyField, SortedField, TagField
from ._model_class import ModelClass
from ._persistence import ALL_RECORDS

if TYPE_CHECKING:
    from ._options import Options

__all__ = [
    "MAX_FILTER_VALUES", "Where", "compile_where", "compile_superseded", "parse_condition", "index_plan",
    "range_slot", "narrow", "Condition",
]

#: One parsed condition: (field name, operator, value as the index holds it).
Condition = tuple[str, str, Any]
#: The most values one list condition (``__in``, ``__any``, ``__all``) takes: each value is an index
#: key the filter script reads, and a script blocks every other client of the server while it runs.
#: Below it, the scripts read a large ``__any`` group once as one set (``filter_check.lua``).
MAX_FILTER_VALUES = 1000
RANGE_OPS = {"gt", "gte", "lt", "lte", "eq"}
TAG_OPS = {"any", "all", "eq"}
KEY_OPS = {"eq", "in"}


@dataclass(frozen=True)
class Where:
    """A compiled filter of ``model``'s records: ``conditions`` as :meth:`Query.filter` parses
    them, none on a partition field. Build it with :func:`compile_where`."""

    model: ModelClass
    conditions: tuple[Condition, ...]

    def plan(self, space: KeySpace, keys: list[str]) -> dict[str, Any]:
        """The ``filter_check`` plan over partition ``space``'s indexes; its keys are appended to
        ``keys`` (the script's KEYS so far), so its indexes point past the script's own."""
        return index_plan(self.model._meta, space, self.conditions, keys)

    def json(self, space: KeySpace, keys: list[str]) -> str:
        """:meth:`plan` as the JSON argument a search script takes."""
        return json.dumps(self.plan(space, keys))

    def ids_call(self, space: KeySpace) -> ScriptCall:
        """The ``filter_ids.lua`` call listing the ids of every matching record of ``space``, in no
        order, for a search that ranks in-process. Its cost is
        one native read of the cheapest index (an intersection of sets, or one range) and a
        check per candidate of what that index leaves; the reply is ``[b"only", ids]``, or
        ``[b"except", ids]`` (every record but these) for a filter of ranges alone that fewer
        records fail than pass, such as a lifecycle model's current records."""
        keys = [space.key(ALL_RECORDS)]
        plan = self.json(space, keys)
        return ScriptCall("filter_ids", keys, [plan])


def compile_where(model: ModelClass, where: Mapping[str, Any] | None) -> Where | None:
    """``where`` checked and parsed for ``model`` (None, an empty mapping, or conditions that
    every record meets, ``tags__all=[]``: no filter, None). A lifecycle model adds its validity
    conditions (current records, or ``as_of``'s; :mod:`redmem.lifecycle`).

    QueryArgumentTypeError when ``where`` is not a mapping of field conditions; QueryException
    naming the field for an unknown field, a field with no index, an operator the field does
    not take, a value of the wrong type, or a partition field (the tenant is given apart).
    """
    if where is not None and (not isinstance(where, Mapping) or not all(isinstance(name, str) for name in where)):
        raise QueryArgumentTypeError(f"where must be a dict of field conditions, got {where!r}")
    validity: tuple[Condition, ...] = ()
    validity_filter = getattr(model, "validity_filter", None)  # a lifecycle model: redmem.lifecycle
    if validity_filter is not None:
        where, validity = validity_filter(where)
    conditions = _parsed(model, where) + validity
    return Where(model, conditions) if conditions else None


def compile_superseded(model: ModelClass, where: Mapping[str, Any] | None) -> Where | None:
    """The filter of the records a read with ``where`` leaves out as superseded and that pass its
    other conditions: a lifecycle model's superseded conditions (:mod:`redmem.lifecycle`) beside
    ``where``'s own. None for a model without a lifecycle, or a read that leaves none out
    (``as_of="all"``). ``where`` is the one :func:`compile_where` checked."""
    superseded_filter = getattr(model, "superseded_filter", None)
    if superseded_filter is None:
        return None
    rest, superseded = superseded_filter(where)
    return Where(model, _parsed(model, rest) + superseded) if superseded else None


def _parsed(model: ModelClass, where: Mapping[str, Any] | None) -> tuple[Condition, ...]:
    """``where``'s conditions parsed (none for None); QueryException for a partition field."""
    if where is None:
        return ()
    meta = model._meta
    for name in where:
        field_name = name.partition("__")[0]
        if field_name in meta.partition_fields:
            raise QueryException(
                f"where cannot name the partition field {field_name!r}: the partition "
                f"{list(meta.partition_fields)} is given apart, and a filter stays inside it"
            )
    parsed = tuple(parse_condition(model, name, value) for name, value in where.items())
    return tuple(c for c in parsed if c[1] != "all" or c[2])  # __all of no tag holds for every record


def parse_condition(model: ModelClass, name: str, value: Any) -> Condition:
    """``name=value`` (``name`` is ``field`` or ``field__op``) as (field, operator, indexed value).

    A sorted field's value becomes its score; a tag field's ``=tag`` becomes ``all`` of one tag;
    a key field's ``__in`` list is checked value by value. QueryException naming the condition
    for an unknown field, a field with no index or an operator it does not take;
    QueryArgumentError (also a ValidationError) for a value of the wrong type or a list of more
    than ``MAX_FILTER_VALUES`` values.
    """
    field_name, _, op = name.partition("__")
    op = op or "eq"
    field = model._meta.fields.get(field_name)
    if field is None:
        raise QueryException(f"{model.__name__} has no field {field_name!r}")
    if op in ("in", "any", "all") and isinstance(value, Sized) and len(value) > MAX_FILTER_VALUES:
        raise QueryArgumentError(
            f"cannot filter {model.__name__} on {name!r}: {len(value):,} values, at most "
            f"{MAX_FILTER_VALUES:,} (split the list, or tag the records you mean with one tag)"
        )
    try:
        if isinstance(field, SortedField) and op in RANGE_OPS:
            return field_name, op, field.score(field.coerce(value))
        if isinstance(field, TagField) and op in TAG_OPS:
            return field_name, "all" if op == "eq" else op, field.coerce([value] if op == "eq" else value)
        if isinstance(field, KeyField) and op in KEY_OPS:
            if op == "eq":
                return field_name, op, field.validate(value)
            if field_name in model._meta.partition_fields:
                raise QueryException(f"the partition field {field_name!r} takes = only, not __in")
            if isinstance(value, (str, bytes)) or not isinstance(value, (list, tuple, set, frozenset)):
                raise ValidationError(f"{field.label}__in expects a list of values, got {type(value).__name__}")
            return field_name, op, list(dict.fromkeys(field.validate(v) for v in value))
    except ValidationError as exc:
        raise QueryArgumentError(f"cannot filter {model.__name__} on {name!r}: {exc}") from exc
    raise QueryException(
        f"cannot filter {model.__name__} on {name!r}: filters work on indexed fields only, "
        "key fields (=, __in), sorted fields (=, __gt, __gte, __lt, __lte) and tag fields (=, __any, __all)"
    )


def index_plan(meta: Options, space: KeySpace, conditions: tuple[Condition, ...], keys: list[str]) -> dict[str, Any]:
    """The plan ``{ids?, sets, any, ranges}`` of ``conditions`` (partition conditions left out)
    over ``space``'s indexes, each index key appended to ``keys`` and named by its 1-based position.

    Every key field given by ``=`` names the record (``ids``); the only id field's ``__in`` lists
    ids too. Otherwise a key field is checked in its value set, a tag in its tag set, and the
    comparisons of one sorted field narrow to one range of its sorted set.
    """
    plan: dict[str, Any] = {"sets": [], "any": [], "ranges": []}

    def slot(key: str) -> int:
        keys.append(key)
        return len(keys)

    def value_key(name: str, value: Any) -> str:
        return space.value_key(KeyKind.KEY_VALUE, name, meta.key_field(name).key_text(value))

    ids: list[str] | None = None
    id_values = {n: v for n, op, v in conditions if n in meta.id_fields and op == "eq"}
    if id_values and len(id_values) == len(meta.id_fields):
        ids = [meta.record_id(id_values)]
    ranges: dict[str, list[str]] = {}
    for name, op, value in conditions:
        if name in meta.partition_fields:
            continue
        if op == "in" and len(meta.id_fields) == 1:
            listed = [meta.record_id({name: v}) for v in value]
            ids = listed if ids is None else [i for i in ids if i in listed]
        elif op == "in":
            plan["any"].append([slot(value_key(name, v)) for v in value])
        elif name in id_values:
            if len(id_values) < len(meta.id_fields):
                plan["sets"].append(slot(value_key(name, value)))
        elif op == "all":
            plan["sets"].extend(slot(space.value_key(KeyKind.TAG, name, tag)) for tag in value)
        elif op == "any":
            plan["any"].append([slot(space.value_key(KeyKind.TAG, name, tag)) for tag in value])
        else:
            narrow(ranges.setdefault(name, ["-inf", "+inf"]), op, value)
    for name, (low, high) in ranges.items():
        plan["ranges"].append([slot(space.key(KeyKind.SORTED, name)), low, high])
    if ids is not None:
        plan["ids"] = ids
    return plan


def range_slot(plan: dict[str, Any], keys: list[str], key: str) -> int | None:
    """The KEYS index of the plan's range over sorted set ``key``, if it has one."""
    return next((r[0] for r in plan["ranges"] if keys[r[0] - 1] == key), None)


def narrow(bounds: list[str], op: str, value: float) -> None:
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

