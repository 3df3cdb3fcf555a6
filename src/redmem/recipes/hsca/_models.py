"""HSCA's stored models, in one place: what the recipe keeps in Redis.

| model | partitioned by | one record per |
|---|---|---|
| :class:`SnapshotRecord` | ``(agent_id, session_id)`` | frozen snapshot (its chunks, term weights, concepts) |
| :class:`SnapshotPassage` | ``(agent_id, session_id)`` | snapshot, as a BM25-searchable passage for a ContextAssembler |
| :class:`ServedRecord` | ``agent_id`` | answered query and the chunk ids that served it (the tuning signal) |
| :class:`TunedParameters` | ``agent_id`` | agent: its tuned window, threshold, flag and keyword weights, tie saturation, short-turn prior |

A snapshot record's save writes its passage and its share of the session's macro aggregates
(:mod:`.series`) in the same MULTI/EXEC, so the passage and the aggregates exist exactly when the
record does. The modules that read and write these models (:mod:`.store`, :mod:`.source`,
:mod:`.history`, :mod:`.tuning`) re-export them under their former import paths.
"""

from __future__ import annotations

from typing import Any

from ...fields._bm25 import BM25Field
from ...model._base import Model
from ...model._batch import SaveBatch
from ...model._fields import BooleanField, DictField, FloatField, IntField, ListField, StringField
from ...model._indexed import AutoKeyField, KeyField, SortedField, TagField
from ...model._persistence import queue_new_record
from ._beats import Beat
from ._interface import ContextSnapshot
from ._macro import dominant_domain
from ._relational import TIE_SATURATION
from ._series import queue_added, queue_removed

__all__ = [
    "SnapshotRecord",
    "SnapshotPassage",
    "ServedRecord",
    "TunedParameters",
    "passage_content",
    "passage_of",
    "PASSAGE_TERMS",
    "DEFAULT_WINDOW",
    "DEFAULT_THRESHOLD",
]

#: Terms kept, heaviest first, as the content of a snapshot whose text was dropped.
PASSAGE_TERMS = 64
#: The co-occurrence window and snapshot coherence threshold of an agent never tuned.
DEFAULT_WINDOW, DEFAULT_THRESHOLD = 5, 0.72


class SnapshotPassage(Model):
    """One snapshot as a passage: its chunks' text (or terms), position, dominant domain, weight."""

    agent_id = KeyField(partition_by=("agent_id", "session_id"))
    session_id = KeyField()
    snapshot_id = KeyField()
    position = SortedField(int, null=False)
    domain = StringField(default="unclassified")
    macro_weight = FloatField(default=0.0)
    content = StringField(default="")
    content_bm25 = BM25Field(source="content")


def passage_content(beat: Beat) -> str:
    """The chunks' text, one line each; the heaviest terms when the text was dropped."""
    text = "\n".join(c.text for c in beat.snapshot.chunks if c.text)
    if text:
        return text
    ranked = sorted(beat.term_weights, key=lambda t: (-beat.term_weights[t], t))
    return " ".join(ranked[:PASSAGE_TERMS])


def passage_of(agent_id: str, session_id: str, beat: Beat) -> SnapshotPassage:
    """The passage of one snapshot (not saved: the snapshot record's save writes it)."""
    snapshot = beat.snapshot
    return SnapshotPassage(
        agent_id=agent_id,
        session_id=session_id,
        snapshot_id=snapshot.snapshot_id,
        position=snapshot.conversation_position,
        domain=dominant_domain(snapshot.domain_summary),
        macro_weight=round(snapshot.macro_weight, 4),
        content=passage_content(beat),
    )


class SnapshotRecord(Model):
    """One ContextSnapshot of one session of one agent."""

    agent_id = KeyField(partition_by=("agent_id", "session_id"))
    session_id = KeyField()
    snapshot_id = KeyField()
    position = SortedField(int, null=False)
    macro_weight = FloatField(default=0.0)
    domain_summary = DictField(default={})
    forced = BooleanField(default=False)
    created_at = FloatField(default=0.0)
    chunks = ListField(default=[])
    term_weights = DictField(default={})
    concepts = TagField(default=[])

    def snapshot(self) -> ContextSnapshot:
        """The ContextSnapshot this record stores."""
        return ContextSnapshot.from_dict(self.snapshot_dict())

    def snapshot_dict(self) -> dict[str, Any]:
        """The stored snapshot in ``ContextSnapshot.to_dict()`` form."""
        return {
            "snapshot_id": self.snapshot_id,
            "chunks": self.chunks,
            "macro_weight": self.macro_weight,
            "domain_summary": self.domain_summary,
            "conversation_position": self.position,
            "forced": self.forced,
            "created_at": self.created_at,
        }

    def queue_save(self, batch: SaveBatch) -> None:
        """A new snapshot's record, with its passage and its share of the session's aggregates."""
        super().queue_save(batch)
        if batch.old is None:
            queue_added(
                batch.pipe, batch.keyspace, self.position, self.snapshot_id, self.created_at, self.domain_summary
            )
            beat = Beat(self.snapshot(), dict(self.term_weights))
            queue_new_record(batch.pipe, batch.client, passage_of(self.agent_id, self.session_id, beat))

    def queue_delete(self, batch: SaveBatch) -> None:
        """The record's removal, with its share of the session's aggregates."""
        super().queue_delete(batch)
        if batch.old is not None:
            queue_removed(batch.pipe, batch.keyspace, batch.old["position"], batch.old["domain_summary"] or {})


class ServedRecord(Model):
    """One query of one agent, the chunk ids that served it and those shown (empty: not recorded)."""

    query_id = AutoKeyField()
    agent_id = KeyField(partition_by="agent_id")
    session_id = StringField(null=False)
    question = StringField(default="")
    served = ListField(default=[])
    shown = ListField(default=[])
    at = SortedField(float, null=False)


class TunedParameters(Model):
    """The tuned parameters of one agent."""

    agent_id = KeyField(partition_by="agent_id")
    cooccurrence_window = IntField(default=DEFAULT_WINDOW)
    snapshot_coherence_threshold = FloatField(default=DEFAULT_THRESHOLD)
    flag_weights = DictField(default={})
    keyword_weights = DictField(default={})
    tie_saturation = FloatField(default=TIE_SATURATION)
    short_prior = FloatField(default=0.0)
    history = IntField(default=0)
    seed = IntField(default=0)
    tuned_at = FloatField(default=0.0)
