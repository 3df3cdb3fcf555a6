"""Retrieval paths shared by the recipes: what a model can search, the pull path and the push path.

Pull (query-driven): an ExistenceFilter pre-check, then BM25 and vector rankings and a
co-occurrence expansion from the best keyword hits, fused by weighted RRF (or by convex score
fusion); or, in composite mode, the weighted composite score fused with the BM25 ranking when
there is query text.
Push (proactive): records whose cyclic score is above the surfacing threshold.
Every search runs inside one partition (the tenant), so no other tenant's record can appear.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

from ..embeddings.matrix import VectorMatrix
from ..fields.bloom import ExistenceFilter
from ..fields.bm25 import BM25Field, search_result
from ..fields.composite import CompositeSearch, Ranked, composite_search
from ..fields.confidence import ConfidenceField
from ..fields.cooccurrence import CoOccurrenceField, Graph
from ..fields.cyclic import CyclicDecayField
from ..fields.embedding import EmbeddingField, VectorSearch
from ..model.dbkey import DbKey
from ..store.connection import server_errors
from ..store.errors import QueryException
from ..store.keys import KeySpace
from ..store.overlap import execute_while
from ..store.scripts import ScriptCall, run_calls
from .candidates import Candidate
from .fusion import RRF_K, checked_weights, convex_fusion, reciprocal_rank_fusion
from .query_weights import query_adaptive_weights

if TYPE_CHECKING:
    from ..model.base import Model

__all__ = [
    "Capabilities",
    "PullPlan",
    "FirstRound",
    "resolve_mode",
    "check_fusion",
    "first_round",
    "pull_candidates",
    "push_candidates",
    "MODES",
    "FUSIONS",
    "LIST_NAMES",
]

MODES = ("auto", "hybrid", "lexical", "semantic", "composite")
#: How a pull fuses its lists: reciprocal rank fusion, or a convex combination of normalised scores.
FUSIONS = ("rrf", "convex")
#: The names of the lists a pull can fuse (the keys of fusion weights).
LIST_NAMES = ("keyword", "vector", "graph", "composite")


def _only(model: type[Model], kind: type) -> Any:
    return next(iter(model._meta.fields_of(kind)), None)


@dataclass(frozen=True)
class Capabilities:
    """The primitives a model declares that retrieval can use (the first of each kind)."""

    bm25: BM25Field | None
    embedding: EmbeddingField | None
    graph: CoOccurrenceField | None
    existence: ExistenceFilter | None
    cyclic: tuple[CyclicDecayField, ...]
    confidence: tuple[ConfidenceField, ...]

    @classmethod
    def of(cls, model: type[Model]) -> Capabilities:
        return cls(
            _only(model, BM25Field), _only(model, EmbeddingField), _only(model, CoOccurrenceField),
            _only(model, ExistenceFilter),
            model._meta.fields_of(CyclicDecayField),
            model._meta.fields_of(ConfidenceField),
        )


def resolve_mode(caps: Capabilities, requested: str, score_weights: dict[str, float]) -> str:
    """The pull mode to run: ``auto`` picks hybrid / lexical / composite from the model's fields."""
    if requested not in MODES:
        raise QueryException(f"unknown retrieval_mode {requested!r}; use one of {list(MODES)}")
    if requested == "hybrid" and (caps.bm25 is None or caps.embedding is None):
        raise QueryException("retrieval_mode='hybrid' needs a BM25Field and an EmbeddingField on the model")
    if requested == "lexical" and caps.bm25 is None:
        raise QueryException("retrieval_mode='lexical' needs a BM25Field on the model")
    if requested == "semantic" and caps.embedding is None:
        raise QueryException("retrieval_mode='semantic' needs an EmbeddingField on the model")
    if requested == "composite" and not score_weights:
        raise QueryException("retrieval_mode='composite' needs score_weights")
    if requested != "auto":
        return requested
    if caps.bm25 is not None:
        return "hybrid" if caps.embedding is not None else "lexical"
    return "semantic" if caps.embedding is not None else "composite"


