"""Isolation on every query path: a scoped query never switches tenant (chained filters, get),
and a stale instance of a deleted record is never saved back (issue 28, items 1 and 3)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from conftest import all_keys, configured_embeddings
from models import SeedMemory as Memory
from redmem import KeyField, Model, QueryException, RecordNotFound, StringField
from redmem.embeddings import HashingEmbeddings
from redmem.store._keys import KeyKind


class IsolationNamed(Model):
    """Keyed by a name the caller can change (a save then moves the record)."""

    owner = KeyField(partition_by="owner")
    name = KeyField()
    note = StringField()


@pytest.fixture(autouse=True)
def embeddings():
    with configured_embeddings(HashingEmbeddings(64)):
        yield


@pytest.fixture
def tenants(any_db):
    alice = Memory.create(agent_id="alice", topic="bank", content="alice keeps her bank PIN in the safe")
    bob = Memory.create(agent_id="bob", topic="bank", content="bob's bank PIN is 4321")
    return alice, bob


SWITCHES = [
    lambda q: q.all(),
    lambda q: q.count(),
    lambda q: q.keys(),
    lambda q: q.first(),
    lambda q: q.keyword_search("bank PIN"),
    lambda q: q.semantic_search("bank PIN"),
    lambda q: q.top_by_decay(n=5),
    lambda q: q.might_exist("bank"),
    lambda q: q.composite_score({"relevance": 1.0}),
]


@pytest.mark.parametrize("run", SWITCHES, ids=["all", "count", "keys", "first", "keyword", "semantic", "decay",
                                               "bloom", "composite"])
def test_a_chained_filter_cannot_switch_the_tenant(tenants, run):
    scoped = Memory.query.filter(agent_id="alice")
    with pytest.raises(QueryException, match="two values of the partition field 'agent_id'"):
        run(scoped.filter(agent_id="bob"))
    with pytest.raises(QueryException, match="two values"):
        run(scoped.filter(agent_id="alice").filter(agent_id="bob").filter(agent_id="alice"))
    built = replace(scoped, conditions=(*scoped.conditions, ("agent_id", "eq", "bob")))  # not through filter()
    with pytest.raises(QueryException, match="two values"):
        run(built)
    assert [m.content for m in scoped.filter(agent_id="alice").all()] == [tenants[0].content]


def test_get_on_a_scoped_query_stays_in_its_tenant(tenants):
    alice, bob = tenants
    scoped = Memory.query.filter(agent_id="alice")
    with pytest.raises(QueryException, match="two values"):
        scoped.get(agent_id="bob", memory_id=bob.memory_id)
    assert scoped.get(agent_id="alice", memory_id=alice.memory_id).content == alice.content
    assert Memory.query.get(agent_id="bob", memory_id=bob.memory_id).content == bob.content


def test_saving_a_stale_instance_of_a_deleted_record_raises_and_writes_nothing(any_db):
    kept = Memory.create(agent_id="a", topic="t", content="kept")
    stale = Memory.query.get(agent_id="a", memory_id=Memory.create(agent_id="a", topic="t", content="forget me").memory_id)
    Memory.query.get(agent_id="a", memory_id=stale.memory_id).delete()  # another client forgets it
    before = {key: any_db.dump(key) for key in all_keys(any_db)}
    stale.content = "edited after the delete"
    with pytest.raises(RecordNotFound, match="deleted since it was loaded"):
        stale.save()
    assert {key: any_db.dump(key) for key in all_keys(any_db)} == before
    assert [m.content for m in Memory.query.filter(agent_id="a").all()] == ["kept"]
    assert Memory.query.filter(agent_id="a").keyword_search("edited") == []
    kept.content = "kept, edited"
    kept.save()  # a live record still saves
    assert Memory.query.filter(agent_id="a").count() == 1
    assert any_db.zcard(kept.db_key.keyspace.key(KeyKind.ALL_RECORDS)) == 1


def test_a_stale_instance_with_a_changed_key_is_not_saved_back(any_db):
    record = IsolationNamed.create(owner="o", name="first", note="n")
    IsolationNamed.query.get(owner="o", name="first").delete()
    record.name = "renamed"
    with pytest.raises(RecordNotFound):
        record.save()
    assert IsolationNamed.query.filter(owner="o").count() == 0
