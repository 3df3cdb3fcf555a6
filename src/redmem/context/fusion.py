"""List fusion: weighted reciprocal rank fusion (RRF), convex score fusion, query-adaptive list weights.

Reciprocal rank fusion (Cormack, Clarke and Büttcher, SIGIR 2009) scores each item of the union
of several ranked lists as

    rrf(d) = sum over lists L containing d of  w_L / (k + rank_L(d))

with ``rank`` 1-based and k = 60. Only ranks matter, so lists whose scores live on different
scales (BM25, cosine, graph activation) combine without normalisation. The sum is taken with
``math.fsum`` (correctly rounded, so the same whatever the order of the lists) and ties keep first-seen order: the order
in which items first appear reading the lists in the order given, each from its top.

Convex score fusion (:func:`convex_fusion`) keeps what RRF throws away: how far ahead of the
rest an item scores. Each list's scores are divided by the list's best score (min-max
normalisation with the theoretical minimum 0 of BM25, positive cosine and graph activation),
then combined with convex weights, as in the TM2C2 fusion of Bruch, Gai and Ingber ("An
Analysis of Fusion Functions for Hybrid Retrieval", ACM TOIS 42(1), 2023)::

    convex(d) = sum_L w_L * s_L(d) / top_L  /  sum_L w_L      (L: the lists with a best score top_L > 0)

An item missing from a list that was cut at its search limit takes that list's lowest score
(the most it can have scored there, as unseen objects are bounded in Fagin's threshold
algorithm); missing from a list that ended before its limit, it scored 0.

The pure functions here do no I/O; ``Model.query.filter(...).fuse(...)`` applies RRF to records.
"""

from __future__ import annotations

import math
import re
from collections.abc import Hashable, Mapping, Sequence
from typing import Any, TypeVar

from ..fields.bm25 import SearchResult
from ..model.dbkey import DbKey
from ..model.persistence import load_records
from ..model.query import Query
from ..model.query_methods import every_model_query
from ..store.errors import QueryException, ValidationError
from ..store.validation import finite_number, non_negative_int, positive_int

__all__ = [
    "reciprocal_rank_fusion",
    "convex_fusion",
    "checked_weights",
    "distinct_ranks",
    "query_adaptive_weights",
    "fuse",
    "RRF_K",
    "FIRST_PERSON",
]

#: An item being ranked: a record key, a record id, anything hashable.
K = TypeVar("K", bound=Hashable)

#: The RRF constant of Cormack et al. (2009), also popoto's ContextAssembler's.
RRF_K = 60
#: Words that make a query first-person (about the user's own memories).
FIRST_PERSON = frozenset({"i", "me", "my", "mine", "myself", "we", "us", "our", "ours", "ourselves"})

_WORD = re.compile(r"[^\W_]+(?:['’][^\W_]+)*")
_QUOTED = re.compile(r"\"[^\"]+\"|“[^”]+”|‘[^’]+’|(?<!\w)'[^']+'(?!\w)")
_MONTHS_AND_DAYS = re.compile(
    r"\b(?:Jan(?:uary)?|Feb(?:ruary)?|Mar(?:ch)?|Apr(?:il)?|May|June?|July?|Aug(?:ust)?|"
    r"Sep(?:t(?:ember)?)?|Oct(?:ober)?|Nov(?:ember)?|Dec(?:ember)?|"
    r"Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday)\b"
)


