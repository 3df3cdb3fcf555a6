"""The ready-made memory models: DefaultMemory and HybridMemory (facts), ConversationMemory (dialog
turns, :mod:`.conversation`) and ChatMemory (the turns the command line, MCP and the inspector
keep, :mod:`redmem.cli_commands.memory`).

``DefaultMemory`` is one agent's memory of facts, with every primitive the ContextAssembler
uses except embeddings (which need a provider) and cycles (which would make every memory
surface on its own):

| field | primitive | role |
|---|---|---|
| ``memory_id`` | AutoKeyField | the record's id (recipes set it to a digest of the text) |
| ``agent_id`` | KeyField, the partition | every key of one agent shares one hash tag |
| ``content`` | StringField | the memory text |
| ``importance`` | FloatField (1.0) | base score of ``relevance`` |
| ``created_at`` | DatetimeField | set on the first save |
| ``relevance`` | DecayingSortedField | decays with time since created or touched, modulated by confidence |
| ``confidence`` | ConfidenceField | moved by outcomes and competitive suppression |
| ``associations`` | CoOccurrenceField | links to other memories and named entities |
| ``content_bm25`` | BM25Field | lexical retrieval over ``content`` |
| ``seen`` | ExistenceFilter | the pre-check: did any query term ever occur in this agent's memory |

It tracks access (AccessTrackerMixin): the assembler stages a read of each selected memory and
outcomes confirm or discard it. ``HybridMemory`` adds ``embedding``, an EmbeddingField over
``content`` that uses the provider set with ``redmem.configure(embedding_provider=...)``, which
makes the assembler's ``auto`` mode hybrid (BM25 + vectors + graph). For proactive surfacing,
subclass one and declare a CyclicDecayField with the cycles you want.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...fields.bloom import ExistenceFilter
from ...fields.bm25 import BM25Field
from ...fields.confidence import ConfidenceField
from ...fields.cooccurrence import CoOccurrenceField
from ...fields.cyclic import CyclicDecayField, TemporalPeriod
from ...fields.decay import DecayingSortedField
from ...fields.embedding import EmbeddingField
from ...model.base import Model
from ...model.fields import DatetimeField, FloatField, IntField, StringField
from ...model.indexed import AutoKeyField, KeyField
from ...observation.access import AccessTrackerMixin
from ...store.validation import positive_int
from ...text.analyzer import Analyzer

__all__ = ["DefaultMemory", "HybridMemory", "memory_text", "ConversationMemory", "ChatMemory", "SearchText",
           "TurnContextAnalyzer", "NEIGHBOUR_MARK", "MORNING_PHASE"]

#: The mark that opens a neighbour's line in a context, once per step of distance.
NEIGHBOUR_MARK = ">"
#: Epoch second at which the daily cycle peaks: 07:00 UTC.
MORNING_PHASE = 7 * 3600.0


def memory_text(memory: DefaultMemory) -> str | None:
    """What the ExistenceFilter of a memory records: its content."""
    return memory.content


class DefaultMemory(AccessTrackerMixin, Model):
    """One fact an agent remembers (see the module docs for the fields)."""

    memory_id = AutoKeyField()
    agent_id = KeyField(partition_by="agent_id")
    content = StringField(null=False)
    importance = FloatField(default=1.0)
    created_at = DatetimeField(auto_now_add=True)
    relevance = DecayingSortedField(base_score_field="importance")
    confidence = ConfidenceField()
    associations = CoOccurrenceField()
    content_bm25 = BM25Field(source="content")
    seen = ExistenceFilter(fingerprint_fn=memory_text)


class HybridMemory(DefaultMemory):
    """DefaultMemory with an embedding of ``content`` (the configured provider) for hybrid retrieval."""

    embedding = EmbeddingField(source="content")


@dataclass(frozen=True)
class TurnContextAnalyzer(Analyzer):
    """The shared analysis, with each line's terms repeated by its distance from the turn.

    A line opening with ``d`` :data:`NEIGHBOUR_MARK` signs counts ``max(1, turn_weight // 2**d)``
    times (d = 0: the turn's own line). With the default 4: the turn 4, next-door turns 2,
    turns two away 1.
    """

    turn_weight: int = 4

    def __post_init__(self) -> None:
        super().__post_init__()
        positive_int("turn_weight", self.turn_weight)

    def tokens(self, text: str) -> list[str]:
        """The weighted terms of a context: every line's terms, repeated by its weight."""
        terms: list[str] = []
        for line in text.splitlines():
            stripped = line.lstrip(NEIGHBOUR_MARK)
            distance = len(line) - len(stripped)
            terms.extend(super().tokens(stripped) * max(1, self.turn_weight >> distance))
        return terms


class SearchText(StringField):
    """A stored text kept for search only: indexed, never rendered into an assembled context.

    Pass ``ContextAssembler(render_fields=[...])`` naming it to show it anyway.
    """

    shown = False


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


class ChatMemory(AccessTrackerMixin, Model):
    """One turn of a conversation, remembered by an agent (its fields: :mod:`redmem.cli_commands.memory`)."""

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
