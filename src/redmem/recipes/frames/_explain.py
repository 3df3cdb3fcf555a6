"""Why a frame shows its blocks: the composite's terms per block, guarantees, suppression, cuts (no I/O).

Each shown block's ``arms`` are the composite's five terms, each with the weight it was scored at
and what it added:

    contribution(signal) = effective_weight(signal) * value(signal)
    effective_weight     = w                                         (similarity, confidence)
                         = feedback_cap * w / (w_rec + w_reinf + w_cent)   (damped recency,
                                                                     reinforcement, centrality)

so the contributions sum to the block's score (``fused``; ``normaliser`` 1), and ``rank`` is the
block's place among the frame's candidates by that signal alone. Guaranteed blocks come first
whatever their score (``source`` ``guaranteed``), then the others best score first. Left out:
``contradiction`` (suppressed by a block it contradicts), ``max_items`` (beyond ``top_k``),
``budget`` and ``oversize`` (the stop-at-first-miss packing), ``superseded`` (a ranked block whose
window closed that would otherwise have been a seed, named by the candidate script in its own
reply, with its successor). Candidates scored below the best ``top_k * 2`` are counted in a note,
not listed.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import asdict, dataclass

from ...context._explain import ArmEvidence, Boost, Explanation, ItemExplanation, LeftOut, superseded_left_out
from ...context._packing import Fitted
from ...context._superseded import SupersededHit
from ...store._keys import KeySpace
from ._definitions import FrameDefinition, ScoringWeights
from ._guarantees import loser
from ._scoring import Scored, ScoredBlock

__all__ = ["FrameTrail", "explain_frame", "effective_weights", "SIGNALS"]

#: The composite's terms, in the order an explanation lists them.
SIGNALS = ("similarity", "confidence", "recency", "centrality", "reinforcement")
_FEEDBACK = ("recency", "centrality", "reinforcement")


def effective_weights(weights: ScoringWeights, feedback_cap: float | None) -> dict[str, float]:
    """The weight each signal is scored at: its own, or damped to ``feedback_cap`` (module docstring)."""
    raw = asdict(weights)
    if feedback_cap is None:
        return {name: float(raw[name]) for name in SIGNALS}
    share = sum(raw[name] for name in _FEEDBACK)
    return {name: float(raw[name]) if name not in _FEEDBACK else (feedback_cap * raw[name] / share if share > 0 else 0.0)
            for name in SIGNALS}


@dataclass(frozen=True)
class FrameTrail:
    """What one retrieval of a frame computed: the definition and the weights it scored with, the
    damping, every candidate scored (best first), the oversampled ones, the survivors of
    suppression, the contradicting pairs, the guaranteed ids, the chosen blocks, the packing and
    the frame's ``top_k`` and budget; ``space``: the agent's partition; ``superseded``: the ranked
    blocks left out as superseded that would otherwise have been seeds."""

    definition: FrameDefinition
    weights: ScoringWeights
    feedback_cap: float | None
    ranked: Sequence[Scored]
    oversampled: Sequence[Scored]
    survivors: Sequence[Scored]
    pairs: Sequence[tuple[str, str]]
    guaranteed: Collection[str]
    blocks: Sequence[ScoredBlock]
    top_k: int
    space: KeySpace
    fitted: Fitted | None = None
    budget: int | None = None
    superseded: Sequence[SupersededHit] = ()

    def packed(self, fitted: Fitted, budget: int) -> FrameTrail:
        """This trail with the packing of its blocks into ``budget`` tokens."""
        return FrameTrail(self.definition, self.weights, self.feedback_cap, self.ranked, self.oversampled,
                          self.survivors, self.pairs, self.guaranteed, self.blocks, self.top_k, self.space,
                          fitted, budget, self.superseded)

    def explain(self) -> Explanation:
        """:func:`explain_frame` of this trail."""
        return explain_frame(self)


def explain_frame(trail: FrameTrail) -> Explanation:
    """The :class:`~redmem.context._explain.Explanation` of one frame, from its trail alone."""
    weights = effective_weights(trail.weights, trail.feedback_cap)
    ranks = _signal_ranks(trail.ranked)
    shown = list(trail.fitted.selected) if trail.fitted is not None else list(range(len(trail.blocks)))
    items = tuple(_item(trail, rank, trail.blocks[index], weights, ranks, trail.fitted, index)
                  for rank, index in enumerate(shown, 1))
    filters = trail.definition.filters
    listed = len(trail.oversampled)
    notes = [f"damped: recency, centrality and reinforcement add at most {trail.feedback_cap:g} together"
             if trail.feedback_cap is not None else "raw weights: the seed's composite"]
    if len(trail.ranked) > listed:
        notes.append(f"{len(trail.ranked) - listed} more candidates scored below the best {listed} (not listed)")
    return Explanation(
        f"frame:{trail.definition.name}", "composite", weights, {"agent_id": trail.space.partition_values[0]},
        {"tag_patterns": filters.tag_patterns, "categories": filters.categories,
         "search_window_hours": filters.search_window_hours, "guarantees": list(trail.definition.guarantees)},
        items, _left_out(trail), trail.top_k, trail.budget,
        trail.fitted.token_count if trail.fitted is not None else 0, None, tuple(notes), "frames",
    )


def _signal_ranks(ranked: Sequence[Scored]) -> dict[str, dict[str, int]]:
    """Per signal, each candidate's 1-based rank by that signal alone (ties by block id)."""
    values = {c.candidate.id: _values(c) for c in ranked}
    return {name: {block_id: rank for rank, block_id in enumerate(
        sorted(values, key=lambda b: (-values[b][name], b)), 1)} for name in SIGNALS}


