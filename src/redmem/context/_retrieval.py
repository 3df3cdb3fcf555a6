"""Retrieval shared by the recipes: searches sent together, the graph expanded, the lists fused.

:func:`retrieve` runs a :class:`Retrieval`: any set of searches (the protocol of
:mod:`redmem.fields.search_protocol`) in ONE round trip; then, only when there is something to
do, a spreading-activation expansion of the co-occurrence graph from the best hits and a
fallback set of searches (one round trip each); then a fusion of the ranked lists by weighted
reciprocal rank fusion or by convex score fusion (:mod:`redmem.context._fusion`).

The assembler's pull (query-driven) is :func:`plan_pull`: an ExistenceFilter pre-check, BM25 and
vector rankings and a co-occurrence expansion from the best keyword hits; or, in composite mode,
the weighted composite score fused with the BM25 ranking when there is query text; the mode
decided once, before anything runs. Its push (proactive) scan rides along: records whose cyclic
score is above the surfacing threshold (:func:`push_candidates`).
Every search runs inside one partition (the tenant), so no other tenant's record can appear.

A filter (``where``, :mod:`redmem.model._filters`) rides inside every search of a pull: the BM25,
composite and push scripts and the graph expansion check each candidate against the filter's
index keys in the script; the vector search lists the matching ids in the same request and
scores only their rows. No round trip is added.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cached_property, partial
from typing import TYPE_CHECKING, Any

from ..embeddings._matrix import VectorMatrix
from ..fields._bloom import ExistenceFilter
from ..fields._bm25 import BM25Field, SearchResult
from ..fields._composite import Ranked, composite_search
from ..fields._confidence import ConfidenceField
from ..fields._cooccurrence import CoOccurrenceField, Graph
from ..fields._cyclic import CyclicDecayField
from ..fields._embedding import EmbeddingField
from ..fields._embedding_search import VectorSearch
from ..fields.search_protocol import Hits, Mapped, Search, run_search, run_searches
from ..model._dbkey import DbKey
from ..model._filters import Where
from ..store._errors import QueryException
from ..store._keys import KeySpace
from ._candidates import Candidate
from ._fusion import RRF_K, checked_weights, convex_fusion, reciprocal_rank_fusion

if TYPE_CHECKING:
    from ..model._base import Model
    from ..model._query import Query

__all__ = [
    "Capabilities",
    "PullPlan",
    "Fusion",
    "Expansion",
    "Fallback",
    "SeededLists",
    "Retrieval",
    "Retrieved",
    "retrieve",
    "plan_pull",
    "keyword_hits",
    "composite_hits",
    "resolve_mode",
    "check_fusion",
    "push_candidates",
    "MODES",
    "FUSIONS",
    "LIST_NAMES",
    "GRAPH_LIST",
    "KEYWORD_LIST",
    "DIRECT_LISTS",
    "MATCH_SIGNAL",
    "match_scores",
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
    and how the lists are fused (``fusion_weights`` None: every list weighs 1)."""

    mode: str
    candidate_limit: int
    fused_limit: int
    propagation_depth: int
    score_weights: dict[str, float]
    graph_seeds: int = 5
    fusion: str = "convex"
    fusion_weights: dict[str, float] | None = None


#: The list the graph expansion adds.
GRAPH_LIST = "graph"
#: The BM25 list (the one the ExistenceFilter pre-check speaks for).
KEYWORD_LIST = "keyword"
#: The lists whose hits are direct evidence for the query (the graph's are reached from them).
DIRECT_LISTS = ("keyword", "vector")
#: The signal holding a candidate's :func:`match_scores` value.
MATCH_SIGNAL = "match"
#: The signal a list's scores are recorded as on each candidate, when not the list's own name.
SIGNAL_OF_LIST = {"keyword": "bm25"}
IGNORED_CUES = "composite retrieval without a BM25Field ignores the query cues"


