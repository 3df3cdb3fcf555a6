"""The ``fuse`` query method: weighted RRF of ranked lists of records of the query's partition.

Items of each list (records, DbKeys, record ids or Redis keys) are identified by their DbKey,
fused with :func:`~redmem.context._fusion.reciprocal_rank_fusion`, and the records not given
are loaded in one round trip.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..fields._bm25 import SearchResult
from ..model._dbkey import DbKey
from ..model._hits import Hit, HitList, hit_list
from ..model._loading import load_records
from ..model._query import Query
from ..model.query_methods import every_model_query
from ..store._errors import QueryException
from ..store._validation import is_int_or_float
from ._fusion import RRF_K, distinct_ranks, reciprocal_rank_fusion

__all__ = ["fuse"]


#: What a list given to ``fuse`` may hold (quoted in error messages).
FUSABLE = "records, hits, Redis keys, DbKeys or record ids, each alone or as an (item, score) pair"


def _unscored(item: Any) -> Any:
    """The record of a :class:`~redmem.model._hits.Hit`, the item of an ``(item, score)`` pair (as
    Popoto's ``fuse`` and BM25 search give them), else ``item``."""
    if isinstance(item, Hit):
        return item.record
    if isinstance(item, (tuple, list)) and len(item) == 2:
        score = item[1]
        if is_int_or_float(score):
            return item[0]
    return item


def _identity(query: Query, item: Any) -> DbKey:
    """The DbKey of a record, a DbKey, a Redis key (``db_key.redis_key``) or a record id (of the
    query's partition); QueryException for a Redis key of another model."""
    if isinstance(item, bytes):
        item = item.decode()
    if isinstance(item, DbKey):
        return item
    if isinstance(item, str):
        parsed = DbKey.parse(item)
        if parsed is None:
            return DbKey(query.partition(), item)
        space = query.partition()
        if (parsed.keyspace.prefix, parsed.keyspace.model) != (space.prefix, space.model):
            raise QueryException(f"fuse() on {query.model.__name__} got {item!r}, the key of another model's record")
        return parsed
    saved: DbKey | None = getattr(item, "_saved_key", None)
    if saved is None:
        raise QueryException(f"fuse() ranks {FUSABLE}, not {item!r}")
    return saved


@every_model_query  # any model: ranked lists of any records
def fuse(
    query: Query,
    k: float = RRF_K,
    limit: int = 10,
    weights: Mapping[str, float] | None = None,
    **ranked_lists: Sequence[Any],
) -> HitList[Any]:
    """Weighted RRF of named ranked lists of the query's partition.

    ``Memory.query.filter(agent_id="a").fuse(keyword=bm25_hits, vector=vector_hits,
    weights=query_adaptive_weights(text))``. A list holds records, DbKeys, record ids or Redis
    keys (``db_key.redis_key``), each alone or as an ``(item, score)`` pair, best first (as
    Popoto's ``fuse`` takes them; scores are ignored: RRF uses ranks), or is a search's
    ``.hits`` or a BM25 ``SearchResult``. Items of another partition are left out (the tenant
    filter applies to fused lists too). Returns records, best first, as a
    :class:`~redmem.model._hits.HitList` whose hits have the signal ``rrf`` and ``ranks`` ({list
    name: 1-based rank}); each record also carries ``_rrf_score`` and ``_rrf_ranks``. Records
    passed in are returned as they are, ids and keys are loaded in one round trip (those with no
    stored record are dropped).
    """
    space = query.partition()
    given: dict[DbKey, Any] = {}
    keyed: dict[str, list[DbKey]] = {}
    for name, items in ranked_lists.items():
        keys = keyed[name] = []
        for item in items.ranked if isinstance(items, SearchResult) else items:
            item = _unscored(item)
            key = _identity(query, item)
            if key.keyspace == space:
                keys.append(key)
                if not isinstance(item, (str, bytes, DbKey)):
                    given.setdefault(key, item)
    fused = reciprocal_rank_fusion(keyed, k=k, weights=weights, limit=limit)
    missing = [key for key, _ in fused if key not in given]
    given.update((record._saved_key, record) for record in load_records(query.model, missing))
    ranks = {name: distinct_ranks(keys) for name, keys in keyed.items()}
    hits = []
    for key, score in fused:
        record = given.get(key)
        if record is not None:
            record._rrf_ranks = {name: found[key] for name, found in ranks.items() if key in found}
            hits.append(Hit(record, score, {"rrf": score}, record._rrf_ranks))
    return hit_list(hits, "_rrf_score")
