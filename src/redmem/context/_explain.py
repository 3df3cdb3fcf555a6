"""Explanations as values: why each memory is in a context, and why the others are not.

A recipe keeps what its stages computed in a trail (for the assembler, :class:`AssemblyTrail`:
the ranked lists each arm returned, the fusion, the candidates before and after each cut, the
packing) and :func:`explain_assembly` turns it into an :class:`Explanation`, with no I/O. Each
selected item lists the arms that found it with their rank and score and what each added to the
fused score:

    rrf:     contribution_L(d) = w_L / (k + rank_L(d))                      (k = 60)
    convex:  contribution_L(d) = w_L * s_L(d) / top_L  /  sum_L' w_L'

so ``sum of contributions == fused``, and ``score = fused / normaliser + cues`` (the merge's
division by the best pull score, plus the question-cue bonus of :mod:`redmem.context._question_cues`,
0 when off). Boosts (decay and confidence through the composite list, recency, graph, push,
question cues) say what moved the item besides the arms. Left-out items carry their reason:
``duplicate``, ``relevance_floor``, ``oversize``, ``max_items``, ``budget``, or ``superseded`` (a
lifecycle record whose window closed, which the searches left out yet would have ranked within
their depth: :mod:`redmem.context._superseded`; ``superseded_by`` names its successor). Frames, HCE
and HSCA fill the
same :class:`Explanation` from their own stages (:mod:`redmem.recipes.frames._explain`,
:mod:`redmem.recipes.hce._explain`, :mod:`redmem.recipes.hsca._explain`); every recipe's result
exposes it through :class:`redmem.context._result.ContextResult`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from ._candidates import Candidate
from ._fusion import RRF_K, distinct_ranks
from ._packing import Budget, Fitted
from ._question_cues import CUES_SIGNAL, SPEAKER_WEIGHT, WHEN_WEIGHT
from ._retrieval import GRAPH_LIST, MATCH_SIGNAL, Fusion
from ._superseded import SupersededHit

__all__ = [
    "ArmEvidence",
    "Boost",
    "ItemExplanation",
    "LeftOut",
    "Explanation",
    "AssemblyTrail",
    "explain_assembly",
    "ArmTable",
    "arm_tables",
    "arm_evidence",
    "LEFT_OUT_REASONS",
    "superseded_left_out",
]

#: Why a candidate is not in the context (``contradiction``: a frame suppressed it in favour of a
#: block it contradicts; ``superseded``: a lifecycle read's validity filter kept it out of the searches).
LEFT_OUT_REASONS = ("duplicate", "relevance_floor", "oversize", "max_items", "budget", "contradiction", "superseded")
Hits = list[tuple[str, float]]


@dataclass(frozen=True)
class ArmEvidence:
    """One arm (ranked list) that found an item: its 1-based rank there (None: not returned, scored
    as the list's lowest because the list was cut at its limit), its score, the arm's fusion
    weight and what it added to the fused score."""

    arm: str
    rank: int | None
    score: float
    weight: float
    contribution: float


@dataclass(frozen=True)
class Boost:
    """A signal beside the arms: its value (None when this mode did not read it), what it added to
    the item's score, and a sentence saying how it acted."""

    name: str
    value: float | None
    contribution: float
    note: str


@dataclass(frozen=True)
class ItemExplanation:
    """Why one selected item is there: its rank and final ``score``, how it was found (``pull``,
    ``push`` or ``both``), the ``fused`` pull score the arms sum to, the ``normaliser`` the merge
    divided it by, its query ``match`` (what the relevance floor reads), arms, boosts; ``cost``: the
    tokens it takes in the context and ``priority``: the number the packer ordered it by (utility
    per token for a knapsack), where the recipe packs by something other than rank."""

    record_id: str
    key: str
    rank: int
    score: float
    source: str
    fused: float | None
    normaliser: float | None
    match: float | None
    arms: tuple[ArmEvidence, ...] = ()
    boosts: tuple[Boost, ...] = ()
    truncated: bool = False
    cost: int | None = None
    priority: float | None = None


@dataclass(frozen=True)
class LeftOut:
    """A candidate not in the context: its reason (one of :data:`LEFT_OUT_REASONS`), its score, a
    detail; ``cost`` and ``priority`` as :class:`ItemExplanation` has them (a knapsack's cut);
    ``superseded_by``: for reason ``superseded``, the id of the record that superseded it, when known."""

    record_id: str
    key: str
    reason: str
    score: float
    detail: str
    cost: int | None = None
    priority: float | None = None
    superseded_by: str | None = None


@dataclass(frozen=True)
class Explanation:
    """A recipe's answer to "why these memories": the items in order, what was left out, and the
    settings every item was judged by (mode, fusion method and weights, tenant, filters, budget);
    ``recipe``: which recipe explained it (``assembler``, ``frames``, ``hce``, ``hsca``)."""

    mode: str
    fusion: str
    weights: dict[str, float]
    tenant: dict[str, Any]
    filters: dict[str, Any] | None
    items: tuple[ItemExplanation, ...]
    left_out: tuple[LeftOut, ...]
    max_items: int | None = None
    max_tokens: int | None = None
    token_count: int = 0
    min_relevance: float | None = None
    notes: tuple[str, ...] = field(default=())
    recipe: str = "assembler"

    def to_dict(self) -> dict[str, Any]:
        """The explanation as plain JSON-ready data."""
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Explanation:
        """The explanation :meth:`to_dict` gave (read back from JSON: tuples come back as tuples)."""
        items = tuple(ItemExplanation(**{**item, "arms": tuple(ArmEvidence(**a) for a in item["arms"]),
                                         "boosts": tuple(Boost(**b) for b in item["boosts"])})
                      for item in data["items"])
        return cls(**{**data, "items": items, "left_out": tuple(LeftOut(**o) for o in data["left_out"]),
                      "notes": tuple(data.get("notes", ()))})

    def cut_counts(self) -> dict[str, int]:
        """How many candidates each reason left out."""
        counts = dict.fromkeys(LEFT_OUT_REASONS, 0)
        for item in self.left_out:
            counts[item.reason] += 1
        return counts


@dataclass(frozen=True)
class AssemblyTrail:
    """What one ``ContextAssembler.assemble()`` computed on its way, kept for :func:`explain_assembly`:
    the ranked lists per arm, the fusion, the candidates before recency reordering (``distinct``),
    the ranked ones that cleared the floor (``ranked``), those cut as duplicates or below the
    floor, the packing, the budget, the floor, the tenant and filter, the composite
    ``score_weights``, whether a question was ``asked`` (then push scores only break ties) and
    the ``superseded`` records the searches left out that would have ranked."""

    mode: str
    fusion: Fusion
    lists: dict[str, Hits]
    tenant: dict[str, Any]
    where: Mapping[str, Any] | None
    distinct: list[Candidate]
    ranked: list[Candidate]
    duplicates: list[Candidate]
    below_floor: list[Candidate]
    fitted: Fitted
    budget: Budget
    min_relevance: float | None
    score_weights: dict[str, float]
    asked: bool
    superseded: Sequence[SupersededHit] = ()

    def explain(self) -> Explanation:
        """:func:`explain_assembly` of this trail."""
        return explain_assembly(self)


def explain_assembly(trail: AssemblyTrail) -> Explanation:
    """The :class:`Explanation` of one assembly, from its trail alone (no I/O)."""
    weights = {GRAPH_LIST: 0.0, **trail.fusion.weights}
    arms = arm_tables(trail.lists, trail.fusion.list_limit)
    moved = _moved_up(trail.distinct, trail.ranked)
    truncated = set(trail.fitted.oversize.truncated)
    tops = _tops([*trail.distinct, *trail.duplicates])
    items = tuple(
        _item(trail, rank, index, trail.ranked[index], arms, weights, moved, index in truncated, tops)
        for rank, index in enumerate(trail.fitted.selected, 1)
    )
    return Explanation(
        trail.mode, trail.fusion.method, {name: weights.get(name, 1.0) for name in trail.lists}, dict(trail.tenant),
        dict(trail.where) if trail.where is not None else None, items, _left_out(trail),
        trail.budget.max_items, trail.budget.max_tokens, trail.fitted.token_count, trail.min_relevance,
    )


def _tops(candidates: Sequence[Candidate]) -> tuple[float, float]:
    """The merge's normalisers: the best pull score and the best push score (1 when none is above 0)."""
    pull = max((c.pull for c in candidates if c.pull is not None), default=0.0)
    push = max((c.push for c in candidates if c.push is not None), default=0.0)
    return (pull if pull > 0 else 1.0), (push if push > 0 else 1.0)


@dataclass(frozen=True)
class ArmTable:
    """One arm's ranks, scores, best score, lowest score, and whether it was cut at its limit."""

    ranks: dict[str, int]
    scores: dict[str, float]
    top: float
    lowest: float
    cut: bool


def arm_tables(lists: Mapping[str, Hits], list_limit: int) -> dict[str, ArmTable]:
    """Per ranked list: each record's rank and score, the best and lowest score, whether the list
    was cut at ``list_limit`` (the graph list never is)."""
    tables = {}
    for name, hits in lists.items():
        scores: dict[str, float] = {}
        for record_id, score in hits:
            scores.setdefault(record_id, max(float(score), 0.0))
        ranks = distinct_ranks([record_id for record_id, _ in hits])
        cut = name != GRAPH_LIST and len(scores) >= list_limit
        tables[name] = ArmTable(ranks, scores, max(scores.values(), default=0.0), min(scores.values(), default=0.0), cut)
    return tables


def arm_evidence(
    method: str, record_id: str, arms: Mapping[str, ArmTable], weights: Mapping[str, float],
) -> list[ArmEvidence]:
    """Each arm's evidence for ``record_id`` and its contribution to the fused score (module docstring)."""
    if method == "convex":
        counted = [n for n, t in arms.items() if t.top > 0 and weights.get(n, 1.0) > 0]
        total = math.fsum(weights.get(n, 1.0) for n in counted)
    evidence = []
    for name, table in arms.items():
        weight = weights.get(name, 1.0)
        rank = table.ranks.get(record_id)
        if method == "rrf":
            if rank is not None:
                evidence.append(ArmEvidence(name, rank, table.scores[record_id], weight, weight / (RRF_K + rank)))
            continue
        if name not in counted or (rank is None and not table.cut):
            if rank is not None:
                evidence.append(ArmEvidence(name, rank, table.scores[record_id], weight, 0.0))
            continue
        score = table.scores[record_id] if rank is not None else table.lowest
        evidence.append(ArmEvidence(name, rank, score, weight, weight * score / table.top / total))
    return evidence


def _item(
    trail: AssemblyTrail, rank: int, index: int, candidate: Candidate, arms: Mapping[str, ArmTable],
    weights: Mapping[str, float], moved: set[str], truncated: bool, tops: tuple[float, float],
) -> ItemExplanation:
    record_id = candidate.key.record_id
    evidence = arm_evidence(trail.fusion.method, record_id, arms, weights) if candidate.pull is not None else []
    fused = candidate.pull
    if fused is not None and evidence and not any(e.contribution for e in evidence):  # reached by the graph only
        evidence = [ArmEvidence(e.arm, e.rank, e.score, e.weight, fused if e.arm == GRAPH_LIST else 0.0)
                    for e in evidence]
    normaliser = tops[0] if fused is not None else None
    return ItemExplanation(
        record_id, candidate.key.redis_key, rank, candidate.combined, candidate.source, fused, normaliser,
        candidate.signals.get(MATCH_SIGNAL), tuple(evidence), _boosts(trail, candidate, evidence, record_id in moved, tops[1]), truncated,
    )


def _boosts(
    trail: AssemblyTrail, candidate: Candidate, evidence: Sequence[ArmEvidence], moved: bool, push_top: float,
) -> tuple[Boost, ...]:
    """Decay and confidence (through the composite list), recency, graph, push for one candidate."""
    composite = candidate.signals.get("composite")
    boosts = []
    for name, field_name in (("decay", "relevance"), ("confidence", "confidence")):
        weight = trail.score_weights.get(field_name)
        used = composite is not None and bool(weight)
        note = (f"weight {weight:g} inside the composite list's score" if used
                else f"not read in {trail.mode} mode (the arms rank by the query)")
        boosts.append(Boost(name, composite if used else None, 0.0, note))
    boosts.append(Boost("recency", None, 0.0, "moved above an older memory it updates" if moved
                        else "not moved by newer-first"))
    graph = next((e for e in evidence if e.arm == GRAPH_LIST), None)
    boosts.append(Boost("graph", None if graph is None else graph.score, 0.0 if graph is None else graph.contribution,
                        "not reached by the graph" if graph is None
                        else f"reached by spreading activation, fusion weight {graph.weight:g}"))
    boosts.append(_cues_boost(candidate.signals.get(CUES_SIGNAL)))
    push = candidate.push
    adds = push is not None and (candidate.pull is None or not trail.asked)
    boosts.append(Boost("push", push, push / push_top if adds and push is not None else 0.0,
                        "no cyclic surfacing" if push is None
                        else "cyclic score above the surfacing threshold" + ("" if adds else ", breaks ties only")))
    return tuple(boosts)


def _cues_boost(bonus: float | None) -> Boost:
    """The question-cue bonus added to the item's score, and which cue gave it (the speaker's
    weight is the larger, so the bonus splits one way)."""
    if bonus is None:
        return Boost(CUES_SIGNAL, None, 0.0, "no question cue matched (or question_cues is off)")
    named = bonus >= SPEAKER_WEIGHT - 1e-9
    timed = bonus - (SPEAKER_WEIGHT if named else 0.0) >= WHEN_WEIGHT - 1e-9
    said = [note for on, note in ((named, "the question names its speaker"),
                                  (timed, "it says a time and the question asks when")) if on]
    return Boost(CUES_SIGNAL, bonus, bonus, "; ".join(said))


def _moved_up(before: Sequence[Candidate], after: Sequence[Candidate]) -> set[str]:
    """Record ids that newer-first placed above a candidate that ranked above them before."""
    was = {c.key.record_id: i for i, c in enumerate(before)}
    moved = set()
    for i, candidate in enumerate(after):
        if any(was.get(other.key.record_id, -1) < was.get(candidate.key.record_id, -1) for other in after[i + 1:]):
            moved.add(candidate.key.record_id)
    return moved


def _left_out(trail: AssemblyTrail) -> tuple[LeftOut, ...]:
    """Every candidate not selected, with its reason."""
    out = [LeftOut(c.key.record_id, c.key.redis_key, "duplicate", c.combined, "same text as a better-ranked memory")
           for c in trail.duplicates]
    floor = trail.min_relevance
    out += [LeftOut(c.key.record_id, c.key.redis_key, "relevance_floor", c.combined,
                    f"match {c.signals.get(MATCH_SIGNAL, 0.0):.3f} below the floor {floor}")
            for c in trail.below_floor]
    chosen = set(trail.fitted.selected)
    skipped = set(trail.fitted.oversize.skipped)
    limit = trail.budget.max_items
    for index, candidate in enumerate(trail.ranked):
        if index in chosen:
            continue
        before = sum(1 for i in chosen if i < index)
        if index in skipped:
            reason, detail = "oversize", "larger than the whole token budget"
        elif limit is not None and before >= limit:
            reason, detail = "max_items", f"{limit} items already chosen"
        else:
            reason, detail = "budget", f"did not fit the {trail.budget.max_tokens} token budget"
        out.append(LeftOut(candidate.key.record_id, candidate.key.redis_key, reason, candidate.combined, detail))
    return (*out, *superseded_left_out(trail.superseded))


def superseded_left_out(hits: Sequence[SupersededHit]) -> tuple[LeftOut, ...]:
    """The superseded records a read's searches left out that would have ranked, as left-out
    entries of reason ``superseded`` (:mod:`redmem.context._superseded`)."""
    return tuple(LeftOut(hit.key.record_id, hit.key.redis_key, "superseded", hit.score, _superseded_detail(hit),
                         superseded_by=hit.superseded_by) for hit in hits)


def _superseded_detail(hit: SupersededHit) -> str:
    """Who superseded it and where it would have ranked: ``superseded by X; keyword #2, vector #5 of 50``."""
    by = f"superseded by {hit.superseded_by}" if hit.superseded_by else "superseded"
    ranks = ", ".join(f"{name} #{rank}" for name, rank in hit.ranks.items())
    return f"{by}; would have ranked {ranks} of {hit.depth}"
