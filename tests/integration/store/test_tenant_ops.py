"""A tenant as a whole: erased with no key left (registry included), exported to JSON Lines and
imported with every key identical, on one server and on a cluster."""

from __future__ import annotations

import io
import math
import time
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import redmem
from conftest import all_keys, configured_embeddings
from redmem import (
    AutoKeyField,
    BM25Field,
    DecayingSortedField,
    FloatField,
    KeyField,
    Model,
    ObservationProtocol,
    StringField,
)
from redmem.cli_commands._conversation import ChatTurn
from redmem.cli_commands._ingest import store_turns
from redmem.cli_commands._memory import ChatMemory, memory_assembler
from redmem.embeddings import HashingEmbeddings
from redmem.model._registry import listed_partitions
from redmem.recipes._retention import Retention, apply_retention, archived
from redmem.recipes._tenant_data import erase_tenant, export_tenant, import_tenant, tenant_key_count
from redmem.store import ValidationError
from redmem.store._tenant_keys import TenantKeys, dump_keys, erase_tenant_keys, restore_keys

LINES = ["Maya adopted a greyhound called Biscuit.", "Maya flies to Lisbon in May.",
         "Maya turned vegetarian last spring.", "Biscuit sleeps on the sofa.", "The billing service moved to Go."]


@pytest.fixture(autouse=True)
def hashing():
    with configured_embeddings(HashingEmbeddings(384)):
        yield


def fill(agent: str) -> None:
    """Turns in a session, a recall with feedback: records, every index, graph edges, confidence,
    access logs and staged reads of ``agent``."""
    start = datetime(2026, 5, 1, tzinfo=UTC)
    store_turns([ChatTurn(line, start + timedelta(minutes=i), "s1", "maya", 1.0, i == 0) for i, line in enumerate(LINES)],
                agent)
    result = memory_assembler().assemble("Where does Maya fly?", agent_id=agent)
    ObservationProtocol.on_context_used(result.records, {r: "acted" for r in result.records})
    memory_assembler().assemble("What does Biscuit do?", agent_id=agent)


def snapshot(agent: str) -> dict:
    """Every key of the tenant with its content, type and expiry (the cache epochs left out)."""
    tenant = TenantKeys.of(ChatMemory._meta.keyspace((agent,)))
    return {dump["key"]: (dump["type"], dump["ttl_ms"] is not None, _without_epoch(dump))
            for dump in dump_keys(redmem.get_client(), tenant)}


def _without_epoch(dump: dict) -> object:
    if dump["type"] == "hash":
        return [pair for pair in dump["value"] if pair[0] != "epoch"]
    return dump["value"]


def keys_of(agent: str) -> set[str]:
    return {key for key in all_keys(redmem.get_client()) if f"{{{agent}}}" in key}


def test_erase_leaves_no_key_of_the_tenant_and_no_registry_entry(any_db):
    fill("erased")
    fill("kept")
    kept_before = snapshot("kept")
    assert len(keys_of("erased")) > 20
    assert "erased" in {space.tag for space in listed_partitions(ChatMemory._meta, any_db)}

    done = erase_tenant(ChatMemory, agent_id="erased")

    assert done.complete and done.unregistered and done.erased >= 20
    assert keys_of("erased") == set()
    assert not [key for key in any_db.scan_iter(match="*erased*")]
    assert tenant_key_count(ChatMemory, agent_id="erased") == 0
    assert {space.tag for space in listed_partitions(ChatMemory._meta, any_db)} == {"kept"}
    assert snapshot("kept") == kept_before
    assert ChatMemory.query.filter(agent_id="erased").count() == 0


def test_an_erased_tenant_written_again_is_listed_again(any_db):
    fill("again")
    erase_tenant(ChatMemory, agent_id="again")
    store_turns([ChatTurn("A new start.", datetime.now(UTC), None, "maya", 1.0, False)], "again")
    assert "again" in {space.tag for space in listed_partitions(ChatMemory._meta, any_db)}
    assert ChatMemory.query.filter(agent_id="again").count() == 1


def test_erase_needs_the_tenant():
    with pytest.raises(redmem.QueryException, match="agent_id"):
        erase_tenant(ChatMemory)


