"""Why HCE's context block holds what it holds: fused relevance, utilities, the knapsack, cuts (no I/O).

Each interaction in the block lists the lists that found it (``tree``, ``keyword``, ``graph``) with
their rank, score, fusion weight and what each added to the fused relevance (the shared convex
fusion, :mod:`redmem.context._explain`):

    contribution_L = w_L * s_L / top_L / sum w            (sum of contributions == fused)
    match          = fused / best fused                    (``normaliser`` = the best fused score)
    utility        = match ** sharpness                    (the item's ``score``)
    priority       = utility / max(token_cost, 1)          (the knapsack's order)

A focus-buffer entry has one arm, ``buffer``: its word overlap with the query times its recency.
The greedy knapsack admits by ``priority`` descending while the ``cost`` fits the budget, so the
items' priorities never rise along the block. Left out: ``budget`` (did not fit the room left at
its turn), ``oversize`` (bigger than the whole budget, skipped), ``duplicate`` (an interaction the
focus buffer already shows), ``superseded`` (an interaction whose window closed that would have
ranked: the tree's, dropped once loaded, and the keyword search's twin over the superseded ones,
:mod:`redmem.context._superseded`).
"""

from __future__ import annotations

import math
from collections.abc import Collection, Sequence
from dataclasses import dataclass

from ...context._explain import (
    ArmEvidence,
    ArmTable,
    Boost,
    Explanation,
    ItemExplanation,
    LeftOut,
    arm_evidence,
    arm_tables,
    superseded_left_out,
)
from ...context._packing import Fitted
from ...context._retrieval import GRAPH_LIST, Fusion
from ...context._superseded import SupersededHit
from ...fields.search_protocol import Hits
from ...store._keys import KeySpace
from ._budgeting import ContextCandidate

__all__ = ["HCETrail", "explain_context", "BUFFER_ARM"]

#: The arm of a focus-buffer entry.
BUFFER_ARM = "buffer"


@dataclass(frozen=True)
class HCETrail:
    """What one :meth:`HCEPipeline.retrieve_candidates` computed: the fusion and the lists it fused,
    the best fused score, the utility sharpness, the candidates offered to the knapsack, the fit,
    the budget, the interactions left to the focus buffer, the session's partition and the
    superseded interactions the read left out that would have ranked."""

    fusion: Fusion
    lists: dict[str, Hits]
    top: float
    sharpness: float
    candidates: Sequence[ContextCandidate]
    fitted: Fitted
    budget: int
    in_focus: Collection[str]
    space: KeySpace
    superseded: Sequence[SupersededHit] = ()

    def explain(self) -> Explanation:
        """:func:`explain_context` of this trail."""
        return explain_context(self)


def explain_context(trail: HCETrail) -> Explanation:
    """The :class:`~redmem.context._explain.Explanation` of one HCE context block, from its trail alone."""
    weights = {GRAPH_LIST: 0.0, **trail.fusion.weights}
    tables = arm_tables(trail.lists, trail.fusion.list_limit)
    truncated = set(trail.fitted.oversize.truncated)
    items = tuple(_item(trail, rank, index, weights, tables, index in truncated)
                  for rank, index in enumerate(trail.fitted.selected, 1))
    notes = (f"utility = (fused / {trail.top:.6g}) ** {trail.sharpness:g}; the knapsack admits by utility per token",)
    return Explanation(
        "hce", trail.fusion.method, {name: weights.get(name, 1.0) for name in trail.lists},
        {"session_id": trail.space.partition_values[0]}, None, items, _left_out(trail, weights, tables),
        None, trail.budget, trail.fitted.token_count, None, notes, "hce",
    )


def _name(candidate: ContextCandidate) -> str:
    rid = candidate.metadata.get("interaction_id")
    return str(rid) if rid else f"buffer:{candidate.metadata.get('position')}"


def _priority(candidate: ContextCandidate) -> float:
    return candidate.utility / max(candidate.token_cost, 1)


def _item(trail: HCETrail, rank: int, index: int, weights: dict[str, float], tables: dict[str, ArmTable], truncated: bool
          ) -> ItemExplanation:
    offered = trail.candidates[index]
    raw = float(offered.metadata.get("raw_utility", offered.utility))
    rid = offered.metadata.get("interaction_id")
    if rid:
        fused: float | None = float((offered.metadata.get("signals") or {}).get(trail.fusion.method, raw * trail.top))
        arms = _arms(str(rid), fused or 0.0, weights, tables)
        key, normaliser = trail.space.record(str(rid)), trail.top
    else:
        arms = (ArmEvidence(BUFFER_ARM, None, raw, 1.0, raw),)
        fused, key, normaliser = raw, "", 1.0
    boosts = (Boost("sharpness", trail.sharpness, offered.utility - raw,
                    f"match {raw:.4f} raised to {trail.sharpness:g}: utility {offered.utility:.4g}"),)
    source = "+".join(offered.metadata.get("sources") or [offered.source])
    return ItemExplanation(_name(offered), key, rank, offered.utility, source, fused, normaliser, raw, arms, boosts,
                           truncated, offered.token_cost, _priority(offered))


def _arms(rid: str, fused: float, weights: dict[str, float], tables: dict[str, ArmTable]) -> tuple[ArmEvidence, ...]:
    """The convex evidence for ``rid``; a record only the graph reached owes its whole score to it."""
    evidence = arm_evidence("convex", rid, tables, weights)
    if not any(e.contribution for e in evidence):
        evidence = [ArmEvidence(e.arm, e.rank, e.score, e.weight, fused if e.arm == GRAPH_LIST else 0.0)
                    for e in evidence]
    return tuple(evidence)


def _left_out(trail: HCETrail, weights: dict[str, float], tables: dict[str, ArmTable]) -> tuple[LeftOut, ...]:
    chosen = set(trail.fitted.selected)
    skipped = set(trail.fitted.oversize.skipped)
    out = []
    for index, offered in enumerate(trail.candidates):
        if index in chosen:
            continue
        rid = offered.metadata.get("interaction_id")
        reason, detail = (("oversize", "larger than the whole token budget") if index in skipped
                          else ("budget", f"did not fit the room the {trail.budget} token budget had left at its turn "
                                          f"(utility per token {_priority(offered):.4g})"))
        out.append(LeftOut(_name(offered), trail.space.record(str(rid)) if rid else "", reason, offered.utility,
                           detail, offered.token_cost, _priority(offered)))
    for rid in sorted(trail.in_focus):
        fused = math.fsum(e.contribution for e in arm_evidence("convex", rid, tables, weights))
        out.append(LeftOut(rid, trail.space.record(rid), "duplicate", fused / trail.top,
                           "still in the focus buffer, which shows it"))
    return (*out, *superseded_left_out(trail.superseded))
