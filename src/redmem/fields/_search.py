"""Helpers shared by the primitives' searches: which field, which partition, load the ranking as hits."""

from __future__ import annotations

from typing import Any

from ..model._dbkey import DbKey
from ..model._hits import Hit, HitList, hit_list
from ..model._loading import load_records
from ..model._model_class import ModelClass
from ..model._query import Query
from ..store._errors import QueryException
from ..store._keys import KeySpace

__all__ = ["pick_field", "partition_of", "hydrate"]


def pick_field(model: ModelClass, kind: type, name: str | None, method: str) -> Any:
    """The model's field of class ``kind`` named ``name``, or its only one when ``name`` is None."""
    fields = model._meta.fields
    if name is not None:
        if not isinstance(fields.get(name), kind):
            raise QueryException(f"{model.__name__}.{name} is not a {kind.__name__}")
        return fields[name]
    found: tuple[Any, ...] = model._meta.fields_of(kind)
    if len(found) != 1:
        raise QueryException(f"{method}: {model.__name__} has {len(found)} {kind.__name__}s; name one with field=")
    return found[0]


def partition_of(query: Query, method: str) -> KeySpace:
    """The partition the query names; it may name nothing else."""
    extra = [n for n, _, _ in query.conditions if n not in query.model._meta.partition_fields]
    if extra:
        raise QueryException(f"{method} filters by partition only, not by {sorted(set(extra))}")
    return query.partition()


def hydrate(query: Query, space: KeySpace, ranked: list[tuple[str, float]], signal: str) -> HitList[Any]:
    """Load ranked (id, score) pairs in one round trip as hits scored by ``signal`` (``bm25``, ...),
    each record also carrying its score as ``_<signal>_score``.

    Records deleted meanwhile are left out. Read effects (access staging) ride along unless the
    query was made with ``no_track()``.
    """
    scores = dict(ranked)
    keys = [DbKey(space, record_id) for record_id, _ in ranked]
    records = load_records(query.model, keys, track=query.tracking)
    hits = []
    for record in records:
        score = scores[record._saved_key.record_id]
        hits.append(Hit(record, score, {signal: score}))
    return hit_list(hits, f"_{signal}_score")