def check_fusion(fusion: str, weights: dict[str, float] | None) -> dict[str, float] | None:
    """Check a fusion method and its fixed list weights; returns a copy of the weights (None stays None).

    QueryException for a method not in :data:`FUSIONS` or a weight of a list not in
    :data:`LIST_NAMES`; ValidationError for a weight that is not a finite number >= 0.
    """
    if fusion not in FUSIONS:
        raise QueryException(f"unknown fusion {fusion!r}; use one of {list(FUSIONS)}")
    if weights is None:
        return None
    unknown = sorted(set(weights) - set(LIST_NAMES))
    if unknown:
        raise QueryException(f"fusion_weights names unknown list(s) {unknown}; lists are {list(LIST_NAMES)}")
    return checked_weights(weights)


@dataclass(frozen=True)
class PullPlan:
    """How one pull runs: the mode, how many candidates each arm returns, graph expansion depth,
    and how the lists are fused (``fusion_weights`` None: :func:`query_adaptive_weights` in
    hybrid mode, else every list weighs 1)."""

    mode: str
    candidate_limit: int
    fused_limit: int
    propagation_depth: int
    score_weights: dict[str, float]
    graph_seeds: int = 5
    fusion: str = "rrf"
    fusion_weights: dict[str, float] | None = None


def _ranking(
    pairs: list[tuple[str, float]], name: str, found: dict[str, dict[str, float]],
) -> list[tuple[str, float]]:
    """``pairs`` as given, each score also recorded as signal ``name`` of its record in ``found``."""
    for record_id, score in pairs:
        found.setdefault(record_id, {})[name] = score
    return pairs


def _list_weights(plan: PullPlan, text: str, mode: str) -> dict[str, float]:
    """The fusion weights of one pull: the plan's, else query-adaptive in hybrid mode, else none (all 1)."""
    if plan.fusion_weights is not None:
        return plan.fusion_weights
    return query_adaptive_weights(text) if text and mode == "hybrid" else {}


def _fused(plan: PullPlan, lists: dict[str, list[tuple[str, float]]],
           weights: dict[str, float]) -> list[tuple[str, float]]:
    """The pull's lists fused by the plan's method, at most ``fused_limit`` (record id, score).

    For convex fusion every list but the graph's (which holds every node propagation reached)
    was searched with ``candidate_limit``, so a list that long was cut there.
    """
    if plan.fusion == "convex":
        limits = {name: plan.candidate_limit for name in lists if name != "graph"}
        return convex_fusion(lists, weights=weights, limits=limits, limit=plan.fused_limit)
    ranked = {name: [record_id for record_id, _ in pairs] for name, pairs in lists.items()}
    return reciprocal_rank_fusion(ranked, k=RRF_K, weights=weights, limit=plan.fused_limit)


def _graph_ranking(caps: Capabilities, space: KeySpace, seeds: list[str], depth: int) -> list[tuple[str, float]]:
    if caps.graph is None or not seeds or depth <= 0:
        return []
    graph = caps.graph.graph_of(*(DbKey(space, record_id) for record_id in seeds))
    weighted = graph.propagate([DbKey(space, record_id) for record_id in seeds], depth=depth)
    return [(node.record_id, weight) for node, weight in weighted if isinstance(node, DbKey)]


@dataclass
class FirstRound:
    """What the independent first searches found: filter verdict, BM25, vector and composite hits, push,
    and the partition's vector matrix when the vector search ran (current as of this round)."""

    may_exist: bool
    keyword: list[tuple[str, float]] | None
    vector: list[tuple[str, float]] | None
    push: list[Candidate]
    composite: list[tuple[str, float]] | None = None
    graph_empty: bool = False
    matrix: VectorMatrix | None = None


