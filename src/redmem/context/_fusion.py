"""List fusion: weighted reciprocal rank fusion (RRF) and convex score fusion, pure functions.

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

The functions here do no I/O; ``Model.query.filter(...).fuse(...)``
(:mod:`~redmem.context._record_fusion`) applies RRF to records, and
:func:`~redmem.context._query_weights.query_adaptive_weights` weighs the lists for a query.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping, Sequence
from typing import TypeVar

from ..store._errors import ValidationError
from ..store._validation import finite_number, is_finite_number, non_negative_int, positive_int

__all__ = [
    "reciprocal_rank_fusion",
    "convex_fusion",
    "checked_weights",
    "distinct_ranks",
    "RRF_K",
]

#: An item being ranked: a record key, a record id, anything hashable.
K = TypeVar("K", bound=Hashable)

#: The RRF constant of Cormack et al. (2009), also popoto's ContextAssembler's.
RRF_K = 60


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
    if not (is_finite_number(k) and k > 0):
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
    total = math.fsum(weight for weight, _, _ in columns)
    fused = [(item, _convex_score(item, columns, total)) for item in found]
    fused.sort(key=lambda pair: -pair[1])  # stable: equal scores stay in first-seen order
    return fused if limit is None else fused[:limit]


def _convex_score(item: K, columns: list[tuple[float, dict[K, float], float]], total: float) -> float:
    """``sum w * s(item) / total`` over columns ``(w, {id: normalised score}, score of a missing id)``,
    ``total`` the columns' ``sum w`` (summed once per fusion, not per id); 0 without columns."""
    if not columns:
        return 0.0
    return math.fsum(weight * scores.get(item, missing) for weight, scores, missing in columns) / total


def _first_scores(name: str, pairs: Sequence[tuple[K, float]]) -> dict[K, float]:
    """``{id: score}`` of one scored list, each id at its first score, negative scores as 0."""
    scores: dict[K, float] = {}
    for item, score in pairs:
        if not is_finite_number(score):
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