def _values(scored: Scored) -> dict[str, float]:
    c = scored.candidate
    return {"similarity": c.similarity, "confidence": c.confidence, "recency": scored.recency,
            "centrality": scored.centrality, "reinforcement": scored.reinforcement}


def _item(trail: FrameTrail, rank: int, block: ScoredBlock, weights: dict[str, float],
          ranks: dict[str, dict[str, int]], fitted: Fitted | None, index: int) -> ItemExplanation:
    values = {"similarity": block.similarity, "confidence": block.confidence, "recency": block.recency,
              "centrality": block.centrality, "reinforcement": block.reinforcement}
    arms = tuple(ArmEvidence(name, ranks[name].get(block.id), values[name], weights[name], weights[name] * values[name])
                 for name in SIGNALS)
    boosts = (
        Boost("guaranteed", 1.0 if block.guaranteed else None, 0.0,
              "matches a guarantee pattern: admitted before every other block" if block.guaranteed
              else "not guaranteed"),
        Boost("graph", 1.0 if block.was_expanded else None, 0.0,
              "reached by 1-hop expansion from a seed (similarity 0)" if block.was_expanded else "found directly"),
    )
    truncated = fitted is not None and index in fitted.oversize.truncated
    return ItemExplanation(block.id, trail.space.record(block.id), rank, block.score,
                           "guaranteed" if block.guaranteed else ("graph" if block.was_expanded else "pull"),
                           block.score, 1.0, block.similarity, arms, boosts, truncated)


def _left_out(trail: FrameTrail) -> tuple[LeftOut, ...]:
    """Suppressed, beyond ``top_k``, cut by the packing, and superseded, in that order."""
    by_id = {s.candidate.id: s for s in trail.oversampled}
    alive = {s.candidate.id for s in trail.survivors}
    chosen = {b.id for b in trail.blocks}
    out = []
    for scored in trail.oversampled:
        block_id = scored.candidate.id
        if block_id not in alive:
            winner = next((b if a == block_id else a for a, b in trail.pairs
                           if block_id in (a, b) and a in by_id and b in by_id
                           and loser(by_id[a], by_id[b], trail.guaranteed) == block_id), "?")
            out.append(LeftOut(block_id, trail.space.record(block_id), "contradiction", scored.score,
                               f"contradicts {winner}, which is kept"))
        elif block_id not in chosen:
            out.append(LeftOut(block_id, trail.space.record(block_id), "max_items", scored.score,
                               f"{trail.top_k} blocks already chosen"))
    if trail.fitted is not None:
        shown = set(trail.fitted.selected)
        skipped = set(trail.fitted.oversize.skipped)
        for index, block in enumerate(trail.blocks):
            if index in shown:
                continue
            reason, detail = (("oversize", "larger than the whole token budget") if index in skipped
                              else ("budget", f"did not fit the {trail.budget} token budget (stop at first miss)"))
            out.append(LeftOut(block.id, trail.space.record(block.id), reason, block.score, detail))
    return (*out, *superseded_left_out(trail.superseded))
