"""Values, not descriptors: a primitive field reads as its value on a record, its methods stay on
the class field; an index field read on a record says where its methods are; a TagField takes
one str as a one-tag set."""

from __future__ import annotations

import pytest

from redmem import (
    AutoKeyField,
    BM25Field,
    ConfidenceField,
    CyclicDecayField,
    DecayingSortedField,
    FloatField,
    KeyField,
    Model,
    StringField,
    TagField,
    TemporalPeriod,
)


class Valued(Model):
    valued_id = AutoKeyField()
    agent_id = KeyField()
    content = StringField()
    importance = FloatField(default=1.0)
    kind = TagField()
    relevance = DecayingSortedField(base_score_field="importance", partition_by="agent_id")
    rhythm = CyclicDecayField(base_score_field="importance", cycles=[(TemporalPeriod.DAILY, 0.3, 0.0)],
                              partition_by="agent_id")
    confidence = ConfidenceField(initial_confidence=0.6)
    content_bm25 = BM25Field(source="content")


def test_primitive_fields_read_as_their_values_on_records(db):
    record = Valued(agent_id="a", content="tea at noon")
    assert record.confidence == 0.6 and record.relevance is None and record.rhythm is None
    record.save()
    assert isinstance(record.confidence, float) and record.confidence == 0.6
    assert isinstance(record.relevance, float)
    assert Valued.relevance.score_of(record) == pytest.approx(record.relevance, rel=1e-3)
    assert isinstance(record.rhythm, float) and record.rhythm > 0
    assert Valued.rhythm.score_of(record) == pytest.approx(record.rhythm, rel=1e-3)

    assert Valued.confidence.update_confidence(record, "confidence", 1.0) == record.confidence > 0.6
    loaded = Valued.query.get(agent_id="a", valued_id=record.valued_id)
    assert loaded.confidence == record.confidence  # read with the record: no extra round trip
    assert isinstance(loaded.relevance, float) and isinstance(loaded.rhythm, float)
    assert loaded == record and "rhythm" in loaded.to_dict()


def test_a_loaded_confidence_costs_no_round_trip(db, sent):
    record = Valued.create(agent_id="a", content="x")
    Valued.confidence.update_confidence(record, "confidence", 0.0)
    loaded = Valued.query.get(agent_id="a", valued_id=record.valued_id)
    before = len(sent)
    assert loaded.confidence < 0.6
    assert len(sent) == before


def test_methods_stay_on_the_class_field(db):
    assert isinstance(Valued.confidence, ConfidenceField)
    assert isinstance(Valued.relevance, DecayingSortedField)
    record = Valued.create(agent_id="a", content="x")
    assert Valued.relevance.touch(record) is True
    assert [hit.valued_id for hit in Valued.query.filter(agent_id="a").top_by_decay(5)] == [record.valued_id]


def test_an_index_field_on_a_record_names_where_its_methods_are(db):
    record = Valued.create(agent_id="a", content="x")
    with pytest.raises(AttributeError, match=r"Valued.content_bm25 is an index .*Valued.query"):
        record.content_bm25  # noqa: B018


def test_a_tag_field_takes_one_str_as_a_one_tag_set(db):
    record = Valued.create(agent_id="a", content="x", kind="fact")
    assert record.kind == ["fact"]
    assert Valued.query.filter(agent_id="a", kind="fact").first() == record
    assert Valued.query.get(agent_id="a", valued_id=record.valued_id).kind == ["fact"]
