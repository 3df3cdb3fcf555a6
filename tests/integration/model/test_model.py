"""Model declaration, validation and the round trip of every field type, on a server and a cluster."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta, timezone

import pytest

from redmem import (
    AutoKeyField,
    BooleanField,
    BytesField,
    DatetimeField,
    DictField,
    Field,
    FloatField,
    IntField,
    KeyField,
    ListField,
    Model,
    ModelException,
    SortedField,
    StringField,
    TagField,
    ValidationError,
)


class Everything(Model):
    record_id = AutoKeyField()
    owner = KeyField()
    text = StringField()
    count = IntField()
    ratio = FloatField()
    flag = BooleanField()
    items = ListField()
    data = DictField()
    blob = BytesField()
    when = DatetimeField()
    generic = Field(type=int)
    rank = SortedField(partition_by="owner")
    labels = TagField()

    class Meta:
        max_text_bytes = 0  # the round trip of a 100 KB text, past the default write-size limit


EDGE_VALUES = {
    "text": ["", "ünïcödé 日本語 😀", "line\nbreak", "x" * 100_000, "{}:*?[]"],
    "count": [0, -1, 2**63 - 1, -(2**63), 10**30],
    "ratio": [0.0, -0.0, 1e-308, 1.7976931348623157e308, 0.1 + 0.2, 3],
    "flag": [True, False],
    "items": [[], [1, "two", None, [3.5]], ["日本"]],
    "data": [{}, {"nested": {"a": [1, 2]}, "ü": None}],
    "blob": [b"", b"\x00\xff\x80", bytes(range(256))],
    "when": [datetime(2024, 2, 29, 12, 0, tzinfo=UTC),
             datetime(1999, 12, 31, 23, 59, 59, 999999),
             datetime(2030, 1, 1, tzinfo=timezone(timedelta(hours=-5)))],
    "generic": [0, 7],
    "rank": [0.0, -5.5, 1e300, 42],
    "labels": [[], ["a"], ["b", "a", "a", "日本", "{x}"]],
}


@pytest.mark.parametrize("field", sorted(EDGE_VALUES))
def test_every_field_type_round_trips(any_db, field):
    for value in EDGE_VALUES[field]:
        record = Everything.create(owner="o-1", **{field: value})
        loaded = Everything.query.get(owner="o-1", record_id=record.record_id)
        expected = sorted(set(value)) if field == "labels" else value
        assert getattr(loaded, field) == expected
        assert type(getattr(loaded, field)) is type(getattr(record, field))


def test_none_values_round_trip_and_clear_stored_fields(any_db):
    record = Everything.create(owner="o", text="hello", rank=3)
    record.text = None
    record.rank = None
    record.save()
    loaded = Everything.query.get(owner="o", record_id=record.record_id)
    assert loaded.text is None and loaded.rank is None
    assert any_db.hget(record.db_key.redis_key, "text") is None


def test_records_are_readable_in_redis_cli(any_db):
    record = Everything.create(owner="o", text="héllo", count=3, ratio=0.5, flag=True,
                               items=[1, "a"], data={"k": "v"},
                               when=datetime(2025, 1, 2, 3, 4, 5, tzinfo=UTC))
    stored = any_db.hgetall(record.db_key.redis_key)
    assert stored[b"text"] == "héllo".encode()
    assert stored[b"count"] == b"3"
    assert stored[b"ratio"] == b"0.5"
    assert stored[b"flag"] == b"true"
    assert stored[b"items"] == b'[1,"a"]'
    assert stored[b"data"] == b'{"k":"v"}'
    assert stored[b"when"] == b"2025-01-02T03:04:05+00:00"


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("text", 5, "Everything.text expects str"),
        ("count", 1.5, "Everything.count expects int"),
        ("count", True, "Everything.count expects int"),
        ("ratio", "x", "Everything.ratio expects a number"),
        ("ratio", math.nan, "Everything.ratio must be a finite number"),
        ("ratio", math.inf, "Everything.ratio must be a finite number"),
        ("rank", -math.inf, "Everything.rank must be a finite number"),
        ("rank", math.nan, "Everything.rank must be a finite number"),
        ("flag", 1, "Everything.flag expects bool"),
        ("items", {1, 2}, "Everything.items expects list"),
        ("data", {"a": object()}, "Everything.data must be JSON-serialisable"),
        ("data", {"a": math.nan}, "Everything.data must be JSON-serialisable"),
        ("labels", 5, "Everything.labels expects a str or a list or set of str"),
        ("labels", [1], "Everything.labels tags must all be str"),
        ("when", "2024-01-01", "Everything.when expects datetime"),
    ],
)
def test_bad_values_raise_validation_errors_naming_the_field(db, field, value, message):
    record = Everything(owner="o", **{field: value})
    with pytest.raises(ValidationError, match=message):
        record.save()
    assert Everything.query.filter(owner="o").count() == 0


def test_null_default_and_max_length(db):
    class ModelNote(Model):
        note_id = KeyField()
        title = StringField(null=False, default="untitled", max_length=5)
        tags = ListField(default=list)

    note = ModelNote(note_id="n")
    assert note.title == "untitled" and note.tags == [] and note.tags is not ModelNote(note_id="m").tags
    note.title = "too long"
    with pytest.raises(ValidationError, match="ModelNote.title is 8 long, over max_length 5"):
        note.save()
    note.title = None
    with pytest.raises(ValidationError, match="ModelNote.title may not be None"):
        note.save()
    with pytest.raises(ValidationError, match="ModelNote.note_id may not be None"):
        ModelNote().save()
    with pytest.raises(ValidationError, match="ModelNote has no field"):
        ModelNote(note_id="x", colour="red")


def test_datetime_auto_now_and_auto_now_add(db):
    class ModelEvent(Model):
        event_id = AutoKeyField()
        created = DatetimeField(auto_now_add=True)
        updated = DatetimeField(auto_now=True)

    event = ModelEvent.create()
    created, updated = event.created, event.updated
    assert created.tzinfo is not None and abs((datetime.now(UTC) - created).total_seconds()) < 60
    event.save()
    assert event.created == created and event.updated >= updated


def test_conflicting_partitions_are_rejected():
    with pytest.raises(ModelException, match="different partitions"):
        class ModelBad(Model):
            a = KeyField()
            b = KeyField()
            x = SortedField(partition_by="a")
            y = SortedField(partition_by="b")


def test_partition_must_be_a_key_field():
    with pytest.raises(ModelException, match="must be a KeyField"):
        class ModelBad(Model):
            a = AutoKeyField()
            owner = StringField()
            x = SortedField(partition_by="owner")


def test_a_model_needs_a_key():
    with pytest.raises(ModelException, match="needs a KeyField"):
        class Keyless(Model):
            text = StringField()


def test_unsupported_field_types_are_rejected():
    with pytest.raises(ModelException, match="unsupported field type"):
        Field(type=set)
    with pytest.raises(ModelException, match="SortedField type"):
        SortedField(type=str)


def test_fields_keep_declaration_order_and_come_from_mixins(db):
    class Stamped:
        stamp = IntField(default=0)

    class ModelDoc(Stamped, Model):
        doc_id = KeyField()
        body = StringField()

    class SubDoc(ModelDoc):
        extra = StringField()

    assert list(ModelDoc._meta.fields) == ["stamp", "doc_id", "body"]
    assert list(SubDoc._meta.fields) == ["stamp", "doc_id", "body", "extra"]
    assert SubDoc._meta.fields["body"] is not ModelDoc._meta.fields["body"]
    assert SubDoc._meta.fields["body"].label == "SubDoc.body"
    SubDoc.create(doc_id="d", body="b", extra="e")
    assert SubDoc.query.get(doc_id="d").extra == "e"
    assert ModelDoc.query.get(doc_id="d") is None  # a subclass is its own model


def test_fields_of_a_kind_come_in_declaration_order_subclasses_included():
    assert [f.name for f in Everything._meta.fields_of(KeyField)] == ["record_id", "owner"]  # AutoKeyField too
    assert Everything._meta.fields_of(AutoKeyField) == (Everything.record_id,)
    assert Everything._meta.fields_of(SortedField) is Everything._meta.fields_of(SortedField)  # found once
    assert Everything._meta.fields_of(TagField) == (Everything.labels,)
    assert Everything._meta.fields_of(ModelException) == ()


def test_abstract_models_have_no_records():
    class Base(Model):
        body = StringField()

        class Meta:
            abstract = True

    with pytest.raises(ModelException, match="abstract"):
        Base.query.count()


def test_db_key_names_the_record_hash(any_db):
    record = Everything.create(owner="agent-1")
    assert record.db_key.redis_key == f"{record.db_key.keyspace.base}:r:{record.record_id}"
    assert "{agent-1}" in record.db_key.redis_key
    assert any_db.exists(record.db_key.redis_key) == 1
    assert record.db_key.partition == ("agent-1",)


def test_int_key_fields(any_db):
    class Turn(Model):
        conversation = KeyField()
        number = KeyField(type=int)
        text = StringField()

    Turn.create(conversation="c", number=3, text="hi")
    assert Turn.query.get(conversation="c", number=3).number == 3
    with pytest.raises(ValidationError, match="Turn.number expects int"):
        Turn(conversation="c", number="3").save()


def test_key_fields_cannot_be_null():
    with pytest.raises(ModelException, match="cannot be null"):
        KeyField(null=True)
