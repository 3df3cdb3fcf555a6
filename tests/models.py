"""Models shared by the assembler tests: one declaration each, imported where a test needs that shape.

Records are keyed by the model's class name under each test's own key prefix (``conftest.py``),
so several test modules can use the same class without seeing each other's records. A test keeps
a model of its own only where it needs a shape none of these has (its docstring says why).
"""

from __future__ import annotations

from redmem import (
    AccessTrackerMixin,
    AutoKeyField,
    BM25Field,
    ConfidenceField,
    CoOccurrenceField,
    CyclicDecayField,
    DecayingSortedField,
    EmbeddingField,
    ExistenceFilter,
    FloatField,
    KeyField,
    Model,
    StringField,
)

#: The seed's ranking: RRF with the graph list weighing 1, no relevance floor, no newer-first move.
#: Tests of other mechanisms (effects, quality, round trips) written against it pin it; the
#: defaults are tested in test_ranking_defaults.py and test_context_assembler.py.
SEED_RANKING = {"fusion": "rrf", "fusion_weights": {"graph": 1.0}, "min_relevance": None, "newer_first": False}


class SeedMemory(AccessTrackerMixin, Model):
    """The README's ``Memory`` shape: BM25Field + EmbeddingField (so ``auto`` -> hybrid), decay on
    ``importance``, confidence, co-occurrence graph and an ExistenceFilter over ``topic``."""

    memory_id = AutoKeyField()
    agent_id = KeyField()
    topic = StringField()
    content = StringField()
    importance = FloatField(default=1.0)
    relevance = DecayingSortedField(base_score_field="importance", partition_by="agent_id")
    confidence = ConfidenceField()
    associations = CoOccurrenceField()
    topics_seen = ExistenceFilter(fingerprint_fn=lambda m: m.topic)
    content_bm25 = BM25Field(source="content")
    embedding = EmbeddingField(source="content")


class RhythmicMemory(AccessTrackerMixin, Model):
    """``SeedMemory`` plus a CyclicDecayField over ``salience`` (push path): every path of the assembler
    is in use. A fresh record's cyclic score is ``salience * 0.01 ** -0.1 = 1.585 * salience``."""

    memory_id = AutoKeyField()
    agent_id = KeyField()
    topic = StringField()
    content = StringField()
    importance = FloatField(default=1.0)
    salience = FloatField(default=0.0)
    relevance = DecayingSortedField(base_score_field="importance", partition_by="agent_id")
    rhythm = CyclicDecayField(base_score_field="salience", partition_by="agent_id")
    confidence = ConfidenceField()
    associations = CoOccurrenceField()
    topics_seen = ExistenceFilter(fingerprint_fn=lambda m: m.topic)
    content_bm25 = BM25Field(source="content")
    embedding = EmbeddingField(source="content")


class SeedNote(Model):
    """Lexical (BM25Field, no EmbeddingField: ``auto`` -> lexical), graph and push; no
    ExistenceFilter."""

    note_id = AutoKeyField()
    agent_id = KeyField()
    content = StringField()
    salience = FloatField(default=0.0)
    confidence = ConfidenceField(partition_by="agent_id")
    links = CoOccurrenceField()
    content_bm25 = BM25Field(source="content")
    rhythm = CyclicDecayField(base_score_field="salience", partition_by="agent_id")


class Card(Model):
    """Push path only (no BM25Field, no EmbeddingField, no score_weights): ranked by ``salience``."""

    card_id = AutoKeyField()
    agent_id = KeyField()
    content = StringField()
    salience = FloatField(default=1.0)
    rhythm = CyclicDecayField(base_score_field="salience", partition_by="agent_id")
