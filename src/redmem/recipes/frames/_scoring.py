"""The composite score of a frame's candidates (pure functions, no I/O).

    recency       = exp(-lambda * hours since last reinforced)            (active hours)
    reinforcement = log(1 + count) / log(1 + max count over the candidates)   (0 when the max is 0)
    centrality    = weighted degree / max weighted degree over the candidates (0 when the max is 0)
    score         = w_sim*similarity + w_conf*confidence + w_rec*recency + w_cent*centrality + w_reinf*reinforcement

Damped (the default, ``feedback_cap`` = :data:`FEEDBACK_CAP`): recency, reinforcement and
centrality, the signals ``frame()`` feeds back into itself (it reinforces what it returns and the
edges among them, and ``learn()`` wires edges), add at most ``feedback_cap`` to a score together:

    feedback      = feedback_cap * (w_rec*recency + w_reinf*reinforcement + w_cent*centrality)
                                 / (w_rec + w_reinf + w_cent)

so they order otherwise equal blocks but cannot push a block the query matches less above one it
matches more (asked question after question, the raw weights let returned blocks crowd the rest
out; with learned edges, centrality at its raw weight took dev R@5 on LoCoMo from 0.65 to 0.57).
``feedback_cap=None`` keeps the seed's raw weights. Every signal lies in [0, 1], so a score
does too. :meth:`FrameResult.report` is the one method here that writes (the ObservationProtocol
feedback of a frame).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ...context._explain import Explanation
from ...context._result import ContextResult, Trail
from ...model._dbkey import DbKey
from ...model._loading import load_records
from ...observation._protocol import ObservationProtocol
from ...store._aio import async_variant
from ...store._connection import server_errors
from ...store._errors import QueryException
from ._definitions import ScoringWeights
from ._keys import FrameKeyKind
from ._models import Block

__all__ = [
    "ScoredBlock",
    "FrameResult",
    "FrameCandidate",
    "Scored",
    "recency",
    "log_normalised_reinforcement",
    "centralities",
    "frame_composite",
    "score_candidates",
    "scored_block",
    "FEEDBACK_CAP",
]

#: The most recency and reinforcement together add to a score by default (damped scoring).
FEEDBACK_CAP = 0.005


@dataclass(frozen=True)
class ScoredBlock:
    """One block a frame retrieved, with the signals that ranked it (each in [0, 1]).

    ``similarity`` is how well the block matches the query: its keyword (BM25) and vector scores,
    each divided by its ranking's best, fused (0.0 for a queryless frame and for a
    block reached by graph expansion, ``was_expanded``); ``guaranteed``: it matched one of the
    frame's guarantee patterns and was admitted before the others.
    """

    id: str
    content: str
    tags: list[str]
    category: str
    similarity: float
    confidence: float
    recency: float
    centrality: float
    reinforcement: float
    score: float
    was_expanded: bool = False
    guaranteed: bool = False
    status: str = "active"


@dataclass(frozen=True)
class FrameResult(ContextResult):
    """What :meth:`FrameMemory.frame` returns: the rendered ``text``, the ``blocks`` it shows (in
    the order shown), the frame's name, whether it came from the cache, the exact token count
    of ``text`` by the memory's counter, and what became of blocks bigger than the whole budget
    (``oversize``: ``{"truncated": [ids], "skipped": [...], "admitted": [...]}``); ``agent_id``:
    whose blocks these are (what :meth:`report` writes to)."""

    text: str
    blocks: list[ScoredBlock]
    frame_name: str
    cached: bool = False
    token_count: int = 0
    edges_reinforced: int = 0
    dropped: list[ScoredBlock] = field(default_factory=list)
    oversize: dict[str, list[str]] = field(default_factory=dict)
    agent_id: str = ""
    trail: Trail | None = field(default=None, repr=False, compare=False)

    def explain(self) -> Explanation:
        """Why each block is shown (the composite's terms with their weights and contributions,
        guarantees, expansion) and why the other candidates are not (suppressed, beyond ``top_k``,
        budget): :mod:`redmem.recipes.frames._explain`, from what ``frame()`` computed, no round
        trip. A cached frame explains the frame it was built from (kept in the cache entry)."""
        if self.trail is None:
            raise QueryException("this frame carries no trail to explain (it was not made by frame())")
        return self.trail.explain()

    def report(
        self, outcome: str | Mapping[Any, str], now: float | None = None,
    ) -> dict[str, str]:
        """Report what the agent did with this frame, as ``AssemblyResult.report`` does: ``"acted"``
        for every block shown, or ``{block id: outcome}`` (blocks not named are ``deferred``).

        :meth:`ObservationProtocol.on_context_used` over the shown blocks (loaded in one round
        trip; a block deleted since is skipped); returns ``{redis key: outcome}``. A report on a
        ``self/...`` block may move its confidence, so it drops the agent's cached frames too.
        """
        space = Block._meta.keyspace((self.agent_id,))
        blocks = load_records(Block, [DbKey(space, block.id) for block in self.blocks], track=False)
        reported = ObservationProtocol.on_context_used(blocks, outcome, now=now)
        if any(tag.startswith("self/") for block in blocks for tag in block.tags):
            with server_errors(Block._meta.client):
                Block._meta.client.incr(space.key(FrameKeyKind.FRAME_VERSION))
        return reported

    # The asyncio API (docs/asyncio.md).
    areport = async_variant(report)


@dataclass(frozen=True)
class FrameCandidate:
    """A pre-filtered block's scoring inputs: its stored signals, its fused match with the query
    (0.0 when it was not a vector seed) and whether graph expansion brought it in."""

    id: str
    confidence: float
    last_reinforced: float
    decay_lambda: float
    reinforcement_count: int
    degree: float
    similarity: float = 0.0
    was_expanded: bool = False


def recency(decay_lambda: float, hours_since: float) -> float:
    """``exp(-lambda * max(hours_since, 0))``: 1.0 for a block reinforced now."""
    return math.exp(-decay_lambda * max(hours_since, 0.0))


def log_normalised_reinforcement(count: int, max_count: int) -> float:
    """``log(1 + count) / log(1 + max_count)`` (0.0 when ``max_count`` is 0)."""
    if max_count <= 0:
        return 0.0
    return math.log1p(count) / math.log1p(max_count)


def centralities(degrees: Mapping[str, float]) -> dict[str, float]:
    """Each block's full weighted degree divided by the largest among ``degrees`` (all 0.0 when it is 0)."""
    top = max(degrees.values(), default=0.0)
    if top <= 0:
        return {block_id: 0.0 for block_id in degrees}
    return {block_id: min(max(degree, 0.0) / top, 1.0) for block_id, degree in degrees.items()}