@dataclass(frozen=True)
class Fusion:
    """How ranked lists become one: ``method`` (rrf or convex), the fixed ``weights`` of the lists
    (a list not named weighs 1), the ``list_limit`` each searched list was cut at (convex: an item
    missing from a list that long scored at most its lowest), at most ``limit`` fused."""

    method: str
    weights: dict[str, float]
    list_limit: int
    limit: int


@dataclass(frozen=True)
class Expansion:
    """Spreading activation over ``graph``, ``depth`` hops, from the ``seeds`` best hits of the
    first list that found anything; skipped when the graph (sized in the first round trip) has no
    edge. With ``where`` only records that pass it are returned (energy flows through every node)."""

    graph: Graph
    seeds: int
    depth: int
    where: Where | None = None


@dataclass(frozen=True)
class Fallback:
    """Searches to run instead when every list came back empty (one more round trip): ``lists()``
    builds them (only then), their lists are fused in place of the first ones, ``mode`` labels
    what ran, ``warning`` is said."""

    lists: Callable[[], dict[str, Search[Hits]]]
    mode: str
    warning: str | None = None


@dataclass(frozen=True)
class SeededLists:
    """Lists whose searches depend on the first round trip (seed-then-expand): ``build(lists,
    riders)`` gets the first lists' and the riders' answers and returns the searches to send, by
    list name, in one more round trip (none when it returns nothing); their lists are fused with
    the others."""

    build: Callable[[dict[str, Hits], list[Any]], dict[str, Search[Hits]]]


@dataclass(frozen=True)
class Retrieval:
    """One retrieval of partition ``space``, decided before anything runs (see :func:`retrieve`).

    ``lists``: the ranked lists to fuse, by name, in fusion order (ties keep first-seen order),
    fused by ``fusion``. ``existence``: a pre-check sent with them; when it calls every text
    definitely missing, nothing is pulled. ``expansion`` adds the graph list, ``fallback``
    replaces every list when all came back empty. ``riders``: searches sharing the first round
    trip whose answers are returned as they are (the push scan). ``seeded`` adds lists built from
    the first round trip's answers. ``mode`` labels what runs; ``warnings`` are said when the pull
    runs.
    """

    space: KeySpace
    lists: dict[str, Search[Hits]]
    fusion: Fusion
    mode: str = ""
    existence: Search[list[bool]] | None = None
    expansion: Expansion | None = None
    fallback: Fallback | None = None
    riders: Sequence[Search[Any]] = ()
    warnings: tuple[str, ...] = ()
    seeded: SeededLists | None = None


@dataclass
class Retrieved:
    """What :func:`retrieve` found: the fused ranking (record id, fused score), best first; the
    label of what ran; the lists fused; the riders' answers, in order; the warnings for the
    caller to give; the vector matrix a vector list searched (current as of this retrieval); the
    retrieval asked; and
    :attr:`candidates`, the ranking as pull candidates (records not loaded), built on first use:
    a caller that needs only the ranking (the frames recipe) builds none."""

    ranking: Hits
    mode: str
    lists: dict[str, Hits]
    riders: list[Any]
    warnings: list[str]
    matrix: VectorMatrix | None
    retrieval: Retrieval

    @cached_property
    def candidates(self) -> list[Candidate]:
        """Each ranked record with its score in every list as a signal (:func:`_candidates`)."""
        return _candidates(self.retrieval, self.lists, self.ranking)


