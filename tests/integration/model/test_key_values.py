"""Record hashes leave out the key fields their key name holds (model/_key_values.py), on a server and a cluster."""

from __future__ import annotations

import pytest

from conftest import all_keys
from redmem import AutoKeyField, BM25Field, IntField, KeyField, Model, SortedField, StringField, TagField
from redmem.recipes.context_assembler import ContextAssembler
from redmem.store._keys import KeyKind


class KeyValuesNote(Model):
    """Partitioned by ``agent_id``, one id field (``note_id``): the seed's Memory shape."""

    note_id = AutoKeyField()
    agent_id = KeyField()
    body = StringField()
    rank = SortedField(float, partition_by="agent_id")
    tags = TagField()
    body_bm25 = BM25Field(source="body")


class Pair(Model):
    """Unpartitioned with two id fields, each indexed by value (filters on one of them)."""

    owner = KeyField()
    slot = KeyField(int)
    body = StringField()


class Shard(Model):
    """An int partition field and an int id field: both are ``str(value)`` in key and hash alike."""

    shard = KeyField(int, partition_by="shard")
    number = KeyField(int)
    body = StringField()


class PaddedKey(KeyField):
    """A key field whose key text is not its hash encoding: the hash must keep its entry."""

    def __init__(self) -> None:
        super().__init__(int)

    def key_text(self, value: object) -> str:
        return f"{value:06d}"


class Padded(Model):
    code = PaddedKey()
    body = StringField()


def entries(client, record) -> dict[str, str]:
    return {k.decode(): v.decode() for k, v in client.hgetall(record.db_key.redis_key).items()}


def test_saved_hash_leaves_out_key_fields_and_loads_back_equal(any_db):
    note = KeyValuesNote.create(agent_id="agent:1 x", body="hello", rank=2.0, tags=["a"])
    assert entries(any_db, note) == {"body": "hello", "rank": "2.0", "tags": '["a"]'}
    loaded = KeyValuesNote.query.get(agent_id="agent:1 x", note_id=note.note_id)
    assert loaded == note and loaded.note_id == note.note_id and loaded.agent_id == "agent:1 x"
    assert KeyValuesNote.query.filter(agent_id="agent:1 x").all() == [note]


def test_save_many_and_updates_never_write_key_fields(any_db):
    notes = [KeyValuesNote(agent_id="a", body=f"n{i}", rank=float(i)) for i in range(5)]
    KeyValuesNote.save_many(notes)
    notes[0].body = "changed"
    notes[0].save()
    for note in notes:
        assert set(entries(any_db, note)) == {"body", "rank"}
    assert sorted(KeyValuesNote.query.filter(agent_id="a").all(), key=lambda n: n.rank) == notes


def test_hash_written_with_key_fields_loads_identically_and_is_slimmed_by_a_resave(any_db):
    note = KeyValuesNote.create(agent_id="a", body="old", rank=1.0, tags=["t"])
    key = note.db_key.redis_key
    any_db.hset(key, mapping={"note_id": note.note_id, "agent_id": "a"})  # as older versions stored it
    loaded = KeyValuesNote.query.get(agent_id="a", note_id=note.note_id)
    assert loaded == note
    loaded.body = "new"
    loaded.save()
    assert entries(any_db, loaded) == {"body": "new", "rank": "1.0", "tags": '["t"]'}
    assert KeyValuesNote.query.filter(agent_id="a", rank__gte=1.0).all() == [loaded]


def test_filters_on_key_fields_use_the_key_not_the_hash(any_db):
    a, b = KeyValuesNote.create(agent_id="a", body="x"), KeyValuesNote.create(agent_id="a", body="y")
    KeyValuesNote.create(agent_id="b", body="z")
    assert KeyValuesNote.query.filter(agent_id="a", note_id__in=[b.note_id, "nope"]).all() == [b]
    assert KeyValuesNote.query.filter(agent_id="a", note_id=a.note_id).all() == [a]
    first, second = Pair.create(owner="o", slot=1, body="p"), Pair.create(owner="o", slot=2, body="q")
    Pair.create(owner="other", slot=1, body="r")
    assert "owner" not in entries(any_db, first) and "slot" not in entries(any_db, first)
    assert sorted(Pair.query.filter(owner="o").all(), key=lambda p: p.slot) == [first, second]
    assert Pair.query.filter(slot__in=[2]).all() == [second]


def test_assemble_where_on_a_key_field(any_db):
    kept, other = KeyValuesNote.create(agent_id="a", body="alpha beta"), KeyValuesNote.create(agent_id="a", body="alpha gamma")
    assembler = ContextAssembler(KeyValuesNote, retrieval_mode="lexical")
    assert len(assembler.assemble("alpha", agent_id="a").records) == 2
    result = assembler.assemble("alpha", where={"note_id__in": [kept.note_id]}, agent_id="a")
    assert result.records == [kept] and other not in result.records


def test_deleting_a_slim_record_removes_its_value_index_entries(any_db):
    pair = Pair.create(owner="o", slot=1, body="p")
    value_index = pair.db_key.keyspace.value_key(KeyKind.KEY_VALUE, "owner", "o")
    assert any_db.smembers(value_index) == {pair.db_key.record_id.encode()}
    assert pair.delete()
    assert not all_keys(any_db)


def test_int_key_fields_are_left_out_and_load_back_as_ints(any_db):
    record = Shard.create(shard=-7, number=42, body="b")
    assert entries(any_db, record) == {"body": "b"}
    loaded = Shard.query.get(shard=-7, number=42)
    assert loaded == record and type(loaded.shard) is int and type(loaded.number) is int


def test_a_key_field_whose_key_text_differs_from_its_encoding_stays_in_the_hash(any_db):
    record = Padded.create(code=42, body="b")
    assert record.db_key.record_id == "000042"
    assert entries(any_db, record) == {"code": "42", "body": "b"}
    assert Padded.query.get(code=42) == record


def test_a_record_with_no_entry_of_its_own_exists_until_it_has_one(any_db):
    record = Shard.create(shard=1, number=2)
    assert entries(any_db, record) == {"_": ""}
    assert Shard.query.get(shard=1, number=2) == record
    record.body = "now"
    record.save()
    assert entries(any_db, record) == {"body": "now"}


@pytest.mark.parametrize("count", [0, 3])
def test_a_model_keyed_by_one_string_stores_only_its_other_fields(any_db, count):
    class Counted(Model):
        name = KeyField()
        count = IntField()

    record = Counted.create(name="n", count=count)
    assert entries(any_db, record) == {"count": str(count)}
    assert Counted.query.get(name="n").count == count