def frame_composite(
    weights: ScoringWeights, similarity: float, confidence: float, recency_: float, centrality: float,
    reinforcement: float, feedback_cap: float | None = None,
) -> float:
    """The weighted sum of the five signals, recency, reinforcement and centrality damped to
    ``feedback_cap`` (None: raw)."""
    feedback = weights.recency * recency_ + weights.reinforcement * reinforcement + weights.centrality * centrality
    if feedback_cap is not None:
        share = weights.recency + weights.reinforcement + weights.centrality
        feedback = feedback_cap * feedback / share if share > 0 else 0.0
    return weights.similarity * similarity + weights.confidence * confidence + feedback


@dataclass(frozen=True)
class Scored:
    """A candidate with its signals and score (content not loaded yet); ``guaranteed`` once selected as such."""

    candidate: FrameCandidate
    recency: float
    centrality: float
    reinforcement: float
    score: float
    guaranteed: bool = False


def score_candidates(
    candidates: Sequence[FrameCandidate], weights: ScoringWeights, now_hours: float, feedback_cap: float | None = None,
) -> list[Scored]:
    """Score every candidate (centrality and reinforcement normalised over ``candidates``; recency,
    reinforcement and centrality damped to ``feedback_cap``, None: the raw weights), best first;
    equal scores by block id.

    The same numbers as :func:`recency`, :func:`log_normalised_reinforcement`,
    :func:`centralities` and :func:`frame_composite` one candidate at a time (the weighted sums
    over arrays, in the same order of operations; ``exp`` and ``log1p`` from :mod:`math`), without
    a call per candidate and signal."""
    if not candidates:
        return []
    degree = np.array([c.degree for c in candidates], dtype=np.float64)
    top = float(degree.max())
    central = np.minimum(np.maximum(degree, 0.0) / top, 1.0) if top > 0 else np.zeros(len(candidates))
    counts = [c.reinforcement_count for c in candidates]
    most = max(counts)
    log_most = math.log1p(most) if most > 0 else 0.0
    reinforced = np.array([math.log1p(count) / log_most for count in counts] if most > 0 else [0.0] * len(counts))
    ago = now_hours - np.array([c.last_reinforced for c in candidates], dtype=np.float64)
    exponents = -np.array([c.decay_lambda for c in candidates], dtype=np.float64) * np.maximum(ago, 0.0)
    fresh = np.array([math.exp(x) for x in exponents.tolist()])
    feedback = weights.recency * fresh + weights.reinforcement * reinforced + weights.centrality * central
    if feedback_cap is not None:
        share = weights.recency + weights.reinforcement + weights.centrality
        feedback = feedback_cap * feedback / share if share > 0 else np.zeros(len(candidates))
    similarity = np.array([c.similarity for c in candidates], dtype=np.float64)
    confidence = np.array([c.confidence for c in candidates], dtype=np.float64)
    scores = weights.similarity * similarity + weights.confidence * confidence + feedback
    scored = [Scored(c, r, k, m, v) for c, r, k, m, v in
              zip(candidates, fresh.tolist(), central.tolist(), reinforced.tolist(), scores.tolist())]
    return sorted(scored, key=lambda s: (-s.score, s.candidate.id))


def scored_block(scored: Scored, stored: Mapping[str, Any]) -> ScoredBlock:
    """A chosen candidate with its stored ``content``, ``tags``, ``category`` and ``status``."""
    c = scored.candidate
    return ScoredBlock(
        id=c.id, content=stored.get("content") or "", tags=list(stored.get("tags") or []),
        category=stored.get("category") or "", similarity=c.similarity, confidence=c.confidence,
        recency=scored.recency, centrality=scored.centrality, reinforcement=scored.reinforcement, score=scored.score,
        was_expanded=c.was_expanded, guaranteed=scored.guaranteed, status=stored.get("status") or "active",
    )