def test_export_then_import_restores_every_key_identically(any_db):
    fill("moved")
    before = snapshot("moved")
    hits = [m.memory_id for m in ChatMemory.query.filter(agent_id="moved").no_track().keyword_search("Lisbon")]
    out = io.StringIO()
    count = export_tenant(ChatMemory, out, agent_id="moved")
    assert count == len(before)
    erase_tenant(ChatMemory, agent_id="moved")

    tenant, written = import_tenant(ChatMemory, io.StringIO(out.getvalue()))

    assert tenant == {"agent_id": "moved"} and written == count
    assert snapshot("moved") == before
    again = [m.memory_id for m in ChatMemory.query.filter(agent_id="moved").no_track().keyword_search("Lisbon")]
    assert again == hits
    assert "moved" in {space.tag for space in listed_partitions(ChatMemory._meta, any_db)}


def test_an_export_moves_from_one_server_to_a_cluster(single_client, cluster_client):
    redmem.configure(client=single_client, key_prefix="tenant-ops-move")
    erase_tenant(ChatMemory, agent_id="traveller")
    fill("traveller")
    before = snapshot("traveller")
    out = io.StringIO()
    export_tenant(ChatMemory, out, agent_id="traveller")
    erase_tenant(ChatMemory, agent_id="traveller")

    redmem.configure(client=cluster_client)
    erase_tenant(ChatMemory, agent_id="traveller")
    import_tenant(ChatMemory, out.getvalue().splitlines())
    try:
        assert snapshot("traveller") == before
        recalled = memory_assembler().assemble("Where does Maya fly?", agent_id="traveller")
        assert "Lisbon" in recalled.formatted
    finally:
        assert erase_tenant(ChatMemory, agent_id="traveller").complete


def test_import_refuses_a_tenant_that_holds_keys_and_other_models(db):
    fill("busy")
    out = io.StringIO()
    export_tenant(ChatMemory, out, agent_id="busy")
    with pytest.raises(ValidationError, match="erase it first"):
        import_tenant(ChatMemory, out.getvalue().splitlines())
    with pytest.raises(ValidationError, match="not a redmem tenant export"):
        import_tenant(ChatMemory, ['{"key": "r:1"}'])
    with pytest.raises(ValidationError, match="'Other'"):
        import_tenant(ChatMemory, ['{"format": "redmem-tenant/1", "model": "Other", "partition": {"agent_id": "x"}}'])


# -- any key content survives a dump and restore, byte for byte ---------------------------------

binary = st.binary(max_size=40)
scores = st.floats(allow_nan=False) | st.sampled_from([math.inf, -math.inf, 0.1, 1e-300])
contents = st.one_of(
    st.tuples(st.just("string"), binary),
    st.tuples(st.just("hash"), st.dictionaries(binary, binary, min_size=1, max_size=5)),
    st.tuples(st.just("set"), st.sets(binary, min_size=1, max_size=5)),
    st.tuples(st.just("list"), st.lists(binary, min_size=1, max_size=5)),
    st.tuples(st.just("zset"), st.dictionaries(binary, scores, min_size=1, max_size=5)),
    st.tuples(st.just("stream"), st.lists(st.dictionaries(binary, binary, min_size=1, max_size=3), max_size=4)),
)


def write(client, key: str, kind: str, value) -> None:
    if kind == "string":
        client.set(key, value)
    elif kind == "hash":
        client.hset(key, mapping=value)
    elif kind == "set":
        client.sadd(key, *value)
    elif kind == "list":
        client.rpush(key, *value)
    elif kind == "zset":
        client.zadd(key, value)
    else:
        client.xgroup_create(key, "readers", id="0", mkstream=True)
        for fields in value:
            client.xadd(key, fields)


def read(client, key: str):
    kind = client.type(key).decode()
    content = {"string": client.get, "hash": client.hgetall, "set": client.smembers,
               "list": lambda k: client.lrange(k, 0, -1), "zset": lambda k: client.zrange(k, 0, -1, withscores=True),
               "stream": lambda k: (client.xrange(k), client.xinfo_stream(k)["last-generated-id"],
                                    [g["name"] for g in client.xinfo_groups(k)])}[kind](key)
    return kind, content, client.pttl(key) > 0


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(keys=st.dictionaries(st.from_regex(r"[a-z]{1,6}(:[a-z0-9]{1,4})?", fullmatch=True), contents,
                            min_size=1, max_size=6), expiring=st.booleans())
