"""DefaultMemory and HybridMemory: ready-made memory models for the recipes.

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

from ...fields.bloom import ExistenceFilter
from ...fields.bm25 import BM25Field
from ...fields.confidence import ConfidenceField
from ...fields.cooccurrence import CoOccurrenceField
from ...fields.decay import DecayingSortedField
from ...fields.embedding import EmbeddingField
from ...model.base import Model
from ...model.fields import DatetimeField, FloatField, StringField
from ...model.indexed import AutoKeyField, KeyField
from ...observation.access import AccessTrackerMixin

__all__ = ["DefaultMemory", "HybridMemory", "memory_text"]


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
