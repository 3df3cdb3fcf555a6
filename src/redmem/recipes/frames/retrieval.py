"""The frames retrieval: the four stages, sent as searches that share round trips; reads only.

1. Pre-filter: active blocks last reinforced strictly less than the frame's window ago, carrying a
   tag that matches one of its patterns (a range of the prefix index, not a scan) and of one of
   its categories. A block matching one of the frame's guarantees passes outside the window too.
2. Vector seeds: the ``top_k * 4`` pre-filtered blocks of highest cosine with the query (cosine > 0).
3. Expansion: every pre-filtered 1-hop graph neighbour of a seed, at similarity 0.0 (``was_expanded``).
4. Composite score (:mod:`.scoring`) over seeds, neighbours and guaranteed blocks.

A queryless frame skips stages 2 and 3 (every pre-filtered block is a candidate, similarity 0.0,
weights renormalised without similarity) and embeds nothing. A query none of whose seeds pass
the pre-filter with a positive cosine is scored the same way.

Round trips: the query's vector search (``EmbeddingField.searcher``) and the candidate script
``frames_candidates.lua`` (stages 1-3 and every scoring input, from partition-level indexes)
share one; the vector ranking is taken from the process's cached matrix before the pipeline is
sent and checked against the server's version in its reply, so a matrix that moved (a write
since the last search) costs one more. Loading the chosen blocks' content is the second.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ...fields.embedding_search import VectorSearch
from ...fields.search_protocol import Search, run_search, run_searches
from ...store.keys import KeyKind, KeySpace
from ...store.scripts import ScriptCall
from .definitions import FrameDefinition
from .model import DECAY_TIERS, Block
from .prefix_index import pattern_range
from .scoring import Candidate

__all__ = ["N_SEEDS_MULTIPLIER", "Gathered", "CandidateSearch", "gather", "candidate_call", "block_keys"]

#: Vector seeds per frame: ``top_k`` times this.
N_SEEDS_MULTIPLIER = 4
#: The vector ranking first checked against the pre-filter holds this many times the seeds wanted
#: (at least :data:`MIN_RANKED`); a ranking whose every id failed is widened fourfold.
RANKING_MULTIPLIER = 2
MIN_RANKED = 16


@dataclass
class Gathered:
    """What stages 1-3 found: the active hours now, the candidates (seeds, then neighbours, then
    guaranteed blocks reached neither way), the guaranteed ids, the contradicting pairs among
    the candidates, and whether the query found no seed."""

    now_hours: float
    candidates: list[Candidate]
    guaranteed: list[str]
    pairs: list[tuple[str, str]]
    no_seed: bool = False
    riders: list[Any] = field(default_factory=list)


def block_keys(space: KeySpace) -> dict[str, str]:
    """The partition-level keys the frames scripts read and write."""
    graph = Block.edges.graph(agent_id=space.partition_values[0]).keys
    return {
        "clock": space.key(KeyKind.FRAME_CLOCK),
        "window": space.key(KeyKind.SORTED, "window"),
        "tags": Block.tag_index.index_key(space),
        "categories": Block.category_index.index_key(space),
        "adjacency": graph[1],
        "degrees": graph[3],
        "confidence": Block.confidence.index_key(space),
        "count": space.key(KeyKind.SORTED, "reinforcement_count"),
        "lambda": space.key(KeyKind.SORTED, "decay_lambda"),
        "contradictions": space.key(KeyKind.CONTRADICTIONS),
        "version": space.key(KeyKind.FRAME_VERSION),
        "definitions": space.key(KeyKind.FRAME_DEFINITIONS),
    }


def _ranges(patterns: Sequence[str] | None) -> list[str]:
    bounds = [bound for pattern in patterns or () for bound in pattern_range(pattern)]
    return [str(len(bounds) // 2), *bounds]


def candidate_call(
    space: KeySpace, definition: FrameDefinition, now: float, seeds: int, ranked: Sequence[str],
) -> ScriptCall:
    """The ``frames_candidates.lua`` call of one frame at wall time ``now`` (``seeds`` 0: queryless)."""
    keys = block_keys(space)
    names = ("clock", "window", "tags", "categories", "adjacency", "degrees", "confidence", "count", "lambda",
             "contradictions")
    filters = definition.filters
    args = [repr(now), repr(filters.search_window_hours), seeds, repr(Block.confidence.initial_confidence),
            *_ranges(filters.tag_patterns), *_ranges(filters.categories), *_ranges(definition.guarantees), *ranked]
    return ScriptCall("frames_candidates", [keys[name] for name in names], args)


class CandidateSearch:
    """Stages 1-3 as one search of the protocol: the vector search (when there is a query) and the
    candidate script over its ranking, as the process's matrix has it when :meth:`calls` runs.

    :meth:`finish` answers (the vector hits as the server's version has them, the ranking the
    script checked, the script's reply).
    """

    def __init__(self, space: KeySpace, definition: FrameDefinition, now: float, seeds: int,
                 vector: VectorSearch | None = None, ranked: Sequence[str] = ()) -> None:
        self.space, self.definition, self.now, self.seeds = space, definition, now, seeds
        self.vector, self.ranked = vector, list(ranked)

    def calls(self) -> list[ScriptCall]:
        if self.vector is None:
            return [candidate_call(self.space, self.definition, self.now, self.seeds, self.ranked)]
        calls = self.vector.calls()
        self.ranked = [record_id for record_id, _ in self.vector.work().hits]
        return [*calls, candidate_call(self.space, self.definition, self.now, self.seeds, self.ranked)]

    def work(self) -> None:
        """The vector ranking was taken in :meth:`calls`."""

    def finish(self, replies: list[Any]) -> tuple[list[tuple[str, float]], list[str], Any]:
        hits = self.vector.finish(replies[:-1]) if self.vector is not None else []
        return hits, self.ranked, replies[-1]

    def abandon(self) -> None:
        if self.vector is not None:
            self.vector.abandon()


def gather(
    client: Any, space: KeySpace, definition: FrameDefinition, now: float, top_k: int,
    query_vector: np.ndarray | None, riders: Sequence[Search[Any]] = (),
) -> Gathered:
    """Stages 1-3 of one frame (``riders`` share the first round trip; their answers are returned)."""
    seeds = top_k * N_SEEDS_MULTIPLIER if query_vector is not None else 0
    limit = max(seeds * RANKING_MULTIPLIER, MIN_RANKED)
    vector = None if query_vector is None else Block.embedding.searcher(space, query_vector, limit)
    answers = run_searches(client, [CandidateSearch(space, definition, now, seeds, vector), *riders])
    hits, ranked, reply = answers[0]
    while query_vector is not None:
        ids = [record_id for record_id, _ in hits]
        if ids != ranked:  # the matrix moved since the ranking was taken: check the server's ranking
            ranked = ids
            reply = run_search(client, CandidateSearch(space, definition, now, seeds, ranked=ranked))[2]
        elif len(reply[1]) < seeds and len(ids) == limit:  # every ranked id checked, more may pass: widen
            limit *= 4
            vector = Block.embedding.searcher(space, query_vector, limit)
            hits, ranked, reply = run_search(client, CandidateSearch(space, definition, now, seeds, vector))
        else:
            break
    parsed = _parsed(reply, dict(hits))
    if query_vector is not None and not reply[1]:  # no seed: the pre-filtered blocks, as without a query
        parsed = _parsed(run_search(client, CandidateSearch(space, definition, now, 0))[2], {})
        parsed.no_seed = True
    parsed.riders = answers[1:]
    return parsed


def _parsed(reply: Any, similarity: dict[str, float]) -> Gathered:
    """The candidate script's reply as candidates (with their cosine when they were seeds)."""
    seeds = {_text(record_id) for record_id in reply[1]}
    expanded = {_text(record_id) for record_id in reply[2]}
    data, candidates = reply[4], []
    for i in range(0, len(data), 6):
        block_id = _text(data[i])
        candidates.append(Candidate(
            id=block_id, last_reinforced=float(data[i + 1]), confidence=float(data[i + 2]),
            reinforcement_count=int(float(data[i + 3])), decay_lambda=float(data[i + 4] or DECAY_TIERS["standard"]),
            degree=float(data[i + 5]), similarity=similarity.get(block_id, 0.0) if block_id in seeds else 0.0,
            was_expanded=block_id in expanded,
        ))
    pairs = [(_text(reply[5][i]), _text(reply[5][i + 1])) for i in range(0, len(reply[5]), 2)]
    return Gathered(float(reply[0]), candidates, [_text(g) for g in reply[3]], pairs)


def _text(value: bytes | str) -> str:
    """A reply's string (replies come as bytes, or as str through a decoding client)."""
    return value.decode() if isinstance(value, bytes) else value