def retrieve(client: Any, retrieval: Retrieval) -> Retrieved:
    """Run ``retrieval``: every search (the pre-check, the lists, the graph's size, the riders) in
    ONE round trip; then the graph expansion, the seeded lists and the fallback, one round trip
    each when they have something to do; then the fusion. Each candidate's signals are its score in each list
    (the keyword list's as ``bm25``) and the fused score (as the fusion method's name).
    """
    gate = [] if retrieval.existence is None else [retrieval.existence]
    size = [] if retrieval.expansion is None else [retrieval.expansion.graph.size_searcher()]
    answers = iter(run_searches(client, [*gate, *retrieval.lists.values(), *size, *retrieval.riders]))
    may_exist = any(next(answers)) if gate else True
    lists: dict[str, Hits] = {name: next(answers) for name in retrieval.lists}
    edges = next(answers) if size else 0
    riders = list(answers)
    matrix = next((s.matrix for s in retrieval.lists.values() if isinstance(s, VectorSearch)), None)
    if not may_exist:  # no term of the query occurs in this partition: the keyword list has nothing to say
        lists.pop(KEYWORD_LIST, None)
        if not any(lists.values()):  # and no other arm found anything: the one check was the whole cost
            return Retrieved([], retrieval.mode, {}, riders, [], matrix, retrieval)
    mode, warnings = retrieval.mode, list(retrieval.warnings)
    if retrieval.expansion is not None:
        lists[GRAPH_LIST] = _expanded(client, retrieval.expansion, retrieval.space, lists, edges)
    if retrieval.seeded is not None:
        more = retrieval.seeded.build(lists, riders)
        lists.update(zip(more, run_searches(client, list(more.values()))) if more else ())
    fallback = retrieval.fallback
    if fallback is not None and not any(lists.values()):
        searches = fallback.lists()
        lists = dict(zip(searches, run_searches(client, list(searches.values()))))
        mode = fallback.mode
        warnings += [fallback.warning] if fallback.warning else []
    return Retrieved(_ranking(retrieval, lists), mode, lists, riders, warnings, matrix, retrieval)


def _expanded(client: Any, expansion: Expansion, space: KeySpace, lists: dict[str, Hits], edges: int) -> Hits:
    """The graph list: the records reached from the seeds (none when the graph has no edge)."""
    best = next((hits for hits in lists.values() if hits), [])
    if not edges or not best:
        return []
    seeds = [DbKey(space, record_id) for record_id, _ in best[: expansion.seeds]]
    reached = run_search(client, expansion.graph.searcher(seeds, depth=expansion.depth, where=expansion.where))
    return [(node.record_id, weight) for node, weight in reached if isinstance(node, DbKey)]


#: The signals of the lists whose hits a search found (not only the graph expansion).
_DIRECT_SIGNALS = frozenset(SIGNAL_OF_LIST.get(name, name) for name in LIST_NAMES if name != GRAPH_LIST)


def _ranking(retrieval: Retrieval, lists: dict[str, Hits]) -> Hits:
    """The lists fused (:func:`_fused`), records only the graph expansion reached after every
    record a search found, in fused order among themselves: a neighbour of a hit is no evidence
    for the query, so it never outranks a direct hit."""
    fused = _fused(retrieval.fusion, lists)
    direct = {record_id for name, hits in lists.items() if SIGNAL_OF_LIST.get(name, name) in _DIRECT_SIGNALS
              for record_id, _ in hits}
    return [pair for pair in fused if pair[0] in direct] + [pair for pair in fused if pair[0] not in direct]


def _candidates(retrieval: Retrieval, lists: dict[str, Hits], ranking: Hits) -> list[Candidate]:
    """The ``ranking`` of ``lists`` (:func:`_ranking`), each record with its score in every list as
    a signal; when a keyword or vector list ran, also its ``match`` (:func:`match_scores`)."""
    signals: dict[str, dict[str, float]] = {}
    for name, hits in lists.items():
        for record_id, score in hits:
            signals.setdefault(record_id, {})[SIGNAL_OF_LIST.get(name, name)] = score
    matches = match_scores(lists)
    method = retrieval.fusion.method
    return [
        Candidate(key=DbKey(retrieval.space, record_id), pull=score,
                  signals={**signals.get(record_id, {}), method: score,
                           **({MATCH_SIGNAL: matches.get(record_id, 0.0)} if matches is not None else {})})
        for record_id, score in ranking
    ]


