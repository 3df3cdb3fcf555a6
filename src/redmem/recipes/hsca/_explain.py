"""Why HSCA's region assembly shows its snapshots: each query term's weight, the distance damping,
the snapshot's layer scores, and the cuts (no I/O).

A snapshot's relevance (:mod:`.macro`) is the mean weight of the query's terms in it, damped by
distance from the context position; its ``arms`` are the terms:

    contribution(t) = term_weight(t) * damping / |terms|       (sum of contributions == relevance)

and its ``boosts`` the layer scores that shaped it without adding to the relevance: ``locality``
(the damping), ``layer1`` (the chunks' mean relational weight: layer 1 weighted the terms),
``coherence`` (layer 2's mean), ``domain`` (the dominant domain's share), ``nuance`` (chunks
flagged by layer 3), ``macro_weight`` (the snapshot's weight). Left out: ``max_items`` (relevant
beyond the assembler's ``max_items``), ``budget`` and ``oversize`` (the assembler's packing).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from statistics import fmean

from ...context._explain import ArmEvidence, Boost, Explanation, ItemExplanation, LeftOut
from ...context._packing import Fitted
from ...store._keys import KeySpace
from ._interface import ContextSnapshot
from ._macro import RelevantBeat, dominant_domain

__all__ = ["RegionTrail", "explain_region", "TERM_ARM"]

#: The prefix of a query term's arm.
TERM_ARM = "term:"


@dataclass(frozen=True)
class RegionTrail:
    """What one :meth:`HSCAEngine.assemble` computed: every relevant snapshot (best first), the
    passages packed (their snapshot ids, in that order), the fit, the assembler's ``max_items`` and
    ``max_tokens``, the context position and locality, the region, and the session's partition."""

    ranked: Sequence[RelevantBeat]
    packed: Sequence[str]
    fitted: Fitted
    max_items: int | None
    max_tokens: int | None
    context_position: int | None
    locality: float
    region: tuple[int, int | None]
    space: KeySpace

    def explain(self) -> Explanation:
        """:func:`explain_region` of this trail."""
        return explain_region(self)


def explain_region(trail: RegionTrail) -> Explanation:
    """The :class:`~redmem.context._explain.Explanation` of one region assembly, from its trail alone."""
    by_id = {r.snapshot.snapshot_id: r for r in trail.ranked}
    items = tuple(_item(trail, rank, by_id[trail.packed[index]], index in trail.fitted.oversize.truncated)
                  for rank, index in enumerate(trail.fitted.selected, 1))
    terms = sorted({t for r in trail.ranked for t in r.terms})
    agent_id, session_id = trail.space.partition_values
    notes = (f"relevance = mean term weight x exp(-distance / {trail.locality:g})"
             + ("" if trail.context_position is None else f", distance from position {trail.context_position}"),)
    return Explanation(
        "hsca_region", "relevance", {f"{TERM_ARM}{t}": 1 / len(terms) for t in terms},
        {"agent_id": agent_id, "session_id": session_id}, {"region": list(trail.region)}, items, _left_out(trail),
        trail.max_items, trail.max_tokens, trail.fitted.token_count, None, notes, "hsca",
    )


def _item(trail: RegionTrail, rank: int, beat: RelevantBeat, truncated: bool) -> ItemExplanation:
    share = beat.damping / len(beat.terms) if beat.terms else 0.0
    arms = tuple(ArmEvidence(f"{TERM_ARM}{term}", None, weight, share, weight * share)
                 for term, weight in beat.terms.items())
    snapshot_id = beat.snapshot.snapshot_id
    return ItemExplanation(snapshot_id, trail.space.record(snapshot_id), rank, beat.relevance, "pull",
                           beat.relevance, 1.0, beat.relevance, arms, layer_scores(beat, trail), truncated)


def layer_scores(beat: RelevantBeat, trail: RegionTrail) -> tuple[Boost, ...]:
    """The snapshot's layer scores (module docstring): values that shaped the relevance, adding nothing to it."""
    snapshot: ContextSnapshot = beat.snapshot
    chunks = snapshot.chunks
    dominant = dominant_domain(snapshot.domain_summary)
    flagged = sum(1 for c in chunks if c.nuance_flags)
    position = snapshot.conversation_position
    return (
        Boost("locality", beat.damping, 0.0, "no context position: not damped" if trail.context_position is None
              else f"position {position}, {abs(position - trail.context_position)} beats from {trail.context_position}"),
        Boost("layer1", fmean(c.layer1_score for c in chunks) if chunks else None, 0.0,
              "mean relational weight of its chunks (layer 1 weighted its terms)"),
        Boost("coherence", fmean(c.coherence_score for c in chunks) if chunks else None, 0.0,
              "mean coherence of its chunks (layer 2)"),
        Boost("domain", snapshot.domain_summary.get(dominant), 0.0, f"dominant domain {dominant}"),
        Boost("nuance", float(flagged), 0.0, f"{flagged} of {len(chunks)} chunks flagged by layer 3"),
        Boost("macro_weight", snapshot.macro_weight, 0.0, "the snapshot's weight in the session"),
    )


def _left_out(trail: RegionTrail) -> tuple[LeftOut, ...]:
    packed = set(trail.packed)
    out = [LeftOut(r.snapshot.snapshot_id, trail.space.record(r.snapshot.snapshot_id), "max_items", r.relevance,
                   f"{trail.max_items} more relevant snapshots already taken")
           for r in trail.ranked if r.snapshot.snapshot_id not in packed]
    chosen = set(trail.fitted.selected)
    by_id = {r.snapshot.snapshot_id: r for r in trail.ranked}
    for index, snapshot_id in enumerate(trail.packed):
        if index in chosen:
            continue
        reason, detail = (("oversize", "larger than the whole token budget") if index in trail.fitted.oversize.skipped
                          else ("budget", f"did not fit the {trail.max_tokens} token budget"))
        out.append(LeftOut(snapshot_id, trail.space.record(snapshot_id), reason, by_id[snapshot_id].relevance, detail))
    return tuple(out)