def first_round(
    client: Any, caps: Capabilities, space: KeySpace, text: str, plan: PullPlan,
    threshold: float, push_limit: int, now: float, query: Any,
) -> FirstRound:
    """Run the existence pre-check, the BM25, vector and composite searches and the push scan in ONE
    round trip (the composite one when the pull will rank by it: composite mode, or no query text).

    (The vector search needs one more only when vectors changed elsewhere enter its top hits.)
    The graph's size is read too, so a pull skips the propagation round trip when it has no edge.
    """
    calls: list[ScriptCall] = []
    check_finish, bm25_at, composite_at, graph_at = None, None, None, None
    if caps.existence is not None and text:
        check, check_finish = caps.existence.check_calls(space, [text])
        calls += check
        check_span = (0, len(check))
    if caps.bm25 is not None and text and plan.mode != "semantic":
        bm25_call = caps.bm25.search_call(space, text, plan.candidate_limit)
        if bm25_call is not None:
            bm25_at = len(calls)
            calls.append(bm25_call)
    composite = _composite_search(plan, query, now) if plan.mode == "composite" or not text else None
    if composite is not None:
        composite_at = len(calls)
        calls.append(composite.call)
    if caps.graph is not None and text and plan.mode != "composite" and plan.propagation_depth > 0:
        graph_at = len(calls)
        calls.append(Graph(caps.graph, space).size_call())
    push_at = len(calls)
    calls += [field.ranked_call(space, now, threshold, push_limit) for field in caps.cyclic]
    vector = None
    if caps.embedding is not None and text and plan.mode in ("hybrid", "semantic"):
        vector = VectorSearch(query, text, plan.candidate_limit, caps.embedding.name, hydrate=False)
        vector = None if vector.empty else vector
    replies = _run_first(client, calls, vector)
    may_exist = check_finish(replies[check_span[0]:check_span[1]])[0] if check_finish else True
    keyword = search_result(replies[bm25_at]).ranked if bm25_at is not None else None
    vector_hits = vector.finish(replies[len(calls):]) if vector is not None else None
    ranked = _composite_pairs(composite.ranked(replies[composite_at])) if composite is not None and composite_at is not None else None
    rankings = [
        field.ranked_from(reply, space, now, threshold, push_limit)
        for field, reply in zip(caps.cyclic, replies[push_at:])
    ]
    graph_empty = graph_at is not None and int(replies[graph_at]) == 0
    return FirstRound(may_exist, keyword, vector_hits, push_candidates(space, rankings, push_limit), ranked,
                      graph_empty, vector.matrix if vector is not None else None)


def _run_first(client: Any, calls: list[ScriptCall], vector: Any) -> list[Any]:
    """Send the script calls and the vector search's first request as one pipeline."""
    if vector is None:
        with server_errors(client):
            return run_calls(client, calls)
    try:
        with server_errors(client), client.pipeline(transaction=False) as pipe:
            for call in calls:
                call.queue(pipe)
            vector.queue(pipe)
            return execute_while(client, pipe, vector.rank)[0]  # the scan overlaps the round trip
    except BaseException:
        vector.abandon()
        raise