def match_scores(lists: dict[str, Hits]) -> dict[str, float] | None:
    """How well each record matches the query, in [0, 1]: the keyword and vector lists that found
    anything, each score divided by its list's best, averaged with equal weights (missing: 0)::

        match(d) = (1 / |L|) * sum over L in {keyword, vector} with hits of  s_L(d) / top_L

    None when neither list ran or found anything (composite ranking answers no query). It is
    the fusion-independent measure the relevance floor reads (``min_relevance``).
    """
    direct = [hits for name in DIRECT_LISTS if (hits := lists.get(name))]
    if not direct:
        return None
    sums: dict[str, float] = {}
    counted = 0
    for hits in direct:  # the searches' own scores: finite, best first (no check needed, unlike convex_fusion)
        top = hits[0][1]
        first: dict[str, float] = {}
        for record_id, score in hits:
            first.setdefault(record_id, max(score, 0.0) / top if top > 0 else 0.0)
            sums.setdefault(record_id, 0.0)
        counted += top > 0  # a list with no positive score is left out, as convex fusion leaves it
        for record_id, share in first.items():
            sums[record_id] += share
    return {record_id: total / counted if counted else 0.0 for record_id, total in sums.items()}


def _fused(fusion: Fusion, lists: dict[str, Hits]) -> Hits:
    """The lists fused by ``fusion``'s method, at most ``fusion.limit`` (record id, score).

    The graph list weighs 0 unless ``fusion.weights`` names it: a record's neighbours are no
    evidence that it answers the query, so they do not lift a weaker hit past a stronger one.
    The records only the graph reached (left out by a weight of 0) follow the fused ones, in
    activation order, each scored below the lowest fused score.
    For convex fusion every list but the graph's (which holds every node propagation reached)
    was searched with ``list_limit``, so a list that long was cut there.
    """
    weights = {GRAPH_LIST: 0.0, **fusion.weights}
    if fusion.method == "convex":
        limits = {name: fusion.list_limit for name in lists if name != GRAPH_LIST}
        fused = convex_fusion(lists, weights=weights, limits=limits, limit=fusion.limit)
    else:
        ranked = {name: [record_id for record_id, _ in hits] for name, hits in lists.items()}
        fused = reciprocal_rank_fusion(ranked, k=RRF_K, weights=weights, limit=fusion.limit)
    return fused + _reached_only(lists.get(GRAPH_LIST, []), fused)[: fusion.limit - len(fused)]


def _reached_only(graph: Hits, fused: Hits) -> Hits:
    """The graph's records missing from ``fused``, in activation order, scored
    ``lowest fused score * activation / (2 * best activation)``: below every fused record."""
    found = {record_id for record_id, _ in fused}
    reached = [(record_id, activation) for record_id, activation in graph if record_id not in found and activation > 0]
    if not reached:
        return []
    lowest = min((score for _, score in fused), default=1.0)
    top = max(activation for _, activation in reached)
    return [(record_id, lowest * activation / (2 * top)) for record_id, activation in reached]


