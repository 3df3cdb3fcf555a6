"""The frames retrieval: the four stages, sent as searches that share round trips; reads only.

1. Pre-filter: active blocks, not superseded (or valid at ``as_of``: the fact lifecycle's
   ``valid_from`` / ``valid_to`` indexes), last reinforced strictly less than the frame's window ago, carrying a
   tag that matches one of its patterns (a range of the prefix index, not a scan) and of one of
   its categories. A block matching one of the frame's guarantees passes outside the window too.
2. Seeds: the ``top_k * 4`` pre-filtered blocks that best match the query, by the shared
   retrieval stage (:func:`redmem.context._retrieval.retrieve`): the BM25 ranking of the query's
   words (over each block's neighbour ``context``) and the vector ranking of its embedding, fused by convex score fusion with equal weights
   as the ContextAssembler fuses them. A seed's ``similarity`` is its fused score, in (0, 1].
3. Expansion: every pre-filtered 1-hop graph neighbour of a seed, at similarity 0.0 (``was_expanded``).
4. Composite score (:mod:`.scoring`) over seeds, neighbours and guaranteed blocks.

A queryless frame skips stages 2 and 3 (every pre-filtered block is a candidate, similarity 0.0,
weights renormalised without similarity) and embeds nothing. A query none of whose seeds pass
the pre-filter is scored the same way.

Round trips: the shared retrieval (both rankings, and any rider such as the frame's cache read),
then the candidate script ``frames_candidates.lua`` over the fused ranking (stages 1 and 3, every
scoring input and the stored fields of each candidate, so no third read). A ranking too short for
the pre-filter (a frame that keeps few of the partition's blocks) is widened fourfold, one more
round trip each time.
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, cast

import numpy as np

from ...context._retrieval import Fusion, Retrieval, Retrieved, keyword_hits, retrieve
from ...context._superseded import SupersededHit
from ...fields.search_protocol import Hits, Search, run_search, run_searches
from ...lifecycle._timeline import ALL_TIMES, as_epoch
from ...model._dbkey import DbKey
from ...store._keys import KeyKind, KeySpace
from ...store._scripts import ScriptCall
from ._bound import NO_BOUND, ScoreBound
from ._definitions import FrameDefinition
from ._keys import FrameKeyKind
from ._models import Block
from ._prefix_index import pattern_range
from ._scoring import FrameCandidate

__all__ = ["N_SEEDS_MULTIPLIER", "FUSION", "Gathered", "CandidateSearch", "gather", "candidate_call",
           "query_retrieval", "block_keys", "validity_argument"]

#: Seeds per frame: ``top_k`` times this.
N_SEEDS_MULTIPLIER = 4
#: Each ranking first checked against the pre-filter holds this many times the seeds wanted (at
#: least :data:`MIN_RANKED`); a ranking whose every id was checked is widened fourfold.
RANKING_MULTIPLIER = 2
MIN_RANKED = 16
#: How the keyword and vector rankings are fused (the ContextAssembler's default).
FUSION = "convex"
#: The weight of each ranking in the fusion (a ranking not named weighs 1).
FUSION_WEIGHTS: dict[str, float] = {}
#: The stored fields a candidate carries back from the candidate script.
STORED = ("content", "tags", "category", "status")
_STORED_COUNT = len(STORED)


@dataclass
class Gathered:
    """What stages 1-3 found: the active hours now, the candidates (seeds, then neighbours, then
    guaranteed blocks reached neither way), the guaranteed ids, the contradicting pairs among
    the candidates, whether the query found no seed, each candidate's stored fields as read
    (``stored``: the :data:`STORED` entries as the reply holds them, in that order, decoded
    only for the blocks a frame keeps: :meth:`fields_of`), the ``seeds``, the pairs (seed, candidate) an edge joins (``linked``), and
    the ranked blocks left out as superseded that would otherwise have been seeds."""

    now_hours: float
    candidates: list[FrameCandidate]
    guaranteed: list[str]
    pairs: list[tuple[str, str]]
    no_seed: bool = False
    riders: list[Any] = field(default_factory=list)
    stored: dict[str, Sequence[bytes | str | None]] = field(default_factory=dict)
    linked: list[tuple[str, str]] = field(default_factory=list)
    seeds: frozenset[str] = frozenset()
    superseded: list[SupersededHit] = field(default_factory=list)

    def fields_of(self, block_id: str) -> dict[str, Any]:
        """The candidate's :data:`STORED` fields, decoded (an entry the hash lacks is left out)."""
        fields = Block._meta.fields
        return {name: fields[name].decode(_bytes(raw)) for name, raw in zip(STORED, self.stored[block_id]) if raw}

    def has_content(self, block_id: str) -> bool:
        """Whether the candidate's hash held a ``content`` (a block deleted meanwhile holds none)."""
        return bool(self.stored[block_id][0])

    def linked_among(self, block_ids: Sequence[str]) -> list[tuple[str, str]]:
        """The pairs of ``block_ids`` that may be joined by an edge: a pair with a seed when the
        seed's edges (read by the expansion) hold it, every pair of two other blocks (not looked up)."""
        among = set(block_ids)
        seeded = {frozenset(pair) for pair in self.linked if among.issuperset(pair)}
        return [(a, b) for a, b in itertools.combinations(block_ids, 2)
                if frozenset((a, b)) in seeded or not self.seeds & {a, b}]