def pull_candidates(
    model: type[Model], caps: Capabilities, space: KeySpace, text: str, plan: PullPlan, query: Any,
    keyword: list[tuple[str, float]] | None = None, vector: list[tuple[str, float]] | None = None,
    composite: list[tuple[str, float]] | None = None, now: float | None = None, graph_empty: bool = False,
) -> tuple[list[Candidate], str]:
    """Ranked pull candidates (not loaded, but for a vector search run here) and the mode that ran.

    ``keyword``, ``vector`` and ``composite`` are the BM25, vector (id, cosine) and composite
    rankings when the caller already ran them (see :func:`first_round`); ``now`` is
    the clock of a composite ranking run here (None: the current time); ``graph_empty`` (the
    first round saw no edge) skips the graph propagation and its round trip.
    """
    signals: dict[str, dict[str, float]] = {}
    lists: dict[str, list[tuple[str, float]]] = {}
    records: dict[str, Any] = {}
    mode = plan.mode
    weights = _list_weights(plan, text, mode)
    if mode != "composite" and not text:
        mode = "composite"  # nothing to search for: rank by the stored scores alone
    elif mode != "composite":
        if mode != "semantic":
            if keyword is None:
                keyword = cast(BM25Field, caps.bm25).search(space, text, plan.candidate_limit).ranked  # lexical modes need one
            lists["keyword"] = _ranking(keyword, "bm25", signals)
        if mode != "lexical":
            if vector is None:
                hits = query.semantic_search(text, limit=plan.candidate_limit)
                records.update((r._saved_key.record_id, r) for r in hits)
                vector = [(r._saved_key.record_id, r._vector_score) for r in hits]
            lists["vector"] = _ranking(vector, "vector", signals)
        best = lists.get("keyword") or lists.get("vector") or []
        seeds = [record_id for record_id, _ in best[: plan.graph_seeds]] if not graph_empty else []
        lists["graph"] = _ranking(_graph_ranking(caps, space, seeds, plan.propagation_depth), "graph", signals)
        if not lists.get("keyword") and not lists.get("vector"):
            if plan.score_weights:
                warnings.warn(f"{mode} retrieval found nothing for {text!r}; falling back to composite",
                              RuntimeWarning, stacklevel=3)
            mode, lists = "composite", {"keyword": lists["keyword"]} if "keyword" in lists else {}
    if mode == "composite":
        if plan.mode == "composite" and text and caps.bm25 is None:
            warnings.warn("composite retrieval without a BM25Field ignores the query cues",
                          RuntimeWarning, stacklevel=3)
        lists.update(_composite_lists(model, caps, space, text, plan, query, signals, keyword, composite, now))
    candidates = [
        Candidate(key=DbKey(space, record_id), record=records.get(record_id), pull=score,
                  signals={**signals.get(record_id, {}), plan.fusion: score})
        for record_id, score in _fused(plan, lists, weights)
    ]
    return candidates, mode


def _composite_lists(
    model: type[Model], caps: Capabilities, space: KeySpace, text: str, plan: PullPlan, query: Any,
    signals: dict[str, dict[str, float]], keyword: list[tuple[str, float]] | None,
    composite: list[tuple[str, float]] | None, now: float | None,
) -> dict[str, list[tuple[str, float]]]:
    """Composite ranking, plus the BM25 ranking of the query text (each run here unless given)."""
    lists: dict[str, list[tuple[str, float]]] = {}
    if plan.score_weights:
        if composite is None:
            search = _composite_search(plan, query, now)
            composite = _composite_pairs(search.run(model._meta.client)) if search is not None else []
        lists["composite"] = _ranking(composite, "composite", signals)
    if caps.bm25 is not None and text:
        if keyword is None:
            keyword = caps.bm25.search(space, text, plan.candidate_limit).ranked
        lists["keyword"] = _ranking(keyword, "bm25", signals)
    return lists


def _composite_search(plan: PullPlan, query: Any, now: float | None) -> CompositeSearch | None:
    """The composite search of the pull (None without score_weights or candidates: nothing to run)."""
    if not plan.score_weights:
        return None
    return composite_search(query, plan.score_weights, plan.candidate_limit, as_of=now)


def _composite_pairs(ranked: list[Ranked]) -> list[tuple[str, float]]:
    return [(r.record_id, r.score) for r in ranked]


def push_candidates(space: KeySpace, rankings: list[list[tuple[str, float]]], limit: int) -> list[Candidate]:
    """Push candidates from each cyclic field's ranking (a record keeps its best score), best first."""
    best: dict[str, float] = {}
    for ranking in rankings:
        for record_id, score in ranking:
            best[record_id] = max(score, best.get(record_id, score))
    ranked = sorted(best.items(), key=lambda item: (-item[1], item[0]))[:limit]
    return [Candidate(key=DbKey(space, r), push=s, signals={"cyclic": s}) for r, s in ranked]