def test_any_key_content_survives_dump_and_restore(any_db, keys, expiring):
    tenant = TenantKeys(redmem.store.settings().key_prefix, "t%7B1")
    names = {suffix: tenant.key(f"TenantOpsAny:{{t%7B1}}:{suffix}") for suffix in keys}
    erase_tenant_keys(any_db, tenant)
    for suffix, (kind, value) in keys.items():
        write(any_db, names[suffix], kind, value)
        if expiring:
            any_db.expire(names[suffix], 600)
    before = {suffix: read(any_db, names[suffix]) for suffix in keys}
    dumps = list(dump_keys(any_db, tenant))
    assert erase_tenant_keys(any_db, tenant) == (len(keys), 0, {"TenantOpsAny"})

    assert restore_keys(any_db, tenant, dumps) == (len(keys), {"TenantOpsAny"})
    assert {suffix: read(any_db, names[suffix]) for suffix in keys} == before


def test_a_dump_cannot_write_outside_its_tenant(db):
    tenant = TenantKeys(redmem.store.settings().key_prefix, "mine")
    for relative in ["M:{other}:r:1", "M:{mine}x:r:1", "{mine}:r:1", "M:{mine}"]:
        with pytest.raises(ValidationError, match="not a key of the tenant"):
            restore_keys(db, tenant, [{"key": relative, "type": "string", "ttl_ms": None, "value": "x"}])
    assert not list(db.scan_iter(match=f"{tenant.prefix}:*"))


# -- retention ----------------------------------------------------------------------------------

class TenantOpsNote(Model):
    note_id = AutoKeyField()
    agent_id = KeyField()
    content = StringField()
    importance = FloatField(default=1.0)
    relevance = DecayingSortedField(base_score_field="importance", partition_by="agent_id")
    content_bm25 = BM25Field(source="content", partition_by="agent_id")
    retention = Retention(max_memories=3, ttl_seconds=30 * 86400)


def test_retention_archives_the_expired_and_the_lowest_decayed_past_the_cap(any_db):
    notes = [TenantOpsNote(agent_id="a", content=f"note {word}", importance=float(i + 1))
             for i, word in enumerate(["alpha", "bravo", "charlie", "delta", "echo", "foxtrot"])]
    for note in notes:
        note.save()
    TenantOpsNote._meta.fields["relevance"].touch(notes[5], now=time.time() - 40 * 86400)  # the best, but stale

    done = apply_retention(TenantOpsNote, agent_id="a")

    assert done.expired == [notes[5].note_id]
    assert sorted(done.over_cap) == sorted(n.note_id for n in notes[:2])  # importance 1 and 2: the lowest
    kept = TenantOpsNote.query.filter(agent_id="a")
    assert sorted(n.content for n in kept) == ["note charlie", "note delta", "note echo"]
    assert [n.content for n in kept.keyword_search("alpha")] == []
    archive = archived(TenantOpsNote, agent_id="a")
    assert sorted((row["content"], row["reason"]) for row in archive) == [
        ("note alpha", "over_cap"), ("note bravo", "over_cap"), ("note foxtrot", "expired")]
    assert apply_retention(TenantOpsNote, agent_id="a").evicted == 0
    assert erase_tenant(TenantOpsNote, agent_id="a").complete  # the archive is the tenant's too


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(importances=st.lists(st.integers(1, 1000), min_size=1, max_size=12, unique=True))
def test_the_cap_keeps_the_highest_decayed_values(db, importances):
    erase_tenant(TenantOpsNote, agent_id="h")
    for value in importances:
        TenantOpsNote(agent_id="h", content=f"n{value}", importance=float(value)).save()
    apply_retention(TenantOpsNote, agent_id="h")
    kept = sorted(int(n.content[1:]) for n in TenantOpsNote.query.filter(agent_id="h"))
    assert kept == sorted(importances)[-3:]