# -- the assembler's pull --------------------------------------------------------------------------
def plan_pull(
    caps: Capabilities, query: Query, text: str, plan: PullPlan, now: float, riders: Sequence[Search[Any]] = (),
    where: Where | None = None,
) -> Retrieval:
    """The retrieval of one pull, its mode decided here: ``plan.mode``, or composite without query text.

    Hybrid, lexical and semantic modes send the ExistenceFilter pre-check (when the model has
    one), the BM25 and/or vector search and the graph's size with ``riders``; when the searches
    find nothing they fall back to composite (with a warning when there are ``score_weights``).
    Composite mode sends the pre-check, the composite search (given ``score_weights``) and the
    BM25 search of the query text. ``now`` is the clock of the composite ranking. ``where``
    filters every list (the riders carry their own).
    """
    space = query.partition()
    mode = plan.mode if text else "composite"
    fusion = Fusion(plan.fusion, _list_weights(plan), plan.candidate_limit, plan.fused_limit)
    existence = caps.existence.searcher(space, [text]) if caps.existence is not None and text else None
    if mode == "composite":
        return Retrieval(space, _composite_lists(caps, query, text, plan, now, where, keyword=True), fusion, mode,
                         existence, riders=riders, warnings=(IGNORED_CUES,) if text and caps.bm25 is None else ())
    lists: dict[str, Search[Hits]] = {}
    if mode != "semantic" and caps.bm25 is not None:
        lists["keyword"] = keyword_hits(caps.bm25, space, text, plan.candidate_limit, where)
    if mode != "lexical" and caps.embedding is not None:
        vector = caps.embedding.searcher(space, text, plan.candidate_limit, where)
        if not vector.empty:
            lists["vector"] = vector
    expansion = None
    if caps.graph is not None and plan.propagation_depth > 0:
        expansion = Expansion(Graph(caps.graph, space), plan.graph_seeds, plan.propagation_depth, where)
    warning = f"{mode} retrieval found nothing for {text!r}; falling back to composite" if plan.score_weights else None
    fallback = Fallback(partial(_composite_lists, caps, query, text, plan, now, where, keyword=mode == "semantic"),
                        "composite", warning)
    return Retrieval(space, lists, fusion, mode, existence, expansion, fallback, riders)


def _list_weights(plan: PullPlan) -> dict[str, float]:
    """The fusion weights of one pull: the plan's, else none (every list weighs 1).

    Equal weights are the measured default (docs/benchmarks.md, issue 26): the query-adaptive
    rule of :func:`~redmem.context._query_weights.query_adaptive_weights` gives the vector list
    weight 0 for any query naming a person or a date, which made hybrid rank as lexical does.
    """
    return plan.fusion_weights if plan.fusion_weights is not None else {}


def _composite_lists(
    caps: Capabilities, query: Query, text: str, plan: PullPlan, now: float, where: Where | None, keyword: bool,
) -> dict[str, Search[Hits]]:
    """The composite ranking (given score_weights), and with ``keyword`` the BM25 ranking of the query text."""
    lists: dict[str, Search[Hits]] = {}
    composite = (composite_hits(query, plan.score_weights, plan.candidate_limit, now, where)
                 if plan.score_weights else None)
    if composite is not None:
        lists["composite"] = composite
    if keyword and caps.bm25 is not None and text:
        lists["keyword"] = keyword_hits(caps.bm25, query.partition(), text, plan.candidate_limit, where)
    return lists


def keyword_hits(bm25: BM25Field, space: KeySpace, text: str, limit: int, where: Where | None = None) -> Search[Hits]:
    """The BM25 search of ``text`` as a ranked list (of the records passing ``where``)."""
    return Mapped(bm25.searcher(space, text, limit, where=where), _bm25_hits)


def composite_hits(
    query: Query, weights: dict[str, float], limit: int, now: float, where: Where | None = None,
) -> Search[Hits] | None:
    """The composite search of the query's partition as a ranked list (None for ``limit`` 0)."""
    search = composite_search(query, weights, limit, as_of=now, where=where)
    return None if search is None else Mapped(search, _composite_pairs)


def _bm25_hits(result: SearchResult) -> Hits:
    return result.ranked


def _composite_pairs(ranked: list[Ranked]) -> Hits:
    return [(r.record_id, r.score) for r in ranked]


def push_candidates(space: KeySpace, rankings: list[list[tuple[str, float]]], limit: int) -> list[Candidate]:
    """Push candidates from each cyclic field's ranking (a record keeps its best score), best first."""
    best: dict[str, float] = {}
    for ranking in rankings:
        for record_id, score in ranking:
            best[record_id] = max(score, best.get(record_id, score))
    ranked = sorted(best.items(), key=lambda item: (-item[1], item[0]))[:limit]
    return [Candidate(key=DbKey(space, r), push=s, signals={"cyclic": s}) for r, s in ranked]