def reciprocal_rank_fusion(
    ranked_lists: Mapping[str, Sequence[K]],
    k: float = RRF_K,
    weights: Mapping[str, float] | None = None,
    limit: int | None = 10,
) -> list[tuple[K, float]]:
    """Fuse ranked lists of ids into one list of ``(id, score)``, best first.

    ``rrf(d) = sum_L w_L / (k + rank_L(d))`` with ranks from :func:`distinct_ranks`; a list
    missing from ``weights`` weighs 1; an id found only in lists of weight 0 is left out.
    Ties keep first-seen order. ``limit`` None returns every id. Raises ValidationError for
    k <= 0, a negative or non-finite weight, or a negative limit.
    """
    if isinstance(k, bool) or not (isinstance(k, (int, float)) and math.isfinite(k) and k > 0):
        raise ValidationError(f"k must be a finite number > 0, not {k!r}")
    _check_limit(limit)
    weights = checked_weights(weights)
    terms: dict[K, list[float]] = {}
    for name, items in ranked_lists.items():
        weight = weights.get(name, 1.0)
        for item, rank in distinct_ranks(items).items():
            terms.setdefault(item, []).append(weight / (k + rank))
    fused = [(item, score) for item, parts in terms.items() if (score := math.fsum(parts)) > 0]
    fused.sort(key=lambda pair: -pair[1])  # stable: equal scores stay in first-seen order
    return fused if limit is None else fused[:limit]


def convex_fusion(
    scored_lists: Mapping[str, Sequence[tuple[K, float]]],
    weights: Mapping[str, float] | None = None,
    limits: Mapping[str, int] | None = None,
    limit: int | None = 10,
) -> list[tuple[K, float]]:
    """Fuse lists of ``(id, score)``, each best first, into one list of ``(id, score)``, best first.

    ``convex(d) = sum_L w_L * s_L(d) / top_L / sum_L w_L`` over the lists whose best score
    ``top_L`` is above 0 (an empty list adds nothing, not even to the sum of weights). For an id
    missing from list L, ``s_L(d)`` is L's lowest score when L holds at least ``limits[L]``
    items (it was cut there: the id scored at most that), else 0. Scores below 0 count as 0.
    A list missing from ``weights`` weighs 1; an id found only in lists of weight 0 is left out;
    an id repeated in a list keeps its first score. Ties keep first-seen order (as
    :func:`reciprocal_rank_fusion`).
    ``limit`` None returns every id. Raises ValidationError for a negative or non-finite weight
    or score, a limit below 1 in ``limits``, or a negative ``limit``.
    """
    _check_limit(limit)
    weights = checked_weights(weights)
    limits = dict(limits or {})
    for name, cut in limits.items():
        positive_int(f"limit of list {name!r}", cut)
    found: dict[K, None] = {}
    columns: list[tuple[float, dict[K, float], float]] = []
    for name, pairs in scored_lists.items():
        scores = _first_scores(name, pairs)
        weight = weights.get(name, 1.0)
        if weight == 0:
            continue
        found.update(dict.fromkeys(scores))
        top = max(scores.values(), default=0.0)
        if top > 0:
            cut = name in limits and len(scores) >= limits[name]
            columns.append((weight, {item: s / top for item, s in scores.items()},
                            min(scores.values()) / top if cut else 0.0))
    fused = [(item, _convex_score(item, columns)) for item in found]
    fused.sort(key=lambda pair: -pair[1])  # stable: equal scores stay in first-seen order
    return fused if limit is None else fused[:limit]


def _convex_score(item: K, columns: list[tuple[float, dict[K, float], float]]) -> float:
    """``sum w * s(item) / sum w`` over columns ``(w, {id: normalised score}, score of a missing id)``;
    0 without columns."""
    if not columns:
        return 0.0
    total = math.fsum(weight for weight, _, _ in columns)
    return math.fsum(weight * scores.get(item, missing) for weight, scores, missing in columns) / total


def _first_scores(name: str, pairs: Sequence[tuple[K, float]]) -> dict[K, float]:
    """``{id: score}`` of one scored list, each id at its first score, negative scores as 0."""
    scores: dict[K, float] = {}
    for item, score in pairs:
        if isinstance(score, bool) or not (isinstance(score, (int, float)) and math.isfinite(score)):
            raise ValidationError(f"score of {item!r} in list {name!r} must be a finite number, not {score!r}")
        scores.setdefault(item, max(float(score), 0.0))
    return scores


def _check_limit(limit: int | None) -> None:
    non_negative_int("limit", limit, none=True)


