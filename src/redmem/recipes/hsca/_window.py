"""Layer 4's arithmetic: when the buffer becomes a snapshot, and what the snapshot holds. Pure.

The buffer's aggregate coherence is the layer-1-weighted mean of its chunks' coherence::

    aggregate = sum(coherence_i * layer1_i) / sum(layer1_i)      (undefined when sum(layer1_i) = 0)

A snapshot is due when the buffer holds ``max_chunks`` chunks (forced), or when it holds at least
``min_beat`` chunks and ``aggregate >= threshold``. The minimum beat is redmem's addition: without
it a single coherent turn is a beat of its own, and every turn becomes a snapshot.

A snapshot of chunks ``c_1..c_n``: ``macro_weight = min(1, sum(layer1_i) / n)``; each domain
tag's weight is the layer-1 weight of the chunks carrying it over the total
(``domain_summary[d] = sum(layer1_i for c_i tagged d) / sum(layer1_i)``); when every layer-1
score is 0 the weights are undefined, and each chunk counts 1 instead (``domain_summary[d]`` =
the share of chunks tagged *d*), so a beat of new vocabulary still says what it is about;
``forced`` when ``n >= max_chunks``; every chunk's ``parent_id`` is the snapshot's id.

A beat also ends at a **change of domain** (redmem's addition, :func:`domain_break`): before a
chunk is buffered, the buffer becomes a snapshot when the chunk's topic label differs from the
buffer's, unless the chunk's label is a subject domain and its tags include the buffer's label
(a turn tagged mathematics, then technical prose, still continues a technical-prose beat: issue
30, single sentences of one Python document broke their beat in two whenever one was nearer
mathematics). A chunk whose label is an everyday topic (``EVERYDAY_DOMAINS``) ends a beat of
another label even when tagged with it: by meaning such a turn holds no subject of its own, so
a subject tag it has was taken from its context, a mention, as in the cross-domain test and
the bridge links (issue 30, eval 5's tuning half: "A single breath noticed completely can be
enough.", emotions first and philosophical from the turn before, kept its philosophy beat open,
and that beat's bridge to a poem came out weighing emotions, not philosophy). A ``cross_domain`` chunk ends
any other beat. A chunk's label is ``cross_domain`` when it is tagged so, else its first topical tag,
else none (``conversational`` and ``unclassified`` say nothing about the topic and join the beat
they arrive in). The buffer's label is the label carrying most of its layer-1 weight (by chunk
count when that weight is 0).
"""

from __future__ import annotations

import dataclasses
import time
import uuid
from collections.abc import Sequence

from ...store._errors import ValidationError
from ._domains import EVERYDAY_DOMAINS
from ._interface import ContextSnapshot, DomainTag, WeightedChunk

__all__ = ["aggregate_coherence", "snapshot_due", "domain_break", "topic_label", "build_snapshot", "DEFAULT_MIN_BEAT"]

#: Chunks a threshold-triggered snapshot needs at least (a forced one needs the full buffer).
DEFAULT_MIN_BEAT = 2
#: Tags that name no topic: a chunk with only these has no topic label.
_NO_TOPIC = frozenset({DomainTag.CONVERSATIONAL.value, DomainTag.UNCLASSIFIED.value})
#: Labels that end a beat of another label even when the chunk is also tagged with it.
_BREAKING = frozenset(d.value for d in EVERYDAY_DOMAINS | {DomainTag.CROSS_DOMAIN})


def topic_label(chunk: WeightedChunk) -> str | None:
    """``cross_domain`` when the chunk is tagged so, else its first topical tag, else None."""
    if DomainTag.CROSS_DOMAIN.value in chunk.domain_tags:
        return DomainTag.CROSS_DOMAIN.value
    return next((t for t in chunk.domain_tags if t not in _NO_TOPIC), None)


def domain_break(buffer: Sequence[WeightedChunk], incoming: WeightedChunk) -> bool:
    """Whether the buffer should become a snapshot before ``incoming`` joins it: both have a
    topic label, they differ, and ``incoming`` is cross-domain, labelled with an everyday topic, or
    not tagged with the buffer's label (module docstring)."""
    new = topic_label(incoming)
    if new is None:
        return False
    weights: dict[str, float] = {}
    weighted = any(c.layer1_score > 0 for c in buffer)
    for chunk in buffer:
        label = topic_label(chunk)
        if label is not None:
            weights[label] = weights.get(label, 0.0) + (chunk.layer1_score if weighted else 1.0)
    if not weights:
        return False
    current = max(weights, key=lambda label: (weights[label], label))
    return current != new and (new in _BREAKING or current not in incoming.domain_tags)


def aggregate_coherence(chunks: Sequence[WeightedChunk]) -> float | None:
    """The layer-1-weighted mean coherence of ``chunks``; None when their total weight is 0."""
    total = sum(c.layer1_score for c in chunks)
    if total == 0:
        return None
    return sum(c.coherence_score * c.layer1_score for c in chunks) / total


def snapshot_due(chunks: Sequence[WeightedChunk], threshold: float, max_chunks: int,
                 min_beat: int = DEFAULT_MIN_BEAT) -> bool:
    """Whether the buffer ``chunks`` should become a snapshot now (see the module docstring)."""
    if not chunks:
        return False
    if len(chunks) >= max_chunks:
        return True
    if len(chunks) < min_beat:
        return False
    aggregate = aggregate_coherence(chunks)
    return aggregate is not None and aggregate >= threshold


def build_snapshot(chunks: Sequence[WeightedChunk], position: int, max_chunks: int, *,
                   keep_text: bool = True, snapshot_id: str | None = None,
                   created_at: float | None = None) -> ContextSnapshot:
    """The snapshot of the buffer ``chunks`` at ``position``; ValidationError for an empty buffer.

    Sets each chunk's ``parent_id``; the snapshot holds copies, with the text emptied unless
    ``keep_text``.
    """
    if not chunks:
        raise ValidationError("take_snapshot() needs at least one chunk in the buffer")
    snapshot_id = snapshot_id or str(uuid.uuid4())
    weighted = sum(c.layer1_score for c in chunks) > 0
    total = sum(c.layer1_score for c in chunks) if weighted else float(len(chunks))
    domains: dict[str, float] = {}
    for chunk in chunks:
        chunk.parent_id = snapshot_id
        for tag in chunk.domain_tags:
            domains[tag] = domains.get(tag, 0.0) + (chunk.layer1_score if weighted else 1.0)
    kept = [dataclasses.replace(c) if keep_text else dataclasses.replace(c, text="") for c in chunks]
    return ContextSnapshot(
        snapshot_id=snapshot_id,
        chunks=kept,
        macro_weight=min(sum(c.layer1_score for c in chunks) / len(chunks), 1.0),
        domain_summary={tag: weight / total for tag, weight in domains.items()},
        conversation_position=position,
        forced=len(chunks) >= max_chunks,
        created_at=time.time() if created_at is None else created_at,
    )