@functools.lru_cache(maxsize=1024)
def block_keys(space: KeySpace) -> Mapping[str, str]:
    """The partition-level keys the frames scripts read and write (built once per key space:
    every frame and write asks for them)."""
    graph = Block.edges.graph(agent_id=space.partition_values[0]).keys
    return MappingProxyType({
        "clock": space.key(FrameKeyKind.FRAME_CLOCK),
        "window": space.key(KeyKind.SORTED, "window"),
        "tags": Block.tag_index.index_key(space),
        "categories": Block.category_index.index_key(space),
        "adjacency": graph.adjacency,
        "degrees": graph.degrees,
        "confidence": Block.confidence.index_key(space),
        "count": space.key(KeyKind.SORTED, "reinforcement_count"),
        "lambda": space.key(KeyKind.SORTED, "decay_lambda"),
        "contradictions": space.key(FrameKeyKind.CONTRADICTIONS),
        "version": space.key(FrameKeyKind.FRAME_VERSION),
        "definitions": space.key(FrameKeyKind.FRAME_DEFINITIONS),
        "valid_to": space.key(KeyKind.SORTED, "valid_to"),
        "valid_from": space.key(KeyKind.SORTED, "valid_from"),
    })


def _ranges(patterns: Sequence[str] | None) -> list[str]:
    bounds = [bound for pattern in patterns or () for bound in pattern_range(pattern)]
    return [str(len(bounds) // 2), *bounds]


def candidate_call(
    space: KeySpace, definition: FrameDefinition, now: float, seeds: int, ranked: Mapping[str, float],
    as_of: str = "", bound: ScoreBound = NO_BOUND,
) -> ScriptCall:
    """The ``frames_candidates.lua`` call of one frame at wall time ``now`` (``seeds`` 0: queryless;
    ``ranked``: the fused ranking, each id's score, best first; ``as_of`` as :func:`validity_argument`
    writes it; ``bound``: which expanded blocks' fields to skip, :mod:`._bound`)."""
    keys = block_keys(space)
    names = ("clock", "window", "tags", "categories", "adjacency", "degrees", "confidence", "contradictions",
             "valid_to", "valid_from", "count", "lambda")
    filters = definition.filters
    args = [repr(now), repr(filters.search_window_hours), seeds, repr(Block.confidence.initial_confidence),
            space.record("") + ":", as_of, *bound.arguments(), len(STORED), *STORED,
            *_ranges(filters.tag_patterns), *_ranges(filters.categories), *_ranges(definition.guarantees),
            len(ranked), *map(repr, ranked.values()), *ranked]
    return ScriptCall("frames_candidates", [keys[name] for name in names], args)


class CandidateSearch:
    """Stages 1 and 3 as one search of the protocol: the candidate script over a ranking of ids."""

    def __init__(self, space: KeySpace, definition: FrameDefinition, now: float, seeds: int,
                 ranked: Mapping[str, float] = MappingProxyType({}), as_of: str = "",
                 bound: ScoreBound = NO_BOUND) -> None:
        self.space, self.definition, self.now, self.seeds, self.ranked = space, definition, now, seeds, ranked
        self.as_of, self.bound = as_of, bound

    def calls(self) -> list[ScriptCall]:
        return [candidate_call(self.space, self.definition, self.now, self.seeds, self.ranked, self.as_of,
                               self.bound)]

    def work(self) -> None:
        """Nothing to rank in the process."""

    def finish(self, replies: list[Any]) -> Any:
        return replies[0]

    def abandon(self) -> None:
        """Nothing held."""


def query_retrieval(space: KeySpace, text: str, vector: np.ndarray, limit: int,
                    riders: Sequence[Search[Any]] = ()) -> Retrieval:
    """Stage 2 as the shared retrieval: the BM25 and vector rankings of ``limit`` ids each, fused."""
    lists: dict[str, Search[Hits]] = {"keyword": keyword_hits(Block.keywords, space, text, limit)}
    searcher = Block.embedding.searcher(space, vector, limit)
    if not searcher.empty:
        lists["vector"] = searcher
    return Retrieval(space, lists, Fusion(FUSION, dict(FUSION_WEIGHTS), limit, 2 * limit), "hybrid", riders=riders)


def gather(
    client: Any, space: KeySpace, definition: FrameDefinition, now: float, top_k: int,
    query: tuple[str, np.ndarray] | None = None, riders: Sequence[Search[Any]] = (), as_of: str = "",
    bound: ScoreBound = NO_BOUND,
) -> Gathered:
    """Stages 1-3 of one frame for ``query`` (its text and vector; None: queryless). ``riders``
    share the first round trip; their answers are returned. ``as_of``: the blocks valid when
    (:func:`validity_argument`; "": current blocks only); ``bound``: the expanded blocks whose
    stored fields the script may skip (:mod:`._bound`)."""
    if query is None:
        answers = run_searches(client, [CandidateSearch(space, definition, now, 0, as_of=as_of), *riders])
        parsed = _parsed(space, answers[0], {})
        parsed.riders = answers[1:]
        return parsed
    text, vector = query
    seeds = top_k * N_SEEDS_MULTIPLIER
    limit = max(seeds * RANKING_MULTIPLIER, MIN_RANKED)
    retrieved = retrieve(client, query_retrieval(space, text, vector, limit, riders))
    rider_answers = retrieved.riders
    while True:
        fused = _fused(retrieved)
        reply = run_search(client, CandidateSearch(space, definition, now, seeds, fused, as_of, bound))
        cut = any(len(hits) >= limit for hits in retrieved.lists.values())
        if len(reply[1]) < seeds and cut and int(reply[6]) >= len(fused):  # every ranked id checked, more may pass
            limit *= 4
            retrieved = retrieve(client, query_retrieval(space, text, vector, limit))
            continue
        break
    if not reply[1]:  # no seed: the pre-filtered blocks, as without a query
        parsed = _parsed(space, run_search(client, CandidateSearch(space, definition, now, 0, as_of=as_of)), {})
        parsed.no_seed = True
    else:
        parsed = _parsed(space, reply, fused, seeds)
    parsed.riders = rider_answers
    return parsed


def validity_argument(as_of: Any) -> str:
    """The candidate script's ``as_of``: "" for None (current blocks: none superseded),
    ``"all"`` for :data:`~redmem.lifecycle.ALL_TIMES` (every block), else epoch seconds (a number
    or a datetime: the blocks valid then)."""
    if as_of is None:
        return ""
    if as_of == ALL_TIMES:
        return ALL_TIMES
    return repr(as_epoch(as_of))


def _fused(retrieved: Retrieved) -> dict[str, float]:
    """Each fused id's score, best first (the ranking alone: no pull candidate built)."""
    return dict(retrieved.ranking)


def _parsed(space: KeySpace, reply: Any, similarity: dict[str, float], seeds_wanted: int = 0) -> Gathered:
    """The candidate script's reply as candidates (with their fused score when they were seeds),
    and the blocks it left out as superseded (their place in the fused ranking, their fused score).
    The candidates' numbers come as one string, five a candidate (last reinforced, confidence,
    reinforcement count, decay lambda, degree), read with ``float`` as each stored string."""
    seeds, expanded = _texts(reply[1]), _texts(reply[2])
    ids = seeds + expanded + _texts(reply[9])
    numbers = list(map(float, reply[10].split()))
    first_expanded, first_extra = len(seeds), len(seeds) + len(expanded)
    candidates = [
        FrameCandidate(block_id, confidence, last, decay_lambda, int(count), degree,
                       similarity.get(block_id, 0.0) if n < first_expanded else 0.0, first_expanded <= n < first_extra)
        for n, (block_id, last, confidence, count, decay_lambda, degree) in enumerate(
            zip(ids, numbers[0::5], numbers[1::5], numbers[2::5], numbers[3::5], numbers[4::5]))]
    data = reply[4]
    stored = {block_id: data[_STORED_COUNT * n: _STORED_COUNT * (n + 1)] for n, block_id in enumerate(ids)}
    pairs, linked = (list(zip(flat[0::2], flat[1::2])) for flat in (_texts(reply[5]), _texts(reply[8])))
    out = reply[7]
    superseded = [SupersededHit(DbKey(space, _text(out[i])), {"fused": int(out[i + 2])},
                                similarity.get(_text(out[i]), 0.0), seeds_wanted, _text(out[i + 1]) or None)
                  for i in range(0, len(out), 3)]
    return Gathered(float(reply[0]), candidates, _texts(reply[3]), pairs, stored=stored, linked=linked,
                    seeds=frozenset(seeds), superseded=superseded)


def _text(value: bytes | str) -> str:
    """A reply's string (replies come as bytes, or as str through a decoding client)."""
    return value.decode() if isinstance(value, bytes) else value


def _texts(values: Sequence[bytes | str]) -> list[str]:
    """A reply's strings, decoded as :func:`_text` decodes each (one client: all bytes or all str)."""
    if values and isinstance(values[0], bytes):
        return [value.decode() for value in cast(Sequence[bytes], values)]
    return list(cast(Sequence[str], values))


def _bytes(value: bytes | str) -> bytes:
    return value.encode() if isinstance(value, str) else value
