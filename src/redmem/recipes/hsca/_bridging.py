"""Backward bridging: a later beat that means what an earlier, frozen beat meant is linked to it
through a new snapshot; the frozen snapshot is never edited.

Forward bridging happens in layer 2 (:meth:`.domain_model.EmbeddingDomains.classify`): a turn
takes the best domain of an earlier turn close to it by meaning. The earlier turn's snapshot is
already frozen by then, so it cannot take the later turn's domain. When a beat becomes a
snapshot, each of its turns is compared with the turns of earlier snapshots (the engine's last
``max_buffer_chunks``); a pair is a link when::

    cos(later, earlier) >= bridge   and   own(later) is not a tag of earlier
                                    and   own(later) or own(earlier) is a subject domain
                                    and   cos(mean(beat), mean(own(earlier))) >= bridge

where ``own`` is a turn's first topical tag (not ``conversational``, ``unclassified`` or
``cross_domain``): layer 2 lists a turn's own domains before those it took from its context, so a
turn that only borrowed the earlier domain links nothing back. The cosine and the threshold are
the domain model's. ``mean(beat)`` is the unit mean vector of the later beat's turns and
``mean(own(earlier))`` that of the earlier turns sharing the earlier turn's own domain: one pair
of turns reaches the bridge cosine by chance (unrelated turns meet at 0.2-0.25), so the link
also needs the two sides' meanings as a whole to be that close: evidence from more than the one
pair. (Issue 30, round j, eval 5's tuning half at floor 0.15 and bridge 0.2: the two sides' mean
vectors separate pairs from controls better than their closest turn pair, AUC 0.89 against 0.86;
with every unrelated B side as a control, 196 in all, false bridges 23 -> 21, the same 13 of 16 pairs.) Two turns both about everyday life (``EVERYDAY_DOMAINS``: family, food,
emotions, ...) are never a link: neighbouring chat turns are that close all the time, and a bridge
joins a subject to something else. The linked
turns become a **bridge snapshot**, the next position after the beat's: copies of both turns
(same chunk ids, layer-1 weights and text), each tagged with its own tags followed by the own
domain of every turn it is linked to, so the earlier material and the later both carry the domain that joins
them. A linked turn whose layer-1 weight is 0 (a short turn such as "Like that, it covers every
natural number") is no evidence on its own: a snapshot's domains count by its chunks' layer-1
weights, so a bridge of such turns only weighs nothing. When every linked turn weighs 0, each
brings the heaviest turn of its beat with it (:func:`with_evidence`), linked as it is: the beat
is the material the short turn belongs to. Without a domain model (the keyword lists) there is no meaning to compare: no links.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence

import numpy as np

from ._domain_model import SUBJECT_DOMAINS, EmbeddingDomains
from ._interface import DomainTag, WeightedChunk
from ._scoring import ScoredTurn

__all__ = ["bridge_links", "bridge_chunks", "with_evidence", "side_cosine"]

#: Tags that name no topic and are not carried across a link.
_NOT_CARRIED = frozenset({DomainTag.CONVERSATIONAL.value, DomainTag.UNCLASSIFIED.value, DomainTag.CROSS_DOMAIN.value})

#: The topics a bridge must touch on one side at least (a link between two everyday topics is chat).
_SUBJECTS = frozenset(d.value for d in SUBJECT_DOMAINS)


def bridge_links(
    later: Sequence[ScoredTurn], earlier: Sequence[ScoredTurn], model: EmbeddingDomains
) -> list[tuple[ScoredTurn, ScoredTurn]]:
    """The (earlier, later) pairs of turns linked by meaning across a domain (module docstring)."""
    by_domain: dict[str | None, list[ScoredTurn]] = {}
    for old in earlier:
        by_domain.setdefault(_own_domain(old.chunk), []).append(old)
    sides = {domain: side_cosine(later, turns, model) for domain, turns in by_domain.items()}
    links = []
    for new in later:
        own = _own_domain(new.chunk)
        if own is None or not new.parsed.sentences:
            continue
        vector = model.vector(new.parsed.text)
        for old in earlier:
            if (
                old.parsed.sentences
                and own not in old.chunk.domain_tags
                and _SUBJECTS & {own, _own_domain(old.chunk)}
                and float(model.vector(old.parsed.text) @ vector) >= model.bridge
                and sides[_own_domain(old.chunk)] >= model.bridge
            ):
                links.append((old, new))
    return links


def side_cosine(one: Sequence[ScoredTurn], other: Sequence[ScoredTurn], model: EmbeddingDomains) -> float:
    """The cosine between the mean vectors of two groups of turns (of those with text; 0 when a
    group has none)."""
    means = []
    for turns in (one, other):
        vectors = [model.vector(t.parsed.text) for t in turns if t.parsed.sentences]
        if not vectors:
            return 0.0
        total = np.sum(vectors, axis=0)
        means.append(total / max(float(np.linalg.norm(total)), 1e-12))
    return float(means[0] @ means[1])


def with_evidence(
    links: Sequence[tuple[ScoredTurn, ScoredTurn]], beat_of: Mapping[str, Sequence[ScoredTurn]]
) -> list[tuple[ScoredTurn, ScoredTurn]]:
    """``links``, and when every linked turn has layer-1 weight 0, the same links from the
    heaviest turn of each linked turn's beat (``beat_of``: chunk id -> the turns of its beat)
    that weighs more than 0. A snapshot's domains count by its chunks' layer-1 total, so a
    bridge of zero-weight turns alone would carry the domain with no weight at all."""
    if any(t.chunk.layer1_score > 0 for pair in links for t in pair):
        return list(links)
    out = list(links)
    for old, new in links:
        for side, turn in ((0, old), (1, new)):
            heaviest = max(beat_of.get(turn.chunk.chunk_id, ()), key=lambda t: t.chunk.layer1_score, default=None)
            if heaviest is not None and heaviest.chunk.layer1_score > 0:
                out.append((heaviest, new) if side == 0 else (old, heaviest))
    return _unique(out)


def _unique(links: list[tuple[ScoredTurn, ScoredTurn]]) -> list[tuple[ScoredTurn, ScoredTurn]]:
    seen: set[tuple[str, str]] = set()
    kept = []
    for old, new in links:
        key = (old.chunk.chunk_id, new.chunk.chunk_id)
        if key not in seen:
            seen.add(key)
            kept.append((old, new))
    return kept


def _own_domain(chunk: WeightedChunk) -> str | None:
    """The chunk's first topical tag: layer 2 lists a turn's own domains before those it took
    from its context."""
    return next((t for t in chunk.domain_tags if t not in _NOT_CARRIED), None)


def bridge_chunks(links: Sequence[tuple[ScoredTurn, ScoredTurn]]) -> list[WeightedChunk]:
    """The bridge snapshot's chunks: each linked turn once (earlier ones first), tagged with its
    own tags and then the own domain of every turn it is linked to."""
    tags: dict[str, list[str]] = {}
    chunks: dict[str, WeightedChunk] = {}
    for pair in links:
        for turn, other in (pair, pair[::-1]):
            chunk = turn.chunk
            chunks.setdefault(chunk.chunk_id, chunk)
            found = tags.setdefault(chunk.chunk_id, list(chunk.domain_tags))
            carried = _own_domain(other.chunk)
            if carried is not None and carried not in found:
                found.append(carried)
    ordered = sorted(chunks, key=lambda cid: cid not in {old.chunk.chunk_id for old, _ in links})
    return [dataclasses.replace(chunks[cid], domain_tags=tags[cid]) for cid in ordered]
