"""The ready-made memory models: DefaultMemory and HybridMemory (facts), ConversationMemory (dialog
turns, :mod:`.conversation`) and ChatMemory (the turns the command line, MCP and the inspector
keep, :mod:`redmem.cli_commands._memory`).

``DefaultMemory`` is one agent's memory of facts, with every primitive the ContextAssembler
uses except embeddings (which need a provider) and cycles (which would make every memory
surface on its own):

| field | primitive | role |
|---|---|---|
| ``memory_id`` | AutoKeyField | the record's id (recipes set it to a digest of the text) |
| ``agent_id`` | KeyField, the partition | every key of one agent shares one hash tag |
| ``content`` | StringField | the memory text |
| ``importance`` | FloatField (1.0) | base score of ``relevance`` |
| ``created_at`` | DatetimeField | set on the first save (the assembler's ``newer_first`` clock: the first DatetimeField) |
| ``said_at`` | DatetimeField | when it was said (``Memory.add(text, said_at=...)``; unset: not known), written on its search line |
| ``relevance`` | DecayingSortedField | decays with time since created or touched, modulated by confidence |
| ``confidence`` | ConfidenceField | moved by outcomes and competitive suppression |
| ``associations`` | CoOccurrenceField | links to other memories and named entities |
| ``session``, ``position`` | StringField, IntField | the session a memory was said in and its place there (``Memory.add(text, session=...)``) |
| ``context`` | SearchText | the memory's line (``[8 May 2023] Caroline: text``) between its session neighbours' lines (what they said, without the speaker's name); its own line without a session |
| ``context_bm25`` | BM25Field | lexical retrieval over ``context`` |
| ``seen`` | ExistenceFilter | the pre-check: did any query term ever occur in this agent's memory |

It tracks access (AccessTrackerMixin): the assembler stages a read of each selected memory and
outcomes confirm or discard it. ``HybridMemory`` adds ``embedding``, an EmbeddingField over
``content`` that uses the provider set with ``redmem.configure(embedding_provider=...)``, which
makes the assembler's ``auto`` mode hybrid (BM25 + vectors + graph). For proactive surfacing,
subclass one and declare a CyclicDecayField with the cycles you want.
"""

from __future__ import annotations

from datetime import datetime

from ...context._neighbours import SearchText, TurnContextAnalyzer
from ...fields._bloom import ExistenceFilter
from ...fields._bm25 import BM25Field
from ...fields._confidence import ConfidenceField
from ...fields._cooccurrence import CoOccurrenceField
from ...fields._cyclic import CyclicDecayField, TemporalPeriod
from ...fields._decay import DecayingSortedField
from ...fields._embedding import EmbeddingField
from ...lifecycle import Lifecycle, LifecycleMixin
from ...model._base import Model
from ...model._fields import DatetimeField, FloatField, IntField, StringField
from ...model._indexed import AutoKeyField, KeyField
from ...observation._access import AccessTrackerMixin

__all__ = ["DefaultMemory", "HybridMemory", "memory_text", "ConversationMemory", "ChatMemory", "CHAT_LIFECYCLE",
           "said_epoch", "MORNING_PHASE"]

#: Epoch second at which the daily cycle peaks: 07:00 UTC.
MORNING_PHASE = 7 * 3600.0


def memory_text(memory: DefaultMemory) -> str | None:
    """What the ExistenceFilter of a memory records: its search context (its content when unset)."""
    return memory.context or memory.content


class DefaultMemory(AccessTrackerMixin, Model):
    """One fact an agent remembers (see the module docs for the fields)."""

    memory_id = AutoKeyField()
    agent_id = KeyField(partition_by="agent_id")
    content = StringField(null=False)
    session = StringField()
    position = IntField()
    context = SearchText(own_line_of="content")
    importance = FloatField(default=1.0)
    created_at = DatetimeField(auto_now_add=True)
    said_at = DatetimeField()
    relevance = DecayingSortedField(base_score_field="importance")
    confidence = ConfidenceField()
    associations = CoOccurrenceField()
    context_bm25 = BM25Field(source="context", analyzer=TurnContextAnalyzer())
    seen = ExistenceFilter(fingerprint_fn=memory_text)


class HybridMemory(DefaultMemory):
    """DefaultMemory with an embedding of ``content`` (the configured provider) for hybrid retrieval.

    The vector is of the memory's own text, the keyword index of its neighbour context: the
    keyword list finds the region of a conversation, the vector list the memory itself.
    """

    embedding = EmbeddingField(source="content")


class ConversationMemory(AccessTrackerMixin, Model):
    """A dialog turn of an agent's conversations: speaker, text, session, date and search context.

    Subclass it for a keyspace of your own or extra fields; set ``embedding``'s provider with
    ``redmem.configure(embedding_provider=...)`` (or declare the subclass without it).
    """

    memory_id = AutoKeyField()
    agent_id = KeyField()
    speaker = StringField()
    content = StringField()
    session = StringField()
    position = IntField()
    said_at = StringField()
    context = SearchText()
    passage = SearchText()
    importance = FloatField(default=1.0)
    relevance = DecayingSortedField(base_score_field="importance", partition_by="agent_id")
    confidence = ConfidenceField()
    context_bm25 = BM25Field(source="context", analyzer=TurnContextAnalyzer())
    embedding = EmbeddingField(source="passage")


#: The fact lifecycle of the CLI's memory: validity windows, ``as_of`` reads and supersede /
#: restore by hand, but no write merges or supersedes a turn on its own (a conversation says
#: "yes" twice, and a turn is not one fact): nothing leaves the current view unless asked.
CHAT_LIFECYCLE = Lifecycle(merge=False, supersede=False)


class ChatMemory(LifecycleMixin, AccessTrackerMixin, Model):
    """One turn of a conversation, remembered by an agent (its fields: :mod:`redmem.cli_commands._memory`)."""

    lifecycle = CHAT_LIFECYCLE

    memory_id = AutoKeyField()
    agent_id = KeyField()
    session = StringField()
    date = StringField()
    speaker = StringField()
    content = StringField()
    said_at = StringField()
    position = IntField()
    context = SearchText()
    passage = SearchText()
    importance = FloatField(default=1.0)
    routine = FloatField(default=0.0)
    relevance = DecayingSortedField(base_score_field="importance", partition_by="agent_id")
    rhythm = CyclicDecayField(
        base_score_field="routine", cycles=[(TemporalPeriod.DAILY, 0.2, MORNING_PHASE)], partition_by="agent_id"
    )
    confidence = ConfidenceField(partition_by="agent_id")
    associations = CoOccurrenceField(partition_by="agent_id")
    terms_seen = ExistenceFilter(fingerprint_fn=lambda memory: memory.context or memory.content,
                                 partition_by="agent_id")
    context_bm25 = BM25Field(source="context", analyzer=TurnContextAnalyzer(), partition_by="agent_id")
    embedding = EmbeddingField(source="passage", partition_by="agent_id")

    def valid_since(self) -> float:
        """A turn holds from when it was said (``said_at``), else from when it is written."""
        return said_epoch(self.said_at) if self.said_at else super().valid_since()


def said_epoch(said_at: str) -> float:
    """Epoch seconds of a turn's ``said_at`` (ISO 8601; without a zone, the local time)."""
    return datetime.fromisoformat(said_at).timestamp()