def checked_weights(weights: Mapping[str, float] | None) -> dict[str, float]:
    """``weights`` as a dict, each a finite number >= 0 (ValidationError otherwise)."""
    checked = dict(weights or {})
    return {name: finite_number(f"weight of list {name!r}", weight, low=0) for name, weight in checked.items()}


def distinct_ranks(items: Sequence[K]) -> dict[K, int]:
    """1-based rank of each distinct item, in list order; a repeated item keeps its first rank
    and takes no rank of its own (``[a, a, b]`` ranks b second)."""
    ranks: dict[K, int] = {}
    for item in items:
        ranks.setdefault(item, len(ranks) + 1)
    return ranks


def _capitalised_after_start(text: str) -> bool:
    """True when a word other than a sentence's first starts with a capital letter."""
    previous_end = None
    for match in _WORD.finditer(text):
        initial = previous_end is None or any(c in ".!?" for c in text[previous_end : match.start()])
        if not initial and match.group()[0].isupper():
            return True
        previous_end = match.end()
    return False


def query_adaptive_weights(query_text: str) -> dict[str, float]:
    """Weights of the ``keyword``, ``vector`` and ``graph`` lists for one query.

    - first-person (I, me, my, we, our, ...): keyword 1, vector 1 — personal recall is often
      paraphrased, so the semantic list helps (a pronoun written in capitals, "US", is an
      acronym unless the whole query is);
    - else a quoted span, a number, a date (digits, month or weekday name) or a capitalised
      word that does not start a sentence: keyword 1, vector 0 — exact tokens (names, ids,
      figures) are what lexical search finds and embeddings blur;
    - else keyword 1, vector 1.

    The graph list always weighs 1. Rule as in popoto's ContextAssembler.
    """
    shouted = query_text.isupper()
    if any(_first_person(word, shouted) for word in _WORD.findall(query_text)):
        return {"keyword": 1.0, "vector": 1.0, "graph": 1.0}
    specific = (
        bool(_QUOTED.search(query_text))
        or any(ch.isdigit() for ch in query_text)
        or bool(_MONTHS_AND_DAYS.search(query_text))
        or _capitalised_after_start(query_text)
    )
    return {"keyword": 1.0, "vector": 0.0 if specific else 1.0, "graph": 1.0}


def _first_person(word: str, shouted: bool) -> bool:
    """A first-person pronoun, not an acronym spelled like one ("US" the country, in a query not
    written all in capitals)."""
    return word.lower() in FIRST_PERSON and (shouted or len(word) == 1 or not word.isupper())


#: What a list given to ``fuse`` may hold (quoted in error messages).
FUSABLE = "records, Redis keys, DbKeys or record ids, each alone or as an (item, score) pair"


def _unscored(item: Any) -> Any:
    """The item of an ``(item, score)`` pair (as Popoto's ``fuse`` and BM25 search give them), else ``item``."""
    if isinstance(item, (tuple, list)) and len(item) == 2:
        score = item[1]
        if not isinstance(score, bool) and isinstance(score, (int, float)):
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
) -> list[Any]:
    """Weighted RRF of named ranked lists of the query's partition.

    ``Memory.query.filter(agent_id="a").fuse(keyword=bm25_hits, vector=vector_hits,
    weights=query_adaptive_weights(text))``. A list holds records, DbKeys, record ids or Redis
    keys (``db_key.redis_key``), each alone or as an ``(item, score)`` pair, best first (as
    Popoto's ``fuse`` takes them; scores are ignored: RRF uses ranks), or is a BM25
    ``SearchResult``. Items of another partition are left out (the tenant filter applies to fused
    lists too). Returns records, best first, each with ``_rrf_score`` and ``_rrf_ranks`` ({list
    name: 1-based rank}); records passed in are returned as they are, ids and keys are loaded in
    one round trip (those with no stored record are dropped).
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
    records = []
    for key, score in fused:
        record = given.get(key)
        if record is not None:
            record._rrf_score = score
            record._rrf_ranks = {name: found[key] for name, found in ranks.items() if key in found}
            records.append(record)
    return records
