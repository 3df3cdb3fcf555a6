"""A model's schema is recorded on first use; a changed model is noticed (defaults, warnings)."""

from __future__ import annotations

import gc
import json
import time
import warnings

import pytest

import redmem
from redmem import BM25Field, FloatField, IntField, KeyField, ListField, Model, StringField, TagField
from redmem.model import ModelMeta
from redmem.model._schema import IndexNotBuiltWarning, SchemaChangedWarning, forget_checks, schema_key
from redmem.store._embedded import EmbeddedServer


def note_model(**fields):
    """A version of the model ``Note`` (partitioned by agent) with ``fields`` besides its keys:
    each call is the same class as a later release of the code would declare it."""
    namespace = {"__module__": __name__, "agent": KeyField(partition_by="agent"), "note_id": KeyField(), **fields}
    return ModelMeta("SchemaNote", (Model,), namespace)


def stored(model):
    return json.loads(model._meta.client.get(schema_key(model._meta)))


def quietly(call):
    """``call()`` with every warning an error (the schema check must say nothing)."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        return call()


def test_the_schema_is_recorded_at_first_use(db):
    Note = note_model(content=StringField(), content_bm25=BM25Field(source="content"), topics=TagField())
    Note.create(agent="a", note_id="1", content="herons wade")
    schema = stored(Note)
    assert db.type(f"{redmem.store.settings().key_prefix}:SchemaNote:{{%g}}:schema") == b"string"
    assert schema["keys"] == ["agent", "note_id"] and schema["partition"] == ["agent"]
    assert schema["fields"]["content"] == {"kind": "StringField", "type": "str", "stored": True, "indexed": False,
                                           "source": None, "version": None}
    bm25 = schema["fields"]["content_bm25"]
    assert bm25["indexed"] and bm25["source"] == "content" and bm25["version"] == Note.content_bm25.version
    assert schema["fields"]["topics"]["kind"] == "TagField" and schema["fields"]["topics"]["indexed"]


def test_the_check_costs_one_round_trip_once_per_process(db, sent):
    Note = note_model(content=StringField())
    Note._meta.client  # noqa: B018 - the first use
    assert len(sent) == 1
    for _ in range(3):
        Note._meta.client  # noqa: B018
    assert len(sent) == 1


def test_a_model_declared_again_is_checked_even_where_an_earlier_one_was_freed(db):
    """Each new declaration of a changed model warns, however many earlier ones were freed:
    the check once remembered a model by the id of its options, which CPython hands to a later
    object once the first is freed, so a new declaration could pass unchecked."""
    note_model(content=StringField()).create(agent="a", note_id="1", content="x")
    for _ in range(30):
        with pytest.warns(SchemaChangedWarning, match="text"):
            note_model(text=StringField())._meta.client  # noqa: B018 - the first use warns
        gc.collect()


def test_an_unchanged_model_says_nothing(db):
    fields = {"content": StringField(), "content_bm25": BM25Field(source="content")}
    note_model(**fields).create(agent="a", note_id="1", content="x")
    again = note_model(content=StringField(), content_bm25=BM25Field(source="content"))
    assert quietly(lambda: again.query.filter(agent="a").all())[0].content == "x"


def test_added_fields_read_their_default_on_old_records(db):
    note_model(content=StringField()).create(agent="a", note_id="1", content="old")
    Later = note_model(content=StringField(), importance=IntField(default=3), labels=ListField(default=list),
                       weight=FloatField(default=0.5), stamped=FloatField(default=time.time), extra=StringField())
    old = quietly(lambda: Later.query.filter(agent="a").all())[0]
    assert (old.content, old.importance, old.labels, old.weight) == ("old", 3, [], 0.5)
    assert old.stamped is None and old.extra is None  # computed by a function / no default: not invented
    new = Later.create(agent="a", note_id="2", content="new", importance=7)
    assert Later.query.filter(agent="a", note_id="2").first().importance == 7 == new.importance


def test_a_renamed_field_warns_naming_it_and_the_migration(db):
    note_model(content=StringField(), content_bm25=BM25Field(source="content")).create(
        agent="a", note_id="1", content="herons wade")
    Renamed = note_model(text=StringField(), content_bm25=BM25Field(source="text"))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        Renamed._meta.client  # noqa: B018
    changed, unbuilt = ([str(w.message) for w in caught if w.category is kind]
                        for kind in (SchemaChangedWarning, IndexNotBuiltWarning))
    assert len(changed) == len(unbuilt) == 1
    assert "content" in changed[0] and "SchemaNote.migrate(rename={'content': 'text'})" in changed[0]
    assert "redmem migrate MODULE:SchemaNote --rename content=text" in changed[0]
    assert "content_bm25" in unbuilt[0] and "SchemaNote.migrate()" in unbuilt[0]


def test_a_removed_field_warns_until_the_change_is_recorded(db):
    note_model(content=StringField(), mood=StringField()).create(agent="a", note_id="1", content="c", mood="calm")
    Smaller = note_model(content=StringField())
    with pytest.warns(SchemaChangedWarning, match="mood"):
        Smaller._meta.client  # noqa: B018
    report = Smaller.migrate()
    assert report.renamed == 0 and report.indexes == ()
    forget_checks()
    quietly(lambda: Smaller._meta.client)
    assert db.hget(Smaller.query.filter(agent="a").first().db_key.redis_key, "mood") == b"calm"  # not deleted


def test_an_added_index_warns_then_migrate_builds_it_over_old_records(db):
    note_model(content=StringField()).create(agent="a", note_id="1", content="herons wade in reeds")
    Indexed = note_model(content=StringField(), content_bm25=BM25Field(source="content"), topics=TagField(default=["bird"]))
    with pytest.warns(IndexNotBuiltWarning, match="content_bm25, topics"):
        assert Indexed.query.filter(agent="a").keyword_search("herons") == []
    report = Indexed.migrate()
    assert report.indexes == ("content_bm25", "topics") and report.records == 1
    assert [n.note_id for n in Indexed.query.filter(agent="a").keyword_search("herons")] == ["1"]
    assert [n.note_id for n in Indexed.query.filter(agent="a", topics="bird").all()] == ["1"]
    forget_checks()
    quietly(lambda: Indexed._meta.client)


def test_a_changed_key_is_named_and_cannot_be_migrated(db):
    note_model(content=StringField()).create(agent="a", note_id="1", content="c")
    Rekeyed = ModelMeta("SchemaNote", (Model,), {"__module__": __name__, "note_id": KeyField(), "content": StringField()})
    with pytest.warns(SchemaChangedWarning, match="key fields changed"):
        Rekeyed._meta.client  # noqa: B018
    with pytest.raises(redmem.ModelException, match="cannot be migrated in place"):
        Rekeyed.migrate()


def test_a_refused_schema_key_leaves_the_model_usable(db):
    """A user whose ACL does not reach the model-wide key (a tenant-confined user) is not refused."""
    Note = note_model(content=StringField())
    user = "schema-confined"
    db.acl_setuser(user, enabled=True, passwords=["+pw"], keys=[f"{redmem.store.settings().key_prefix}:SchemaNote:{{a}}:*"],
                   commands=["+@all"], reset=True)
    try:
        confined = redmem.connect(_url_as(db, user, "pw"))
        Mine = ModelMeta("SchemaNote", (Model,), {"__module__": __name__, "agent": KeyField(partition_by="agent"),
                                            "note_id": KeyField(), "content": StringField(),
                                            "Meta": type("Meta", (), {"client": confined, "partition_registry": False})})
        Mine.create(agent="a", note_id="1", content="mine")
        assert db.get(schema_key(Note._meta)) is None
    finally:
        db.acl_deluser(user)


def _url_as(client, user, password):
    kwargs = client.connection_pool.connection_kwargs
    return f"redis://{user}:{password}@{kwargs['host']}:{kwargs['port']}/{kwargs.get('db', 0)}"


def test_a_check_the_server_did_not_answer_is_made_at_the_next_use(restartable):
    server, data = restartable
    Note = note_model(content=StringField())
    port = server.port
    server.stop()
    with pytest.raises(redmem.ServerUnavailable):
        Note._meta.client  # noqa: B018
    again = EmbeddedServer(unix_socket=False, port=port, extra_args=["--dir", str(data), "--dbfilename", "dump.rdb"])
    with again:
        Note._meta.client  # noqa: B018
        assert stored(Note)["fields"]["content"]["kind"] == "StringField"
