"""WriteFilterMixin: a record scored too low is never written; a high score marks it priority.

The model defines ``compute_filter_score()`` (a number, usually in [0, 1]). ``save()``:

- score < ``write_filter_min_score`` (0.1): nothing is written (no hash, no index, no event)
  and ``save`` returns False; a record already stored keeps its stored values;
- otherwise the record is saved and, in the same atomic batch, its id is put in the
  partition's priority index with the score when score >= ``write_filter_priority_threshold``
  (0.7), or taken out of it when the score is lower.

``save(skip_write_filter=True)`` saves whatever the score (which still decides the priority
index). Thresholds are class attributes, overridable per model. Defaults as in popoto's
WriteFilterMixin.

Where it lives in Redis: ``<prefix>:<Model>:{<partition>}:wp``, a sorted set of filter scores
by record id (priority records only), in the records' slot.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from ..fields._composite import PRIORITY_SIGNAL
from ..fields._search import hydrate
from ..model._base import RecordMixin
from ..model._batch import SaveBatch
from ..model._codecs import finite_float
from ..model._hits import HitList
from ..model._query import Query
from ..model.query_methods import QueryMethod
from ..store._connection import server_errors
from ..store._errors import QueryArgumentError, QueryException
from ..store._keys import KeyKind, KeySpace
from ..store._validation import integer

__all__ = ["WriteFilterMixin", "top_by_priority", "PRIORITY_KIND"]

#: Key kind of the per-partition priority index: ``<base>:wp``.
PRIORITY_KIND = KeyKind.PRIORITY


def priority_key(keyspace: KeySpace) -> str:
    return keyspace.key(PRIORITY_KIND)


class WriteFilterMixin(RecordMixin):
    """Skip saving records whose ``compute_filter_score()`` is below a minimum; index high scorers.

    Put it before ``Model`` in the bases: ``class Memory(WriteFilterMixin, Model)``.
    """

    #: Below this score a save writes nothing and returns False.
    write_filter_min_score: ClassVar[float] = 0.1
    #: At or above this score the record is in the partition's priority index.
    write_filter_priority_threshold: ClassVar[float] = 0.7

    @classmethod
    def query_methods(cls) -> Mapping[str, QueryMethod]:
        """``query.top_by_priority(n)``: the priority records, highest filter score first."""
        return {"top_by_priority": top_by_priority}

    def compute_filter_score(self) -> float:
        """How much this record deserves to be stored; override it (default 1.0: keep everything)."""
        return 1.0

    def filter_score(self) -> float:
        """``compute_filter_score()`` checked to be a finite number (ValidationError otherwise)."""
        return finite_float(self.compute_filter_score(), f"{type(self).__name__}.compute_filter_score()")

    def save(self, skip_write_filter: bool = False) -> bool:
        """Save unless the filter score is below the minimum; True when written."""
        score = self.filter_score()
        if score < self.write_filter_min_score and not skip_write_filter:
            return False
        self._write_filter_score = score
        return super().save()

    def queue_save(self, batch: SaveBatch) -> None:
        """Add or remove the record in the priority index, in the save's batch."""
        super().queue_save(batch)
        score = getattr(self, "_write_filter_score", None)
        if score is None:
            score = self.filter_score()
        key = priority_key(batch.keyspace)
        if score >= self.write_filter_priority_threshold:
            batch.pipe.zadd(key, {batch.record_id: score})
        elif batch.old is not None:
            batch.pipe.zrem(key, batch.record_id)

    def queue_delete(self, batch: SaveBatch) -> None:
        super().queue_delete(batch)
        batch.pipe.zrem(priority_key(batch.keyspace), batch.record_id)

    @property
    def priority_score(self) -> float | None:
        """The record's score in the priority index, None when it is not a priority record."""
        key = self._saved_key or self.db_key
        client = self._meta.client
        with server_errors(client):
            score: float | None = client.zscore(priority_key(key.keyspace), key.record_id)
            return score


def top_by_priority(query: Query, n: int = 10) -> HitList[Any]:
    """The ``n`` priority records of the query's partition, highest filter score first.

    Ties go by record id descending (the sorted set's reverse order); a
    :class:`~redmem.model._hits.HitList` (signal ``priority``), each record also carrying its
    score as ``_priority_score``. Two round trips: one to rank, one to load.
    """
    if not issubclass(query.model, WriteFilterMixin):
        raise QueryException(f"top_by_priority: {query.model.__name__} has no WriteFilterMixin")
    n = integer("top_by_priority: n", n, error=QueryArgumentError)
    space = query.partition()
    client = query.model._meta.client
    with server_errors(client):
        ranked = client.zrange(priority_key(space), 0, n - 1, desc=True, withscores=True) if n > 0 else []
    return hydrate(query, space, [(member.decode(), score) for member, score in ranked], PRIORITY_SIGNAL)
